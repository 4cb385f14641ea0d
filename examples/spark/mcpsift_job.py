"""mcpsift on Spark: every capture and log under a directory, read where it lies.

    spark-submit examples/spark/mcpsift_job.py INPUT_DIR OUTPUT_DIR [--group folder|all]

1. ``binaryFile`` reads every file under INPUT_DIR (recursively) as bytes;
2. stage 1 (``mcpsift.calls``) runs per input inside ``mapInArrow``: read, pair,
   classify, giving records with their partition key (the input's group);
3. the records are grouped by that key and stage 2 (``mcpsift.correlate``) runs per
   group inside ``applyInArrow``: the cross-call rules in request order;
4. OUTPUT_DIR/calls, OUTPUT_DIR/findings and OUTPUT_DIR/inputs are written as
   Parquet, with the columns of ``mcpsift.arrow``; OUTPUT_DIR/skipped lists the files
   that are no input, as JSON lines (``docs/spark.md``).

``--group folder`` (the default) correlates the calls of inputs in the same folder,
as a folder holds one recording (a day, a host, a test run); ``--group file``
judges each input alone, as ``mcpsift analyze DIR`` does; ``--group all`` judges
every input together, in one stage-2 task. Inputs are named by their path under INPUT_DIR,
as ``mcpsift analyze`` names files given relative to it.
"""

from __future__ import annotations

import argparse
import json
import posixpath
from typing import Any, Dict, Iterator, List

import pyarrow as pa

import mcpsift
from mcpsift import arrow

#: What stage 1 gives: one row per input (``kind`` "input", the payload its input
#: record), one per stage-1 record (``kind`` "record", the payload its JSON text,
#: ``group`` its partition key), and one per file that is no input (``kind``
#: "skipped", the payload its path and the reason).
STAGE1 = pa.schema(
    [
        ("kind", pa.string()),
        ("group", pa.string()),
        ("payload", pa.string()),
    ]
)

#: Stage 2's output: the call and finding columns side by side, ``type`` telling
#: which a row is; split into two Parquet datasets when written.
_FINDING_ONLY = [f for f in arrow.FINDINGS if f.name not in arrow.CALLS.names]
STAGE2 = pa.schema([("type", pa.string()), *arrow.CALLS, *_FINDING_ONLY])

README = {"readme", "readme.md", "readme.txt"}


def relative_name(uri: str, root: str) -> str:
    """The path of ``uri`` under ``root`` (both as Spark prints them)."""
    root = root.rstrip("/") + "/"
    return uri[len(root):] if uri.startswith(root) else uri


def group_of(name: str, group_by: str):
    """The stage-1 group of an input: its folder, nothing (the input alone), or one
    group for all."""
    if group_by == "folder":
        return posixpath.dirname(name)
    if group_by == "all":
        return ""
    return None


def stage_one(root: str, group_by: str, options: Dict[str, Any]):
    """The ``mapInArrow`` function: stage 1 for every file of each batch."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows: List[Dict[str, Any]] = []
            paths = batch.column("path").to_pylist()
            contents = batch.column("content")
            for i, uri in enumerate(paths):
                name = relative_name(uri, root)
                group = group_of(name, group_by)
                # An archive gives one result per member.
                data = contents[i].as_py()
                for one in mcpsift.calls(name, data, group=group, walked=True, **options):
                    if one["skipped"] is not None:
                        rows.append({"kind": "skipped", "group": None, "payload": json.dumps(
                            {"path": name, "reason": one["skipped"]})})
                        continue
                    rows.append({"kind": "input", "group": None,
                                 "payload": json.dumps(one["input"])})
                    for key, record in one["records"]:
                        rows.append({"kind": "record", "group": key, "payload": record})
            yield pa.RecordBatch.from_pylist(rows, schema=STAGE1)

    return run


def stage_two(options: Dict[str, Any]):
    """The ``applyInArrow`` function: stage 2 over one group's call records."""

    def run(table: pa.Table) -> pa.Table:
        out = list(mcpsift.correlate(table.column("payload").to_pylist(), **options))
        calls = arrow.table([r for r in out if r["type"] == "call"], arrow.CALLS)
        findings = arrow.table([r for r in out if r["type"] == "finding"], arrow.FINDINGS)
        return pa.concat_tables(
            [_widen(calls, "call"), _widen(findings, "finding")]
        )

    return run


def _widen(table: pa.Table, kind: str) -> pa.Table:
    cols = []
    for field in STAGE2:
        if field.name == "type":
            cols.append(pa.array([kind] * table.num_rows, pa.string()))
        elif field.name in table.column_names:
            cols.append(table.column(field.name))
        else:
            cols.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(cols, schema=STAGE2)


def inputs_table(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Input records (stage 1's ``input`` rows) as rows of ``arrow.INPUTS``."""
    for batch in batches:
        recs = [json.loads(p) for p in batch.column("payload").to_pylist()]
        yield from arrow.table(recs, arrow.INPUTS).to_batches()


def run_job(spark, input_dir: str, output_dir: str, group_by: str = "folder",
            options: Dict[str, Any] | None = None) -> None:
    """Reads INPUT_DIR, writes OUTPUT_DIR/{calls,findings,inputs} as Parquet and
    OUTPUT_DIR/skipped as JSON lines."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark import StorageLevel

    options = dict(options or {})
    # Parquet's own UTC timestamps (Spark's default, INT96, reads back without a zone).
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    files = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .load(input_dir)
        .select("path", "content")
    )
    # A folder's README describes it and is no input, as on the command line.
    base = F.lower(F.element_at(F.split("path", "/"), -1))
    files = files.filter(~base.isin(*README))
    root_uri = _root_uri(spark, input_dir)

    one = files.mapInArrow(stage_one(root_uri, group_by, options), from_arrow_schema(STAGE1))
    one = one.persist(StorageLevel.MEMORY_AND_DISK)
    records = one.filter(F.col("kind") == "record")
    two = (
        records.groupBy("group")
        .applyInArrow(stage_two(options), from_arrow_schema(STAGE2))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    two.filter(F.col("type") == "call").select(*arrow.CALLS.names).write.mode(
        "overwrite"
    ).parquet(f"{output_dir}/calls")
    two.filter(F.col("type") == "finding").select(*arrow.FINDINGS.names).write.mode(
        "overwrite"
    ).parquet(f"{output_dir}/findings")
    one.filter(F.col("kind") == "input").mapInArrow(
        inputs_table, from_arrow_schema(arrow.INPUTS)
    ).write.mode("overwrite").parquet(f"{output_dir}/inputs")
    one.filter(F.col("kind") == "skipped").select("payload").write.mode("overwrite").text(
        f"{output_dir}/skipped"
    )
    two.unpersist()
    one.unpersist()


def _root_uri(spark, input_dir: str) -> str:
    """INPUT_DIR as ``binaryFile`` spells the paths under it (``file:/…``, ``s3a://…``)."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(input_dir)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs.makeQualified(path).toString()


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input_dir")
    parser.add_argument("output_dir")
    parser.add_argument("--group", choices=["folder", "file", "all"], default="folder",
                        help="correlate calls of inputs in one folder (default), of each "
                        "input alone (as mcpsift analyze DIR does), or of all inputs")
    parser.add_argument("--no-redact", action="store_true",
                        help="keep tokens, cookies and session ids as recorded")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("mcpsift").getOrCreate()
    run_job(spark, args.input_dir, args.output_dir, args.group,
            {"redact": not args.no_redact})
    spark.stop()


if __name__ == "__main__":
    main()
