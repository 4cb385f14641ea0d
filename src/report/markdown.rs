//! The Markdown report for bug tickets: a verdict line, findings first, then one
//! section per call that needs attention. Written with our own escaping so it
//! renders the same on GitHub and GitLab.

use super::HumanOptions;
use crate::batch::{Report, Status};
use crate::model::Outcome;
use std::io::{self, Write};

/// Escapes text for a Markdown table cell or a line of prose.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '|' | '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// Text inside a code span, with a fence longer than any backtick run in it.
fn code(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let s = s.replace(['\n', '\r'], " ");
    format!("{fence} {s} {fence}")
}

pub fn write(report: &Report, opts: &HumanOptions, w: &mut dyn Write) -> io::Result<()> {
    let calls: Vec<_> = report
        .inputs
        .iter()
        .flat_map(|i| i.analysis.calls.iter().map(move |c| (i, c)))
        .collect();
    let failing = calls
        .iter()
        .filter(|(_, c)| !c.verdict.outcome.is_success())
        .count();
    let findings: usize = report
        .inputs
        .iter()
        .map(|i| i.analysis.findings.len())
        .sum();
    writeln!(w, "# mcpsift report")?;
    writeln!(w)?;
    writeln!(
        w,
        "**Verdict:** {} tools/call in {} input(s); {failing} did not end in TOOL\\_SUCCESS; {findings} finding(s).",
        calls.len(),
        report.inputs.len()
    )?;
    writeln!(w)?;
    if findings > 0 {
        writeln!(w, "## Findings")?;
        writeln!(w)?;
        writeln!(w, "| severity | finding | input | ids | detail |")?;
        writeln!(w, "|---|---|---|---|---|")?;
        for ir in &report.inputs {
            let mut fs: Vec<_> = ir.analysis.findings.iter().collect();
            fs.sort_by_key(|f| std::cmp::Reverse(f.severity));
            for f in fs {
                let ids = f
                    .ids
                    .iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                let locs = f
                    .locators
                    .iter()
                    .map(|l| l.to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                writeln!(
                    w,
                    "| {} | {} | {} ({}) | {} | {} |",
                    f.severity,
                    escape(f.kind.as_str()),
                    escape(&ir.path),
                    escape(&locs),
                    code(&ids),
                    escape(&f.detail)
                )?;
            }
        }
        writeln!(w)?;
    }
    writeln!(w, "## Inputs")?;
    writeln!(w)?;
    writeln!(w, "| input | format | status | exchanges | tools/call |")?;
    writeln!(w, "|---|---|---|---|---|")?;
    for ir in &report.inputs {
        let status = match ir.status {
            Status::Ok if ir.analysis.problems.is_empty() => "ok".to_owned(),
            Status::Ok => format!("ok, {} problem(s)", ir.analysis.problems.len()),
            Status::Error => format!("error: {}", ir.error.as_deref().unwrap_or("")),
        };
        writeln!(
            w,
            "| {} | {} | {} | {} | {} |",
            escape(&ir.path),
            ir.format.as_str(),
            escape(&status),
            ir.analysis.exchanges,
            ir.analysis.calls.len()
        )?;
    }
    writeln!(w)?;
    let attention: Vec<_> = calls
        .iter()
        .filter(|(_, c)| opts.all || !c.verdict.outcome.is_success() || c.post_count > 1)
        .collect();
    if !attention.is_empty() {
        writeln!(w, "## Calls")?;
        for (ir, c) in attention {
            let ev = &c.verdict.evidence;
            writeln!(w)?;
            writeln!(
                w,
                "### {} {} — {}",
                escape(c.tool.as_deref().unwrap_or("?")),
                code(&c.id.to_string()),
                c.verdict.outcome
            )?;
            writeln!(w)?;
            writeln!(
                w,
                "- **Where:** {} ({})",
                escape(&ir.path),
                escape(&c.locator.to_string())
            )?;
            writeln!(
                w,
                "- **Layer:** {} — {}",
                c.verdict.layer,
                escape(c.verdict.outcome.summary())
            )?;
            if !ev.http_statuses.is_empty() {
                let s: Vec<_> = ev.http_statuses.iter().map(u16::to_string).collect();
                writeln!(
                    w,
                    "- **HTTP:** {} {}",
                    s.join(", "),
                    ev.content_type.as_deref().map(code).unwrap_or_default()
                )?;
            }
            if let Some(code_) = ev.jsonrpc_code {
                writeln!(
                    w,
                    "- **JSON-RPC error:** {} {}",
                    code_,
                    escape(ev.error_message.as_deref().unwrap_or(""))
                )?;
            } else if let Some(m) = &ev.error_message {
                writeln!(w, "- **Tool said:** {}", escape(m))?;
            }
            if ev.sse_events > 0 {
                writeln!(
                    w,
                    "- **SSE:** {} event(s), ended {}",
                    ev.sse_events,
                    ev.end.as_str()
                )?;
            }
            if c.post_count > 1 {
                writeln!(
                    w,
                    "- **Attempt:** {} (retry origin: {})",
                    c.post_count,
                    c.retry_origin.as_str()
                )?;
            }
            for n in &ev.notes {
                writeln!(w, "- {}", escape(n))?;
            }
            if let Some(x) = &ev.excerpt {
                writeln!(w, "- **Evidence:** {}", code(x))?;
            }
            if c.verdict.outcome != Outcome::ToolSuccess {
                writeln!(w, "- **Retry:** {}", escape(retry_advice(c)))?;
            }
        }
        writeln!(w)?;
    }
    Ok(())
}

/// The seed's retry advice, applied to what the capture shows.
fn retry_advice(c: &crate::correlate::Call) -> &'static str {
    match c.verdict.outcome {
        Outcome::HttpError => match c.verdict.evidence.http_statuses.last() {
            Some(429) => "refused before it ran; retry after the Retry-After delay",
            Some(503) => "likely refused before it ran, but without an idempotency key do not replay a write just because of a 503",
            Some(500 | 502 | 504) => "the tool may have run; replay only if it is read-only or idempotent",
            _ => "fix the transport problem first; the request was not processed as a tool call",
        },
        Outcome::NoResponse | Outcome::StreamIncomplete => {
            "the tool may have run; replay only if it is read-only or idempotent"
        }
        Outcome::JsonrpcError | Outcome::InvalidEnvelope | Outcome::MalformedJson | Outcome::InvalidToolResult => {
            "a protocol failure: retrying the same request will most likely fail the same way"
        }
        Outcome::ToolError => "the tool ran and failed; show the error to the model rather than replaying blindly",
        Outcome::InputRequired => "send the MRTR follow-up with inputResponses and the same requestState, under a new id",
        Outcome::ToolSuccess => "",
    }
}
