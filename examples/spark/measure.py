"""Throughput of the Spark job with 1 and 2 executor cores (local[1], local[2]),
beside the command line with 1 and 2 threads and the per-file cost of each stage,
on COPIES copies of the lab corpus (lab_corpus.py), each copy in a folder of its own.
Figures in docs/scale.md.

    python3 measure.py [--copies 20] [--cli target/release/mcpsift]

Use a release wheel (maturin build --release) and a release binary: a debug build
measures the debug build.
"""

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import lab_corpus

HERE = pathlib.Path(__file__).resolve().parent


def build_corpus(root: pathlib.Path, copies: int) -> int:
    for n in range(copies):
        lab_corpus.build(root, f"copy-{n:03d}")
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def time_cli(cli: str, root: pathlib.Path, threads: int) -> float:
    t = time.perf_counter()
    subprocess.run([cli, "analyze", str(root), "--format", "jsonl", "-q", "--threads", str(threads),
                    "-o", os.devnull], check=False)
    return time.perf_counter() - t


def time_stages(root: pathlib.Path) -> dict:
    """Stage 1 over every file and stage 2 over every folder, in this process."""
    import mcpsift

    files = sorted(p for p in root.rglob("*") if p.is_file())
    parts = collections.defaultdict(list)
    t0 = time.perf_counter()
    records = 0
    for p in files:
        name = str(p.relative_to(root))
        for one in mcpsift.calls(name, p.read_bytes(), group=str(p.parent.relative_to(root))):
            for key, rec in one["records"]:
                parts[key].append(rec)
                records += 1
    t1 = time.perf_counter()
    out = sum(len(list(mcpsift.correlate(recs))) for recs in parts.values())
    t2 = time.perf_counter()
    return {"files": len(files), "records": records, "partitions": len(parts),
            "stage1_s": t1 - t0, "stage2_s": t2 - t1, "stage2_out": out}


def time_spark(root: pathlib.Path, cores: int) -> float:
    """The job in a fresh JVM with ``local[cores]``; the time of run_job alone."""
    code = f"""
import os, sys, time, tempfile
sys.path.insert(0, {str(HERE)!r})
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
from pyspark.sql import SparkSession
import mcpsift_job
spark = (SparkSession.builder.master("local[{cores}]")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "{2 * cores}").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.sparkContext.addPyFile({str(HERE / "mcpsift_job.py")!r})
out = tempfile.mkdtemp()
t = time.perf_counter()
mcpsift_job.run_job(spark, {str(root)!r}, out)
print("SECONDS", time.perf_counter() - t)
spark.stop()
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("SECONDS"):
            return float(line.split()[1])
    raise RuntimeError(proc.stderr[-3000:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--cli", default=str(HERE.parents[1] / "target" / "release" / "mcpsift"))
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "corpus"
        size = build_corpus(root, args.copies)
        result = {"copies": args.copies, "bytes": size, "cpu_count": os.cpu_count(),
                  "load_before": os.getloadavg()}
        result["stages_in_process"] = time_stages(root)
        for threads in (1, 2):
            result[f"cli_threads_{threads}_s"] = min(
                time_cli(args.cli, root, threads) for _ in range(args.runs))
        for cores in (1, 2):
            result[f"spark_local_{cores}_s"] = min(time_spark(root, cores) for _ in range(args.runs))
        result["load_after"] = os.getloadavg()
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
