//! The Markdown report for bug tickets: a short verdict, findings first, then one
//! section per call that needs attention with its timeline, where to find it in the
//! input, and what it means (layer, whether a retry is safe). Written with our own
//! escaping so it renders the same on GitHub and GitLab: text is escaped, evidence
//! goes into code spans and fenced blocks whose fences outgrow any backticks inside.

use super::{advice, HumanOptions, RunInfo};
use crate::batch::{InputReport, Report, Status};
use crate::correlate::{Call, Finding, RetryOrigin};
use crate::explain::{explain, Subject};
use crate::model::{End, FindingKind, Locator, Outcome, Severity, Timestamp};
use std::io::{self, Write};

/// Call sections at most: a ticket with thousands of sections helps nobody, and
/// GitHub cuts long bodies.
const MAX_SECTIONS: usize = 100;
/// Findings the report lists, most severe first; past it they are counted.
const MAX_FINDINGS: usize = 1_000;
// The sections come from the calls each input lists (`kept::SHOWN`).
const _: () = assert!(super::kept::SHOWN >= MAX_SECTIONS);

/// Escapes text for a line of prose or a table cell: every character that could
/// start markup on GitHub or GitLab (emphasis, links, HTML, math, mentions, tables).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for (i, ch) in s.chars().enumerate() {
        match ch {
            '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' | '|' | '~' | '$' | '&' | '@' => {
                out.push('\\');
                out.push(ch);
            }
            '#' | '+' | '-' | '=' | '!' if i == 0 => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{fffd}'),
            _ => out.push(ch),
        }
    }
    // A leading `1.` or `1)` would start an ordered list.
    let digits = out.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && matches!(out[digits..].chars().next(), Some('.' | ')')) {
        out.insert(digits, '\\');
    }
    out
}

/// Text inside a code span, with a fence longer than any backtick run in it.
pub fn code(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c == '\n' || c == '\r' || c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect();
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    format!("{fence} {s} {fence}")
}

/// A code span inside a table cell: `|` must be escaped even there (GFM, GitLab).
pub fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// A fenced block with a fence longer than any backtick run in `s`.
fn fenced(s: &str, lang: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body: String = s
        .chars()
        .map(|c| if c != '\n' && c.is_control() { ' ' } else { c })
        .collect();
    format!("{fence}{lang}\n{body}\n{fence}")
}

fn time(t: Option<Timestamp>) -> String {
    t.map(|t| t.to_string()).unwrap_or_else(|| "—".to_owned())
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// How a response ended, in words a ticket's reader knows.
fn ended(e: End) -> &'static str {
    match e {
        End::Complete => "complete",
        End::Closed => "closed by the server or the network",
        End::ClientClosed => "closed by the client",
        End::Reset => "reset (TCP RST)",
        End::CaptureEnded => "cut by the end of the capture",
        End::Truncated => "cut by the recorder",
        End::StreamReset => "reset by the server (HTTP/2 RST_STREAM)",
        End::GoAway => "ended by the server's HTTP/2 GOAWAY",
    }
}

/// Why a call was sent again, in words.
fn origin(o: RetryOrigin) -> &'static str {
    match o {
        RetryOrigin::None => "a first attempt",
        RetryOrigin::Mrtr => "an MRTR follow-up with the answers the server asked for",
        RetryOrigin::Resumption => "completed by resuming its stream",
        RetryOrigin::AfterRefusal => {
            "sent again after a refusal that says the first attempt did not run"
        }
        RetryOrigin::Protocol => "sent again because the protocol asks for it",
        RetryOrigin::AfterFailure => "sent again after an attempt that may have run",
        RetryOrigin::Unexplained => "sent again with nothing to explain it",
        RetryOrigin::Reinvocation => "the same call made again later, as a new invocation",
    }
}

/// Ids for a table cell, each once: a repeat under the same id names it once.
pub(crate) fn ids_once(f: &Finding) -> String {
    let mut seen: Vec<String> = Vec::new();
    for i in &f.ids {
        let s = i.to_string();
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    seen.join(", ")
}

/// Worth a section: not a success, or sent more than once. A success that is the
/// same call made again later (a re-invocation, not a retry) is not: a long
/// healthy session repeats reads and polls all day, and the summary counts them.
pub(crate) fn needs_attention(c: &Call) -> bool {
    !c.verdict.outcome.is_success()
        || (c.post_count > 1 && c.retry_origin != RetryOrigin::Reinvocation)
}

fn where_(ir: &InputReport, loc: &Locator) -> String {
    match loc {
        Locator::Input => code(&ir.path),
        Locator::Line { line } => format!("{}, line {line}", code(&ir.path)),
        Locator::Entry { entry } => format!("{}, entry {entry}", code(&ir.path)),
        Locator::Frames { request, response } => match response {
            Some(r) => format!(
                "{}, Wireshark frames {request} (request) and {r} (response)",
                code(&ir.path)
            ),
            None => format!("{}, Wireshark frame {request} (request)", code(&ir.path)),
        },
        Locator::TlsFrames {
            request,
            response,
            tcp_stream,
        } => match response {
            Some(r) => format!(
                "{}, Wireshark frames {request} (request) and {r} (response), decrypted from the TLS of TCP stream {tcp_stream}",
                code(&ir.path)
            ),
            None => format!(
                "{}, Wireshark frame {request} (request), decrypted from the TLS of TCP stream {tcp_stream}",
                code(&ir.path)
            ),
        },
    }
}

/// Calls of every input with outcome `o`, kept whole or counted.
fn outcome_total(report: &Report, o: Outcome) -> usize {
    report
        .inputs
        .iter()
        .map(|i| i.analysis.outcome_count(o) as usize)
        .sum()
}

fn verdict_line(report: &Report, selected: &super::shown::Selected) -> String {
    let calls = report
        .inputs
        .iter()
        .map(|i| i.analysis.call_count() as usize)
        .sum::<usize>();
    let failing = Outcome::ALL
        .iter()
        .filter(|o| !o.is_success())
        .map(|o| outcome_total(report, *o))
        .sum::<usize>();
    let counts = &selected.counts;
    let unreadable = report
        .inputs
        .iter()
        .filter(|i| i.status == Status::Error)
        .count();
    let mut s = if calls == 0 {
        format!(
            "No tools/call in {}.",
            plural(report.inputs.len(), "input", "inputs")
        )
    } else if failing == 0 {
        format!(
            "All {} succeeded.",
            plural(calls, "tools/call", "tools/call")
        )
    } else {
        let mut by: Vec<String> = Vec::new();
        for o in Outcome::ALL.iter().filter(|o| !o.is_success()) {
            let n = outcome_total(report, *o);
            if n > 0 {
                by.push(format!("{n} {}", escape(o.as_str())));
            }
        }
        format!(
            "{failing} of {} did not succeed ({}).",
            plural(calls, "tools/call", "tools/call"),
            by.join(", ")
        )
    };
    if counts.total() == 0 {
        s.push_str(" No findings.");
    } else {
        let mut by: Vec<String> = Vec::new();
        for sev in Severity::ALL.iter().rev() {
            let n = counts.of(*sev);
            if n > 0 {
                by.push(format!("{n} {sev}"));
            }
        }
        s.push_str(&format!(
            " {}: {}.",
            plural(counts.total() as usize, "finding", "findings"),
            by.join(", ")
        ));
        if let Some(worst) = &selected.worst {
            s.push_str(&format!(
                " Worst: **{}** — {}.",
                escape(worst.kind.as_str()),
                escape(&worst.detail)
            ));
        }
    }
    match report.reinvocations() {
        0 => {}
        1 => {
            s.push_str(" 1 call repeated an earlier one later, as a new invocation (not a retry).")
        }
        n => s.push_str(&format!(
            " {n} calls repeated earlier ones later, as new invocations (not retries)."
        )),
    }
    if unreadable > 0 {
        s.push_str(&format!(
            " {} could not be read.",
            plural(unreadable, "input", "inputs")
        ));
    }
    s
}

fn write_findings(
    report: &Report,
    selected: &super::shown::Selected,
    w: &mut dyn Write,
) -> io::Result<()> {
    // Most severe first; the order inside one severity is the input order.
    let all: Vec<(&InputReport, &Finding)> = selected
        .listed(MAX_FINDINGS)
        .into_iter()
        .map(|(i, f)| (&report.inputs[i], f))
        .collect();
    if all.is_empty() {
        return Ok(());
    }
    writeln!(w, "## Findings")?;
    writeln!(w)?;
    let total = selected.counts.total();
    if total > MAX_FINDINGS as u64 {
        writeln!(
            w,
            "The first {MAX_FINDINGS} of {total} findings, most severe first; narrow with `--finding`, `--tool` or `--scope` to see the others (`--format jsonl` lists them all)."
        )?;
        writeln!(w)?;
    }
    writeln!(
        w,
        "| severity | finding | input | where | ids | tool | detail |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|---|")?;
    for (ir, f) in all {
        let ids = ids_once(f);
        let locs = f
            .locators
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        // In the order the calls were judged, as they are listed.
        let mut seqs = f.calls.clone();
        seqs.sort_unstable();
        seqs.dedup();
        let mut tools: Vec<&str> = seqs
            .iter()
            .filter_map(|&seq| super::kept::tool_of(&ir.analysis, seq))
            .collect();
        tools.dedup();
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} |",
            f.severity,
            escape(f.kind.as_str()),
            code_cell(&ir.path),
            escape(&locs),
            code_cell(&ids),
            if tools.is_empty() {
                "—".to_owned()
            } else {
                escape(&tools.join(", "))
            },
            escape(&f.detail)
        )?;
    }
    writeln!(w)?;
    // The reader of a ticket has no mcpsift to ask: say what each kind means.
    for k in FindingKind::ALL {
        if selected.kinds.contains_key(k) {
            writeln!(
                w,
                "- **{}:** {}",
                escape(k.as_str()),
                escape(explain(Subject::Finding(*k)).meaning)
            )?;
        }
    }
    writeln!(w)?;
    Ok(())
}

fn write_inputs(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "## Inputs")?;
    writeln!(w)?;
    writeln!(
        w,
        "| input | format | status | exchanges | tools/call | outcomes |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|")?;
    for ir in &report.inputs {
        let status = match ir.status {
            Status::Ok if ir.analysis.problems.is_empty() && ir.analysis.notices.is_empty() => {
                "ok".to_owned()
            }
            Status::Ok if ir.analysis.problems.is_empty() => {
                format!("ok, {} note(s)", ir.analysis.notices.len())
            }
            Status::Ok => format!("ok, {} problem(s)", ir.analysis.problems.len()),
            Status::Error => format!("error: {}", ir.error.as_deref().unwrap_or("")),
        };
        let mut by: Vec<String> = Vec::new();
        for o in Outcome::ALL {
            let n = ir.analysis.outcome_count(*o);
            if n > 0 {
                by.push(format!("{n} {}", escape(o.as_str())));
            }
        }
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} |",
            code_cell(&ir.path),
            ir.format.as_str(),
            escape(&status),
            ir.analysis.exchanges,
            ir.analysis.call_count(),
            by.join(", ")
        )?;
    }
    writeln!(w)?;
    for (path, why) in report.skipped.iter().take(10) {
        writeln!(w, "Skipped {}: {}", code(path), escape(why))?;
        writeln!(w)?;
    }
    if report.skipped.len() > 10 {
        writeln!(
            w,
            "Skipped {} more files that are no input (all are listed with `--format jsonl`).",
            report.skipped.len() - 10
        )?;
        writeln!(w)?;
    }
    Ok(())
}

/// The call's wire story as table rows: (time, what).
fn timeline_rows(c: &Call) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let tool = c.tool.as_deref().unwrap_or("?");
    match &c.timeline {
        Some(t) => {
            rows.push((
                time(t.request_ts),
                format!(
                    "→ {} carrying tools/call id {} ({})",
                    code_cell(&t.request_line),
                    code_cell(&c.id.to_string()),
                    escape(tool)
                ),
            ));
            match t.status {
                None => rows.push((
                    time(t.end_ts),
                    match &t.recorder_note {
                        Some(n) => format!(
                            "no HTTP response recorded; the recorder says: {}",
                            escape(n)
                        ),
                        None => "no HTTP response recorded".to_owned(),
                    },
                )),
                Some(s) => {
                    rows.push((
                        time(t.response_ts),
                        format!(
                            "← HTTP {s}, Content-Type {}",
                            t.content_type
                                .as_deref()
                                .map(code_cell)
                                .unwrap_or_else(|| "(none)".to_owned())
                        ),
                    ));
                    for (i, e) in t.events.iter().enumerate() {
                        rows.push((
                            time(e.ts),
                            format!(
                                "SSE event {} {}{}: {}",
                                i + 1,
                                code_cell(&e.event),
                                e.id.as_deref()
                                    .map(|id| format!(" id {}", code_cell(id)))
                                    .unwrap_or_default(),
                                escape(&e.what)
                            ),
                        ));
                    }
                    if t.events_total > t.events.len() {
                        rows.push((
                            "—".to_owned(),
                            format!("… {} more SSE events", t.events_total - t.events.len()),
                        ));
                    }
                    rows.push((time(t.end_ts), format!("response ended: {}", ended(t.end))));
                }
            }
        }
        None => {
            rows.push((
                time(c.started_at),
                format!(
                    "→ tools/call id {} ({}) on {}",
                    code_cell(&c.id.to_string()),
                    escape(tool),
                    escape(&c.scope)
                ),
            ));
            let ev = &c.verdict.evidence;
            let end = if c.verdict.outcome.is_non_terminal() {
                format!("no response for this id (ended: {})", ended(ev.end))
            } else if let Some(status) = ev.http_statuses.last() {
                // A success keeps no timeline; its evidence still has the status.
                format!(
                    "← HTTP {status}, Content-Type {}, with the response for this id",
                    ev.content_type
                        .as_deref()
                        .map(code_cell)
                        .unwrap_or_else(|| "(none)".to_owned())
                )
            } else {
                "← response with this id".to_owned()
            };
            rows.push((time(c.ended_at), end));
        }
    }
    rows
}

fn write_call(
    ir: &InputReport,
    c: &Call,
    findings: &[&Finding],
    w: &mut dyn Write,
) -> io::Result<()> {
    let ev = &c.verdict.evidence;
    let o = c.verdict.outcome;
    writeln!(
        w,
        "### {} — {} id {}",
        escape(o.as_str()),
        escape(c.tool.as_deref().unwrap_or("?")),
        code(&c.id.to_string())
    )?;
    writeln!(w)?;
    let label = if o.is_success() {
        "Outcome"
    } else {
        "What failed"
    };
    writeln!(
        w,
        "- **{label}:** the {} layer: {}.",
        c.verdict.layer,
        escape(o.summary())
    )?;
    writeln!(w, "- **Where:** {}", where_(ir, &c.locator))?;
    if let Some(t) = c.timeline.as_ref().and_then(|t| t.tcp) {
        let h2 = t
            .h2_stream
            .map(|h| format!(", HTTP/2 stream {h}"))
            .unwrap_or_default();
        let tls = t
            .tls
            .map(|s| {
                format!(
                    " ({}, {}, decrypted: load the same key log in Wireshark)",
                    s.version.as_str(),
                    s.cipher_suite
                )
            })
            .unwrap_or_default();
        writeln!(
            w,
            "- **In Wireshark:** TCP stream {}{h2}{tls}, response ended at frame {}; filter {}",
            t.stream,
            t.end_frame,
            code(&super::jsonl::wireshark_filter(t))
        )?;
    }
    let mut context = vec![format!("scope {}", code(&c.scope))];
    if let Some(v) = &c.protocol_version {
        context.push(format!("protocol {}", code(v)));
    }
    if let Some(v) = &c.client {
        context.push(format!("client {}", code(v)));
    }
    if let Some(v) = &c.server {
        context.push(format!("server {}", code(v)));
    }
    writeln!(w, "- **Context:** {}", context.join(", "))?;
    if o != Outcome::ToolSuccess || c.post_count > 1 {
        writeln!(w, "- **Retry:** {}", escape(&advice::retry(c)))?;
    }
    if !findings.is_empty() {
        let fs: Vec<String> = findings
            .iter()
            .map(|f| format!("{} ({})", escape(f.kind.as_str()), f.severity))
            .collect();
        writeln!(w, "- **Findings:** {}", fs.join(", "))?;
    }
    writeln!(
        w,
        "- **What it means:** {}",
        escape(explain(Subject::Outcome(o)).meaning)
    )?;
    writeln!(w)?;
    writeln!(w, "| time | what |")?;
    writeln!(w, "|---|---|")?;
    for (t, what) in timeline_rows(c) {
        writeln!(w, "| {} | {} |", escape(&t), what)?;
    }
    writeln!(w)?;
    let mut facts: Vec<String> = vec![format!("JSON-RPC id {}", code(&c.id.to_string()))];
    if !ev.http_statuses.is_empty() {
        let s: Vec<String> = ev.http_statuses.iter().map(u16::to_string).collect();
        facts.push(format!("HTTP {}", s.join(", ")));
    }
    if let Some(code_) = ev.jsonrpc_code {
        facts.push(format!("error code {code_}"));
    }
    if let Some(rt) = &ev.result_type {
        facts.push(format!("resultType {}", code(rt)));
    }
    if let Some(b) = ev.is_error {
        facts.push(format!("isError {b}"));
    }
    if ev.sse_events > 0 {
        facts.push(plural(ev.sse_events, "SSE event", "SSE events"));
    }
    facts.push(format!("response {}", ended(ev.end)));
    if c.post_count > 1 {
        facts.push(format!(
            "attempt {}, {}",
            c.post_count,
            origin(c.retry_origin)
        ));
    }
    if c.cancelled {
        facts.push("cancelled by the client".to_owned());
    }
    writeln!(w, "**Evidence:** {}.", facts.join(", "))?;
    writeln!(w)?;
    if let Some(m) = &ev.error_message {
        let label = if ev.jsonrpc_code.is_some() {
            "Error message"
        } else {
            "Tool said"
        };
        writeln!(w, "- **{label}:** {}", escape(m))?;
    }
    for n in &ev.notes {
        writeln!(w, "- {}", escape(n))?;
    }
    if ev.error_message.is_some() || !ev.notes.is_empty() {
        writeln!(w)?;
    }
    if let Some(x) = &ev.excerpt {
        let lang = if serde_json::from_str::<serde_json::Value>(x).is_ok() {
            "json"
        } else {
            "text"
        };
        writeln!(w, "{}", fenced(x, lang))?;
        writeln!(w)?;
    }
    Ok(())
}

/// Runs `f` on a fresh buffer: one section of the report as text.
fn section(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<String> {
    let mut buf = Vec::new();
    f(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The header a ticket needs: what made the report, from which command, when.
fn header(run: &RunInfo, report: &Report) -> String {
    let mut s = format!("- **Tool:** mcpsift {}\n", env!("CARGO_PKG_VERSION"));
    if !run.command.is_empty() {
        s.push_str(&format!("- **Command:** {}\n", code(&run.command)));
    }
    let inputs: Vec<String> = report
        .inputs
        .iter()
        .take(5)
        .map(|i| code(&i.path))
        .collect();
    let more = report.inputs.len().saturating_sub(5);
    s.push_str(&format!(
        "- **Inputs:** {}{}\n",
        if inputs.is_empty() {
            "none".to_owned()
        } else {
            inputs.join(", ")
        },
        if more > 0 {
            format!(" and {more} more (listed under Inputs)")
        } else {
            String::new()
        }
    ));
    if let Some(t) = run.generated {
        s.push_str(&format!("- **Generated:** {t}\n"));
    }
    s.push('\n');
    s
}

pub fn write(report: &Report, opts: &HumanOptions, w: &mut dyn Write) -> io::Result<()> {
    // Built as whole sections, so a length cap can leave out sections, never half one.
    let mut head = String::from("# mcpsift report\n\n");
    if let Some(run) = &opts.run {
        head.push_str(&header(run, report));
    }
    // Each input's first `kept::SHOWN` calls that need attention, and how many
    // more; the first `MAX_SECTIONS` of the run get sections.
    let listed: Vec<(Vec<&Call>, u64)> = report
        .inputs
        .iter()
        .map(|ir| super::kept::attention(&ir.analysis))
        .collect();
    let mut sectioned: Vec<std::collections::HashSet<usize>> = Vec::new();
    let mut left = MAX_SECTIONS;
    for (calls, _) in &listed {
        let take = calls.len().min(left);
        sectioned.push(calls[..take].iter().map(|c| c.seq).collect());
        left -= take;
    }
    // Held or read back from disk: a run that keeps only the calls its reports
    // show streams its findings too. The first `MAX_FINDINGS` are listed, and
    // those that name a call with a section.
    let selected = super::shown::select(report, MAX_FINDINGS, &|i, f| {
        f.calls.iter().any(|s| sectioned[i].contains(s))
    })?;
    let all_findings = &selected.per_input;
    head.push_str(&format!(
        "**Verdict:** {}\n\n",
        verdict_line(report, &selected)
    ));
    if !report.filters.is_empty() {
        head.push_str(&format!("Filtered: {}.\n\n", escape(&report.filters)));
    }
    if report.baseline_accepted > 0 {
        head.push_str(&format!(
            "{} accepted by the baseline and not shown.\n\n",
            plural(report.baseline_accepted, "finding", "findings")
        ));
    }
    let findings = section(|w| write_findings(report, &selected, w))?;
    let inputs = section(|w| write_inputs(report, w))?;
    // Sections for the first calls that need attention, of every input's first
    // `kept::SHOWN`; the others are counted.
    let mut attention: Vec<(&InputReport, &[Finding], &Call)> = Vec::new();
    let mut unlisted = 0;
    for ((ir, fs), (calls, more)) in report.inputs.iter().zip(all_findings).zip(&listed) {
        attention.extend(calls.iter().map(|c| (ir, fs.as_slice(), *c)));
        unlisted += *more as usize;
    }
    let mut calls_head = String::new();
    let mut calls: Vec<String> = Vec::new();
    if !attention.is_empty() {
        calls_head.push_str("## Calls that need attention\n\n");
        if attention.len() + unlisted > MAX_SECTIONS {
            calls_head.push_str(&format!(
                "The first {MAX_SECTIONS} of {} calls; narrow with `--tool`, `--outcome`, `--finding` or `--scope` to see the others.\n\n",
                attention.len() + unlisted
            ));
        }
        for (ir, all, c) in attention.into_iter().take(MAX_SECTIONS) {
            let fs: Vec<&Finding> = all.iter().filter(|f| f.calls.contains(&c.seq)).collect();
            calls.push(section(|w| write_call(ir, c, &fs, w))?);
        }
    }
    let successes = if opts.all {
        section(|w| write_successes(report, w))?
    } else {
        String::new()
    };

    let full = Kept {
        findings: !findings.is_empty(),
        inputs: true,
        calls: calls.len(),
        successes: !successes.is_empty(),
    };
    let mut kept = full.clone();
    if let Some(max) = opts.max_chars {
        let len = |k: &Kept| {
            let mut n = head.chars().count() + cut_note(k, &full, max).chars().count();
            if k.findings {
                n += findings.chars().count();
            }
            if k.inputs {
                n += inputs.chars().count();
            }
            if k.calls > 0 {
                n += calls_head.chars().count();
                n += calls[..k.calls]
                    .iter()
                    .map(|c| c.chars().count())
                    .sum::<usize>();
            }
            if k.successes {
                n += successes.chars().count();
            }
            n
        };
        // Least needed first: successes, then calls from the last, the inputs table,
        // the findings. The head (verdict) always stays.
        while len(&kept) > max {
            if kept.successes {
                kept.successes = false;
            } else if kept.calls > 0 {
                kept.calls -= 1;
            } else if kept.inputs {
                kept.inputs = false;
            } else if kept.findings {
                kept.findings = false;
            } else {
                break;
            }
        }
        head.push_str(&cut_note(&kept, &full, max));
    }
    w.write_all(head.as_bytes())?;
    if kept.findings {
        w.write_all(findings.as_bytes())?;
    }
    if kept.inputs {
        w.write_all(inputs.as_bytes())?;
    }
    if kept.calls > 0 {
        w.write_all(calls_head.as_bytes())?;
        for c in &calls[..kept.calls] {
            w.write_all(c.as_bytes())?;
        }
    }
    if kept.successes {
        w.write_all(successes.as_bytes())?;
    }
    Ok(())
}

/// Which sections a length cap left in.
#[derive(Clone)]
struct Kept {
    findings: bool,
    inputs: bool,
    /// How many call sections, from the first.
    calls: usize,
    successes: bool,
}

/// What a length cap left out of `full`, in words; empty when nothing was.
fn cut_note(k: &Kept, full: &Kept, max: usize) -> String {
    let mut out = Vec::new();
    if full.findings && !k.findings {
        out.push("the findings table".to_owned());
    }
    if full.inputs && !k.inputs {
        out.push("the inputs table".to_owned());
    }
    if k.calls == 0 && full.calls > 0 {
        out.push(format!(
            "all {}",
            plural(full.calls, "call section", "call sections")
        ));
    } else if k.calls < full.calls {
        out.push(format!(
            "the last {} of {} call sections",
            full.calls - k.calls,
            full.calls
        ));
    }
    if full.successes && !k.successes {
        out.push("the table of successful calls".to_owned());
    }
    if out.is_empty() {
        return String::new();
    }
    format!(
        "**Left out** to stay under {max} characters: {}. The JSONL output (`--format jsonl`) has everything.\n\n",
        out.join(", ")
    )
}

fn write_successes(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let ok: Vec<(&InputReport, &Call)> = report
        .inputs
        .iter()
        .flat_map(|i| i.analysis.calls.iter().map(move |c| (i, c)))
        .filter(|(_, c)| !needs_attention(c))
        .collect();
    if ok.is_empty() {
        return Ok(());
    }
    writeln!(w, "## Successful calls")?;
    writeln!(w)?;
    writeln!(w, "| input | where | tool | id | HTTP | started |")?;
    writeln!(w, "|---|---|---|---|---|---|")?;
    for (ir, c) in ok {
        let s: Vec<String> = c
            .verdict
            .evidence
            .http_statuses
            .iter()
            .map(u16::to_string)
            .collect();
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} |",
            code_cell(&ir.path),
            escape(&c.locator.to_string()),
            escape(c.tool.as_deref().unwrap_or("?")),
            code_cell(&c.id.to_string()),
            if s.is_empty() {
                "—".to_owned()
            } else {
                s.join(", ")
            },
            escape(&time(c.started_at))
        )?;
    }
    writeln!(w)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup() {
        assert_eq!(escape("a|b"), "a\\|b");
        assert_eq!(escape("*x* _y_ `z`"), "\\*x\\* \\_y\\_ \\`z\\`");
        assert_eq!(escape("<script>"), "\\<script\\>");
        assert_eq!(escape("[l](http://x)"), "\\[l\\](http://x)");
        assert_eq!(
            escape("$x$ ~~s~~ @team &amp;"),
            "\\$x\\$ \\~\\~s\\~\\~ \\@team \\&amp;"
        );
        assert_eq!(escape("# h"), "\\# h");
        assert_eq!(escape("- item"), "\\- item");
        assert_eq!(escape("1. one"), "1\\. one");
        assert_eq!(escape("a\nb\r\tc"), "a b  c");
        assert_eq!(escape("mid-word # and 1. stay"), "mid-word # and 1. stay");
        assert_eq!(escape("\\"), "\\\\");
        assert_eq!(escape("bell\u{7}"), "bell\u{fffd}");
    }

    #[test]
    fn code_spans_outgrow_backticks() {
        assert_eq!(code("a"), "` a `");
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(code("``x"), "``` ``x ```");
        assert_eq!(code("a\nb"), "` a b `");
        assert_eq!(code_cell("a|b"), "` a\\|b `");
    }

    #[test]
    fn fences_outgrow_backticks() {
        assert_eq!(fenced("x", "json"), "```json\nx\n```");
        assert_eq!(fenced("```", ""), "````\n```\n````");
    }
}
