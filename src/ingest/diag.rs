//! The one diagnostic every reader reports: a level (problem or notice), a kind that
//! tests and library users can match on, where in the input, and the words for a
//! person. A cap is a kind of its own, so "something was cut by a limit" never has to
//! be recognised from message text.

use crate::model::Locator;
use serde::Serialize;

/// Whether a diagnostic counts against the input (exit code 2) or is only worth knowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Something in the input could not be read or was cut.
    Problem,
    /// No fault of the input: a TLS flow, a capture started mid-connection.
    Notice,
}

/// What kind of thing happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A record (line, entry, element, HTTP head or body) that does not parse.
    Malformed,
    /// A limit cut something; the message names the limit and the flag that raises it.
    Cap,
    /// Bytes the capture does not hold, or that lie outside the stream (lost packets,
    /// snap length, out-of-window or retransmitted data that differs).
    Lost,
    /// A part of the input that is deliberately not read (TLS, HTTP/2, other
    /// protocols, a switched protocol, a mid-connection start).
    Skipped,
    /// Records out of the order they happened in.
    Order,
    /// Anything else the reader wants a person to know.
    Other,
}

/// One diagnostic. Named `Problem` for the sink's sake; its `level` says whether it
/// is a problem or a notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub level: Level,
    pub kind: Kind,
    pub locator: Locator,
    pub message: String,
}

/// The same type under the name the design uses.
pub type Diagnostic = Problem;

impl Problem {
    /// A record that could not be read.
    pub fn new(locator: Locator, message: impl Into<String>) -> Problem {
        Problem::of(Level::Problem, Kind::Malformed, locator, message)
    }

    /// Something cut by a limit (a problem: data was not analysed).
    pub fn cap(locator: Locator, message: impl Into<String>) -> Problem {
        Problem::of(Level::Problem, Kind::Cap, locator, message)
    }

    /// A notice of the given kind.
    pub fn notice(kind: Kind, locator: Locator, message: impl Into<String>) -> Problem {
        Problem::of(Level::Notice, kind, locator, message)
    }

    pub fn of(level: Level, kind: Kind, locator: Locator, message: impl Into<String>) -> Problem {
        Problem {
            level,
            kind,
            locator,
            message: message.into(),
        }
    }
}
