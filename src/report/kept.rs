//! What a run whose reports are the table and markdown keeps of its calls: the calls
//! those reports show (not `TOOL_SUCCESS`, or sent more than once), whole, the first
//! `SHOWN` of an input, and of every other call only its tool, by `seq` (a finding
//! names the tools of the calls it involves). The rest is counted as calls are judged
//! (`Analysis::streamed`), so an input's memory grows neither with its healthy calls
//! nor with the failed calls of a server that is down.

use super::markdown::needs_attention;
use crate::batch::Report;
use crate::config::SinkFactory;
use crate::correlate::{Analysis, Call, CallSink};
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

    fn get(&self, seq: usize) -> Option<&str> {
        let n = *self.by_seq.get(seq)?;
        self.names.get(n as usize).map(|s| &**s)
    }
}

struct Attention {
    calls: Vec<Call>,
    tools: ToolsBySeq,
    /// Calls that need attention past `SHOWN`.
    unlisted: u64,
}

/// What stays with an input of such a run besides the calls kept.
#[derive(Debug, Default)]
pub struct Unkept {
    tools: ToolsBySeq,
    unlisted: u64,
}

impl CallSink for Attention {
    fn call(&mut self, call: Call) {
        drop(self.call_returning(call));
    }

    fn call_returning(&mut self, call: Call) -> Option<Call> {
        if needs_attention(&call) {
            if self.calls.len() < SHOWN {
                self.calls.push(call);
                return None;
            }
            self.unlisted += 1;
        }
        self.tools.add(&call);
        Some(call)
    }

    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        let unkept = Unkept {
            tools: self.tools,
            unlisted: self.unlisted,
        };
        Box::new((self.calls, unkept))
    }
}

/// The sinks of a run whose reports are the table and markdown (see the module).
pub fn attention_sinks() -> SinkFactory {
    SinkFactory(Arc::new(|_: &str| {
        Box::new(Attention {
            calls: Vec::new(),
            tools: ToolsBySeq::default(),
            unlisted: 0,
        }) as Box<dyn CallSink>
    }))
}

/// Puts the calls kept back in each input's `calls`, for the reports; the tools of
/// the others stay with the input (`tool_of`).
pub fn take_attention(report: &mut Report) {
    for ir in &mut report.inputs {
        let Some(s) = ir.analysis.streamed.as_mut() else {
            continue;
        };
        let product = std::mem::replace(&mut s.product, Box::new(()));
        if let Ok(kept) = product.downcast::<(Vec<Call>, Unkept)>() {
            let (calls, unkept) = *kept;
            ir.analysis.calls = calls;
            s.product = Box::new(unkept);
        }
    }
}

/// The tool of call `seq` of an input, kept whole or not.
pub fn tool_of(a: &Analysis, seq: usize) -> Option<&str> {
    if let Ok(i) = a.calls.binary_search_by_key(&seq, |c| c.seq) {
        return a.calls[i].tool.as_deref();
    }
    unkept(a)?.tools.get(seq)
}

fn unkept(a: &Analysis) -> Option<&Unkept> {
    a.streamed.as_ref()?.product.downcast_ref::<Unkept>()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{run, Input};
    use crate::config::Config;
    use crate::model::Outcome;
    use crate::report::{write, HumanOptions, OutputFormat};

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
            call_sinks: Some(attention_sinks()),
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
        let opts = HumanOptions::default();
        for format in [OutputFormat::Table, OutputFormat::Markdown] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            write(&whole, format, &opts, &mut a).unwrap();
            write(&lean, format, &opts, &mut b).unwrap();
            assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
        }
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
            call_sinks: Some(attention_sinks()),
            ..Config::default()
        };
        let mut lean = run(&inputs, &config);
        take_attention(&mut lean);
        let a = &lean.inputs[0].analysis;
        assert_eq!(a.calls.len(), SHOWN);
        assert_eq!(a.call_count(), CALLS as u64);
        let (listed, more) = attention(a);
        assert_eq!((listed.len(), more), (SHOWN, 500));
        let opts = HumanOptions::default();
        for format in [OutputFormat::Table, OutputFormat::Markdown] {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            write(&whole, format, &opts, &mut x).unwrap();
            write(&lean, format, &opts, &mut y).unwrap();
            let (x, y) = (String::from_utf8(x).unwrap(), String::from_utf8(y).unwrap());
            assert_eq!(x, y);
            let said = match format {
                OutputFormat::Table => "  500 more calls that need attention",
                _ => &format!("The first 100 of {CALLS} calls"),
            };
            assert!(x.contains(said), "{x}");
        }
    }
}
