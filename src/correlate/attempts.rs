//! Attempts: how each `tools/call` relates to the previous call of the same tool and
//! canonical arguments at the same endpoint. Only a *retry candidate* (sent while the
//! earlier was in flight, soon after it failed, or as a double dispatch) can be a
//! finding; the same call made again later, after a terminal result and with other
//! activity in between, is a *re-invocation*: an agent re-reading a file is not
//! retrying. The windows are `RetryWindows`, documented in `docs/findings.md`.

use super::execution::effect_unknown;
use super::facts::CallFacts;
use super::rules::{self, Pair};
use super::{RetryOrigin, Transport};
use crate::config::RetryWindows;
use crate::model::{Outcome, Timestamp};

/// How a later attempt relates to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// An MRTR follow-up to `input_required`.
    Mrtr,
    /// Sent while the earlier attempt was still waiting for its response.
    InFlight,
    /// Sent within the retry window after the earlier attempt failed or never
    /// ended (`gap_ms` from its end, when the input has times).
    AfterFailure { gap_ms: Option<i64> },
    /// Identical, moments after the earlier one, with no other call of the scope
    /// in between, whatever the earlier outcome.
    DoubleDispatch { gap_ms: Option<i64> },
    /// The same call made again later: intent, not a retry.
    Reinvocation,
}

impl Relation {
    pub fn is_retry_candidate(self) -> bool {
        matches!(
            self,
            Relation::InFlight | Relation::AfterFailure { .. } | Relation::DoubleDispatch { .. }
        )
    }

    /// The relation in words, for findings: "while the first was still in flight".
    pub fn describe(self, prev: &CallFacts) -> String {
        let ms = |g: Option<i64>| g.map(|g| format!(" {g} ms")).unwrap_or_default();
        match self {
            Relation::Mrtr => "as an MRTR follow-up".to_owned(),
            Relation::InFlight => format!(
                "while the first was still in flight (it ended {})",
                prev.outcome
            ),
            Relation::AfterFailure { gap_ms } => format!(
                "{} after the first ended {}",
                ms(gap_ms).trim_start(),
                prev.outcome
            )
            .trim_start()
            .to_owned(),
            Relation::DoubleDispatch { gap_ms } => format!(
                "{} after the first, with no other call in between (a double dispatch; the first ended {})",
                ms(gap_ms).trim_start(),
                prev.outcome
            )
            .trim_start()
            .to_owned(),
            Relation::Reinvocation => "later, as a new invocation".to_owned(),
        }
    }
}

/// The earlier attempt failed in a way a client retries: no terminal result, or a
/// failure at the transport or protocol layer.
fn failed(c: &CallFacts) -> bool {
    !matches!(
        c.outcome,
        Outcome::ToolSuccess | Outcome::ToolError | Outcome::InputRequired
    )
}

pub(crate) fn relation(
    prev: &CallFacts,
    later: &CallFacts,
    calls_between: Option<u32>,
    w: &RetryWindows,
    client_timeout_ms: u64,
) -> Relation {
    if later.mrtr_followup && prev.outcome == Outcome::InputRequired {
        return Relation::Mrtr;
    }
    let adjacent = calls_between == Some(0);
    // A client log records what the agent chose: only a re-issue seconds after a
    // failure counts, never a re-read or a parallel tool use.
    if later.transport == Transport::ClientLog || prev.transport == Transport::ClientLog {
        let gap = gap_ms(prev.ended_at.or(prev.started_at), later.started_at);
        return match gap {
            Some(g) if failed(prev) && g <= w.client_log_ms as i64 => {
                Relation::AfterFailure { gap_ms: Some(g) }
            }
            _ => Relation::Reinvocation,
        };
    }
    let same_scope = calls_between.is_some();
    if same_scope {
        if let (Some(end), Some(start)) = (prev.ended_at, later.started_at) {
            if start < end {
                return Relation::InFlight;
            }
        }
    }
    if failed(prev) {
        // A call that never ended was given up at the client's timeout at the latest.
        let end = prev.ended_at.or_else(|| {
            prev.started_at
                .map(|s| s.plus_millis(client_timeout_ms as f64))
        });
        let asked = prev.retry_after_ms.or(prev.sse_retry_ms).unwrap_or(0);
        match gap_ms(end, later.started_at) {
            Some(g) if g <= (w.retry_ms + asked) as i64 => {
                return Relation::AfterFailure {
                    gap_ms: Some(g.max(0)),
                }
            }
            Some(_) => {}
            // No times: only the next call of the same scope can be its retry.
            None if adjacent => return Relation::AfterFailure { gap_ms: None },
            None => {}
        }
    }
    if adjacent {
        match gap_ms(prev.ended_at.or(prev.started_at), later.started_at) {
            Some(g) if g <= w.double_dispatch_ms as i64 => {
                return Relation::DoubleDispatch {
                    gap_ms: Some(g.max(0)),
                }
            }
            Some(_) => {}
            None => return Relation::DoubleDispatch { gap_ms: None },
        }
    }
    Relation::Reinvocation
}

pub(crate) fn gap_ms(from: Option<Timestamp>, to: Option<Timestamp>) -> Option<i64> {
    Some(from?.millis_until(to?))
}

/// How the later call of a pair came to be sent.
pub fn origin(p: &Pair<'_>) -> RetryOrigin {
    let (prev, later) = (p.prev, p.later);
    match p.relation {
        Relation::Mrtr => RetryOrigin::Mrtr,
        Relation::Reinvocation => RetryOrigin::Reinvocation,
        _ if rules::unsafe_replay::applies(prev, later) => RetryOrigin::AfterFailure,
        _ => explanation(prev, later).map_or(RetryOrigin::Unexplained, |(o, _)| o),
    }
}

/// Why the protocol (or a refusal) says `later` may re-send `prev`, if it does
/// (MCP 2025-11-25 Transports, Authorization; 2026-07-28 Streamable HTTP).
pub fn explanation(prev: &CallFacts, later: &CallFacts) -> Option<(RetryOrigin, &'static str)> {
    let status = prev.status;
    if prev.outcome == Outcome::JsonrpcError {
        match prev.jsonrpc_code {
            Some(-32020) => {
                return Some((RetryOrigin::Protocol, "re-sent after -32020 HeaderMismatch"))
            }
            Some(-32022) => {
                return Some((
                    RetryOrigin::Protocol,
                    "re-sent after -32022 UnsupportedProtocolVersion",
                ))
            }
            Some(-32042) => {
                return Some((
                    RetryOrigin::Protocol,
                    "re-sent after -32042 URL elicitation",
                ))
            }
            _ => {}
        }
    }
    match status {
        Some(401) => {
            return Some((
                RetryOrigin::AfterRefusal,
                "re-sent after 401 (re-authorization)",
            ))
        }
        Some(403) => return Some((RetryOrigin::AfterRefusal, "re-sent after 403 (step-up)")),
        Some(404) if prev.scope != later.scope => {
            return Some((
                RetryOrigin::Protocol,
                "replayed in a new session after the old one expired (404)",
            ))
        }
        Some(429) => return Some((RetryOrigin::AfterRefusal, "re-sent after 429")),
        Some(503) => return Some((RetryOrigin::AfterRefusal, "re-sent after 503")),
        Some(400 | 404 | 405 | 406 | 409 | 413 | 415 | 421 | 425 | 501 | 505)
            if prev.outcome == Outcome::HttpError =>
        {
            return Some((
                RetryOrigin::AfterRefusal,
                "re-sent after a status that refuses the request before it runs",
            ));
        }
        _ => {}
    }
    if effect_unknown(prev) {
        let why = if prev.cancelled {
            "re-sent after the client cancelled it"
        } else if prev.protocol_version.as_deref() >= Some("2026-07-28") && prev.id != later.id {
            "re-issued with a new id after a broken stream (2026-07-28 requires it)"
        } else {
            "re-sent after an attempt that got no usable result"
        };
        return Some((RetryOrigin::AfterFailure, why));
    }
    None
}
