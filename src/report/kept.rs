//! What a run whose reports are the table, markdown and the HTML page keeps of its
//! calls: the calls those reports show (not `TOOL_SUCCESS`, or sent more than once),
//! whole, the first `SHOWN` of an input (with the page, the first `MAX_ROWS` of them
//! and the first `MAX_ROWS` others, from which it picks its rows), and of every
//! other call only its tool, by `seq` (a finding names the tools of the calls it
//! involves). The rest is counted as calls are judged (`Analysis::streamed`), the
//! page's scopes included, so an input's memory grows neither with its healthy calls
//! nor with the failed calls of a server that is down.

use super::filter::Filter;
use super::html::{MAX_ROWS, MAX_SCOPES};
use super::jsonl::Spool;
use super::markdown::needs_attention;
use super::redact::Redactor;
use crate::batch::Report;
use crate::config::SinkFactory;
use crate::correlate::{Analysis, Call, CallSink, Scope, Tally};
use crate::model::{Outcome, Timestamp};
use foldhash::HashMap;
use std::sync::Arc;

/// The tool of each call not kept, by `seq`: four bytes a call.
#[derive(Debug, Default)]
pub struct ToolsBySeq {
    by_seq: Vec<u32>,
    names: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

/// No tool known for this `seq`.
const NONE: u32 = u32::MAX;

/// Calls that need attention an input's table lists (and keeps), and the markdown
/// report draws its sections from; past it they are counted. A terminal of more
/// rows is read by no one, and `--format jsonl` lists them all.
pub const SHOWN: usize = 1_000;

/// With `--finding`, the calls that need attention an input keeps until its end,
/// when the findings say which of them stay (`narrow_input`): about 1 KB each.
/// Past it the calls the findings name are counted, not listed, and the input
/// says so; `--format jsonl` lists them all.
pub const NARROWING: usize = 20_000;

impl ToolsBySeq {
    fn add(&mut self, c: &Call) {
        let Some(tool) = &c.tool else {
            return;
        };
        let n = match self.index.get(tool) {
            Some(&n) => n,
            None => {
                let n = self.names.len() as u32;
                self.names.push(tool.clone());
                self.index.insert(tool.clone(), n);
                n
            }
        };
        if self.by_seq.len() <= c.seq {
            self.by_seq.resize(c.seq + 1, NONE);
        }
        self.by_seq[c.seq] = n;
    }

    /// Every tool name seen, in order of first call.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|s| &**s)
    }

    fn get(&self, seq: usize) -> Option<&str> {
        let n = *self.by_seq.get(seq)?;
        self.names.get(n as usize).map(|s| &**s)
    }
}

/// How many calls of an input a lean run keeps, by kind.
#[derive(Debug, Clone, Copy)]
struct Keep {
    /// Calls that need attention.
    attention: usize,
    /// Other calls (the HTML page lists them after those).
    others: usize,
    /// Whether the scopes are counted for the HTML page's timelines.
    scopes: bool,
    /// By `Outcome::ALL` position: whether a call of that outcome may be named by
    /// a finding of the kinds `--finding` keeps (`rules::may_name`); no other is
    /// kept. All, without `--finding`.
    may_be_named: [bool; Outcome::ALL.len()],
}

/// The sink of a lean run: counts every call, keeps those its reports show.
struct Kept {
    keep: Keep,
    /// The call filters of the run (`--tool`, `--outcome`, `--scope`): a call that
    /// does not match is neither kept nor counted, as `filter::apply` would drop it.
    filter: Option<Arc<Filter>>,
    filtered: Filtered,
    calls: Vec<Call>,
    /// How many of `calls` need attention.
    attention: usize,
    tools: ToolsBySeq,
    /// Calls that need attention past `keep.attention`.
    unlisted: u64,
    /// Calls that may be named, need no attention, and came past `keep.others`.
    others_dropped: u64,
    scopes: ScopeTally,
    earliest: Option<Timestamp>,
}

/// An input's scopes as calls are judged: the first `seq` of each (by a 64-bit hash
/// of its name, about 40 bytes a scope), the first `MAX_SCOPES` by first call with their call
/// counts, and the first `seq` of the scope of each call kept.
#[derive(Debug, Default)]
struct ScopeTally {
    hasher: foldhash::fast::RandomState,
    /// A scope's first `seq` and its place in `listed`, if it has one.
    first: HashMap<u64, (usize, Option<u32>)>,
    listed: Vec<(Scope, usize, usize)>,
    of_kept: Vec<usize>,
}

impl ScopeTally {
    /// Counts `c`, and returns its scope's first `seq`.
    fn add(&mut self, c: &Call) -> usize {
        use std::hash::BuildHasher;
        let h = self.hasher.hash_one(&*c.scope);
        let listed = &mut self.listed;
        let (first, place) = *self.first.entry(h).or_insert_with(|| {
            let place = (listed.len() < MAX_SCOPES).then(|| {
                listed.push((c.scope.clone(), c.seq, 0));
                (listed.len() - 1) as u32
            });
            (c.seq, place)
        });
        if let Some(p) = place {
            listed[p as usize].2 += 1;
        }
        first
    }
}

/// What a filtered run counts of the calls that match, for the reports and for
/// `filter::apply`.
#[derive(Debug, Default)]
pub struct Filtered {
    /// The calls that match, counted as `Tally` counts an input's calls.
    pub tally: Tally,
    /// Which calls match, a bit per `seq` (with `--outcome`, findings are narrowed
    /// to those about such calls; a call's earlier attempt is named when it matched).
    matched: Vec<u64>,
    /// Per `--scope` value: whether any call of the input is in that scope.
    pub scope_hits: Vec<bool>,
    /// With `--finding` (and no `--outcome`), what `Tally` counts of each call that
    /// matched, by `seq`: the calls that stay are those the input's findings name,
    /// known at its end (`narrow`).
    facts: Option<Vec<u8>>,
    /// With `--finding` and a table or markdown report: which calls need attention,
    /// a bit per `seq`, so that those a report lists are counted once narrowed.
    attention: Option<Vec<u64>>,
}

impl Filtered {
    /// Whether call `seq` matched the filters.
    pub fn matched(&self, seq: usize) -> bool {
        self.matched
            .get(seq / 64)
            .is_some_and(|w| w & (1 << (seq % 64)) != 0)
    }

    /// How many calls match (once narrowed: how many the findings name).
    fn matched_count(&self) -> u64 {
        self.matched.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// How many of the calls that match need attention (with `--finding` and a
    /// report, which note which do).
    fn matched_attention(&self) -> Option<u64> {
        let bits = self.attention.as_ref()?;
        Some(
            bits.iter()
                .zip(&self.matched)
                .map(|(a, m)| u64::from((a & m).count_ones()))
                .sum(),
        )
    }

    /// Whether the calls that match are narrowed at the input's end to those its
    /// findings name (`--finding` without `--outcome`).
    pub fn narrows(&self) -> bool {
        self.facts.is_some()
    }

    /// Keeps matched only the calls `named` (by the findings `--finding` kept), and
    /// counts those again; a second time changes nothing.
    pub fn narrow(&mut self, named: &std::collections::HashSet<usize>) {
        let Some(facts) = &self.facts else {
            return;
        };
        let mut tally = Tally::default();
        for (i, word) in self.matched.iter_mut().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let seq = i * 64 + bit;
                match facts.get(seq) {
                    Some(&fact) if named.contains(&seq) => tally.add_fact(fact),
                    _ => *word &= !(1 << bit),
                }
            }
        }
        self.tally = tally;
    }
}

fn set_bit(bits: &mut Vec<u64>, seq: usize) {
    let (word, bit) = (seq / 64, seq % 64);
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << bit;
}

/// Whether call `seq` of an input whose calls were kept lean would be among its
/// calls had the run kept every call: it was judged and, in a filtered run, matched.
pub fn was_listed(a: &Analysis, seq: usize) -> bool {
    let Some(u) = unkept(a) else {
        return false;
    };
    match &u.filtered {
        Some(f) => f.matched(seq),
        None => (seq as u64) < a.call_count(),
    }
}

/// What stays with an input of such a run besides the calls kept.
#[derive(Debug, Default)]
pub struct Unkept {
    /// Set when the run has call filters.
    pub filtered: Option<Filtered>,
    pub tools: ToolsBySeq,
    unlisted: u64,
    /// Calls that need no attention let go by the sink though they may be named.
    others_dropped: u64,
    /// Counted only for the HTML page (`Keep::scopes`).
    scopes: Option<ScopeTally>,
    earliest: Option<Timestamp>,
}

impl Kept {
    /// Counts `call` and says what becomes of it: `None` when it does not match the
    /// filters, else whether it is to be kept (pushed to `calls`). A call let go
    /// leaves its tool.
    fn admit(&mut self, call: &Call) -> Option<bool> {
        if let Some(f) = &self.filter {
            for (hit, one) in self.filtered.scope_hits.iter_mut().zip(&f.scopes) {
                *hit = *hit || Filter::scope_matches(one, &call.scope);
            }
            if !f.call_ok(call) {
                self.tools.add(call);
                return None;
            }
            self.filtered.tally.add(call);
            if let Some(facts) = &mut self.filtered.facts {
                if facts.len() <= call.seq {
                    facts.resize(call.seq + 1, 0);
                }
                facts[call.seq] = Tally::fact(call);
            }
            set_bit(&mut self.filtered.matched, call.seq);
            if let Some(bits) = &mut self.filtered.attention {
                if needs_attention(call) {
                    set_bit(bits, call.seq);
                }
            }
        }
        let first = if self.keep.scopes {
            self.scopes.add(call)
        } else {
            0
        };
        if let Some(t) = call.started_at {
            self.earliest = Some(self.earliest.map_or(t, |e| e.min(t)));
        }
        // `Outcome`'s variants are declared in the order of `Outcome::ALL`.
        let keep = if !self.keep.may_be_named[call.verdict.outcome as usize] {
            false
        } else if needs_attention(call) {
            let keep = self.attention < self.keep.attention;
            self.attention += usize::from(keep);
            self.unlisted += u64::from(!keep);
            keep
        } else {
            let keep = self.calls.len() - self.attention < self.keep.others;
            self.others_dropped += u64::from(!keep);
            keep
        };
        if keep && self.keep.scopes {
            self.scopes.of_kept.push(first);
        }
        if !keep {
            self.tools.add(call);
        }
        Some(keep)
    }

    fn finish_kept(self) -> (Vec<Call>, Unkept) {
        let unkept = Unkept {
            filtered: self.filter.is_some().then_some(self.filtered),
            tools: self.tools,
            unlisted: self.unlisted,
            others_dropped: self.others_dropped,
            scopes: self.keep.scopes.then_some(self.scopes),
            earliest: self.earliest,
        };
        (self.calls, unkept)
    }
}

impl CallSink for Kept {
    fn call(&mut self, call: Call) {
        drop(self.call_returning(call));
    }

    fn call_returning(&mut self, call: Call) -> Option<Call> {
        if self.admit(&call) == Some(true) {
            self.calls.push(call);
            return None;
        }
        Some(call)
    }

    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        Box::new(self.finish_kept())
    }
}

/// The sink of a streaming JSONL or JSON run that also writes the markdown report or
/// the HTML page: every call goes to the spool, and the calls those reports show are
/// kept besides, redacted as the spool redacts them (each with its own session id).
struct Tee {
    spool: Spool,
    kept: Kept,
    redactor: Redactor,
    memo: super::redact::Memo,
}

/// What a `Tee` made of an input's calls: the spool the JSONL writer copies, and
/// what the reports read once it is written (`written`).
pub struct Teed {
    pub spool: Spool,
    kept: (Vec<Call>, Unkept),
}

impl CallSink for Tee {
    fn call(&mut self, call: Call) {
        drop(self.call_returning(call));
    }

    fn call_returning(&mut self, call: Call) -> Option<Call> {
        match self.kept.admit(&call) {
            None => return Some(call),
            Some(true) => {
                let mut shown = call.clone();
                self.redactor.call(&mut shown, &mut self.memo);
                self.kept.calls.push(shown);
            }
            Some(false) => {}
        }
        self.spool.call_returning(call)
    }

    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        let t = *self;
        Box::new(Teed {
            spool: t.spool,
            kept: t.kept.finish_kept(),
        })
    }
}

/// Once the JSONL writer has written an input of a teed run: its spool goes, and
/// what the reports read stays, as a lean run leaves it.
pub fn written(ir: &mut crate::batch::InputReport) {
    let Some(s) = ir.analysis.streamed.as_mut() else {
        return;
    };
    let product = std::mem::replace(&mut s.product, Box::new(()));
    s.product = match product.downcast::<Teed>() {
        Ok(t) => Box::new(t.kept),
        Err(other) => other,
    };
}

/// The sinks of a run whose reports are the table, markdown and (`html`) the HTML
/// page (see the module). The page lists up to `html::MAX_ROWS` calls of the run,
/// those that need attention first: each input keeps that many of each kind, the
/// first ones, as the page would pick them from all its calls.
pub fn attention_sinks(html: bool, filter: &Filter) -> SinkFactory {
    let make = kept_factory(Some(html), filter);
    SinkFactory(Arc::new(move |_: &str| {
        Box::new(make()) as Box<dyn CallSink>
    }))
}

/// The sinks of a streaming JSONL or JSON run that also writes the markdown report
/// or the HTML page (`reports`: `Some(html)`), or that has call filters: a spool
/// each, of the calls that match, and what the reports show and the filters need.
pub fn teed_sinks(reports: Option<bool>, filter: &Filter, redactor: Redactor) -> SinkFactory {
    let make = kept_factory(reports, filter);
    // With `--finding` the records to print are known at the input's end: the spool
    // notes the `seq` of each, and the writer leaves out those no finding kept names.
    let narrows = !filter.findings.is_empty() && filter.outcomes.is_empty();
    SinkFactory(Arc::new(move |path: &str| {
        let mut spool = Spool::new(path, redactor);
        if narrows {
            spool.note_seqs();
        }
        Box::new(Tee {
            spool,
            kept: make(),
            redactor,
            memo: Default::default(),
        }) as Box<dyn CallSink>
    }))
}

/// `reports`: `Some(html)` when the table, markdown and (`html`) the page are
/// written from what is kept; `None` when no call needs keeping (the filters only).
fn kept_factory(
    reports: Option<bool>,
    filter: &Filter,
) -> impl Fn() -> Kept + Send + Sync + 'static {
    // `--finding` narrows calls by the findings, known only at the input's end. The
    // table and markdown list only calls that need attention: with `--finding` the
    // first `NARROWING` of those that a finding may name are kept until the input's
    // end (`narrow_input`). The page lists any call: the first `NARROWING` of each
    // kind are kept, and its scopes are counted from those the findings name
    // (`narrow_page_input`).
    let narrows = !filter.findings.is_empty() && filter.outcomes.is_empty();
    debug_assert!(filter.findings.is_empty() || reports != Some(true) || narrows);
    let listing = narrows && reports.is_some();
    let mut may_be_named = [true; Outcome::ALL.len()];
    for (may, o) in may_be_named.iter_mut().zip(Outcome::ALL) {
        *may = !listing || crate::correlate::rules::may_name(&filter.findings, *o);
    }
    let filter = (!filter.is_empty()).then(|| Arc::new(filter.clone()));
    let keep = match reports {
        Some(true) if listing => Keep {
            attention: NARROWING,
            others: NARROWING,
            scopes: false,
            may_be_named,
        },
        Some(true) => Keep {
            attention: MAX_ROWS.max(SHOWN),
            others: MAX_ROWS,
            scopes: true,
            may_be_named,
        },
        Some(false) => Keep {
            attention: if listing { NARROWING } else { SHOWN },
            others: 0,
            scopes: false,
            may_be_named,
        },
        None => Keep {
            attention: 0,
            others: 0,
            scopes: false,
            may_be_named,
        },
    };
    move || Kept {
        keep,
        filter: filter.clone(),
        filtered: Filtered {
            scope_hits: vec![false; filter.as_ref().map_or(0, |f| f.scopes.len())],
            facts: narrows.then(Vec::new),
            attention: listing.then(Vec::new),
            ..Filtered::default()
        },
        calls: Vec::new(),
        attention: 0,
        tools: ToolsBySeq::default(),
        unlisted: 0,
        others_dropped: 0,
        scopes: ScopeTally::default(),
        earliest: None,
    }
}

/// The share of the HTML page's rows the inputs after those seen so far can still
/// take: the page lists the run's first `MAX_ROWS` calls that need attention, in
/// input order, then its first others. Given each input in order (`batch::
/// run_visiting`), it lets go what the page cannot list, so a run over a whole
/// archive of small logs keeps no more than a page of calls (and each input's first
/// `SHOWN` that need attention, for the table and markdown).
#[derive(Debug)]
pub struct PageShare {
    attention_left: usize,
    others_left: usize,
}

impl Default for PageShare {
    fn default() -> Self {
        PageShare {
            attention_left: MAX_ROWS,
            others_left: MAX_ROWS,
        }
    }
}

impl PageShare {
    /// Narrows the next input (in input order) of a run of `attention_sinks(true, _)`.
    pub fn trim(&mut self, ir: &mut crate::batch::InputReport) {
        let Some((calls, unkept)) = ir
            .analysis
            .streamed
            .as_mut()
            .and_then(|s| s.product.downcast_mut::<(Vec<Call>, Unkept)>())
        else {
            return;
        };
        let Some(scopes) = unkept.scopes.as_mut() else {
            return;
        };
        let (attention_keep, others_keep) = (self.attention_left.max(SHOWN), self.others_left);
        let (mut attention, mut others) = (0, 0);
        let held = std::mem::take(calls);
        let firsts = std::mem::take(&mut scopes.of_kept);
        for (c, first) in held.into_iter().zip(firsts) {
            let keep = if needs_attention(&c) {
                attention += 1;
                unkept.unlisted += u64::from(attention > attention_keep);
                attention <= attention_keep
            } else {
                others += 1;
                others <= others_keep
            };
            if keep {
                calls.push(c);
                scopes.of_kept.push(first);
            } else {
                unkept.tools.add(&c);
            }
        }
        self.attention_left = self.attention_left.saturating_sub(attention);
        self.others_left = self.others_left.saturating_sub(others);
    }
}

/// Puts the calls kept back in each input's `calls`, for the reports; the tools of
/// the others stay with the input (`tool_of`).
pub fn take_attention(report: &mut Report) {
    for ir in &mut report.inputs {
        take_input_attention(ir);
    }
}

/// `take_attention` for one input; nothing for an input whose calls are back.
fn take_input_attention(ir: &mut crate::batch::InputReport) {
    let Some(s) = ir.analysis.streamed.as_mut() else {
        return;
    };
    if !s.product.is::<(Vec<Call>, Unkept)>() {
        return;
    }
    let product = std::mem::replace(&mut s.product, Box::new(()));
    if let Ok(kept) = product.downcast::<(Vec<Call>, Unkept)>() {
        let (calls, unkept) = *kept;
        ir.analysis.calls = calls;
        if let Some(f) = &unkept.filtered {
            // Counts are of the calls that match, as after `filter::apply`.
            s.tally = f.tally.clone();
        }
        s.product = Box::new(unkept);
    }
}

/// Narrows one input of a `--finding` run whose table or markdown report is written
/// from what its sink kept (`attention_sinks(false, _)`), as soon as the input is
/// judged, in input order: its calls go back to `calls` (`take_attention`), its
/// findings and counts are narrowed (`filter::apply_input`), and of its calls the
/// first `SHOWN` the findings name stay; the others named are counted.
pub fn narrow_input(ir: &mut crate::batch::InputReport, filter: &Filter) {
    take_input_attention(ir);
    super::filter::apply_input(&mut ir.analysis, filter);
    narrow_listed(ir);
}

/// Narrows one input of a streaming `--finding` run that also writes the markdown
/// report or (`page`) the HTML page, once its records are written (`written`): its
/// findings and counts were narrowed before (`InputPasses`), and its calls are
/// narrowed as `narrow_input` or `narrow_page_input` narrows them.
pub fn narrow_written(ir: &mut crate::batch::InputReport, page: bool) {
    take_input_attention(ir);
    if page {
        narrow_page(ir);
    } else {
        narrow_listed(ir);
    }
}

/// `narrow_input` once its findings are narrowed.
fn narrow_listed(ir: &mut crate::batch::InputReport) {
    let a = &mut ir.analysis;
    let Some(u) = unkept(a) else {
        return;
    };
    let Some(named) = u.filtered.as_ref().and_then(Filtered::matched_attention) else {
        return;
    };
    let had_more = u.unlisted > 0;
    let Some((mut kept, mut gone)) = part_matched(a) else {
        return;
    };
    let held = kept.len();
    gone.extend(kept.drain(held.min(SHOWN)..));
    a.calls = kept;
    // A call let go leaves its tool, as one the sink let go does (`tool_of`).
    if let Some(u) = unkept_mut(a) {
        for c in &gone {
            u.tools.add(c);
        }
    }
    if had_more && held < SHOWN && (held as u64) < named {
        a.notices.push(crate::ingest::Problem::notice(
            crate::ingest::Kind::Cap,
            crate::model::Locator::Input,
            format!(
                "cap: with --finding, the calls listed are those the findings name among the first {NARROWING} that need attention; {} more that they name are counted, not listed (--format jsonl lists them all)",
                named - held as u64
            ),
        ));
    }
    let listed = a.calls.len() as u64;
    if let Some(u) = unkept_mut(a) {
        u.unlisted = named - listed;
    }
}

/// An input's calls parted into those that match (once narrowed: those its findings
/// name) and the others; `None` when it counts no match (no call filter).
fn part_matched(a: &mut Analysis) -> Option<(Vec<Call>, Vec<Call>)> {
    let f = unkept(a)?.filtered.as_ref()?;
    let stays: Vec<bool> = a.calls.iter().map(|c| f.matched(c.seq)).collect();
    let (mut kept, mut gone) = (Vec::new(), Vec::new());
    for (c, stays) in std::mem::take(&mut a.calls).into_iter().zip(stays) {
        if stays {
            kept.push(c);
        } else {
            gone.push(c);
        }
    }
    Some((kept, gone))
}

/// Narrows one input of a `--finding` run whose HTML page is written from what its
/// sink kept (`attention_sinks(true, _)`), as soon as the input is judged, in input
/// order, before `PageShare::trim`: its findings and counts are narrowed as
/// `narrow_input` does, the calls they name stay, and its scopes and earliest start
/// are counted from those, as the page counts them from a run's calls.
pub fn narrow_page_input(ir: &mut crate::batch::InputReport, filter: &Filter) {
    take_input_attention(ir);
    super::filter::apply_input(&mut ir.analysis, filter);
    narrow_page(ir);
}

/// `narrow_page_input` once its findings are narrowed.
fn narrow_page(ir: &mut crate::batch::InputReport) {
    let a = &mut ir.analysis;
    // Its calls are back in `calls` and its product is what stays (`Unkept`).
    if !a
        .streamed
        .as_ref()
        .is_some_and(|s| s.product.is::<Unkept>())
    {
        return;
    }
    let Some(u) = unkept(a) else {
        return;
    };
    let Some(f) = &u.filtered else {
        return;
    };
    let named = f.matched_count();
    let named_attention = f.matched_attention().unwrap_or(0);
    let dropped = u.unlisted + u.others_dropped > 0;
    let Some((kept, gone)) = part_matched(a) else {
        return;
    };
    let mut scopes = ScopeTally::default();
    for c in &kept {
        let first = scopes.add(c);
        scopes.of_kept.push(first);
    }
    let earliest = kept.iter().filter_map(|c| c.started_at).min();
    let listed = kept.len() as u64;
    let kept_attention = kept.iter().filter(|c| needs_attention(c)).count() as u64;
    let Some(s) = a.streamed.as_mut() else {
        return;
    };
    let Some(u) = s.product.downcast_mut::<Unkept>() else {
        return;
    };
    let mut u = std::mem::take(u);
    for c in &gone {
        u.tools.add(c);
    }
    u.scopes = Some(scopes);
    u.earliest = earliest;
    // The named calls that need attention and were let go, as the reports count them.
    u.unlisted = named_attention.saturating_sub(kept_attention);
    if dropped && listed < named {
        a.notices.push(crate::ingest::Problem::notice(
            crate::ingest::Kind::Cap,
            crate::model::Locator::Input,
            format!(
                "cap: with --finding, the page lists the calls the findings name among the first {NARROWING} that need attention and the first {NARROWING} others, and counts its scopes by those; {} more that they name are counted, not listed (--format jsonl lists them all)",
                named - listed
            ),
        ));
    }
    // As the sink left it, for `PageShare::trim` and `take_attention`.
    s.product = Box::new((kept, u));
}

/// The tool of call `seq` of an input, kept whole or not.
pub fn tool_of(a: &Analysis, seq: usize) -> Option<&str> {
    if let Ok(i) = a.calls.binary_search_by_key(&seq, |c| c.seq) {
        return a.calls[i].tool.as_deref();
    }
    let (held, unkept) = parts(a)?;
    if let Ok(i) = held.binary_search_by_key(&seq, |c| c.seq) {
        return held[i].tool.as_deref();
    }
    unkept.tools.get(seq)
}

/// The tool of call `seq` (`None` inside for a call without one), when that call is
/// among the input's calls: kept, or let go by a lean run after it matched the
/// filters. `None` for a call the input does not hold (filtered out).
pub fn call_tool(a: &Analysis, seq: usize) -> Option<Option<&str>> {
    let held = a.calls.binary_search_by_key(&seq, |c| c.seq).is_ok();
    (held || was_listed(a, seq)).then(|| tool_of(a, seq))
}

/// Reads back into `findings` what a lean run moved to disk, for a pass that edits
/// them (a baseline); where that fails they stay on disk, as every report reads them.
pub fn hold_findings(report: &mut Report) {
    for ir in &mut report.inputs {
        hold_input_findings(&mut ir.analysis);
    }
}

/// `hold_findings` for one input, for a run that edits each input's findings before
/// its records are written.
pub fn hold_input_findings(a: &mut Analysis) {
    if a.streamed.as_ref().is_none_or(|s| s.findings.is_none()) {
        return;
    }
    if let Ok(all) = a.all_findings() {
        a.findings = all;
        if let Some(s) = a.streamed.as_mut() {
            s.findings = None;
        }
    }
}

/// What a lean run left of an input's calls besides `calls`.
pub fn unkept(a: &Analysis) -> Option<&Unkept> {
    parts(a).map(|(_, u)| u)
}

/// `unkept`, to change.
pub fn unkept_mut(a: &mut Analysis) -> Option<&mut Unkept> {
    let p = &mut a.streamed.as_mut()?.product;
    if p.is::<Unkept>() {
        return p.downcast_mut::<Unkept>();
    }
    if p.is::<Teed>() {
        return p.downcast_mut::<Teed>().map(|t| &mut t.kept.1);
    }
    p.downcast_mut::<(Vec<Call>, Unkept)>().map(|(_, u)| u)
}

/// The calls a lean run's sink still holds (before `take_attention`) and the rest
/// of what it left, however far the input has come: as the sink made it, as a teed
/// run's sink made it, or once the calls went back to `calls`.
fn parts(a: &Analysis) -> Option<(&[Call], &Unkept)> {
    let p = &a.streamed.as_ref()?.product;
    if let Some(u) = p.downcast_ref::<Unkept>() {
        return Some((&[], u));
    }
    let (calls, u) = match p.downcast_ref::<Teed>() {
        Some(t) => &t.kept,
        None => p.downcast_ref::<(Vec<Call>, Unkept)>()?,
    };
    Some((calls, u))
}

/// The calls of an input that need attention, the first `SHOWN` of them (the ones
/// a report lists) and how many more there are, kept whole or not.
pub fn attention(a: &Analysis) -> (Vec<&Call>, u64) {
    let mut listed = Vec::new();
    let mut more = unkept(a).map_or(0, |u| u.unlisted);
    for c in a.calls.iter().filter(|c| needs_attention(c)) {
        if listed.len() < SHOWN {
            listed.push(c);
        } else {
            more += 1;
        }
    }
    (listed, more)
}

/// An input's scopes as the HTML page shows them: the first `MAX_SCOPES` by first
/// call, each with its first `seq` and its number of calls; how many there are; and
/// the first `seq` of the scope of each call in `calls`, by position.
pub struct Scopes<'a> {
    pub listed: Vec<(&'a str, usize, usize)>,
    pub total: usize,
    pub of_call: std::borrow::Cow<'a, [usize]>,
}

/// The scopes of an input, counted as its calls were judged or from its calls.
pub fn scopes(a: &Analysis) -> Scopes<'_> {
    if let Some(t) = unkept(a).and_then(|u| u.scopes.as_ref()) {
        return Scopes {
            listed: t.listed.iter().map(|(s, f, n)| (&**s, *f, *n)).collect(),
            total: t.first.len(),
            of_call: std::borrow::Cow::Borrowed(&t.of_kept),
        };
    }
    let mut place: HashMap<&str, usize> = HashMap::default();
    let mut listed: Vec<(&str, usize, usize)> = Vec::new();
    let mut of_call = Vec::with_capacity(a.calls.len());
    for c in &a.calls {
        let k = *place.entry(&*c.scope).or_insert_with(|| {
            listed.push((&*c.scope, c.seq, 0));
            listed.len() - 1
        });
        listed[k].2 += 1;
        of_call.push(listed[k].1);
    }
    let total = listed.len();
    listed.truncate(MAX_SCOPES);
    Scopes {
        listed,
        total,
        of_call: std::borrow::Cow::Owned(of_call),
    }
}

/// The earliest start of an input's calls, kept whole or not.
pub fn earliest(a: &Analysis) -> Option<Timestamp> {
    match unkept(a) {
        Some(u) => u.earliest,
        None => a.calls.iter().filter_map(|c| c.started_at).min(),
    }
}

/// The names of the scopes an input keeps apart from its calls, for redaction: once
/// its calls are taken back (`Unkept`), or before (as a lean run's sink or a teed
/// run's left them).
pub fn scope_names_mut(a: &mut Analysis) -> impl Iterator<Item = &mut Arc<str>> {
    let unkept = a.streamed.as_mut().and_then(|s| {
        let p = &mut s.product;
        if p.is::<Unkept>() {
            p.downcast_mut::<Unkept>()
        } else if p.is::<Teed>() {
            p.downcast_mut::<Teed>().map(|t| &mut t.kept.1)
        } else {
            p.downcast_mut::<(Vec<Call>, Unkept)>().map(|k| &mut k.1)
        }
    });
    unkept
        .and_then(|u| u.scopes.as_mut())
        .into_iter()
        .flat_map(|t| t.listed.iter_mut().map(|(s, _, _)| s.arc_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{run, Input};
    use crate::config::Config;
    use crate::model::{FindingKind, Outcome};
    use crate::report::{write, HumanOptions, OutputFormat};

    /// The samples and a lab capture in three formats: many inputs, findings of
    /// every kind across calls, a repeat of a call that may have run.
    fn samples_and_lab() -> [Input; 2] {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        [
            Input::Path(root.join("samples")),
            Input::Path(root.join("lab/captures/no_response_replay_py")),
        ]
    }

    /// Writes `format` (`None`: the HTML page, with fixed run facts) of a run that
    /// kept every call and of a lean one, asserts they are the same, and returns it.
    fn same_output(whole: &Report, lean: &Report, format: Option<OutputFormat>) -> String {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        match format {
            Some(format) => {
                let opts = HumanOptions::default();
                write(whole, format, &opts, &mut a).unwrap();
                write(lean, format, &opts, &mut b).unwrap();
            }
            None => {
                let meta = crate::report::html::Meta {
                    version: "test".to_owned(),
                    command_line: "mcpsift analyze".to_owned(),
                    generated: "2026-12-07T00:00:00Z".to_owned(),
                };
                crate::report::html::write_with(whole, &meta, &mut a).unwrap();
                crate::report::html::write_with(lean, &meta, &mut b).unwrap();
            }
        }
        let (a, b) = (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
        if format.is_some() {
            assert_eq!(a, b);
        } else {
            assert!(a == b, "the pages differ");
        }
        a
    }

    /// The table and markdown of both runs are the same.
    fn same_reports(whole: &Report, lean: &Report) {
        for format in [OutputFormat::Table, OutputFormat::Markdown] {
            same_output(whole, lean, Some(format));
        }
    }

    /// Filters a run that kept every call (`all` of them) and a lean one, and asserts
    /// they agree: the values that matched nothing, the counts, the findings, and
    /// no input cut short by a note. Whether the filter left out calls.
    fn filtered_alike(whole: &mut Report, lean: &mut Report, f: &Filter, all: usize) -> bool {
        use crate::report::filter::{apply, unmatched};
        assert_eq!(unmatched(lean, f), unmatched(whole, f), "{f:?}");
        apply(whole, f);
        apply(lean, f);
        for (w, l) in whole.inputs.iter().zip(&lean.inputs) {
            let (w, l) = (&w.analysis, &l.analysis);
            assert_eq!(l.call_count(), w.call_count(), "{f:?}");
            for o in Outcome::ALL {
                assert_eq!(l.outcome_count(*o), w.outcome_count(*o), "{o} {f:?}");
            }
            assert_eq!(l.findings, w.findings, "{f:?}");
            assert_eq!(l.notices.len(), w.notices.len(), "no input was cut short");
        }
        whole
            .inputs
            .iter()
            .map(|i| i.analysis.calls.len())
            .sum::<usize>()
            < all
    }

    /// The filters the baseline tests run with: none, and two tools.
    fn baseline_filters() -> Vec<Filter> {
        vec![
            Filter::default(),
            Filter {
                tools: vec!["delete_file".into(), "read_note".into()],
                ..Filter::default()
            },
        ]
    }

    /// A baseline of every other entry of baseline document `doc`, the first one
    /// twice, and one entry that matches nothing: two entries accept nothing.
    fn half_of(doc: &serde_json::Value) -> crate::report::Baseline {
        let entries = doc["findings"].as_array().unwrap();
        let mut half: Vec<serde_json::Value> = entries.iter().step_by(2).cloned().collect();
        half.push(entries[0].clone());
        half.push(serde_json::json!({"key": "UNSAFE_REPLAY gone.jsonl ids=1 tool=x"}));
        let half = serde_json::json!({"mcpsift_baseline": 1, "findings": half});
        crate::report::Baseline::parse("half.json", &half.to_string()).unwrap()
    }

    /// A run whose reports are the table and markdown keeps only the calls they
    /// show and the tools of the others, and counts the rest as they are judged: the
    /// counts, the calls held, the findings and both reports are those of a run that
    /// kept every call.
    #[test]
    fn the_table_and_markdown_keep_only_the_calls_they_show() {
        let inputs = [Input::Path(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples"),
        )];
        let whole = run(&inputs, &Config::default());
        let config = Config {
            call_sinks: Some(attention_sinks(false, &Filter::default())),
            ..Config::default()
        };
        let mut lean = run(&inputs, &config);
        take_attention(&mut lean);
        let (mut kept, mut all, mut named) = (0, 0, 0);
        for (w, l) in whole.inputs.iter().zip(&lean.inputs) {
            let (w, l) = (&w.analysis, &l.analysis);
            assert_eq!(l.call_count(), w.calls.len() as u64);
            for o in Outcome::ALL {
                assert_eq!(l.outcome_count(*o), w.outcome_count(*o), "{o}");
            }
            assert_eq!(l.reinvocations(), w.reinvocations());
            assert_eq!(l.finding_counts(), w.finding_counts());
            let shown: Vec<String> = w
                .calls
                .iter()
                .filter(|c| needs_attention(c))
                .map(|c| format!("{} {}", c.locator, c.id))
                .collect();
            let held: Vec<String> = l
                .calls
                .iter()
                .map(|c| format!("{} {}", c.locator, c.id))
                .collect();
            assert_eq!(held, shown);
            for c in &w.calls {
                assert_eq!(tool_of(l, c.seq), c.tool.as_deref(), "call {}", c.seq);
                named += usize::from(!needs_attention(c) && c.tool.is_some());
            }
            kept += l.calls.len();
            all += w.calls.len();
        }
        assert!(kept > 0 && kept < all, "{kept} of {all}");
        assert!(named > 0, "the tools of calls let go are looked up");
        same_reports(&whole, &lean);
    }

    /// A server that is down fails every call: the reports list the first `SHOWN`
    /// calls of an input and count the others, and a run that keeps only what they
    /// show keeps no more than those, with the same reports.
    #[test]
    fn the_calls_that_need_attention_are_listed_and_kept_up_to_a_bound() {
        const CALLS: usize = SHOWN + 500;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("down.jsonl");
        let mut text = String::new();
        for i in 0..CALLS {
            let body = format!(
                r#"{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"n\":{i}}}}}}}"#
            );
            text.push_str(&format!(
                r#"{{"request":{{"method":"POST","url":"http://h/mcp","body":"{body}"}},"response":{{"status":502,"body":"Bad Gateway"}}}}"#
            ));
            text.push('\n');
        }
        std::fs::write(&path, text).unwrap();
        let inputs = [Input::Path(path)];
        let whole = run(&inputs, &Config::default());
        assert_eq!(whole.inputs[0].analysis.calls.len(), CALLS);
        let config = Config {
            call_sinks: Some(attention_sinks(false, &Filter::default())),
            ..Config::default()
        };
        let mut lean = run(&inputs, &config);
        take_attention(&mut lean);
        let a = &lean.inputs[0].analysis;
        assert_eq!(a.calls.len(), SHOWN);
        assert_eq!(a.call_count(), CALLS as u64);
        let (listed, more) = attention(a);
        assert_eq!((listed.len(), more), (SHOWN, 500));
        for format in [OutputFormat::Table, OutputFormat::Markdown] {
            let x = same_output(&whole, &lean, Some(format));
            let said = match format {
                OutputFormat::Table => "  500 more calls that need attention",
                _ => &format!("The first 100 of {CALLS} calls"),
            };
            assert!(x.contains(said), "{x}");
        }
    }

    /// The HTML page lists at most `MAX_ROWS` calls of a run, those that need
    /// attention first, and draws timelines for the first `MAX_SCOPES` scopes: a run
    /// that keeps only those (and counts the rest, scopes included) writes the same
    /// page as one that kept every call, down to a listed call that repeats one let go.
    #[test]
    fn the_html_page_of_a_lean_run_is_the_page_of_every_call() {
        use crate::report::redact::Redactor;
        const CALLS: usize = MAX_ROWS + 600;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.jsonl");
        let mut text = String::new();
        let mut line = |i: usize, n: usize, ok: bool| text.push_str(&logged_call(i, n, ok));
        for i in 0..CALLS {
            line(i, i, i % 100 != 7);
        }
        // The same call again, failing: it repeats a success the lean run let go.
        line(CALLS, CALLS - 1, false);
        std::fs::write(&path, text).unwrap();
        let inputs = [Input::Path(path)];
        let mut whole = run(&inputs, &Config::default());
        let config = Config {
            call_sinks: Some(attention_sinks(true, &Filter::default())),
            ..Config::default()
        };
        let mut lean = run(&inputs, &config);
        take_attention(&mut lean);
        for r in [&mut whole, &mut lean] {
            Redactor::default().report(r);
        }
        let (w, l) = (&whole.inputs[0].analysis, &lean.inputs[0].analysis);
        assert_eq!(w.calls.len(), CALLS + 1);
        let failing = w.calls.iter().filter(|c| needs_attention(c)).count();
        assert_eq!(l.calls.len(), failing + MAX_ROWS);
        assert_eq!(l.call_count(), CALLS as u64 + 1);
        let last = w.calls.last().unwrap();
        let repeated = last
            .previous
            .as_ref()
            .expect("the last call repeats one")
            .seq;
        assert!(l.calls.binary_search_by_key(&repeated, |c| c.seq).is_err());
        let a = same_output(&whole, &lean, None);
        assert!(a.contains(&format!("This page lists {MAX_ROWS} of {}", CALLS + 1)));
        assert!(a.contains(&format!(
            "Timelines of the first {MAX_SCOPES} of 260 scopes"
        )));
        assert!(
            a.contains(&format!(
                ">id {}</a> (TOOL_SUCCESS, line {})",
                repeated, CALLS
            )),
            "the repeat is named"
        );
    }

    /// Call filters (`--tool`, `--outcome`, `--scope`) are applied as calls are
    /// judged: the reports, the counts, the findings kept and the values that matched
    /// nothing are those of a run that kept every call and filtered them after.
    #[test]
    fn call_filters_applied_as_calls_are_judged_select_what_they_would_after() {
        let inputs = samples_and_lab();
        let filters = [
            Filter {
                outcomes: vec![Outcome::HttpError, Outcome::StreamIncomplete],
                ..Filter::default()
            },
            Filter {
                scopes: vec!["session".into(), "nowhere:1".into()],
                ..Filter::default()
            },
            Filter {
                tools: vec!["delete_file".into(), "no_such_tool".into()],
                outcomes: vec![Outcome::ToolSuccess],
                ..Filter::default()
            },
            Filter {
                tools: vec!["read_note".into(), "charge_card".into()],
                ..Filter::default()
            },
        ];
        let mut narrowed = 0;
        for f in &filters {
            let mut whole = run(&inputs, &Config::default());
            let all: usize = whole.inputs.iter().map(|i| i.analysis.calls.len()).sum();
            let config = Config {
                call_sinks: Some(attention_sinks(true, f)),
                ..Config::default()
            };
            let mut lean = run(&inputs, &config);
            take_attention(&mut lean);
            narrowed += usize::from(filtered_alike(&mut whole, &mut lean, f, all));
            same_reports(&whole, &lean);
            same_output(&whole, &lean, None);
        }
        assert_eq!(narrowed, filters.len(), "each filter drops some calls");
    }

    /// A JSONL line of call `i` (arguments `n`, in session `i % 260`, 10 ms after
    /// call `i - 1`), answered with a tool result or, when not `ok`, a 502.
    fn logged_call(i: usize, n: usize, ok: bool) -> String {
        let ms = i * 10;
        let ts = format!(
            "2026-12-01T{:02}:{:02}:{:02}.{:03}Z",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        );
        let body = format!(
            r#"{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"read_note\",\"arguments\":{{\"n\":{n}}}}}}}"#
        );
        let response = if ok {
            format!(
                r#"{{"status":200,"headers":[["Content-Type","application/json"]],"body":"{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}]}}}}"}}"#
            )
        } else {
            r#"{"status":502,"body":"Bad Gateway"}"#.to_owned()
        };
        format!(
            "{{\"ts\":\"{ts}\",\"request\":{{\"method\":\"POST\",\"url\":\"http://h/mcp\",\"headers\":[[\"Mcp-Session-Id\",\"session-{:04}\"]],\"body\":\"{body}\"}},\"response\":{response}}}\n",
            i % 260
        )
    }

    /// A log of 1,500 answered calls, then 30 `read_note` calls never answered (with
    /// `distinct` arguments, or all the same: repeats).
    fn failing_log(dir: &std::path::Path, distinct: bool) -> std::path::PathBuf {
        let path = dir.join("failing.jsonl");
        let mut text: String = (0..1_500).map(|i| logged_call(i, i, false)).collect();
        for i in 1_500..1_530 {
            let n = if distinct { i } else { 1 };
            text.push_str(&format!(
                "{{\"ts\":\"2026-12-01T01:00:00.000Z\",\"request\":{{\"method\":\"POST\",\"url\":\"http://h/mcp\",\"body\":\"{{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":{i},\\\"method\\\":\\\"tools/call\\\",\\\"params\\\":{{\\\"name\\\":\\\"read_note\\\",\\\"arguments\\\":{{\\\"n\\\":{n}}}}}}}\"}}}}\n"
            ));
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `--finding` with the table or markdown: each input is narrowed as soon as it
    /// is judged (`narrow_input`), keeping only the calls that need attention the
    /// findings may name, and the reports, counts and findings are those of a run
    /// that kept every call and filtered after; narrowed to NON_TERMINAL, a sink
    /// keeps no call of another outcome (a server down for most of a log).
    #[test]
    fn finding_filters_narrow_each_input_as_a_whole_run_would() {
        use crate::batch::{run_visiting, Progress};
        let dir = tempfile::tempdir().unwrap();
        let failing = failing_log(dir.path(), true);
        let mut inputs = samples_and_lab().to_vec();
        inputs.push(Input::Path(failing.clone()));
        let filters = [
            Filter {
                findings: vec![FindingKind::UnsafeReplay],
                ..Filter::default()
            },
            Filter {
                findings: vec![FindingKind::NonTerminal],
                ..Filter::default()
            },
            Filter {
                findings: vec![FindingKind::UnexplainedRepeat, FindingKind::NonTerminal],
                tools: vec!["read_note".into()],
                ..Filter::default()
            },
            Filter {
                findings: vec![FindingKind::NonTerminal],
                scopes: vec!["session".into()],
                ..Filter::default()
            },
        ];
        let mut narrowed = 0;
        for f in &filters {
            let mut whole = run(&inputs, &Config::default());
            let all: usize = whole.inputs.iter().map(|i| i.analysis.calls.len()).sum();
            let config = Config {
                call_sinks: Some(attention_sinks(false, f)),
                ..Config::default()
            };
            let non_terminal_only = f.findings == [FindingKind::NonTerminal] && f.scopes.is_empty();
            let mut lean = run_visiting(&inputs, &config, &Progress::default(), &mut |ir| {
                if non_terminal_only && ir.path == failing.display().to_string() {
                    let (calls, _) = parts(&ir.analysis).unwrap();
                    assert_eq!(calls.len(), 30, "only the calls a finding may name");
                }
                narrow_input(ir, f)
            });
            take_attention(&mut lean);
            narrowed += usize::from(filtered_alike(&mut whole, &mut lean, f, all));
            same_reports(&whole, &lean);
        }
        assert_eq!(narrowed, filters.len(), "each filter drops some calls");
    }

    /// `--finding` with the page: each input is narrowed as soon as it is judged
    /// (`narrow_page_input`), then gives the page its share of rows (`PageShare`),
    /// and the page, the table, markdown, counts and findings are those of a run
    /// that kept every call and filtered after; a success a finding names is listed
    /// too (`UNEXPLAINED_REPEAT`).
    #[test]
    fn finding_filters_narrow_each_input_of_a_page_as_a_whole_run_would() {
        use crate::batch::{run_visiting, Progress};
        let dir = tempfile::tempdir().unwrap();
        let failing = failing_log(dir.path(), false);
        let mut inputs = samples_and_lab().to_vec();
        inputs.push(Input::Path(failing));
        let filters = [
            Filter {
                findings: vec![FindingKind::UnsafeReplay, FindingKind::NonTerminal],
                ..Filter::default()
            },
            Filter {
                findings: vec![FindingKind::UnexplainedRepeat],
                ..Filter::default()
            },
            Filter {
                findings: vec![FindingKind::UnexplainedRepeat, FindingKind::NonTerminal],
                tools: vec!["read_note".into()],
                scopes: vec!["session".into()],
                ..Filter::default()
            },
        ];
        let mut successes_listed = 0;
        for f in &filters {
            let mut whole = run(&inputs, &Config::default());
            let all: usize = whole.inputs.iter().map(|i| i.analysis.calls.len()).sum();
            let config = Config {
                call_sinks: Some(attention_sinks(true, f)),
                ..Config::default()
            };
            let mut share = PageShare::default();
            let mut lean = run_visiting(&inputs, &config, &Progress::default(), &mut |ir| {
                narrow_page_input(ir, f);
                share.trim(ir)
            });
            take_attention(&mut lean);
            assert!(filtered_alike(&mut whole, &mut lean, f, all), "{f:?}");
            successes_listed += lean
                .inputs
                .iter()
                .flat_map(|i| &i.analysis.calls)
                .filter(|c| c.verdict.outcome == Outcome::ToolSuccess)
                .count();
            same_output(&whole, &lean, None);
            same_reports(&whole, &lean);
        }
        assert!(
            successes_listed > 0,
            "a success a finding names is on the page"
        );
    }

    /// A rule that says which outcomes its findings name (`Hooks::names_only`) is
    /// held to it on every lab capture and sample: a `--finding` report keeps no
    /// other call, so a finding naming one would list a call it never kept.
    #[test]
    fn the_outcomes_a_rule_names_are_those_its_findings_name() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let report = run(
            &[
                Input::Path(root.join("samples")),
                Input::Path(root.join("lab/captures")),
            ],
            &Config::default(),
        );
        let mut checked = 0;
        for ir in &report.inputs {
            let a = &ir.analysis;
            for f in &a.findings {
                for &seq in &f.calls {
                    let Some(c) = a.calls.iter().find(|c| c.seq == seq) else {
                        continue;
                    };
                    assert!(
                        crate::correlate::rules::may_name(&[f.kind], c.verdict.outcome),
                        "{} names a {} call in {}",
                        f.kind,
                        c.verdict.outcome,
                        ir.path
                    );
                    checked += usize::from(f.kind == FindingKind::NonTerminal);
                }
            }
        }
        assert!(checked > 10, "{checked} NON_TERMINAL findings checked");
    }

    /// A run over many inputs keeps a page's share of calls, not every input's: each
    /// input, in order, keeps what the page can still list (and its first `SHOWN`
    /// that need attention), and the page, the table and markdown are those of a run
    /// that kept every call; whether the page runs out of calls that need attention
    /// or of the others.
    #[test]
    fn a_run_over_many_inputs_keeps_a_page_of_calls() {
        use crate::batch::{run_visiting, Progress};
        const INPUTS: usize = 30;
        const EACH: usize = 1_100;
        for failing_in_20 in [1, 19] {
            let dir = tempfile::tempdir().unwrap();
            for k in 0..INPUTS {
                let text: String = (0..EACH)
                    .map(|i| logged_call(i, k * EACH + i, i % 20 >= failing_in_20))
                    .collect();
                std::fs::write(dir.path().join(format!("log{k:02}.jsonl")), text).unwrap();
            }
            let inputs = [Input::Path(dir.path().to_owned())];
            let whole = run(&inputs, &Config::default());
            let config = Config {
                call_sinks: Some(attention_sinks(true, &Filter::default())),
                ..Config::default()
            };
            let mut share = PageShare::default();
            let mut lean = run_visiting(&inputs, &config, &Progress::default(), &mut |ir| {
                share.trim(ir)
            });
            take_attention(&mut lean);
            assert_eq!(lean.inputs.len(), INPUTS);
            // Each input holds what is left of the page's share after those before
            // it, and its first `SHOWN` that need attention.
            let (mut attention_left, mut others_left) = (MAX_ROWS, MAX_ROWS);
            for (w, l) in whole.inputs.iter().zip(&lean.inputs) {
                let a = w
                    .analysis
                    .calls
                    .iter()
                    .filter(|c| needs_attention(c))
                    .count();
                let o = w.analysis.calls.len() - a;
                let want = a.min(attention_left.max(SHOWN)) + o.min(others_left);
                assert_eq!(l.analysis.calls.len(), want, "{}", l.path);
                attention_left = attention_left.saturating_sub(a);
                others_left = others_left.saturating_sub(o);
            }
            let held: usize = lean.inputs.iter().map(|i| i.analysis.calls.len()).sum();
            // Mostly healthy: a page of others, not every input's; mostly failing: each
            // input's first `SHOWN` that need attention, the table's rows.
            let bound = if failing_in_20 == 1 {
                INPUTS * EACH - 5_000
            } else {
                INPUTS * EACH - 100
            };
            assert!(held < bound, "{held} calls held");
            same_reports(&whole, &lean);
            same_output(&whole, &lean, None);
        }
    }

    /// A streaming JSONL run that also writes the markdown report and the HTML page
    /// writes each input's records as it goes and keeps only what those show: the
    /// records, the report and the page are those of a run that kept every call.
    #[test]
    fn a_teed_run_writes_the_records_the_report_and_the_page_of_every_call() {
        use crate::batch::{run_visiting, Progress};
        use crate::report::jsonl::{write_jsonl, Streamer};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        // A failed call whose error text holds a token: the report shows it redacted.
        const TOKEN: &str = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
        let dir = tempfile::tempdir().unwrap();
        let leaky = dir.path().join("leaky.jsonl");
        std::fs::write(
            &leaky,
            format!(
                r#"{{"ts":"2026-12-01T00:00:00.000Z","request":{{"method":"POST","url":"http://h/mcp","headers":[["Mcp-Session-Id","a1b2c3d4e5f60718293a4b5c"]],"body":"{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"push\",\"arguments\":{{}}}}}}"}},"response":{{"status":200,"headers":[["Content-Type","application/json"]],"body":"{{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{{\"code\":-32000,\"message\":\"push refused for {TOKEN} in session a1b2c3d4e5f60718293a4b5c\"}}}}"}}}}
"#
            ),
        )
        .unwrap();
        let inputs = [
            Input::Path(root.join("samples")),
            Input::Path(root.join("lab/captures/no_response_replay_py")),
            Input::Path(leaky),
        ];
        let redactor = Redactor::default();
        let mut whole = run(&inputs, &Config::default());
        redactor.report(&mut whole);
        // With the report alone only the calls that need attention are kept.
        for html in [false, true] {
            let config = Config {
                call_sinks: Some(teed_sinks(Some(html), &Filter::default(), redactor)),
                ..Config::default()
            };
            let mut records = Vec::new();
            let mut streamer = Streamer::new(&mut records, redactor);
            let mut share = PageShare::default();
            let mut lean = run_visiting(&inputs, &config, &Progress::default(), &mut |ir| {
                streamer.input(ir).unwrap();
                written(ir);
                share.trim(ir);
            });
            take_attention(&mut lean);
            redactor.run_fields(&mut lean);
            streamer.finish(&lean).unwrap();
            let mut want = Vec::new();
            write_jsonl(&whole, &mut want).unwrap();
            assert!(records == want, "{}", String::from_utf8_lossy(&records));
            let held: usize = lean.inputs.iter().map(|i| i.analysis.calls.len()).sum();
            let all: usize = whole.inputs.iter().map(|i| i.analysis.calls.len()).sum();
            assert!(html || held < all, "{held} of {all} calls held");
            let b = same_output(&whole, &lean, Some(OutputFormat::Markdown));
            assert!(b.contains("push refused for [REDACTED]"), "{b}");
            assert!(!b.contains(TOKEN) && !b.contains("a1b2c3d4e5f60718293a4b5c"));
            if html {
                same_output(&whole, &lean, None);
            }
        }
    }

    /// A streaming JSONL run with `--finding` that also writes the markdown report or
    /// the page narrows what those show once each input's records are written
    /// (`narrow_written`): records, report and page are those of a run that kept
    /// every call and filtered after.
    #[test]
    fn a_teed_finding_run_narrows_the_report_and_the_page_as_a_whole_run_would() {
        use crate::batch::{run_visiting, Progress};
        use crate::report::filter::{apply, apply_input};
        use crate::report::jsonl::{write_jsonl, Streamer};
        let inputs = samples_and_lab();
        let redactor = Redactor::default();
        let filters = [
            Filter {
                findings: vec![FindingKind::UnexplainedRepeat, FindingKind::NonTerminal],
                ..Filter::default()
            },
            Filter {
                findings: vec![FindingKind::UnsafeReplay, FindingKind::IdMismatch],
                tools: vec!["delete_file".into(), "read_note".into()],
                ..Filter::default()
            },
        ];
        let mut narrowed = 0;
        for f in &filters {
            for html in [false, true] {
                let mut whole = run(&inputs, &Config::default());
                let all: usize = whole.inputs.iter().map(|i| i.analysis.calls.len()).sum();
                apply(&mut whole, f);
                redactor.report(&mut whole);
                let named: usize = whole.inputs.iter().map(|i| i.analysis.calls.len()).sum();
                narrowed += usize::from(named < all);
                let mut want = Vec::new();
                write_jsonl(&whole, &mut want).unwrap();
                let config = Config {
                    call_sinks: Some(teed_sinks(Some(html), f, redactor)),
                    ..Config::default()
                };
                let mut records = Vec::new();
                let mut streamer = Streamer::new(&mut records, redactor);
                let mut share = PageShare::default();
                let mut lean = run_visiting(&inputs, &config, &Progress::default(), &mut |ir| {
                    apply_input(&mut ir.analysis, f);
                    streamer.input(ir).unwrap();
                    written(ir);
                    narrow_written(ir, html);
                    if html {
                        share.trim(ir);
                    }
                });
                take_attention(&mut lean);
                // As `InputPasses::finish` notes them.
                lean.filters = f.describe();
                redactor.run_fields(&mut lean);
                streamer.finish(&lean).unwrap();
                let (r, w) = (
                    String::from_utf8_lossy(&records),
                    String::from_utf8_lossy(&want),
                );
                for (a, b) in r.lines().zip(w.lines()) {
                    assert_eq!(a, b, "{f:?} html {html}");
                }
                assert_eq!(r.lines().count(), w.lines().count());
                same_output(&whole, &lean, Some(OutputFormat::Markdown));
                if html {
                    same_output(&whole, &lean, None);
                }
            }
        }
        assert!(narrowed > 0, "the findings leave out calls");
    }

    /// A streaming JSONL run with call filters narrows each input before its
    /// records are written: the records, the summary and the filter values that
    /// matched nothing are those of a run that kept every call and filtered after.
    #[test]
    fn a_streaming_run_with_filters_writes_what_a_filtered_run_would() {
        use crate::batch::{run_visiting, Progress};
        use crate::report::filter::{apply, apply_input, unmatched};
        use crate::report::jsonl::{write_jsonl, Streamer};
        let inputs = samples_and_lab();
        let redactor = Redactor::default();
        let filters = [
            Filter {
                outcomes: vec![Outcome::NoResponse, Outcome::ToolSuccess],
                ..Filter::default()
            },
            Filter {
                tools: vec!["delete_file".into(), "no_such_tool".into()],
                scopes: vec!["session".into(), "http".into(), "nowhere:1".into()],
                ..Filter::default()
            },
            // The calls the findings kept name, known at the input's end.
            Filter {
                findings: vec![FindingKind::UnsafeReplay, FindingKind::NonTerminal],
                ..Filter::default()
            },
            Filter {
                findings: vec![FindingKind::UnexplainedRepeat, FindingKind::UnsafeReplay],
                tools: vec!["delete_file".into(), "read_note".into()],
                scopes: vec!["session".into(), "stdio".into()],
                ..Filter::default()
            },
            // With `--outcome` too, the calls are those that match it.
            Filter {
                findings: vec![FindingKind::NonTerminal],
                outcomes: vec![Outcome::NoResponse, Outcome::ToolSuccess],
                ..Filter::default()
            },
        ];
        for f in &filters {
            let mut whole = run(&inputs, &Config::default());
            let all = whole
                .inputs
                .iter()
                .map(|i| i.analysis.calls.len())
                .sum::<usize>();
            let want_unmatched = unmatched(&whole, f);
            apply(&mut whole, f);
            redactor.report(&mut whole);
            let kept = whole
                .inputs
                .iter()
                .map(|i| i.analysis.calls.len())
                .sum::<usize>();
            assert!(kept > 0 && kept < all, "{f:?}");
            let mut want = Vec::new();
            write_jsonl(&whole, &mut want).unwrap();
            let config = Config {
                call_sinks: Some(teed_sinks(None, f, redactor)),
                ..Config::default()
            };
            let mut records = Vec::new();
            let mut streamer = Streamer::new(&mut records, redactor);
            let mut lean = run_visiting(&inputs, &config, &Progress::default(), &mut |ir| {
                apply_input(&mut ir.analysis, f);
                streamer.input(ir).unwrap();
                written(ir);
            });
            take_attention(&mut lean);
            assert_eq!(unmatched(&lean, f), want_unmatched, "{f:?}");
            apply(&mut lean, f);
            redactor.run_fields(&mut lean);
            streamer.finish(&lean).unwrap();
            assert!(
                records == want,
                "{f:?}: {}",
                String::from_utf8_lossy(&records)
            );
            assert!(lean.inputs.iter().all(|i| i.analysis.calls.is_empty()));
        }
    }

    /// A streaming JSONL run writes and applies a baseline input by input
    /// (`InputPasses`), with or without a call filter: the baseline written, what the
    /// baseline applied accepts, the entries it leaves and the records are those of
    /// a run that kept every call and applied both to the whole report (with
    /// `--finding`, the calls its findings named before the baseline took some away).
    #[test]
    fn a_streaming_run_writes_and_applies_a_baseline_as_a_whole_run_does() {
        use crate::batch::{run_visiting, Progress};
        use crate::report::baseline::{Baseline, Writer};
        use crate::report::filter::apply;
        use crate::report::jsonl::{write_jsonl, Streamer};
        use crate::report::InputPasses;
        let inputs = samples_and_lab();
        let redactor = Redactor::default();
        let mut filters = baseline_filters();
        // The calls stay that the findings named before the baseline took some of
        // them away.
        filters.push(Filter {
            findings: FindingKind::ALL.to_vec(),
            ..Filter::default()
        });
        for f in &filters {
            let mut whole = run(&inputs, &Config::default());
            apply(&mut whole, f);
            let mut want_doc = Vec::new();
            let mut w = Writer::new(&mut want_doc).unwrap();
            for ir in &whole.inputs {
                w.input(ir, &redactor).unwrap();
            }
            w.finish().unwrap();
            let doc = Baseline::document(&whole, &redactor);
            assert_eq!(
                String::from_utf8(want_doc.clone()).unwrap(),
                serde_json::to_string_pretty(&doc).unwrap() + "\n"
            );
            let b = half_of(&doc);
            let want_applied = b.apply(&mut whole);
            assert!(want_applied.accepted > 1 && want_applied.unmatched.len() == 2);
            whole.baseline_accepted = want_applied.accepted;
            redactor.report(&mut whole);
            let kept: usize = whole.inputs.iter().map(|i| i.analysis.calls.len()).sum();
            assert!(kept > 0, "{f:?}");
            let mut want = Vec::new();
            write_jsonl(&whole, &mut want).unwrap();

            let config = Config {
                call_sinks: Some(teed_sinks(None, f, redactor)),
                ..Config::default()
            };
            let (mut records, mut written_doc) = (Vec::new(), Vec::new());
            let mut streamer = Streamer::new(&mut records, redactor);
            let sink: Box<dyn std::io::Write + Send + '_> = Box::new(&mut written_doc);
            let mut passes = InputPasses::new(f, redactor, Some(sink), Some(&b)).unwrap();
            let mut lean = run_visiting(&inputs, &config, &Progress::default(), &mut |ir| {
                passes.input(ir);
                streamer.input(ir).unwrap();
                written(ir);
            });
            let (wrote, applied) = passes.finish(&mut lean);
            wrote.unwrap();
            assert_eq!(applied.as_ref(), Some(&want_applied), "{f:?}");
            take_attention(&mut lean);
            redactor.run_fields(&mut lean);
            streamer.finish(&lean).unwrap();
            assert!(written_doc == want_doc, "{f:?}: the baselines differ");
            assert!(
                records == want,
                "{f:?}: {}",
                String::from_utf8_lossy(&records)
            );
        }
    }

    /// A baseline written or applied in a lean run (with or without a call filter)
    /// reads the tools of the calls let go: the document, what it accepts, the
    /// entries left over and the reports are those of a run that kept every call.
    #[test]
    fn baselines_in_a_lean_run_are_those_of_every_call() {
        use crate::report::baseline::Baseline;
        use crate::report::filter::apply;
        let inputs = samples_and_lab();
        let redactor = Redactor::default();
        let filters = baseline_filters();
        for f in &filters {
            let mut whole = run(&inputs, &Config::default());
            apply(&mut whole, f);
            let doc = Baseline::document(&whole, &redactor);
            let entries = doc["findings"].as_array().unwrap().len();
            assert!(entries > 4, "{entries} findings");
            let config = Config {
                call_sinks: Some(attention_sinks(false, f)),
                ..Config::default()
            };
            let mut lean = run(&inputs, &config);
            take_attention(&mut lean);
            apply(&mut lean, f);
            hold_findings(&mut lean);
            assert_eq!(Baseline::document(&lean, &redactor), doc, "{f:?}");
            let b = half_of(&doc);
            let (w, l) = (b.apply(&mut whole), b.apply(&mut lean));
            assert_eq!(l, w, "{f:?}");
            assert!(w.accepted > 1 && w.unmatched.len() == 2, "{w:?}");
            same_reports(&whole, &lean);
        }
    }
}
