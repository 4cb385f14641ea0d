"""Arrow tables of mcpsift's records, and the way back to records.

One table per record type of ``--format jsonl`` (``docs/output.md``): ``inputs``,
``calls`` and ``findings``. A scalar field keeps its name and value; ``started_at``
and ``ended_at`` become ``timestamp[us, UTC]``; a JSON-RPC id becomes its JSON text
(``1`` and ``"1"`` differ on the wire and stay distinct); nested objects
(``location``, ``previous_attempt``, ``timeline``, ``locations``, ``problems``)
become JSON text, which DuckDB (``json_extract``) and Spark SQL
(``get_json_object``) read. ``records`` turns rows back into the dicts ``analyze``
yields, so a table (or Parquet written from one) loses nothing, with one exception:
a time with sub-microsecond digits (a nanosecond pcapng) is printed by the CLI with
six digits, ``…:02.123000Z``; the table keeps microseconds and gives back the text
the instant needs, ``…:02.123Z`` (``canonical_time``).
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Dict, Iterable, List

import pyarrow as pa

_TS = pa.timestamp("us", tz="UTC")

#: Columns of the ``calls`` table, in the order of the JSONL record.
CALLS = pa.schema(
    [
        ("input", pa.string()),
        ("scope", pa.string()),
        ("id", pa.string()),
        ("method", pa.string()),
        ("tool", pa.string()),
        ("outcome", pa.string()),
        ("layer", pa.string()),
        ("http_statuses", pa.list_(pa.int32())),
        ("content_type", pa.string()),
        ("jsonrpc_code", pa.int64()),
        ("result_type", pa.string()),
        ("post_count", pa.int64()),
        ("retry_origin", pa.string()),
        ("protocol_version", pa.string()),
        ("client", pa.string()),
        ("server", pa.string()),
        ("started_at", _TS),
        ("ended_at", _TS),
        ("transport", pa.string()),
        ("evidence", pa.string()),
        ("location", pa.string()),
        ("error_message", pa.string()),
        ("is_error", pa.bool_()),
        ("sse_events", pa.int64()),
        ("end", pa.string()),
        ("cancelled", pa.bool_()),
        ("previous_attempt", pa.string()),
        ("notes", pa.list_(pa.string())),
        ("timeline", pa.string()),
    ]
)

#: Columns of the ``findings`` table.
FINDINGS = pa.schema(
    [
        ("kind", pa.string()),
        ("severity", pa.string()),
        ("input", pa.string()),
        ("scope", pa.string()),
        ("ids", pa.list_(pa.string())),
        ("detail", pa.string()),
        ("locations", pa.string()),
    ]
)

#: Columns of the ``inputs`` table.
INPUTS = pa.schema(
    [
        ("path", pa.string()),
        ("format", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("exchanges", pa.int64()),
        ("calls", pa.int64()),
        ("problems", pa.string()),
        ("notices", pa.string()),
    ]
)

# Columns written as JSON text, and the record fields a JSONL record always has
# (printed as null when empty) as opposed to those it leaves out when empty.
_JSON = {"id", "location", "previous_attempt", "timeline", "locations", "problems", "notices"}
_CALL_ALWAYS = {
    "input", "scope", "id", "method", "tool", "outcome", "layer", "http_statuses",
    "content_type", "post_count", "retry_origin", "transport", "evidence",
    "location", "sse_events", "end",
}
_INPUT_ALWAYS = {"path", "format", "status", "exchanges", "calls"}


def _text(value: Any) -> Any:
    # Compact, key order kept: the same text the CLI prints for that value.
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _time(value: Any) -> Any:
    if value is None:
        return None
    # "2026-12-02T17:29:02.791450Z": fromisoformat takes "Z" only from 3.11 on.
    return _dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f%z")


def _time_text(value: Any) -> Any:
    if value is None:
        return None
    if value.tzinfo is None:
        # Engines that drop the zone (Spark's INT96) still wrote UTC.
        value = value.replace(tzinfo=_dt.timezone.utc)
    value = value.astimezone(_dt.timezone.utc)
    # The CLI prints milliseconds unless the time has finer digits.
    frac = value.microsecond
    tail = f"{frac // 1000:03d}" if frac % 1000 == 0 else f"{frac:06d}"
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + tail + "Z"


def canonical_time(text: Any) -> Any:
    """The text ``records`` gives back for a time the CLI printed as ``text``."""
    return _time_text(_time(text))


def _row(record: Dict[str, Any], schema: pa.Schema) -> Dict[str, Any]:
    row: Dict[str, Any] = {}
    for name in schema.names:
        value = record.get(name)
        if name in ("started_at", "ended_at"):
            value = _time(value)
        elif name == "ids":
            value = [_text(i) for i in value or []]
        elif name in _JSON:
            value = None if name not in record else _text(value)
        elif name == "cancelled":
            value = bool(value)
        row[name] = value
    return row


def table(records: Iterable[Dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows of ``schema`` from records of one type (``call``, ``finding``, ``input``)."""
    return pa.Table.from_pylist([_row(r, schema) for r in records], schema=schema)


def tables(records: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """Splits ``analyze`` output into ``inputs``, ``calls``, ``findings`` tables and
    the ``summary`` dict."""
    by_type: Dict[str, List[Dict[str, Any]]] = {"input": [], "call": [], "finding": []}
    summary = None
    for r in records:
        if r["type"] == "summary":
            summary = r
        else:
            by_type[r["type"]].append(r)
    return {
        "inputs": table(by_type["input"], INPUTS),
        "calls": table(by_type["call"], CALLS),
        "findings": table(by_type["finding"], FINDINGS),
        "summary": summary,
    }


def records(tbl: pa.Table, type: str) -> List[Dict[str, Any]]:
    """The JSONL records (``type`` ``call``, ``finding`` or ``input``) of a table's rows."""
    out = []
    for row in tbl.to_pylist():
        rec: Dict[str, Any] = {"type": type}
        for name, value in row.items():
            if name in ("started_at", "ended_at"):
                value = _time_text(value)
            elif name == "ids":
                value = [json.loads(i) for i in value]
            elif name in _JSON and value is not None:
                value = json.loads(value)
            if type == "call" and name not in _CALL_ALWAYS:
                dropped = value is None or (name == "cancelled" and not value)
                if dropped or (name == "notes" and not value):
                    continue
            if type == "input" and name not in _INPUT_ALWAYS and value is None:
                continue
            rec[name] = value
        out.append(rec)
    return out
