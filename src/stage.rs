//! The two stages apart, for a job that spreads inputs over many machines (Spark,
//! a queue of workers). Stage 1, per input (`calls`): read, pair and classify, and
//! hand back one record per call (the call's `jsonl` record plus the facts stage 2
//! judges it by) and the pairers' observations. Stage 2, per partition
//! (`correlate`): the cross-call rules over the records of one partition in request
//! order, giving the final call records and the findings. The CLI runs both in one
//! process; this module runs the same code, so verdicts and findings are the same
//! (`docs/scale.md`).
//!
//! A partition is a *group* of inputs: by default one input; files that hold one
//! session, such as a log rotated hourly, share a group. Within it, repeats are
//! looked for per endpoint across sessions, as the CLI does within one input. The
//! judge's state follows the retry windows (see `correlate::judge`), but
//! `correlate` takes a partition's records at once to sort them, so a partition is
//! held whole while it is judged.

use crate::batch::{self, InputReport};
use crate::config::Config;
use crate::correlate::facts::{CallFacts, Judgement};
use crate::correlate::judge::Judge;
use crate::correlate::observe::Observation;
use crate::correlate::{Annotations, RetryOrigin, Scope, ScopeInfo, Transport};
use crate::report::jsonl;
use crate::report::redact::Redactor;
use foldhash::HashMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::Cursor;
use std::sync::Arc;

/// One call out of stage 1.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    /// What to partition by for stage 2 (`partition_key`).
    pub partition: String,
    pub facts: CallFacts,
    /// The call's `jsonl` record as the CLI prints it, but for the fields stage 2
    /// decides (`post_count`, `retry_origin`, `previous_attempt`).
    pub record: Value,
}

/// One observation of a pairer out of stage 1, for the rules that read them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObservationRecord {
    pub partition: String,
    pub input: Arc<str>,
    pub observation: Observation,
}

/// A scope's peers and version as one input's `initialize` told them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScopeRecord {
    pub partition: String,
    pub scope: Scope,
    pub info: ScopeInfo,
}

/// A tool's annotations from one input's `tools/list`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolRecord {
    pub partition: String,
    pub tool: String,
    pub annotations: Annotations,
}

/// One record out of stage 1; stage 2 takes all the records of a partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Call(Box<CallRecord>),
    Observation(ObservationRecord),
    Scope(ScopeRecord),
    Tool(ToolRecord),
}

impl Record {
    /// The partition stage 2 must see it in.
    pub fn partition(&self) -> &str {
        match self {
            Record::Call(r) => &r.partition,
            Record::Observation(r) => &r.partition,
            Record::Scope(r) => &r.partition,
            Record::Tool(r) => &r.partition,
        }
    }
}

/// What stage 1 makes of one input (an archive gives one per member).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageOne {
    /// The input's `jsonl` record (path, format, status, counts, problems).
    pub input: Value,
    pub records: Vec<Record>,
    /// The input could not be read (its record says why).
    pub failed: bool,
}

/// What stage 2 makes of one partition, in report order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Correlated {
    /// Final `jsonl` call records, in request order.
    pub calls: Vec<Value>,
    /// `jsonl` finding records.
    pub findings: Vec<Value>,
}

/// Options of stage 1.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The group this input belongs to; `None` is the input on its own.
    pub group: Option<String>,
    /// Print tokens, cookies and session ids as recorded (the CLI's `--no-redact`).
    pub no_redact: bool,
}

/// The partition of an input's records: its group (the input's own path unless
/// grouped). Repeats are looked for across the endpoints and sessions of a group, as
/// the CLI does within one input.
pub fn partition_key(group: &str) -> String {
    group.to_owned()
}

/// Stage 1 over one named input given as bytes (compressed files and archives are
/// opened as the CLI opens them).
pub fn calls(name: &str, data: &[u8], config: &Config, options: &Options) -> Vec<StageOne> {
    let reader = Box::new(Cursor::new(data));
    let analysed = batch::analyse_named(name.to_owned(), reader, false, config);
    let redactor = Redactor {
        enabled: !options.no_redact,
    };
    let mut out = Vec::new();
    for a in analysed {
        let Ok(ir) = a else { continue };
        let mut report = batch::Report {
            inputs: vec![ir],
            ..batch::Report::default()
        };
        redactor.report(&mut report);
        let Some(ir) = report.inputs.pop() else {
            continue;
        };
        out.push(stage_one(ir, options));
    }
    out
}

fn stage_one(mut ir: InputReport, options: &Options) -> StageOne {
    let input: Arc<str> = ir.path.as_str().into();
    let partition = partition_key(options.group.as_deref().unwrap_or(&ir.path));
    let mut records = Vec::with_capacity(ir.analysis.calls.len() + 8);
    for c in &ir.analysis.calls {
        let mut facts = c.facts(&input);
        if c.transport == Transport::Stdio {
            // One process per input: its scopes must not meet another input's.
            facts.endpoint = format!("stdio\u{1f}{}", ir.path).into();
        }
        let mut first = c.clone();
        first.judged(Judgement::default());
        records.push(Record::Call(Box::new(CallRecord {
            partition: partition.clone(),
            facts,
            record: jsonl::call_record(&ir.path, &first),
        })));
    }
    for o in std::mem::take(&mut ir.analysis.observations) {
        records.push(Record::Observation(ObservationRecord {
            partition: partition.clone(),
            input: input.clone(),
            observation: o,
        }));
    }
    for (scope, info) in std::mem::take(&mut ir.analysis.scope_info) {
        records.push(Record::Scope(ScopeRecord {
            partition: partition.clone(),
            scope,
            info,
        }));
    }
    for (tool, annotations) in std::mem::take(&mut ir.analysis.tools) {
        records.push(Record::Tool(ToolRecord {
            partition: partition.clone(),
            tool,
            annotations,
        }));
    }
    StageOne {
        input: jsonl::input_record(&ir),
        failed: ir.has_errors(),
        records,
    }
}

/// Stage 2 over the records of one partition (any order; calls are put in request
/// order here). The text stage 2 writes itself (finding details, a session's
/// client and server learnt from another file) is redacted.
pub fn correlate(records: Vec<Record>, config: &Config) -> Correlated {
    correlate_redacting(records, config, true)
}

/// `correlate`, with the text it writes redacted or not (`redact: false` for
/// records stage 1 made with `no_redact`, as the CLI's `--no-redact` prints them).
pub fn correlate_redacting(records: Vec<Record>, config: &Config, redact: bool) -> Correlated {
    let mut calls = Vec::new();
    let mut observations = Vec::new();
    // What one file learnt (a session's initialize, a tools/list) holds for the
    // scope's and tool's calls in the other files of the group.
    let mut scopes: HashMap<Scope, ScopeInfo> = HashMap::default();
    let mut tools: HashMap<String, Annotations> = HashMap::default();
    for r in records {
        match r {
            Record::Call(c) => calls.push(*c),
            Record::Observation(o) => observations.push(o),
            Record::Scope(s) => {
                let e = scopes.entry(s.scope).or_default();
                e.protocol_version = e.protocol_version.take().or(s.info.protocol_version);
                e.client = e.client.take().or(s.info.client);
                e.server = e.server.take().or(s.info.server);
            }
            Record::Tool(t) => {
                tools.entry(t.tool).or_insert(t.annotations);
            }
        }
    }
    calls.sort_by(|a, b| {
        let (a, b) = (&a.facts, &b.facts);
        (a.started_at, &a.input, a.seq).cmp(&(b.started_at, &b.input, b.seq))
    });
    let redactor = Redactor { enabled: redact };
    let mut judge = Judge::new(config.windows);
    let mut out = Correlated::default();
    for mut c in calls {
        let resumed = c.facts.resumed;
        if c.facts.annotations.is_none() {
            c.facts.annotations = c.facts.tool.as_deref().and_then(|t| tools.get(t)).copied();
        }
        let info = scopes.get(&c.facts.scope);
        let j = judge.call(c.facts);
        let fill = |k: &'static str| -> Option<Value> {
            let i = info?;
            let v = match k {
                "protocol_version" => i.protocol_version.as_deref(),
                "client" => i.client.as_deref(),
                _ => i.server.as_deref(),
            }?;
            Some(Value::from(redactor.text(v).into_owned()))
        };
        out.calls.push(patched(c.record, &j, resumed, fill));
    }
    let obs: Vec<Observation> = observations.iter().map(|o| o.observation.clone()).collect();
    let inputs: Vec<Arc<str>> = observations.iter().map(|o| o.input.clone()).collect();
    for (input, mut f) in judge.finish_with_inputs(&obs, &inputs) {
        f.detail = redactor.text(&f.detail).into_owned();
        out.findings.push(jsonl::finding_record(&input, &f));
    }
    out
}

/// Members of a call record that belong to its scope (learnt from `initialize`).
const SCOPE_FACTS: [&str; 3] = ["protocol_version", "client", "server"];

/// The call record with stage 2's judgement and its scope's facts, its members in
/// the CLI's order.
fn patched(
    record: Value,
    j: &Judgement,
    resumed: bool,
    fill: impl Fn(&'static str) -> Option<Value>,
) -> Value {
    let Value::Object(fields) = record else {
        return record;
    };
    let origin = if j.previous.is_some() {
        j.retry_origin
    } else if resumed {
        RetryOrigin::Resumption
    } else {
        RetryOrigin::None
    };
    let previous = j.previous.as_ref().map(|p| {
        serde_json::json!({
            "id": p.id.to_value(),
            "location": p.locator,
            "outcome": p.outcome,
        })
    });
    let mut out = Map::with_capacity(fields.len() + 1);
    let mut previous = previous;
    let mut missing: Vec<&'static str> = SCOPE_FACTS
        .into_iter()
        .filter(|k| fields.get(*k).is_none_or(Value::is_null))
        .collect();
    for (k, v) in fields {
        if k == "started_at" || k == "ended_at" || k == "transport" {
            for m in missing.drain(..) {
                if let Some(v) = fill(m) {
                    out.insert(m.into(), v);
                }
            }
        }
        if matches!(k.as_str(), "notes" | "timeline") {
            if let Some(p) = previous.take() {
                out.insert("previous_attempt".into(), p);
            }
        }
        match k.as_str() {
            "post_count" => out.insert(k, Value::from(j.post_count)),
            "retry_origin" => out.insert(k, Value::from(origin.as_str())),
            "previous_attempt" => continue,
            _ => out.insert(k, v),
        };
    }
    if let Some(p) = previous {
        out.insert("previous_attempt".into(), p);
    }
    Value::Object(out)
}
