//! Verdict vocabulary: the outcome of one call, the layer it failed at, and the
//! kinds of findings across calls. Names are the output contract (`docs/output.md`, `docs/findings.md`).

use serde::Serialize;
use std::fmt;

/// The layer a call's outcome belongs to (`docs/output.md`, Outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Transport,
    Protocol,
    Interaction,
    Application,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Transport => "transport",
            Layer::Protocol => "protocol",
            Layer::Interaction => "interaction",
            Layer::Application => "application",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $v),+ }

        impl $name {
            /// Every value, in the order the docs list them.
            pub const ALL: &'static [$name] = &[$($name::$v),+];

            /// The fixed upper-case name used in every output format.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }

            /// Parses the fixed name, case-insensitively, `-` accepted for `_`.
            pub fn parse(s: &str) -> Option<$name> {
                let up = s.trim().to_ascii_uppercase().replace('-', "_");
                match up.as_str() { $($s => Some($name::$v),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown {} {s:?}", stringify!($name)))
                })
            }
        }
    };
}

named_enum! {
    /// One verdict per `tools/call` (`docs/output.md`, Outcomes).
    Outcome {
        ToolSuccess = "TOOL_SUCCESS",
        ToolError = "TOOL_ERROR",
        InputRequired = "INPUT_REQUIRED",
        JsonrpcError = "JSONRPC_ERROR",
        MalformedJson = "MALFORMED_JSON",
        InvalidEnvelope = "INVALID_ENVELOPE",
        InvalidToolResult = "INVALID_TOOL_RESULT",
        HttpError = "HTTP_ERROR",
        StreamIncomplete = "STREAM_INCOMPLETE",
        NoResponse = "NO_RESPONSE",
    }
}

impl Outcome {
    pub fn layer(self) -> Layer {
        match self {
            Outcome::ToolSuccess | Outcome::ToolError => Layer::Application,
            Outcome::InputRequired => Layer::Interaction,
            Outcome::JsonrpcError
            | Outcome::MalformedJson
            | Outcome::InvalidEnvelope
            | Outcome::InvalidToolResult => Layer::Protocol,
            Outcome::HttpError | Outcome::StreamIncomplete | Outcome::NoResponse => {
                Layer::Transport
            }
        }
    }

    /// True when the call got no terminal response at all.
    pub fn is_non_terminal(self) -> bool {
        matches!(self, Outcome::StreamIncomplete | Outcome::NoResponse)
    }

    /// True for the only outcome that needs no attention.
    pub fn is_success(self) -> bool {
        self == Outcome::ToolSuccess
    }

    /// One line for reports and `explain`.
    pub fn summary(self) -> &'static str {
        match self {
            Outcome::ToolSuccess => "the tool ran and returned a complete result",
            Outcome::ToolError => "the tool ran and reported a failure (isError: true)",
            Outcome::InputRequired => {
                "the server asked for more input (MRTR); the call needs a follow-up"
            }
            Outcome::JsonrpcError => "the server answered with a JSON-RPC error for this id",
            Outcome::MalformedJson => "the response that should carry the result is not JSON",
            Outcome::InvalidEnvelope => {
                "JSON, but not a valid JSON-RPC 2.0 response to this request"
            }
            Outcome::InvalidToolResult => "a valid response whose result has the wrong shape",
            Outcome::HttpError => "a non-2xx HTTP status without a JSON-RPC error for this id",
            Outcome::StreamIncomplete => "the response stream ended before the final response",
            Outcome::NoResponse => "the request was sent and no response was recorded",
        }
    }
}

named_enum! {
    /// How much a finding matters. Ordered: `Info` < `Low` < `Medium` < `High`.
    Severity {
        Info = "INFO",
        Low = "LOW",
        Medium = "MEDIUM",
        High = "HIGH",
    }
}

named_enum! {
    /// Kinds of findings across calls; each has one rule in `correlate/rules/`, whose
    /// documentation `docs/findings.md` and `mcpsift explain` show.
    FindingKind {
        IdMismatch = "ID_MISMATCH",
        NonTerminal = "NON_TERMINAL",
        UnexplainedRepeat = "UNEXPLAINED_REPEAT",
        UnsafeReplay = "UNSAFE_REPLAY",
        RetryTooSoon = "RETRY_TOO_SOON",
        IdReused = "ID_REUSED",
        MrtrBroken = "MRTR_BROKEN",
        SuspiciousSuccess = "SUSPICIOUS_SUCCESS",
    }
}
