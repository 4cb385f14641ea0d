//! `mcpsift._native`: the Rust side of the Python package. It turns keyword options
//! into a `Config` and a `Filter`, runs the library with the GIL released, applies
//! the same passes as the command line (filters, then redaction) and hands back the
//! `--format jsonl` records as Python dicts; it also exposes the two stages
//! (`mcpsift::stage`) with their records as JSON text, the form in which they cross
//! machines. The friendly signatures, Arrow tables and docstrings live in the Python
//! layer (`mcpsift/__init__.py`).

use mcpsift::batch::{self, Input, Report};
use mcpsift::config::{parse_duration_ms, Config, Limits, RetryWindows};
use mcpsift::model::{FindingKind, Outcome};
use mcpsift::report::{self, Filter, Redactor};
use mcpsift::stage;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use std::path::PathBuf;

/// Keyword options shared by every entry point, as the CLI's flags spell them.
#[derive(Debug, Clone)]
#[pyclass(module = "mcpsift._native", name = "Options", frozen)]
struct Options {
    config: Config,
    filter: Filter,
    redact: bool,
}

#[pymethods]
impl Options {
    #[new]
    #[pyo3(signature = (
        *, redact = true, threads = 0, tool = vec![], outcome = vec![], finding = vec![],
        scope = vec![], max_record_bytes = None, max_event_bytes = None,
        max_stream_events = None, max_decompressed_bytes = None, retry_window = None,
        double_dispatch_window = None, client_timeout = None, client_log_retry_window = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        redact: bool,
        threads: usize,
        tool: Vec<String>,
        outcome: Vec<String>,
        finding: Vec<String>,
        scope: Vec<String>,
        max_record_bytes: Option<usize>,
        max_event_bytes: Option<usize>,
        max_stream_events: Option<usize>,
        max_decompressed_bytes: Option<u64>,
        retry_window: Option<String>,
        double_dispatch_window: Option<String>,
        client_timeout: Option<String>,
        client_log_retry_window: Option<String>,
    ) -> PyResult<Self> {
        let d = Limits::default();
        let w = RetryWindows::default();
        let outcomes = outcome
            .iter()
            .map(|o| {
                Outcome::parse(o).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "outcome {o:?}: expected one of {}",
                        Outcome::ALL
                            .iter()
                            .map(|o| o.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let findings = finding
            .iter()
            .map(|k| {
                FindingKind::parse(k).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "finding {k:?}: expected one of {}",
                        FindingKind::ALL
                            .iter()
                            .map(|k| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Options {
            config: Config {
                limits: Limits {
                    max_record_bytes: max_record_bytes.unwrap_or(d.max_record_bytes),
                    max_decompressed_bytes: max_decompressed_bytes
                        .unwrap_or(d.max_decompressed_bytes),
                    max_event_bytes: max_event_bytes.unwrap_or(d.max_event_bytes),
                    max_stream_events: max_stream_events.unwrap_or(d.max_stream_events),
                },
                windows: RetryWindows {
                    retry_ms: duration("retry_window", retry_window, w.retry_ms)?,
                    double_dispatch_ms: duration(
                        "double_dispatch_window",
                        double_dispatch_window,
                        w.double_dispatch_ms,
                    )?,
                    client_timeout_ms: duration(
                        "client_timeout",
                        client_timeout,
                        w.client_timeout_ms,
                    )?,
                    client_log_ms: duration(
                        "client_log_retry_window",
                        client_log_retry_window,
                        w.client_log_ms,
                    )?,
                },
                threads,
                // The records are built from the whole report, as `records()` needs.
                call_sinks: None,
                ..Config::default()
            },
            filter: Filter {
                tools: tool,
                outcomes,
                findings,
                scopes: scope,
            },
            redact,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Options(redact={}, threads={}, filters={:?})",
            self.redact,
            self.config.threads,
            self.filter.describe()
        )
    }
}

/// A duration as the CLI spells it (`500ms`, `30s`, `2m`), or the default.
fn duration(name: &str, text: Option<String>, default: u64) -> PyResult<u64> {
    match text {
        None => Ok(default),
        Some(t) => parse_duration_ms(&t).ok_or_else(|| {
            PyValueError::new_err(format!(
                "{name}: expected a duration such as 500ms, 30s or 2m, not {t:?}"
            ))
        }),
    }
}

/// The passes the CLI runs between the analysis and an emitter, in its order.
fn finish(mut report: Report, options: &Options) -> Vec<Value> {
    report::filter::apply(&mut report, &options.filter);
    if !options.filter.is_empty() {
        report.filters = options.filter.describe();
    }
    Redactor {
        enabled: options.redact,
    }
    .report(&mut report);
    report::jsonl::records(&report)
}

/// Records, turned into Python objects one at a time as they are asked for.
#[pyclass(module = "mcpsift._native", name = "Records")]
struct Records {
    items: std::vec::IntoIter<Value>,
}

#[pymethods]
impl Records {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.items.next() {
            None => Ok(None),
            Some(v) => Ok(Some(to_python(py, &v)?)),
        }
    }

    fn __len__(&self) -> usize {
        self.items.len()
    }
}

fn to_python<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, v).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Analyses files and directories, exactly as `mcpsift analyze PATHS` reads them.
#[pyfunction]
fn analyze_paths(py: Python<'_>, paths: Vec<PathBuf>, options: &Options) -> Records {
    let inputs: Vec<Input> = paths.into_iter().map(Input::Path).collect();
    let items = py.detach(|| finish(batch::run(&inputs, &options.config), options));
    Records {
        items: items.into_iter(),
    }
}

/// Analyses in-memory inputs, each a `(name, bytes)` pair; the name stands where a
/// path would (compressed data and tar archives are read as from a file).
#[pyfunction]
fn analyze_bytes(
    py: Python<'_>,
    inputs: Vec<(String, PyBackedBytes)>,
    options: &Options,
) -> Records {
    let items = py.detach(|| {
        let mut report = Report::default();
        for (name, data) in &inputs {
            let reader: Box<dyn std::io::Read + '_> = Box::new(&data[..]);
            for analysed in batch::analyse_named(name.clone(), reader, false, &options.config) {
                match analysed {
                    Ok(mut ir) => {
                        ir.stable_path = name.clone();
                        report.inputs.push(ir);
                    }
                    Err(skip) => report.skipped.push(skip),
                }
            }
        }
        finish(report, options)
    });
    Records {
        items: items.into_iter(),
    }
}

impl Options {
    /// Filters narrow a report; the stages make none, so a filter there is a mistake.
    fn for_stage(&self, what: &str) -> PyResult<()> {
        if self.filter.is_empty() {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "{what}: the filters (tool, outcome, finding, scope) apply to analyze() only"
            )))
        }
    }
}

/// Stage 1 over one named input given as bytes: one dict per input read (an archive
/// gives one per member) with its `input` record, whether it `failed`, and its
/// `records` as `(partition key, JSON text)` pairs. With `walked`, a file that is no
/// input at all gives one dict whose `skipped` says why, as a directory walk does.
#[pyfunction]
#[pyo3(signature = (name, data, options, group = None, walked = false))]
fn stage_calls<'py>(
    py: Python<'py>,
    name: String,
    data: PyBackedBytes,
    options: &Options,
    group: Option<String>,
    walked: bool,
) -> PyResult<Bound<'py, PyList>> {
    options.for_stage("calls")?;
    let opts = stage::Options {
        group,
        no_redact: !options.redact,
    };
    let (ones, skipped) = py.detach(|| {
        let ones = stage::calls(&name, &data, &options.config, &opts);
        // Only an input that failed with nothing read can be no input at all.
        let suspect = walked
            && ones.len() == 1
            && ones[0].failed
            && ones[0].records.is_empty()
            && ones[0].input.get("exchanges").and_then(Value::as_u64) == Some(0);
        let skipped = suspect
            .then(|| not_an_input(&name, &data, &options.config))
            .flatten();
        (ones, skipped)
    });
    if let Some(why) = skipped {
        let d = PyDict::new(py);
        d.set_item("input", py.None())?;
        d.set_item("failed", false)?;
        d.set_item("records", PyList::empty(py))?;
        d.set_item("skipped", why)?;
        return PyList::new(py, [d]);
    }
    let ones = ones
        .into_iter()
        .map(|one| {
            let records = one
                .records
                .iter()
                .map(|r| Ok((r.partition().to_owned(), serde_json::to_string(r)?)))
                .collect::<Result<Vec<_>, serde_json::Error>>()?;
            Ok((one.input, one.failed, records))
        })
        .collect::<Result<Vec<_>, serde_json::Error>>();
    let ones = ones.map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?;
    let out = PyList::empty(py);
    for (input, failed, records) in ones {
        let d = PyDict::new(py);
        d.set_item("input", to_python(py, &input)?)?;
        d.set_item("failed", failed)?;
        d.set_item("records", records)?;
        d.set_item("skipped", py.None())?;
        out.append(d)?;
    }
    Ok(out)
}

/// Why a walked file is no input (empty, binary, unrecognised, a log with no MCP
/// record), as `batch` decides it for a directory walk; `None` when it is one.
/// `stage::calls` reads every file as a named one; only a file that failed with
/// nothing read is read again here, so good inputs are read once.
fn not_an_input(name: &str, data: &[u8], config: &Config) -> Option<String> {
    let probe = Config {
        threads: 1,
        ..config.clone()
    };
    let mut skipped = None;
    for a in batch::analyse_named(name.to_owned(), Box::new(data), true, &probe) {
        match a {
            Ok(_) => return None,
            Err((_, why)) => skipped = Some(why),
        }
    }
    skipped
}

/// Stage 2 over the records of one partition (JSON text from `stage_calls`, in any
/// order): the final `call` records in request order, then the `finding` records.
#[pyfunction]
fn stage_correlate(
    py: Python<'_>,
    records: Vec<PyBackedStr>,
    options: &Options,
) -> PyResult<Records> {
    options.for_stage("correlate")?;
    let items = py.detach(|| -> Result<Vec<Value>, String> {
        let records = records
            .iter()
            .enumerate()
            .map(|(n, r)| {
                serde_json::from_str::<stage::Record>(r)
                    .map_err(|e| format!("record {n}: not a stage-1 record: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let out = stage::correlate_redacting(records, &options.config, options.redact);
        Ok(out.calls.into_iter().chain(out.findings).collect())
    });
    let items = items.map_err(PyValueError::new_err)?;
    Ok(Records {
        items: items.into_iter(),
    })
}

/// The `summary` of a set of `jsonl` records (`report::Summary::add_record`): input,
/// call and finding records count themselves, summary records merge, so summaries
/// of disjoint parts add up to the summary of the whole.
#[pyfunction]
fn summarize<'py>(py: Python<'py>, records: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let mut summary = report::Summary::default();
    for (n, r) in records.iter().enumerate() {
        let v: Value = if let Ok(text) = r.extract::<PyBackedStr>() {
            serde_json::from_str(&text)
                .map_err(|e| PyValueError::new_err(format!("record {n}: not JSON: {e}")))?
        } else {
            pythonize::depythonize(r)
                .map_err(|e| PyValueError::new_err(format!("record {n}: {e}")))?
        };
        summary.add_record(&v);
    }
    to_python(py, &summary.to_record())
}

/// The stage-2 partition of a group of inputs (`stage::partition_key`).
#[pyfunction]
fn partition_key(group: &str) -> String {
    stage::partition_key(group)
}

/// A duration as the CLI spells it, in milliseconds (`None` when not one).
#[pyfunction]
fn parse_duration(text: &str) -> Option<u64> {
    parse_duration_ms(text)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Options>()?;
    m.add_class::<Records>()?;
    m.add_function(wrap_pyfunction!(analyze_paths, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(stage_calls, m)?)?;
    m.add_function(wrap_pyfunction!(stage_correlate, m)?)?;
    m.add_function(wrap_pyfunction!(partition_key, m)?)?;
    m.add_function(wrap_pyfunction!(summarize, m)?)?;
    Ok(())
}
