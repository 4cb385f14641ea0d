//! `mcpsift explain NAME`: what each outcome and finding kind means, which rule of
//! the MCP specification (by revision and section) or of JSON-RPC 2.0 it comes from,
//! its typical causes and what to check next.
//! The text lives here, next to nothing else, so the CLI, the Markdown report and the
//! docs can all point at one explanation per name.

use crate::model::{FindingKind, Outcome};
use std::fmt::Write as _;

/// What a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Outcome(Outcome),
    Finding(FindingKind),
}

impl Subject {
    pub fn name(self) -> &'static str {
        match self {
            Subject::Outcome(o) => o.as_str(),
            Subject::Finding(k) => k.as_str(),
        }
    }

    /// Every outcome, then every finding kind, in the docs' order.
    pub fn all() -> Vec<Subject> {
        Outcome::ALL
            .iter()
            .map(|o| Subject::Outcome(*o))
            .chain(FindingKind::ALL.iter().map(|k| Subject::Finding(*k)))
            .collect()
    }

    /// Parses a name case-insensitively, `-` accepted for `_`.
    pub fn parse(name: &str) -> Option<Subject> {
        Outcome::parse(name)
            .map(Subject::Outcome)
            .or_else(|| FindingKind::parse(name).map(Subject::Finding))
    }

    pub fn summary(self) -> &'static str {
        match self {
            Subject::Outcome(o) => o.summary(),
            Subject::Finding(k) => crate::correlate::rules::doc(k).summary,
        }
    }
}

/// The explanation of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub subject: Subject,
    /// Layer (outcomes) or typical severity (findings), in words.
    pub class: String,
    pub meaning: &'static str,
    /// Where the rule comes from: the MCP specification by revision and section,
    /// JSON-RPC 2.0, an RFC, or mcpsift's own docs for rules of the analysis itself.
    pub rule: &'static str,
    pub causes: &'static [&'static str],
    pub next: &'static [&'static str],
}

fn outcome(o: Outcome) -> Explanation {
    let (meaning, rule, causes, next): (&str, &str, &[&str], &[&str]) = match o {
        Outcome::ToolSuccess => (
            "The server answered this id with a result whose resultType is \"complete\" or absent, whose content is an array and whose isError is false or absent. Nothing failed.",
            "MCP 2025-06-18, Server Features: Tools §Tool Result (content, isError); MCP 2026-07-28, Base Protocol (an absent resultType MUST be read as \"complete\"); docs/output.md §Outcomes and layers",
            &["the normal case"],
            &["nothing; use --all to list successful calls too"],
        ),
        Outcome::ToolError => (
            "The JSON-RPC exchange succeeded, but the tool reported a failure with isError: true. This is the application layer: the tool ran (at least partly) and said it failed.",
            "MCP 2025-06-18, Server Features: Tools §Error Handling (tool execution errors are results with isError: true)",
            &["bad arguments caught by the tool (2025-11-25+ moves input validation here)", "an upstream API the tool calls failed", "a business rule refused the request"],
            &["read the error text in the call's evidence: it is meant for the model", "do not replay blindly: the tool ran, and a write may have happened before it failed", "fix the arguments or the upstream service"],
        ),
        Outcome::InputRequired => (
            "The server returned resultType \"input_required\": the call is not finished. Under MRTR the client must answer the inputRequests and send a follow-up tools/call with a new id, inputResponses and the exact requestState.",
            "MCP 2026-07-28, Base Protocol: Patterns §MRTR (a result with resultType input_required, answered by a follow-up under a new id); MCP 2025-06-18, Client Features §Elicitation (the earlier, nested form)",
            &["the tool needs an elicitation or a sampling answer", "a client that does not implement MRTR stops here"],
            &["look for a later call of the same tool with inputResponses (mcpsift links it; NON_TERMINAL or MRTR_BROKEN say when it is missing or wrong)", "check that the follow-up uses a new id and echoes requestState byte for byte"],
        ),
        Outcome::JsonrpcError => (
            "The server answered this id with a JSON-RPC error object: the request was rejected at the protocol layer (unknown tool, invalid params, internal error, 2026 header mismatch …). The HTTP status, when not 2xx, is kept as evidence.",
            "JSON-RPC 2.0 §5.1 Error object; MCP 2025-06-18, Server Features: Tools §Error Handling (protocol errors are JSON-RPC errors); MCP 2026-07-28, Transports §Streamable HTTP (400 and 404 paired with a JSON-RPC error)",
            &["-32602: unknown tool or bad arguments", "-32601: method not found", "-32603 or -32000: a server or SDK internal failure", "-32020 / -32022: 2026 header mismatch or unsupported protocol version", "-32001: SDK 'Session not found'"],
            &["read error.code and error.message in the evidence", "re-sending the same request usually fails the same way; -32020, -32022 and -32042 are the codes the spec says to retry after fixing something (MCP 2026-07-28)", "check the tools/list the client used against the server's current list"],
        ),
        Outcome::MalformedJson => (
            "The response was 2xx, but the body (or the SSE data) that should carry the JSON-RPC response is not valid JSON.",
            "MCP 2025-06-18, Base Protocol §Messages (every message is a JSON-RPC 2.0 object); JSON-RPC 2.0 §5 Response object; docs/output.md §Outcomes and layers",
            &["a proxy or error page injected HTML or text into a 200", "a server wrote logs to stdout (stdio) or into the response", "a body cut by the recorder without it saying so"],
            &["look at the excerpt in the evidence: HTML, a log line, or truncated JSON?", "on stdio, make sure the server logs to stderr only", "if the body looks cut, check the recorder's size limits"],
        ),
        Outcome::InvalidEnvelope => (
            "The response is JSON but not a valid JSON-RPC 2.0 response to this request: a wrong or type-changed id, both or neither of result and error, a bad error object, or jsonrpc not \"2.0\".",
            "JSON-RPC 2.0 §5 Response object (the same id as the request; exactly one of result and error); MCP 2025-06-18, Base Protocol §Responses",
            &["a JSON library re-encoded the id (1 became \"1\")", "a proxy or gateway multiplexing several clients mixed up ids", "a hand-written server that builds responses by hand"],
            &["compare the request id and the response id in the evidence, including their JSON types", "look for ID_MISMATCH findings in the same input", "test the server with a conformant client"],
        ),
        Outcome::InvalidToolResult => (
            "The envelope is valid, but the result does not have the CallToolResult shape: content is not an array, isError is not a boolean, resultType is unknown, or the result is not an object.",
            "MCP 2025-06-18, Server Features: Tools §Tool Result (content is an array, isError a boolean); MCP 2026-07-28, Base Protocol (an unrecognized resultType MUST be treated as invalid)",
            &["a server returning its own object instead of a CallToolResult", "content given as a string", "a resultType from a newer draft (task) the client does not know"],
            &["read the note in the evidence: it names the field", "validate the server's results against the schema of its negotiated protocol version"],
        ),
        Outcome::HttpError => (
            "The HTTP status was not 2xx and the body was not a JSON-RPC error for this id (a success-looking body does not rescue it), or a 2xx the transport does not allow (202 to a request, an unknown Content-Type).",
            "MCP 2025-06-18, Transports §Streamable HTTP (Sending Messages to the Server); RFC 9110 §15 Status Codes; docs/output.md §Outcomes and layers (the transport is checked first)",
            &["401/403: authorization (token missing, expired, insufficient scope)", "404: the session expired (2025 era), so the client must re-initialize", "429/503: refused by a gateway or an overloaded server", "500/502/504: the server or a proxy failed, possibly after the tool ran", "406/415: Accept or Content-Type headers the server rejects"],
            &["read the status and excerpt in the evidence", "whether a retry is safe depends on the status: 429/503 were most likely not processed; after 500/502/504 the tool may have run (see the retry advice in the Markdown report)", "check proxies and gateways between client and server"],
        ),
        Outcome::StreamIncomplete => (
            "A 2xx response (usually text/event-stream) ended before a terminal response for this id arrived, and no resumption completed it. HTTP 200 only says the stream started.",
            "MCP 2025-06-18, Transports §Streamable HTTP (the server sends the response on the stream, then closes it; a disconnect is not a cancellation) and §Resumability and Redelivery; WHATWG HTML §Server-sent events",
            &["a proxy or load balancer timeout that cuts long streams", "the server crashed or restarted mid-call", "a buffering proxy that holds SSE events", "the client gave up and closed the stream (end: client_closed)", "over HTTP/2: the server reset the stream (end: stream_reset) or shut the connection down with GOAWAY (end: goaway)"],
            &["the tool may have run: do not replay a non-idempotent tool without checking its side effect", "look at the SSE events in the timeline: priming only, progress, then nothing?", "2025 era: the client should resume with GET and Last-Event-ID; 2026: re-POST with a new id", "check proxy idle timeouts against the tool's run time"],
        ),
        Outcome::NoResponse => (
            "The request was sent and no response was recorded at all: no HTTP response, or (stdio) no message with this id before the transcript ended.",
            "MCP 2025-06-18, Transports §Streamable HTTP and §stdio; Base Protocol: Lifecycle §Timeouts; Utilities §Cancellation",
            &["a connection reset or timeout", "the server process died (stdio)", "the capture stopped before the answer", "the recorder did not keep the response body"],
            &["the tool may have run: check its side effect before replaying", "check the recorder's note in the evidence and whether the capture simply ended too early", "on stdio, look at the server's stderr for a crash"],
        ),
    };
    Explanation {
        subject: Subject::Outcome(o),
        class: format!("layer: {}", o.layer()),
        meaning,
        rule,
        causes,
        next,
    }
}

/// A finding's explanation is its rule's own documentation (`correlate/rules/`).
fn finding(k: FindingKind) -> Explanation {
    let d = crate::correlate::rules::doc(k);
    Explanation {
        subject: Subject::Finding(k),
        class: format!("severity: {}", d.severity.replace('`', "")),
        meaning: d.meaning,
        rule: d.spec,
        causes: d.causes,
        next: d.next,
    }
}

/// The explanation of `subject`.
pub fn explain(subject: Subject) -> Explanation {
    match subject {
        Subject::Outcome(o) => outcome(o),
        Subject::Finding(k) => finding(k),
    }
}

/// Word-wraps `text` to `width` columns, every line starting with `first` (then
/// `rest`), so a terminal shows it without mid-word breaks.
fn wrap(text: &str, first: &str, rest: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = first.to_owned();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_owned();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

const WIDTH: usize = 88;

/// One explanation as plain text for a terminal.
pub fn render(e: &Explanation) -> String {
    let mut s = String::new();
    let kind = match e.subject {
        Subject::Outcome(_) => "outcome",
        Subject::Finding(_) => "finding",
    };
    let _ = writeln!(s, "{} ({kind})", e.subject.name());
    s.push_str(&wrap(e.subject.summary(), "  ", "  ", WIDTH));
    s.push_str(&wrap(&e.class, "  ", "  ", WIDTH));
    s.push('\n');
    s.push_str("What it means:\n");
    s.push_str(&wrap(e.meaning, "  ", "  ", WIDTH));
    s.push_str("Rule:\n");
    s.push_str(&wrap(e.rule, "  ", "  ", WIDTH));
    s.push_str("Typical causes:\n");
    for c in e.causes {
        s.push_str(&wrap(c, "  - ", "    ", WIDTH));
    }
    s.push_str("What to check next:\n");
    for n in e.next {
        s.push_str(&wrap(n, "  - ", "    ", WIDTH));
    }
    s
}

/// The list of every name with its one-line summary.
pub fn render_list() -> String {
    let mut s = String::from("Outcomes (one per tools/call):\n");
    for o in Outcome::ALL {
        let _ = writeln!(
            s,
            "  {:<20} {:<12} {}",
            o.as_str(),
            o.layer().as_str(),
            o.summary()
        );
    }
    s.push_str("\nFindings (across calls):\n");
    for k in FindingKind::ALL {
        let summary = crate::correlate::rules::doc(*k).summary;
        let _ = writeln!(s, "  {:<20} {}", k.as_str(), summary);
    }
    s.push_str("\nRun `mcpsift explain NAME` for one of them (case-insensitive, - or _).\n");
    s
}

/// Every valid name, comma-separated, for error messages.
pub fn names() -> String {
    Subject::all()
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_and_finding_is_explained_with_a_citation() {
        for s in Subject::all() {
            let e = explain(s);
            // The spec by revision, or JSON-RPC: a source a reader can look up.
            assert!(
                e.rule.contains("MCP 20") || e.rule.contains("JSON-RPC 2.0"),
                "{} cites no specification: {}",
                s.name(),
                e.rule
            );
            assert!(!e.causes.is_empty() && !e.next.is_empty(), "{}", s.name());
            assert!(render(&e).starts_with(s.name()));
            assert!(render_list().contains(s.name()));
        }
    }

    #[test]
    fn wrapping_keeps_words_whole() {
        let text = "alpha beta gamma delta epsilon";
        assert_eq!(
            wrap(text, "  - ", "    ", 16),
            "  - alpha beta\n    gamma delta\n    epsilon\n"
        );
        for s in Subject::all() {
            for line in render(&explain(s)).lines() {
                // One word longer than the width may overflow; nothing else does.
                assert!(
                    line.chars().count() <= WIDTH || !line.trim().contains(' '),
                    "{line}"
                );
            }
        }
    }

    #[test]
    fn names_parse_in_any_spelling() {
        assert_eq!(
            Subject::parse("stream-incomplete"),
            Some(Subject::Outcome(Outcome::StreamIncomplete))
        );
        assert_eq!(
            Subject::parse("Unsafe_Replay"),
            Some(Subject::Finding(FindingKind::UnsafeReplay))
        );
        assert_eq!(Subject::parse("nope"), None);
    }

    #[test]
    fn every_name_in_the_findings_doc_is_explained() {
        let doc = include_str!("../docs/findings.md");
        for line in doc.lines().filter(|l| l.starts_with("| `")) {
            let name = line.trim_start_matches("| `").split('`').next().unwrap();
            assert!(Subject::parse(name).is_some(), "{name} has no explanation");
        }
    }
}
