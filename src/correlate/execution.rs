//! The one answer to "could the tool have run?". Repeats, `UNSAFE_REPLAY` and the
//! report's retry advice all ask it here, so they can never disagree about a call.
//!
//! Decided on purpose (see `docs/findings.md`, "Could the tool have run?"):
//! - a result came back (TOOL_SUCCESS, TOOL_ERROR): it ran;
//! - the server answered with something unreadable (MALFORMED_JSON, INVALID_*): the
//!   request was processed, so it most likely ran, but the client cannot know how;
//! - no response, a cut stream, 500/502/504 and other 5xx but 501/503/505, a 2xx that
//!   carried no answer, JSON-RPC -32603 and codes a server does not send before
//!   dispatching: it may have run;
//! - 4xx, 501, 503, 505, and JSON-RPC codes sent before dispatch (-32700, -32600,
//!   -32601, -32602, -32001, -32002, -32020, -32021, -32022, -32042): it did not run.

use super::facts::CallFacts;
use super::Call;
use crate::model::Outcome;

/// Whether the tool behind a call may have run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executed {
    /// It ran (a result came back, readable or not).
    Yes,
    /// Unknown: the answer was lost after the request was delivered.
    Maybe,
    /// Refused before it ran, as far as the HTTP status says.
    Unlikely,
    /// Rejected at the protocol layer; the tool most likely did not run.
    Rejected,
    /// Not finished: it waits for input (MRTR).
    Pending,
}

impl Executed {
    /// The tool may have had its effect.
    pub fn could_have_run(self) -> bool {
        matches!(self, Executed::Yes | Executed::Maybe)
    }
}

/// JSON-RPC codes a server sends before it dispatches to the tool: parse, invalid
/// request, unknown method or tool, bad params, "Session not found", resource not
/// found, the 2026-07-28 header, capability and version checks, URL elicitation.
fn rejected_before_dispatch(code: i64) -> bool {
    matches!(
        code,
        -32700 | -32600 | -32601 | -32602 | -32001 | -32002 | -32020 | -32021 | -32022 | -32042
    )
}

/// Whether a call's tool may have run, from its outcome, last HTTP status and
/// JSON-RPC error code.
pub fn executed_by(outcome: Outcome, status: Option<u16>, jsonrpc_code: Option<i64>) -> Executed {
    match outcome {
        Outcome::ToolSuccess | Outcome::ToolError => Executed::Yes,
        Outcome::InputRequired => Executed::Pending,
        Outcome::JsonrpcError => match jsonrpc_code {
            Some(code) if rejected_before_dispatch(code) => Executed::Rejected,
            // Internal (-32603), implementation-defined and application codes can
            // come after partial work.
            _ => Executed::Maybe,
        },
        // The server answered, so the request was processed; the client cannot read
        // whether the tool succeeded.
        Outcome::MalformedJson | Outcome::InvalidEnvelope | Outcome::InvalidToolResult => {
            Executed::Yes
        }
        Outcome::HttpError => match status {
            // 501 and 505 say the server cannot handle the request at all; 503 is a
            // refusal to take it now. Neither reaches a tool.
            Some(501 | 503 | 505) => Executed::Unlikely,
            Some(s) if s >= 500 => Executed::Maybe,
            // A 2xx that carried no answer (a 202 to a request): it was accepted.
            Some(s) if (200..300).contains(&s) => Executed::Maybe,
            None => Executed::Maybe,
            Some(_) => Executed::Unlikely,
        },
        Outcome::StreamIncomplete | Outcome::NoResponse => Executed::Maybe,
    }
}

/// Whether the call's tool may have run.
pub fn executed(c: &Call) -> Executed {
    let ev = &c.verdict.evidence;
    executed_by(
        c.verdict.outcome,
        ev.http_statuses.last().copied(),
        ev.jsonrpc_code,
    )
}

/// The tool may have run and the client never got a result it could read: a
/// re-send of such a call is a replay whose first effect is unknown.
pub fn effect_unknown(c: &CallFacts) -> bool {
    executed_by(c.outcome, c.status, c.jsonrpc_code).could_have_run()
        && !matches!(
            c.outcome,
            Outcome::ToolSuccess | Outcome::ToolError | Outcome::InputRequired
        )
}
