//! Typed observations: what the pairers (HTTP, stdio, legacy, client logs) saw that
//! a rule may turn into a finding. Pairers never build findings themselves; the
//! wording and severity of each finding live with its rule in `rules/`.

use super::Scope;
use crate::jsonrpc::Id;
use crate::model::Locator;

/// Where a response that belongs to no request, or to another one, was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Stray {
    /// On a POST's own stream or body, answering another id.
    OnCallStream,
    /// The only reply a stdio request got (it was attributed to it) answers another id.
    Attributed,
    /// The same id value in another JSON type (`1` vs `"1"`).
    TypeDrift,
    /// `null` where the request's id should be echoed.
    NullId,
    /// stdio: no request with that id is outstanding.
    NoOutstanding,
    /// stdio: the id was answered already.
    AlreadyAnswered,
    /// On a GET stream that resumes nothing (2025-era "MUST NOT").
    PlainGet,
    /// On a `Last-Event-ID` GET that matches no cut stream.
    ResumedGet,
    /// On a legacy HTTP+SSE stream, answering no request of its session.
    Legacy,
}

/// What a pairer saw. One per anomaly, never one per call, so they stay few.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Observation {
    /// A response that answers no outstanding request, or another request.
    StrayResponse {
        scope: Scope,
        /// The id the response carried.
        id: Id,
        /// The request id it rode on, when it rode on one.
        request: Option<Id>,
        /// `seq` of the call concerned, if any.
        call: Option<usize>,
        locator: Locator,
        context: Stray,
    },
    /// A request id sent again in the same scope.
    IdReuse {
        scope: Scope,
        id: Id,
        method: Box<str>,
        earlier: Box<str>,
        /// Same method, tool and canonical arguments as the earlier request.
        same_call: bool,
        /// The earlier request had no response yet.
        in_flight: bool,
        /// The scope speaks 2026-07-28 or later (ids may be reused once answered).
        modern: bool,
        /// The later request is an MRTR follow-up (its id rules are MRTR_BROKEN's).
        mrtr: bool,
        locator: Locator,
    },
    /// A `Last-Event-ID` reconnection sooner than the stream's SSE `retry` asked for.
    Reconnect {
        scope: Scope,
        call: usize,
        id: Id,
        locators: Vec<Locator>,
        waited_ms: i64,
        asked_ms: u64,
    },
    /// A successful result whose first text block reads like an error.
    ErrorText {
        scope: Scope,
        call: usize,
        id: Id,
        tool: String,
        locator: Locator,
        text: String,
    },
}

impl Observation {
    /// Whether its rule reads what the judge learnt from the calls: a request id
    /// sent again with the same call, which the repeat rules may already have
    /// reported as a retry. The others are judged alone.
    pub fn reads_the_calls_judged(&self) -> bool {
        matches!(
            self,
            Observation::IdReuse {
                same_call: true,
                ..
            }
        )
    }

    /// Where it was seen (the first place, for a reconnection): the place its
    /// finding is reported at.
    pub fn locator(&self) -> Option<&Locator> {
        match self {
            Observation::StrayResponse { locator, .. }
            | Observation::IdReuse { locator, .. }
            | Observation::ErrorText { locator, .. } => Some(locator),
            Observation::Reconnect { locators, .. } => locators.first(),
        }
    }

    /// The scope it was seen in.
    pub fn scope(&self) -> &Scope {
        match self {
            Observation::StrayResponse { scope, .. }
            | Observation::IdReuse { scope, .. }
            | Observation::Reconnect { scope, .. }
            | Observation::ErrorText { scope, .. } => scope,
        }
    }
}
