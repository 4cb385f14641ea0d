"""The Spark job (``mcpsift_job.py``) in local mode against the command line.

The corpus is every lab scenario once (a rotating choice of its HAR, pcap, pcapng or
JSONL recording, so every reader runs), with two sessions each split into two JSONL
files by ``split_session.py``. The job's calls and findings must equal the CLI's on
each file; for a split session the reference is the CLI on the original, unsplit
log, compared without the fields that name a file or a line in it."""

import collections
import datetime as dt
import json
import pathlib
import shutil

import pyarrow.parquet as pq
import pytest

import lab_corpus
import mcpsift_job
import questions
from mcpsift import arrow

REPO = pathlib.Path(__file__).resolve().parents[2]
LAB = lab_corpus.LAB


def _key(record):
    # Times as Parquet gives them back (microseconds; arrow.canonical_time).
    r = dict(record)
    for k in ("started_at", "ended_at"):
        if r.get(k) is not None:
            r[k] = arrow.canonical_time(r[k])
    return json.dumps(r, sort_keys=True)


def _sorted(records):
    return sorted(map(_key, records))


def _placeless(record):
    """A record without what names a file or a place in it."""
    r = {k: v for k, v in record.items() if k not in ("input", "location", "locations")}
    if "previous_attempt" in r:
        r["previous_attempt"] = {k: v for k, v in r["previous_attempt"].items() if k != "location"}
    return r


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    whole, splits = lab_corpus.build(root)
    # A file that is no input, skipped as a directory walk skips it, and a folder's
    # README, left out as a walk leaves it out.
    shutil.copy(LAB / "baseline_py_json" / "expected.json", root / "baseline_py_json")
    (root / "README.md").write_text("captures of the lab\n")
    return root, whole, splits


@pytest.fixture(scope="module")
def job_output(spark, corpus, tmp_path_factory):
    root, _, _ = corpus
    out = tmp_path_factory.mktemp("out")
    mcpsift_job.run_job(spark, str(root), str(out))
    return {
        "calls": arrow.records(pq.read_table(out / "calls"), "call"),
        "findings": arrow.records(pq.read_table(out / "findings"), "finding"),
        "inputs": arrow.records(pq.read_table(out / "inputs"), "input"),
        "skipped": [json.loads(line) for f in sorted((out / "skipped").glob("part-*"))
                    for line in f.read_text().splitlines()],
        "dir": out,
    }


@pytest.fixture(scope="module")
def reference(corpus, cli):
    root, whole, splits = corpus
    records = cli(whole, cwd=root)
    split_records = {name: cli([path]) for name, path in splits.items()}
    parts = cli(sorted(f"{n}/{p.name}" for n in splits for p in (root / n).iterdir()), cwd=root)
    return records, split_records, parts


def _of(records, kind, inputs=None):
    return [r for r in records if r["type"] == kind and (inputs is None or r["input"] in inputs)]


def test_the_corpus_covers_every_reader_and_some_findings(corpus, reference):
    records, _, _ = reference
    formats = {r["format"] for r in records if r["type"] == "input"}
    assert {"har", "pcap", "pcapng", "jsonl"} <= formats
    assert len(_of(records, "finding")) >= 10


def test_calls_and_findings_of_whole_files_equal_the_cli(job_output, corpus, reference):
    _, whole, _ = corpus
    records, _, _ = reference
    names = set(whole)
    for kind in ("call", "finding"):
        ours = [r for r in job_output[kind + "s"] if r["input"] in names]
        assert _sorted(ours) == _sorted(_of(records, kind)), kind


def test_a_session_split_over_two_files_equals_the_cli_on_the_whole_log(job_output, corpus, reference, cli):
    root, _, splits = corpus
    _, split_records, _ = reference
    for name in splits:
        parts = {f"{name}/part-1.jsonl", f"{name}/part-2.jsonl"}
        whole = split_records[name]
        for kind in ("call", "finding"):
            ours = [_placeless(r) for r in job_output[kind + "s"] if r["input"] in parts]
            theirs = [_placeless(r) for r in _of(whole, kind)]
            assert _sorted(ours) == _sorted(theirs), (name, kind)
        # Not vacuous: the second half alone misses what only the first half explains.
        alone = cli([root / name / "part-2.jsonl"])
        assert _sorted(map(_placeless, _of(alone, "finding"))) != _sorted(
            map(_placeless, _of(whole, "finding"))
        ), name
        assert any(f["kind"] == "UNSAFE_REPLAY" for f in _of(whole, "finding")), name


def test_input_records_equal_the_cli_and_non_inputs_are_skipped(job_output, corpus, reference, cli):
    root, _, _ = corpus
    records, _, parts = reference
    assert _sorted(job_output["inputs"]) == _sorted(_of(records, "input") + _of(parts, "input"))
    # The CLI walking the folder skips the same file for the same reason.
    walked = cli(["baseline_py_json"], cwd=root)[-1]["skipped"]
    assert job_output["skipped"] == [
        {"path": "baseline_py_json/expected.json", "reason": walked[0]["reason"]}
    ]
    assert "README.md" not in {i["path"] for i in job_output["inputs"]}


def _answers(calls, findings):
    """The three questions answered in Python from JSONL records."""
    rate = collections.defaultdict(lambda: [0, 0])
    for c in calls:
        cell = rate[(c["tool"], c["started_at"][:10])]
        cell[0] += 1
        cell[1] += c["outcome"] not in ("TOOL_SUCCESS", "INPUT_REQUIRED")
    failure = sorted(
        ((tool, day, n, bad / n) for (tool, day), (n, bad) in rate.items()),
        key=lambda r: (r[1], r[0]),
    )
    clients = collections.defaultdict(list)
    for c in calls:
        if c.get("client"):
            clients[(c["input"], c["scope"])].append(c["client"])
    replays = collections.Counter(
        max(clients.get((f["input"], f["scope"]), [None]) or [None])
        for f in findings
        if f["kind"] == "UNSAFE_REPLAY"
    )
    t = lambda s: dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f%z")
    lat = collections.defaultdict(list)
    for c in calls:
        if c.get("ended_at"):
            ms = (t(c["ended_at"]) - t(c["started_at"])) / dt.timedelta(milliseconds=1)
            lat[c.get("server") or "(not named)"].append(ms)
    slow = {s: (len(v), round(sum(v) / len(v), 3), round(max(v), 3)) for s, v in lat.items()}
    return failure, dict(replays), slow


def test_the_three_questions_in_spark_sql_and_duckdb_agree_with_the_cli(spark, job_output, reference):
    import duckdb

    records, split_records, _ = reference
    calls = _of(records, "call") + [c for w in split_records.values() for c in _of(w, "call")]
    findings = _of(records, "finding") + [f for w in split_records.values() for f in _of(w, "finding")]
    failure, replays, slow = _answers(calls, findings)
    assert replays and len(slow) >= 2

    out = job_output["dir"]
    spark.read.parquet(str(out / "calls")).createOrReplaceTempView("calls")
    spark.read.parquet(str(out / "findings")).createOrReplaceTempView("findings")
    con = duckdb.connect()
    docs = (REPO / "docs" / "spark.md").read_text()
    for name in ("failure_rate", "unsafe_replays", "slowest_servers"):
        sql_spark = questions.SPARK[name]
        sql_duck = questions.DUCKDB[name].replace("OUT", str(out))
        assert sql_spark.strip() in docs and questions.DUCKDB[name].strip() in docs, name
        rows_spark = [tuple(r) for r in spark.sql(sql_spark).collect()]
        rows_duck = con.execute(sql_duck).fetchall()
        for rows in (rows_spark, rows_duck):
            if name == "failure_rate":
                got = [(t, d.isoformat(), n) for t, d, n, _ in rows]
                assert got == [f[:3] for f in failure]
                # The queries round to 4 places (half up; Python's round() is half even).
                for (*_, r), (*_, exact) in zip(rows, failure):
                    assert float(r) == pytest.approx(exact, abs=5.1e-5)
            elif name == "unsafe_replays":
                assert dict(rows) == replays
            else:
                # Spark SQL divides into decimals, DuckDB into doubles.
                got = {s: (n, float(a), float(m)) for s, n, a, m in rows}
                assert got.keys() == slow.keys()
                for s, (n, a, m) in got.items():
                    assert n == slow[s][0]
                    assert a == pytest.approx(slow[s][1], abs=1e-3)
                    assert m == pytest.approx(slow[s][2], abs=1e-3)
