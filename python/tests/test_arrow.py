"""Arrow tables of the records: typed columns, and nothing lost on the way to
Parquet and back."""

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

import mcpsift
from mcpsift import arrow


def _canonical(record):
    """The record with its times as a table gives them back (``arrow.canonical_time``)."""
    r = dict(record)
    for k in ("started_at", "ended_at"):
        if r.get(k) is not None:
            r[k] = arrow.canonical_time(r[k])
    return r


def test_canonical_time_keeps_the_instant():
    # Six digits ending in 000: the CLI saw nanoseconds; the instant is .123 s.
    assert arrow.canonical_time("2026-12-03T12:36:02.123000Z") == "2026-12-03T12:36:02.123Z"
    assert arrow.canonical_time("2026-12-03T12:36:02.123456Z") == "2026-12-03T12:36:02.123456Z"
    assert arrow.canonical_time("2026-12-03T12:36:02.120Z") == "2026-12-03T12:36:02.120Z"


def test_tables_round_trip_to_the_records_through_parquet(lab_records, tmp_path):
    records = lab_records
    tables = arrow.tables(records)
    assert tables["summary"] == records[-1]
    for name, kind in (("inputs", "input"), ("calls", "call"), ("findings", "finding")):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(tables[name], path)
        back = arrow.records(pq.read_table(path), kind)
        assert back == [_canonical(r) for r in records if r["type"] == kind], name
        assert back, name


def test_the_calls_table_has_typed_columns(lab):
    table = mcpsift.analyze_table(lab / "long_session_py" / "exchanges.jsonl")
    assert table.schema == arrow.CALLS
    # One row per tools/call request of the raw exchange log, counted here.
    raw = [json.loads(l) for l in (lab / "long_session_py" / "exchanges.jsonl").read_text().splitlines()]
    requests = [r for r in raw if json.loads(r["request"]["body"]).get("method") == "tools/call"]
    assert table.num_rows == len(requests) > 200
    first = table.slice(0, 1).to_pylist()[0]
    assert isinstance(first["started_at"], dt.datetime)
    assert first["started_at"].tzinfo is not None
    # The first call starts at the "ts" of its line in the raw log.
    assert first["started_at"] == dt.datetime.strptime(requests[0]["ts"], "%Y-%m-%dT%H:%M:%S.%f%z")
    outcomes = pa.compute.value_counts(table["outcome"]).to_pylist()
    assert {o["values"]: o["counts"] for o in outcomes}["STREAM_INCOMPLETE"] == 1


def test_ids_are_json_text_so_types_stay_distinct():
    lines = [
        {"jsonrpc": "2.0", "id": "7", "method": "tools/call", "params": {"name": "t", "arguments": {}}},
        {"jsonrpc": "2.0", "id": "7", "result": {"content": []}},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t", "arguments": {"b": 2}}},
        {"jsonrpc": "2.0", "id": 7, "result": {"content": []}},
    ]
    data = "".join(json.dumps(l) + "\n" for l in lines).encode()
    table = mcpsift.analyze_table(("tee.jsonl", data))
    assert table["id"].to_pylist() == ['"7"', "7"]
