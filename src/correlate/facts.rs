//! Call facts: the compact, owned record of one `tools/call` that the cross-call rules
//! (stage 2, `judge.rs`) need, and nothing else: no bodies, no timeline, no excerpt.
//! Stage 1 (the pairers) makes one per call; the judge keeps only the facts of calls
//! that can still pair with a later one, so its memory follows the retry windows, not
//! the input. The facts serialize both ways, so a distributed job can run stage 1 on
//! one machine and stage 2 on another (`docs/scale.md`).

use super::{Annotations, Call, RetryOrigin, Scope, Transport};
use crate::jsonrpc::Id;
use crate::model::{End, Locator, Outcome, Timestamp};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What the cross-call rules know about one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallFacts {
    /// The input the call was read from (stage 2 may see several).
    pub input: Arc<str>,
    /// Order of the request within its input.
    pub seq: usize,
    pub scope: Scope,
    pub endpoint: Arc<str>,
    pub id: Id,
    pub tool: Option<Arc<str>>,
    /// The digest of the canonical arguments, as 32 hex digits (JSON has no u128).
    #[serde(with = "hex128")]
    pub arguments: u128,
    pub outcome: Outcome,
    pub transport: Transport,
    pub locator: Locator,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    /// The last HTTP status of the call's reply path.
    pub status: Option<u16>,
    pub jsonrpc_code: Option<i64>,
    pub end: End,
    pub cancelled: bool,
    /// The cancellation was a `notifications/cancelled` (not a closed stream).
    pub cancel_notified: bool,
    pub protocol_version: Option<Arc<str>>,
    pub retry_after_ms: Option<u64>,
    pub sse_retry_ms: Option<u64>,
    pub mrtr_followup: bool,
    pub request_state: Option<String>,
    pub returned_state: Option<String>,
    pub annotations: Option<Annotations>,
    /// Completed by a `Last-Event-ID` resumption (its origin when it repeats nothing).
    pub resumed: bool,
    /// Why the call has no terminal result, for NON_TERMINAL (its first note).
    pub why: Option<String>,
}

impl CallFacts {
    /// `wire` or `client-log`.
    pub fn evidence(&self) -> &'static str {
        self.transport.evidence()
    }
}

impl Call {
    /// The facts stage 2 judges this call by.
    pub fn facts(&self, input: &Arc<str>) -> CallFacts {
        let ev = &self.verdict.evidence;
        let non_terminal = self.verdict.outcome.is_non_terminal();
        CallFacts {
            input: input.clone(),
            seq: self.seq,
            scope: self.scope.clone(),
            endpoint: self.endpoint.clone(),
            id: self.id.clone(),
            tool: self.tool.clone(),
            arguments: self.arguments,
            outcome: self.verdict.outcome,
            transport: self.transport,
            locator: self.locator.clone(),
            started_at: self.started_at,
            ended_at: self.ended_at,
            status: ev.http_statuses.last().copied(),
            jsonrpc_code: ev.jsonrpc_code,
            end: ev.end,
            cancelled: self.cancelled,
            cancel_notified: self.cancelled && ev.says("notifications/cancelled"),
            protocol_version: self.protocol_version.clone(),
            retry_after_ms: self.retry_after_ms,
            sse_retry_ms: self.sse_retry_ms,
            mrtr_followup: self.mrtr_followup,
            request_state: self.request_state.clone(),
            returned_state: self.returned_state.clone(),
            annotations: self.annotations,
            resumed: self.resumed,
            why: non_terminal.then(|| ev.notes.first().cloned()).flatten(),
        }
    }
}

/// What stage 2 decided about one call: how it relates to its previous attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// 1 for a first attempt; n for the n-th of the same tool and arguments.
    pub post_count: u32,
    pub retry_origin: RetryOrigin,
    pub previous: Option<Box<Previous>>,
}

impl Default for Judgement {
    fn default() -> Judgement {
        Judgement {
            post_count: 1,
            retry_origin: RetryOrigin::None,
            previous: None,
        }
    }
}

/// The previous attempt of a call, as its record names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Previous {
    pub input: Arc<str>,
    pub seq: usize,
    pub id: Id,
    pub locator: Locator,
    pub outcome: Outcome,
}

mod hex128 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{v:032x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        u128::from_str_radix(&s, 16).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_survive_a_json_round_trip_with_ids_and_times_intact() {
        let f = CallFacts {
            input: "a.pcap".into(),
            seq: 3,
            scope: Scope::session("s"),
            endpoint: "h/mcp".into(),
            id: Id::from_raw("\"1\""),
            tool: Some("t".into()),
            arguments: u128::MAX - 7,
            outcome: Outcome::StreamIncomplete,
            transport: Transport::Http,
            locator: Locator::Frames {
                request: 4,
                response: Some(9),
            },
            started_at: Timestamp::parse("2026-01-02T03:04:05.123Z"),
            ended_at: None,
            status: Some(200),
            jsonrpc_code: None,
            end: End::Reset,
            cancelled: true,
            cancel_notified: false,
            protocol_version: Some("2025-11-25".into()),
            retry_after_ms: Some(1000),
            sse_retry_ms: None,
            mrtr_followup: false,
            request_state: None,
            returned_state: Some("{\"a\":1}".into()),
            annotations: Some(Annotations {
                read_only: Some(false),
                destructive: None,
                idempotent: Some(true),
            }),
            resumed: false,
            why: Some("cut".into()),
        };
        let text = serde_json::to_string(&f).unwrap();
        let back: CallFacts = serde_json::from_str(&text).unwrap();
        assert_eq!(back, f);
        assert_ne!(Id::from_raw("1"), back.id, "a string id stays a string");
    }
}
