"""mcpsift for Python: offline analysis of Model Context Protocol traffic.

Every ``tools/call`` in HAR files, pcap/pcapng captures, JSONL exchange logs,
stdio transcripts, client logs and recorder files gets a verdict (outcome, the
layer that failed, the evidence), and findings look across calls for mismatched
ids, calls that never finished and repeats nothing explains.

``analyze`` yields the records of ``mcpsift analyze --format jsonl`` as dicts,
with the same keys and values; ``analyze_table`` gives the calls as a pyarrow
table. ``calls`` and ``correlate`` are the two stages behind them, for engines
such as Spark that read inputs on many machines and regroup calls by scope.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, List, Tuple, Union

from . import _native
from ._native import __version__

__all__ = [
    "__version__",
    "analyze",
    "analyze_table",
    "analyze_tables",
    "calls",
    "correlate",
    "partition_key",
    "summarize",
    "Options",
]

Options = _native.Options

PathLike = Union[str, "os.PathLike[str]"]
Input = Union[PathLike, bytes, Tuple[str, bytes]]


def _duration(name: str, value: Any) -> Any:
    # A number is seconds, as the CLI reads a bare number; a string is passed on.
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value}s"
    raise TypeError(f"{name}: expected a duration such as '30s' or a number of seconds")


def _options(kwargs: Dict[str, Any]) -> "_native.Options":
    opts = kwargs.pop("options", None)
    if opts is not None:
        if kwargs:
            raise TypeError("pass either options= or keyword options, not both")
        return opts
    for name in (
        "retry_window",
        "double_dispatch_window",
        "client_timeout",
        "client_log_retry_window",
    ):
        if name in kwargs:
            kwargs[name] = _duration(name, kwargs[name])
    for name in ("tool", "outcome", "finding", "scope"):
        if isinstance(kwargs.get(name), str):
            kwargs[name] = [kwargs[name]]
    return _native.Options(**kwargs)


def _split(inputs: Union[Input, Iterable[Input]]) -> Tuple[List[str], List[Tuple[str, bytes]]]:
    """Paths on one side, in-memory inputs on the other."""
    if isinstance(inputs, (str, bytes, bytearray, memoryview, tuple)) or hasattr(
        inputs, "__fspath__"
    ):
        items: List[Any] = [inputs]
    else:
        items = list(inputs)  # type: ignore[arg-type]
    paths: List[str] = []
    data: List[Tuple[str, bytes]] = []
    for n, item in enumerate(items):
        if isinstance(item, tuple):
            name, blob = item
            data.append((str(name), bytes(blob)))
        elif isinstance(item, (bytes, bytearray, memoryview)):
            data.append((f"<bytes {n}>", bytes(item)))
        else:
            paths.append(os.fspath(item))
    if paths and data:
        raise TypeError("give either paths or in-memory inputs in one call, not both")
    return paths, data


def analyze(inputs: Union[Input, Iterable[Input]], **options: Any) -> Iterator[Dict[str, Any]]:
    """Analyse captures and logs; yield the records of ``--format jsonl``.

    ``inputs`` is a path (file or directory, walked as the CLI walks it), a list
    of paths, raw ``bytes``, or ``(name, bytes)`` pairs; formats and compression
    are detected from content. The records are dicts with the keys and values the
    CLI prints: one ``input`` record per input followed by its ``call`` and
    ``finding`` records, then one ``summary`` (``docs/output.md``).

    Keyword options mirror ``mcpsift analyze``: ``redact`` (default True, as the
    CLI; False is ``--no-redact``), ``threads``, the filters ``tool``,
    ``outcome``, ``finding``, ``scope`` (a string or a list), the caps
    ``max_record_bytes``, ``max_event_bytes``, ``max_stream_events``,
    ``max_decompressed_bytes``, and the windows ``retry_window``,
    ``double_dispatch_window``, ``client_timeout``, ``client_log_retry_window``
    (``"30s"``, ``"500ms"`` or a number of seconds). An input that cannot be read
    is an ``input`` record with ``status: "error"``, never an exception; a bad
    option raises ``ValueError``.
    """
    opts = _options(dict(options))
    paths, data = _split(inputs)
    if data:
        return iter(_native.analyze_bytes(data, opts))
    return iter(_native.analyze_paths(paths, opts))


def analyze_tables(inputs: Union[Input, Iterable[Input]], **options: Any) -> Dict[str, Any]:
    """Analyse as ``analyze`` does; return pyarrow tables ``inputs``, ``calls``,
    ``findings`` (one row per record of that type) and the ``summary`` dict.

    Columns follow the JSONL records (``mcpsift.arrow`` documents the schemas):
    scalars keep their name and value, times become UTC timestamps, ids become
    their JSON text (``1`` and ``"1"`` stay distinct), and nested objects
    (``location``, ``timeline``, …) become JSON text.
    """
    from . import arrow

    return arrow.tables(analyze(inputs, **options))


def analyze_table(inputs: Union[Input, Iterable[Input]], **options: Any) -> Any:
    """Analyse as ``analyze`` does; return the calls as one pyarrow table."""
    return analyze_tables(inputs, **options)["calls"]


def calls(
    name: str, data: bytes, *, group: "str | None" = None, walked: bool = False, **options: Any
) -> List[Dict[str, Any]]:
    """Stage 1 on one input: read, pair and classify its calls.

    ``name`` stands where a path would in the records; ``data`` is the input's
    bytes (compressed data and tar archives are opened as on the command line).
    Returns one dict per input read (an archive gives one per member):

    - ``input``: the input's ``input`` record (path, format, status, problems);
    - ``failed``: True when the input, or a record of it, could not be read;
    - ``records``: ``(partition_key, record)`` pairs, ``record`` being JSON text
      that ``correlate`` reads back (calls, and what the input learnt about its
      sessions and tools);
    - ``skipped``: None, or, with ``walked=True``, why the file is no input at all
      (empty, binary, unrecognised, a log with no MCP record), as a directory walk
      skips it; ``input`` is then None.

    Inputs of one ``group`` (a session's log rotated into several files) share a
    partition key, so stage 2 judges them together; without a group an input is
    its own partition. Options: ``redact`` and the caps of ``analyze``.
    """
    opts = _options(dict(options))
    return _native.stage_calls(name, bytes(data), opts, group, walked)


def correlate(records: Iterable[Union[str, bytes]], **options: Any) -> Iterator[Dict[str, Any]]:
    """Stage 2 on the records of one partition key (from any number of inputs, in
    any order): yields the final ``call`` records in request order, then the
    ``finding`` records, as ``analyze`` yields them. Options: the windows of
    ``analyze`` (``retry_window``, ``double_dispatch_window``, ``client_timeout``,
    ``client_log_retry_window``) and ``redact`` (pass ``redact=False`` here too for
    records that ``calls(..., redact=False)`` made). A record that is not stage-1 JSON raises
    ``ValueError`` naming its position."""
    opts = _options(dict(options))
    texts = [r.decode() if isinstance(r, (bytes, bytearray)) else r for r in records]
    return iter(_native.stage_correlate(texts, opts))


def partition_key(group: str) -> str:
    """The partition key of the inputs of ``group`` (by default an input's group is
    its own name): records with equal keys must meet in one ``correlate``."""
    return _native.partition_key(group)


def summarize(records: Iterable[Union[str, bytes, Dict[str, Any]]]) -> Dict[str, Any]:
    """The ``summary`` record of a set of records (dicts or JSON text): ``input``,
    ``call`` and ``finding`` records count themselves and ``summary`` records
    merge, so the summaries of disjoint sets of inputs (one per Spark partition,
    one per day) add up to the summary of all of them, as one ``analyze`` over
    every input would print it. Other records are ignored."""
    items = [r.decode() if isinstance(r, (bytes, bytearray)) else r for r in records]
    return _native.summarize(items)
