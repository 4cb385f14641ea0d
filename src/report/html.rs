//! The HTML report: one self-contained page (inline CSS and JS, no network) that a
//! person opens from a ticket. The page is written with maud, which escapes every
//! interpolated string; the report it shows has been through the shared filter,
//! baseline and redaction passes like every other format.
//!
//! The server side renders what reads without JavaScript (verdict, counts, findings,
//! per-input sections with each call's detail); the calls table and the per-scope
//! timelines are drawn by `html/report.js` from data embedded as JSON. Caps on rows,
//! details and findings keep a whole archive's report to a few megabytes.

use super::advice;
use super::kept;
use crate::batch::{InputReport, Report, Status};
use crate::correlate::rules;
use crate::correlate::timeline::Carried;
use crate::correlate::{Call, Finding, RetryOrigin};
use crate::explain;
use crate::model::{End, FindingKind, Locator, Outcome, Severity, Timestamp};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};

const CSS: &str = include_str!("html/report.css");
const JS: &str = include_str!("html/report.js");

/// Calls listed in the embedded data at most: about 300 bytes each, so the page stays
/// under ~8 MB however large the input. Calls that need attention are kept first.
pub const MAX_ROWS: usize = 25_000;
/// Calls whose full detail (evidence, timeline, advice) is written into the page.
pub const MAX_DETAILS: usize = 300;
/// Scopes per input that get a timeline (each draws at most 300 calls).
pub const MAX_SCOPES: usize = 200;
/// Findings listed at most; the counts in the header cover all of them.
pub const MAX_FINDINGS: usize = 2_000;

/// What the page says about the run itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub version: String,
    /// The command line, redacted.
    pub command_line: String,
    /// When the page was written (RFC 3339).
    pub generated: String,
}

impl Meta {
    /// This process: its version, its arguments and the time now, or the time in
    /// `SOURCE_DATE_EPOCH` so snapshots and reproducible builds get a fixed page.
    pub fn current() -> Meta {
        let secs = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() as i64)
                    .unwrap_or(0)
            });
        Meta {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            command_line: command_line(std::env::args()),
            generated: Timestamp::from_parts(secs, 0).to_string(),
        }
    }
}

/// Option names whose value is a secret (a key log, a token): the value is dropped.
const SECRET_FLAG_WORDS: &[&str] = &["keylog", "secret", "token", "password", "cookie", "auth"];

/// The command line in words, each argument through the shared text redaction and
/// the value of any secret-looking option dropped. Always redacted: the command
/// line is no evidence, so `--no-redact` has no reason to show it raw.
pub fn command_line(args: impl IntoIterator<Item = String>) -> String {
    let r = super::Redactor::default();
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for (i, a) in args.into_iter().enumerate() {
        let arg = if i == 0 {
            // The program as named, without the directory it was run from.
            a.rsplit('/').next().unwrap_or(&a).to_owned()
        } else {
            a
        };
        if hide_next {
            hide_next = false;
            out.push(super::redact::MARK.to_owned());
            continue;
        }
        let secret_flag = |name: &str| {
            let n = name.to_ascii_lowercase();
            n.starts_with("--") && SECRET_FLAG_WORDS.iter().any(|w| n.contains(w))
        };
        let text = match arg.split_once('=') {
            Some((name, _)) if secret_flag(name) => format!("{name}={}", super::redact::MARK),
            _ => {
                hide_next = secret_flag(&arg);
                r.text(&arg).into_owned()
            }
        };
        out.push(quote(&text));
    }
    out.join(" ")
}

/// Shell-style quoting, only where needed to read the command back.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+[]".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Writes the page for this process (`Meta::current`).
pub fn write(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    write_with(report, &Meta::current(), w)
}

/// Writes the page with the given run facts (tests fix them).
pub fn write_with(report: &Report, meta: &Meta, w: &mut dyn Write) -> io::Result<()> {
    // Held or read back from disk where a lean run moved them: the first
    // `MAX_FINDINGS`, and those that name a call the page lists, are kept.
    let held: Vec<std::collections::HashSet<usize>> = report
        .inputs
        .iter()
        .map(|ir| ir.analysis.calls.iter().map(|c| c.seq).collect())
        .collect();
    let selected = super::shown::select(report, MAX_FINDINGS, &|i, f| {
        f.calls.iter().any(|s| held[i].contains(s))
    })?;
    let page = Page::new(report, &selected);
    w.write_all(page.render(meta).into_string().as_bytes())
}

/// The anchor of a call: its input's index and its `seq`.
fn key(input: usize, seq: usize) -> String {
    format!("c-{input}-{seq}")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Everything the page shows, indexed once.
struct Page<'a> {
    report: &'a Report,
    /// The findings listed and those naming a call listed, with the counts of all.
    selected: &'a super::shown::Selected,
    /// Per input: the findings naming each call `seq`.
    by_call: Vec<HashMap<usize, Vec<&'a Finding>>>,
    /// `(input, index in its calls)` of the calls listed, in input order.
    rows: Vec<(usize, usize)>,
    /// Keys of the calls whose detail is written.
    details: BTreeSet<(usize, usize)>,
    calls_total: usize,
    /// Per input: its scopes (each known by its first call's `seq`, the scope's key
    /// in the data), kept as calls were judged or counted from its calls.
    scopes: Vec<kept::Scopes<'a>>,
    /// The earliest time in the report: the data gives times as milliseconds after it.
    base: Option<Timestamp>,
}

fn needs_attention(c: &Call) -> bool {
    super::markdown::needs_attention(c)
}

impl<'a> Page<'a> {
    fn new(report: &'a Report, selected: &'a super::shown::Selected) -> Page<'a> {
        let by_call = selected
            .per_input
            .iter()
            .map(|fs| {
                let mut m: HashMap<usize, Vec<&Finding>> = HashMap::new();
                for f in fs.iter() {
                    for &s in &f.calls {
                        m.entry(s).or_default().push(f);
                    }
                }
                m
            })
            .collect();
        let all: Vec<(usize, usize)> = report
            .inputs
            .iter()
            .enumerate()
            .flat_map(|(i, ir)| (0..ir.analysis.calls.len()).map(move |j| (i, j)))
            .collect();
        let call = |&(i, j): &(usize, usize)| &report.inputs[i].analysis.calls[j];
        // Attention first, then successes, each in input order, up to the caps.
        let (attention, ok): (Vec<_>, Vec<_>) = all.iter().partition(|k| needs_attention(call(k)));
        let mut rows: Vec<(usize, usize)> = attention
            .iter()
            .chain(ok.iter())
            .take(MAX_ROWS)
            .copied()
            .collect();
        let details: BTreeSet<(usize, usize)> = rows.iter().take(MAX_DETAILS).copied().collect();
        rows.sort_unstable();
        let base = report
            .inputs
            .iter()
            .filter_map(|i| kept::earliest(&i.analysis))
            .min();
        let scopes = report
            .inputs
            .iter()
            .map(|ir| kept::scopes(&ir.analysis))
            .collect();
        Page {
            report,
            selected,
            by_call,
            scopes,
            rows,
            details,
            calls_total: report
                .inputs
                .iter()
                .map(|i| i.analysis.call_count() as usize)
                .sum(),
            base,
        }
    }

    /// Calls of the run with outcome `o`, kept or counted.
    fn outcome_count(&self, o: Outcome) -> usize {
        self.report
            .inputs
            .iter()
            .map(|i| i.analysis.outcome_count(o) as usize)
            .sum()
    }

    fn call(&self, i: usize, j: usize) -> &'a Call {
        &self.report.inputs[i].analysis.calls[j]
    }

    fn findings_of(&self, i: usize, seq: usize) -> &[&'a Finding] {
        self.by_call[i].get(&seq).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Milliseconds after `base`, to the microsecond.
    fn ms(&self, t: Option<Timestamp>) -> Option<f64> {
        let (t, b) = (t?, self.base?);
        Some(((t.0 - b.0) / 1_000) as f64 / 1_000.0)
    }

    fn render(&self, meta: &Meta) -> Markup {
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    // No network: nothing on the page may load from anywhere.
                    meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";
                    title { "mcpsift report" }
                    style { (PreEscaped(CSS)) }
                }
                body {
                    (self.header(meta))
                    (self.findings_section())
                    (self.calls_section())
                    (self.inputs_section())
                    (self.glossary())
                    pre id="selftest" hidden { "not run" }
                    script type="application/json" id="mcpsift-data" { (PreEscaped(self.data_json())) }
                    script { (PreEscaped(JS)) }
                }
            }
        }
    }

    fn verdict(&self) -> String {
        let calls = self.calls_total;
        let failing: usize = Outcome::ALL
            .iter()
            .filter(|o| !o.is_success())
            .map(|o| self.outcome_count(*o))
            .sum();
        let findings = self.selected.counts.total() as usize;
        let mut s = if calls == 0 {
            format!(
                "No tools/call in {}.",
                plural(self.report.inputs.len(), "input", "inputs")
            )
        } else if failing == 0 {
            format!(
                "All {} succeeded.",
                plural(calls, "tools/call", "tools/call")
            )
        } else {
            let by: Vec<String> = Outcome::ALL
                .iter()
                .filter(|o| !o.is_success())
                .filter_map(|o| {
                    let n = self.outcome_count(*o);
                    (n > 0).then(|| format!("{n} {o}"))
                })
                .collect();
            format!(
                "{failing} of {} did not succeed ({}).",
                plural(calls, "tools/call", "tools/call"),
                by.join(", ")
            )
        };
        match &self.selected.worst {
            None => s.push_str(" No findings."),
            Some(worst) => s.push_str(&format!(
                " {}; the worst is {} ({}): {}.",
                plural(findings, "finding", "findings"),
                worst.kind,
                worst.severity,
                worst.detail.trim_end_matches('.')
            )),
        }
        let unreadable = self
            .report
            .inputs
            .iter()
            .filter(|i| i.status == Status::Error)
            .count();
        if unreadable > 0 {
            s.push_str(&format!(
                " {} could not be read.",
                plural(unreadable, "input", "inputs")
            ));
        }
        s
    }

    fn header(&self, meta: &Meta) -> Markup {
        let outcomes: Vec<(Outcome, usize)> = Outcome::ALL
            .iter()
            .map(|o| (*o, self.outcome_count(*o)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let kinds: Vec<(FindingKind, Severity, usize)> = FindingKind::ALL
            .iter()
            .filter_map(|k| {
                let (worst, n) = self.selected.kinds.get(k)?;
                Some((*k, *worst, *n as usize))
            })
            .collect();
        let worst = self.selected.kinds.values().map(|(s, _)| *s).max();
        let tone = match worst {
            Some(Severity::High) => "bad",
            Some(Severity::Medium) => "warn",
            _ if outcomes.iter().any(|(o, _)| !o.is_success()) => "warn",
            _ => "good",
        };
        html! {
            header {
                h1 { "mcpsift report" }
                p id="verdict" class={"verdict " (tone)} { (self.verdict()) }
                @if !self.report.filters.is_empty() {
                    p class="note" { "Filtered: " (self.report.filters) "." }
                }
                @if self.report.baseline_accepted > 0 {
                    p class="note" { (plural(self.report.baseline_accepted, "finding", "findings")) " accepted by the baseline and not shown." }
                }
                div class="counts" {
                    span class="label" { "Outcomes" }
                    @for (o, n) in &outcomes {
                        a class={"chip o-" (o)} href={"#filter=outcome:" (o) "&ok=1"} title=(o.summary()) { (o) " " b { (n) } }
                    }
                    @if outcomes.is_empty() { span class="chip" { "no tools/call" } }
                }
                div class="counts" {
                    span class="label" { "Findings" }
                    @for (k, sev, n) in &kinds {
                        a class={"chip s-" (sev)} href={"#filter=finding:" (k) "&ok=1"} title=(rules::doc(*k).summary) { (k) " " b { (n) } }
                    }
                    @if kinds.is_empty() { span class="chip" { "none" } }
                }
                table class="meta" {
                    tr { th { "inputs" } td {
                        @for (i, ir) in self.report.inputs.iter().enumerate() {
                            @if i > 0 { ", " }
                            a href={"#input-" (i)} { code { (ir.path) } } " (" (ir.format.as_str()) ")"
                        }
                        @if !self.report.skipped.is_empty() { "; " (plural(self.report.skipped.len(), "file", "files")) " skipped" }
                    } }
                    tr { th { "mcpsift" } td { (meta.version) } }
                    tr { th { "command" } td { code id="command-line" { (meta.command_line) } } }
                    tr { th { "generated" } td { (meta.generated) } }
                }
            }
        }
    }

    fn findings_section(&self) -> Markup {
        // Most severe first; within one severity, the input's order.
        let all: Vec<(usize, &InputReport, &Finding)> = self
            .selected
            .listed(MAX_FINDINGS)
            .into_iter()
            .map(|(i, f)| (i, &self.report.inputs[i], f))
            .collect();
        if all.is_empty() {
            return html! {};
        }
        let total = self.selected.counts.total() as usize;
        html! {
            section id="findings" {
                h2 { "Findings" }
                @if total > MAX_FINDINGS {
                    p class="note" { "The first " (MAX_FINDINGS) " of " (total) " findings; narrow with --finding, --tool or --scope to see the others." }
                }
                table class="findings" {
                    thead { tr { th { "severity" } th { "finding" } th { "calls" } th { "input" } th { "scope" } th { "detail" } } }
                    tbody {
                        @for (i, ir, f) in all.into_iter().take(MAX_FINDINGS) {
                            tr class={"finding s-" (f.severity)} data-kind=(f.kind) {
                                td { span class={"sev s-" (f.severity)} { (f.severity) } }
                                td { a href={"#kind-" (f.kind)} title=(rules::doc(f.kind).summary) { (f.kind) } }
                                td {
                                    @for (n, (seq, loc)) in f.calls.iter().zip(&f.locators).enumerate() {
                                        @if n > 0 { " → " }
                                        a href={"#" (key(i, *seq))} { "id " (f.ids.get(n).map(|x| x.to_string()).unwrap_or_default()) " (" (loc) ")" }
                                    }
                                    @if f.calls.is_empty() {
                                        @for (n, loc) in f.locators.iter().enumerate() {
                                            @if n > 0 { ", " } (loc)
                                        }
                                    }
                                }
                                td { code { (ir.path) } }
                                td { code { (f.scope) } }
                                td { (f.detail) }
                            }
                        }
                    }
                }
            }
        }
    }

    fn calls_section(&self) -> Markup {
        html! {
            section id="calls" {
                h2 { "Calls" }
                @if self.rows.len() < self.calls_total {
                    p class="note" id="rows-capped" {
                        "This page lists " (self.rows.len()) " of " (self.calls_total)
                        " calls (every call that needs attention comes first); the counts above cover all of them. Narrow with --outcome, --tool or --scope, or use --format jsonl, to see the rest."
                    }
                }
                div class="controls" id="controls" {}
                table class="calls" id="calls-table" {
                    thead { tr {
                        th data-col="n" { "#" }
                        th data-col="outcome" { "outcome" }
                        th data-col="tool" { "tool" }
                        th data-col="id" { "id" }
                        th data-col="http" { "HTTP" }
                        th data-col="findings" { "findings" }
                        th data-col="start" { "started" }
                        th data-col="dur" { "took" }
                        th data-col="scope" { "scope" }
                        th data-col="input" { "input" }
                        th data-col="loc" { "where" }
                    } }
                    tbody id="calls-body" {
                        tr { td colspan="11" { "The calls table needs JavaScript; every call's detail is below." } }
                    }
                }
                div class="pager" id="pager" {}
            }
        }
    }

    fn inputs_section(&self) -> Markup {
        // A report over many inputs starts folded, so it opens fast and reads as a list.
        let open = self.report.inputs.len() == 1;
        html! {
            section id="inputs" {
                h2 { "Inputs, timelines and call details" }
                @for (i, ir) in self.report.inputs.iter().enumerate() {
                    (self.input(i, ir, open))
                }
                @if !self.report.skipped.is_empty() {
                    details class="skipped" {
                        summary { (plural(self.report.skipped.len(), "file was", "files were")) " skipped" }
                        ul { @for (p, why) in self.report.skipped.iter().take(100) { li { code { (p) } ": " (why) } } }
                    }
                }
            }
        }
    }

    fn input(&self, i: usize, ir: &'a InputReport, open: bool) -> Markup {
        let a = &ir.analysis;
        // Each scope is known by its first call's `seq`, as in the data.
        let scopes = &self.scopes[i];
        let calls = a.call_count() as usize;
        let failing: u64 = Outcome::ALL
            .iter()
            .filter(|o| !o.is_success())
            .map(|o| a.outcome_count(*o))
            .sum();
        let details: Vec<usize> = (0..a.calls.len())
            .filter(|j| self.details.contains(&(i, *j)))
            .collect();
        let listed = self.rows.iter().filter(|(x, _)| *x == i).count();
        html! {
            details class="input" id={"input-" (i)} open[open] {
                summary {
                    code { (ir.path) } " — " (ir.format.as_str()) ", "
                    (plural(calls, "tools/call", "tools/call"))
                    @if failing > 0 { ", " span class="bad-text" { (failing) " did not succeed" } }
                    ", " (plural(self.selected.input_counts[i] as usize, "finding", "findings"))
                }
                @if let Some(e) = &ir.error { p class="error" { "Could not be read: " (e) } }
                @if !a.problems.is_empty() || !a.notices.is_empty() {
                    ul class="problems" {
                        @for p in a.problems.iter().take(20) { li class="problem" { (p.locator) ": " (p.message) } }
                        @for p in a.notices.iter().take(20) { li class="notice" { (p.locator) ": note: " (p.message) } }
                    }
                }
                @if scopes.total > MAX_SCOPES {
                    p class="note" { "Timelines of the first " (MAX_SCOPES) " of " (scopes.total) " scopes; narrow with --scope to see another." }
                }
                @for (scope, s, n) in scopes.listed.iter().take(MAX_SCOPES).copied() {
                    details class="scope" open[scopes.total <= 4] {
                        summary { "Timeline of " code { (scope) } " (" (plural(n, "call", "calls")) ")" }
                        div class="timeline" data-input=(i) data-scope=(s) {}
                    }
                }
                @if listed < calls {
                    p class="note" { "The page lists " (listed) " of this input's " (calls) " calls (size cap)." }
                }
                @if !details.is_empty() {
                    h3 { "Call details" }
                    @if details.len() < listed {
                        p class="note" { "Details of " (details.len()) " calls are written out (those that need attention first); the table lists the others." }
                    }
                    @for j in details { (self.detail(i, ir, &a.calls[j])) }
                }
            }
        }
    }

    fn detail(&self, i: usize, ir: &'a InputReport, c: &'a Call) -> Markup {
        let o = c.verdict.outcome;
        let ev = &c.verdict.evidence;
        let fs = self.findings_of(i, c.seq);
        let e = explain::explain(explain::Subject::Outcome(o));
        // The attempt it repeats, when that call is of this input: kept, or (a lean
        // run keeps only the calls the page lists) known to have been judged there.
        let prev = c.previous.as_ref().and_then(|p| {
            let a = &ir.analysis;
            match a.calls.binary_search_by_key(&p.seq, |x| x.seq) {
                Ok(k) => Some((
                    p.seq,
                    &a.calls[k].id,
                    a.calls[k].verdict.outcome,
                    &a.calls[k].locator,
                )),
                Err(_) if kept::was_listed(a, p.seq) => Some((p.seq, &p.id, p.outcome, &p.locator)),
                Err(_) => None,
            }
        });
        let mut context = vec![format!("scope {}", c.scope)];
        for (label, v) in [
            ("protocol", &c.protocol_version),
            ("client", &c.client),
            ("server", &c.server),
        ] {
            if let Some(v) = v {
                context.push(format!("{label} {v}"));
            }
        }
        html! {
            details class={"call o-" (o)} id=(key(i, c.seq)) open[!o.is_success()] {
                summary {
                    span class={"badge o-" (o)} { (o) } " "
                    (c.tool.as_deref().unwrap_or("?")) " id " code { (c.id.to_string()) }
                    @for f in fs { " " span class={"sev s-" (f.severity)} { (f.kind) } }
                }
                dl {
                    dt { @if o.is_success() { "Outcome" } @else { "What failed" } }
                    dd { "the " (c.verdict.layer) " layer: " (o.summary()) ". " (e.meaning) }
                    dt { "Where" }
                    dd { (where_html(&ir.path, &c.locator)) }
                    dt { "Context" }
                    dd { (context.join(", ")) }
                    @if !o.is_success() || c.post_count > 1 {
                        dt { "Retry" }
                        dd class="advice" { (advice::retry(c)) }
                    }
                    @if let Some((seq, id, outcome, locator)) = prev {
                        dt { "Repeats" }
                        dd {
                            "attempt " (c.post_count) " (" (c.retry_origin.as_str()) ") of "
                            a href={"#" (key(i, seq))} { "id " (id.to_string()) } " (" (outcome) ", " (locator) ")"
                        }
                    }
                    @for f in fs {
                        dt { "Finding" }
                        dd {
                            span class={"sev s-" (f.severity)} { (f.severity) } " "
                            a href={"#kind-" (f.kind)} { (f.kind) } ": " (f.detail) " "
                            span class="why" { (rules::doc(f.kind).summary) }
                        }
                    }
                    @if !o.is_success() {
                        dt { "Next steps" }
                        dd { ul { @for n in e.next { li { (n) } } } }
                    }
                }
                table class="tl-rows" {
                    thead { tr { th { "time" } th { "what" } } }
                    tbody { @for (t, what) in timeline_rows(c) { tr { td { (t) } td { (what) } } } }
                }
                p class="evidence" { b { "Evidence: " } (facts(c).join(", ")) "." }
                @if let Some(m) = &ev.error_message {
                    p { b { @if ev.jsonrpc_code.is_some() { "Error message: " } @else { "Tool said: " } } (m) }
                }
                @if !ev.notes.is_empty() { ul class="notes" { @for n in &ev.notes { li { (n) } } } }
                @if let Some(x) = &ev.excerpt { pre class="excerpt" { (x) } }
            }
        }
    }

    fn glossary(&self) -> Markup {
        let outcomes: BTreeSet<Outcome> = Outcome::ALL
            .iter()
            .copied()
            .filter(|o| self.outcome_count(*o) > 0)
            .collect();
        let kinds: BTreeSet<FindingKind> = self.selected.kinds.keys().copied().collect();
        let subjects: Vec<explain::Subject> = outcomes
            .into_iter()
            .map(explain::Subject::Outcome)
            .chain(kinds.into_iter().map(explain::Subject::Finding))
            .collect();
        html! {
            section id="glossary" {
                h2 { "What the names mean" }
                p class="note" { "The same text as " code { "mcpsift explain NAME" } "." }
                @for s in subjects {
                    @let e = explain::explain(s);
                    @let id = match s { explain::Subject::Outcome(o) => format!("outcome-{o}"), explain::Subject::Finding(k) => format!("kind-{k}") };
                    details id=(id) class="explain" {
                        summary { b { (s.name()) } " — " (s.summary()) " (" (e.class) ")" }
                        p { (e.meaning) }
                        p class="note" { "Rule: " (e.rule) }
                        p { b { "Typical causes" } }
                        ul { @for x in e.causes { li { (x) } } }
                        p { b { "What to check next" } }
                        ul { @for x in e.next { li { (x) } } }
                    }
                }
            }
        }
    }

    /// The data the script draws the table and timelines from, with every `<`
    /// written as `\u003c` so no string can close the script element.
    fn data_json(&self) -> String {
        let rows: Vec<Row> = self.rows.iter().map(|&(i, j)| self.row(i, j)).collect();
        let data = Data {
            inputs: self.report.inputs.iter().map(|i| i.path.as_str()).collect(),
            calls_total: self.calls_total,
            timed: self.base.is_some(),
            rows,
        };
        serde_json::to_string(&data)
            .unwrap_or_else(|_| "{}".to_owned())
            .replace('<', "\\u003c")
    }

    fn row(&self, i: usize, j: usize) -> Row<'a> {
        let c = self.call(i, j);
        let ev = &c.verdict.evidence;
        let fs = self.findings_of(i, c.seq);
        let scope = self.scopes[i].of_call.get(j).copied().unwrap_or(0);
        let tl = c.timeline.as_ref().map(|t| {
            let mut final_seen = false;
            let call_id = format!("response id {} ", c.id);
            TimelineData {
                req: &t.request_line,
                rq: self.ms(t.request_ts),
                status: t.status,
                ct: t.content_type.as_deref(),
                rs: self.ms(t.response_ts),
                ev: t
                    .events
                    .iter()
                    .map(|e| {
                        let kind = if !final_seen && e.what.starts_with(&call_id) {
                            final_seen = true;
                            "final"
                        } else if e.what.starts_with("notification") {
                            "note"
                        } else if e.what.starts_with("empty data") {
                            "prime"
                        } else {
                            "other"
                        };
                        (self.ms(e.ts), kind, e.what.as_str())
                    })
                    .collect(),
                more: t.events_total.saturating_sub(t.events.len()),
                end: t.end.as_str(),
                et: self.ms(t.end_ts),
                note: t.recorder_note.as_deref(),
                res: t
                    .resumptions
                    .iter()
                    .map(|l| LegData {
                        rq: self.ms(l.request_ts),
                        status: l.status,
                        rs: self.ms(l.response_ts),
                        ev: l
                            .events
                            .iter()
                            .map(|(t, k)| (self.ms(*t), carried(*k)))
                            .collect(),
                        more: l.events_total.saturating_sub(l.events.len()),
                        end: l.end.as_str(),
                        et: self.ms(l.end_ts),
                    })
                    .collect(),
            }
        });
        Row {
            k: key(i, c.seq),
            i,
            sc: scope,
            scope: &c.scope,
            id: c.id.to_string(),
            tool: c.tool.as_deref().unwrap_or("?"),
            o: c.verdict.outcome.as_str(),
            http: &ev.http_statuses,
            ct: ev.content_type.as_deref(),
            t: self.ms(c.started_at),
            te: self.ms(c.ended_at),
            at: c.started_at.map(|t| t.to_string()),
            n: c.post_count,
            og: c.retry_origin.as_str(),
            prev: c.previous.as_ref().map(|p| key(i, p.seq)),
            f: fs
                .iter()
                .map(|f| (f.kind.as_str(), f.severity.as_str()))
                .collect(),
            end: ev.end.as_str(),
            cut: is_cut(c),
            sse: ev.sse_events,
            via: match ev.terminal_leg {
                Some(l) if l > 0 && c.retry_origin == RetryOrigin::Resumption => Some("resumption"),
                Some(l) if l > 0 => Some("stream"),
                _ => None,
            },
            leg: ev.terminal_leg.filter(|l| *l > 0),
            loc: c.locator.to_string(),
            d: self.details.contains(&(i, j)),
            tl,
        }
    }
}

/// The call's reply ended before its response, by someone's doing: a mark on the
/// timeline says where and by whom.
fn is_cut(c: &Call) -> bool {
    c.verdict.outcome.is_non_terminal() && c.verdict.evidence.end != End::Complete
}

#[derive(Serialize)]
struct Data<'a> {
    inputs: Vec<&'a str>,
    calls_total: usize,
    /// False when no call has a time: timelines then follow the input's order.
    timed: bool,
    rows: Vec<Row<'a>>,
}

/// One call as the script sees it; short names keep a large page small.
#[derive(Serialize)]
struct Row<'a> {
    k: String,
    i: usize,
    /// Index of the scope within its input (its first call's position).
    sc: usize,
    scope: &'a str,
    id: String,
    tool: &'a str,
    o: &'static str,
    http: &'a [u16],
    ct: Option<&'a str>,
    /// Start and end, in milliseconds after the report's first call.
    t: Option<f64>,
    te: Option<f64>,
    at: Option<String>,
    n: u32,
    og: &'static str,
    prev: Option<String>,
    f: Vec<(&'static str, &'static str)>,
    end: &'static str,
    cut: bool,
    sse: usize,
    /// The reply leg that carried the response, when a later one, and what it was:
    /// a `resumption` (GET with Last-Event-ID) or the legacy transport's `stream`.
    leg: Option<usize>,
    via: Option<&'static str>,
    loc: String,
    /// Its detail is written on the page.
    d: bool,
    tl: Option<TimelineData<'a>>,
}

#[derive(Serialize)]
struct TimelineData<'a> {
    req: &'a str,
    rq: Option<f64>,
    status: Option<u16>,
    ct: Option<&'a str>,
    rs: Option<f64>,
    /// (time, kind: final, note, prime or other, what it carried).
    ev: Vec<(Option<f64>, &'static str, &'a str)>,
    more: usize,
    end: &'static str,
    et: Option<f64>,
    note: Option<&'a str>,
    /// Later streams that resumed this one.
    res: Vec<LegData>,
}

/// A resumption leg, as the script draws it.
#[derive(Serialize)]
struct LegData {
    rq: Option<f64>,
    status: Option<u16>,
    rs: Option<f64>,
    ev: Vec<(Option<f64>, &'static str)>,
    more: usize,
    end: &'static str,
    et: Option<f64>,
}

/// The event kinds the script knows (the same words as a call's own events).
fn carried(k: Carried) -> &'static str {
    match k {
        Carried::Response => "final",
        Carried::Notification => "note",
        Carried::Empty => "prime",
        Carried::Other => "other",
    }
}

fn where_html(path: &str, loc: &Locator) -> Markup {
    html! {
        code { (path) } ", "
        @match loc {
            Locator::Input => { "the whole input" }
            Locator::Line { line } => { "line " (line) }
            Locator::Entry { entry } => { "HAR entry " (entry) " (0-based, in log.entries)" }
            Locator::Frames { request, response } => {
                @match response {
                    Some(r) => { "Wireshark frames " (request) " (request) and " (r) " (response)" }
                    None => { "Wireshark frame " (request) " (request)" }
                }
                "; display filter "
                code class="filter" {
                    "frame.number == " (request)
                    @if let Some(r) = response { " || frame.number == " (r) }
                }
            }
            Locator::TlsFrames { request, response, tcp_stream } => {
                @match response {
                    Some(r) => { "Wireshark frames " (request) " (request) and " (r) " (response)" }
                    None => { "Wireshark frame " (request) " (request)" }
                }
                ", decrypted from the TLS of TCP stream " (tcp_stream) "; display filter "
                code class="filter" {
                    "frame.number == " (request)
                    @if let Some(r) = response { " || frame.number == " (r) }
                }
            }
        }
    }
}

fn time(t: Option<Timestamp>) -> String {
    t.map(|t| t.to_string()).unwrap_or_else(|| "—".to_owned())
}

/// The call's wire story as (time, what) rows: the Markdown report's timeline, in
/// plain text for the template to escape.
fn timeline_rows(c: &Call) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let tool = c.tool.as_deref().unwrap_or("?");
    let ev = &c.verdict.evidence;
    match &c.timeline {
        Some(t) => {
            rows.push((
                time(t.request_ts),
                format!(
                    "→ {} carrying tools/call id {} ({tool})",
                    t.request_line, c.id
                ),
            ));
            match t.status {
                None => rows.push((
                    time(t.end_ts),
                    match &t.recorder_note {
                        Some(n) => format!("no HTTP response recorded; the recorder says: {n}"),
                        None => "no HTTP response recorded".to_owned(),
                    },
                )),
                Some(s) => {
                    rows.push((
                        time(t.response_ts),
                        format!(
                            "← HTTP {s}, Content-Type {}",
                            t.content_type.as_deref().unwrap_or("(none)")
                        ),
                    ));
                    for (n, e) in t.events.iter().enumerate() {
                        rows.push((
                            time(e.ts),
                            format!(
                                "SSE event {} {}{}: {}",
                                n + 1,
                                e.event,
                                e.id.as_deref()
                                    .map(|id| format!(" id {id}"))
                                    .unwrap_or_default(),
                                e.what
                            ),
                        ));
                    }
                    if t.events_total > t.events.len() {
                        rows.push((
                            "—".to_owned(),
                            format!("… {} more SSE events", t.events_total - t.events.len()),
                        ));
                    }
                    rows.push((
                        time(t.end_ts),
                        format!("response ended: {}", t.end.as_str()),
                    ));
                }
            }
            for (n, l) in t.resumptions.iter().enumerate() {
                rows.push((
                    time(l.request_ts),
                    format!(
                        "→ GET with Last-Event-ID: resumption {} of this stream",
                        n + 1
                    ),
                ));
                if let Some(s) = l.status {
                    rows.push((time(l.response_ts), format!("← HTTP {s}")));
                }
                for (ts, k) in &l.events {
                    let what = match k {
                        Carried::Response => "the response for this id",
                        Carried::Notification => "a notification",
                        Carried::Empty => "empty data (priming or keep-alive)",
                        Carried::Other => "data for another message",
                    };
                    rows.push((
                        time(*ts),
                        format!("SSE event on the resumed stream: {what}"),
                    ));
                }
                rows.push((
                    time(l.end_ts),
                    format!("resumed stream ended: {}", l.end.as_str()),
                ));
            }
            if ev.terminal_leg.is_some_and(|l| l > 0) && t.resumptions.is_empty() {
                rows.push((time(c.ended_at), later_leg(c)));
            }
        }
        None => {
            rows.push((
                time(c.started_at),
                format!("→ tools/call id {} ({tool}) on {}", c.id, c.scope),
            ));
            let end = if c.verdict.outcome.is_non_terminal() {
                format!("no response for this id (ended: {})", ev.end.as_str())
            } else if ev.terminal_leg.is_some_and(|l| l > 0) {
                later_leg(c)
            } else if let Some(status) = ev.http_statuses.last() {
                format!(
                    "← HTTP {status}, Content-Type {}, with the response for this id",
                    ev.content_type.as_deref().unwrap_or("(none)")
                )
            } else {
                "← response with this id".to_owned()
            };
            rows.push((time(c.ended_at), end));
        }
    }
    rows
}

/// The response came on a later leg: a resumption, or the legacy transport's stream.
fn later_leg(c: &Call) -> String {
    let ev = &c.verdict.evidence;
    let statuses: Vec<String> = ev.http_statuses.iter().map(u16::to_string).collect();
    if c.retry_origin == RetryOrigin::Resumption {
        format!(
            "← the response arrived on stream {} (a GET resuming with Last-Event-ID); HTTP {}",
            ev.terminal_leg.unwrap_or(0) + 1,
            statuses.join(", ")
        )
    } else {
        format!(
            "← the response arrived on the session's SSE stream (legacy HTTP+SSE: the POST is answered 202); HTTP {}",
            statuses.join(", ")
        )
    }
}

fn facts(c: &Call) -> Vec<String> {
    let ev = &c.verdict.evidence;
    let mut facts = vec![format!("JSON-RPC id {}", c.id)];
    if !ev.http_statuses.is_empty() {
        let s: Vec<String> = ev.http_statuses.iter().map(u16::to_string).collect();
        facts.push(format!("HTTP {}", s.join(", ")));
    }
    if let Some(ct) = &ev.content_type {
        facts.push(format!("Content-Type {ct}"));
    }
    if let Some(code) = ev.jsonrpc_code {
        facts.push(format!("error code {code}"));
    }
    if let Some(rt) = &ev.result_type {
        facts.push(format!("resultType {rt}"));
    }
    if let Some(b) = ev.is_error {
        facts.push(format!("isError {b}"));
    }
    if ev.sse_events > 0 {
        facts.push(plural(ev.sse_events, "SSE event", "SSE events"));
    }
    facts.push(format!("ended {}", ev.end.as_str()));
    if c.post_count > 1 {
        facts.push(format!(
            "attempt {} (retry origin {})",
            c.post_count,
            c.retry_origin.as_str()
        ));
    }
    if c.cancelled {
        facts.push("cancelled by the client".to_owned());
    }
    facts.push(format!("evidence: {}", c.evidence));
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_drops_secrets() {
        let args = [
            "/usr/bin/mcpsift",
            "analyze",
            "--tls-keylog",
            "/tmp/keys.log",
            "--auth-token=abc123",
            "a b.har",
            "Bearer sk-live-0123456789abcdefghij",
        ]
        .map(String::from);
        let line = command_line(args);
        assert!(
            line.starts_with(
                "mcpsift analyze --tls-keylog [REDACTED] --auth-token=[REDACTED] 'a b.har' "
            ),
            "{line}"
        );
        assert!(
            !line.contains("keys.log") && !line.contains("abc123"),
            "{line}"
        );
        assert!(!line.contains("sk-live-0123456789abcdefghij"), "{line}");
    }

    #[test]
    fn quoting_is_only_where_needed() {
        assert_eq!(quote("a.pcap"), "a.pcap");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }
}
