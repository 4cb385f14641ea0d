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
import resource
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


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_cli(cli: str, root: pathlib.Path, threads: int):
    """(wall seconds, CPU seconds) of ``mcpsift analyze``."""
    c, t = _children_cpu(), time.perf_counter()
    subprocess.run([cli, "analyze", str(root), "--format", "jsonl", "-q", "--threads", str(threads),
                    "-o", os.devnull], check=False)
    return round(time.perf_counter() - t, 2), round(_children_cpu() - c, 2)


def time_stages(root: pathlib.Path) -> dict:
    """Stage 1 over every file and stage 2 over every folder, in this process."""
    import mcpsift

    files = sorted(p for p in root.rglob("*") if p.is_file())
    parts = collections.defaultdict(list)
    c0 = time.process_time()
    t0 = time.perf_counter()
    records = 0
    record_bytes = 0
    for p in files:
        name = str(p.relative_to(root))
        for one in mcpsift.calls(name, p.read_bytes(), group=str(p.parent.relative_to(root))):
            for key, rec in one["records"]:
                parts[key].append(rec)
                records += 1
                record_bytes += len(rec)
    t1, c1 = time.perf_counter(), time.process_time()
    out = sum(len(list(mcpsift.correlate(recs))) for recs in parts.values())
    t2, c2 = time.perf_counter(), time.process_time()
    return {"files": len(files), "records": records, "record_bytes": record_bytes,
            "partitions": len(parts),
            "stage1_wall_s": round(t1 - t0, 2), "stage1_cpu_s": round(c1 - c0, 2),
            "stage2_wall_s": round(t2 - t1, 2), "stage2_cpu_s": round(c2 - c1, 2),
            "stage2_out": out}


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its descendants, live or reaped, from /proc:
    the JVM and the Python workers it started (Spark's own metrics leave the
    workers out)."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(fields[1])
        cpu[int(d)] = sum(int(x) for x in fields[11:15]) / tick
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0.0)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return total


def time_spark(root: pathlib.Path, cores: int, group: str = "folder"):
    """The job in a fresh JVM with ``local[cores]``: (wall seconds, CPU seconds of
    the JVM and its Python workers) of run_job alone, the JVM's start left out."""
    code = f"""
import os, sys, time, tempfile
sys.path.insert(0, {str(pathlib.Path(__file__).resolve().parent)!r})
from measure import tree_cpu
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
jvm = spark.sparkContext._gateway.proc.pid
c, t = tree_cpu(jvm), time.perf_counter()
mcpsift_job.run_job(spark, {str(root)!r}, out, {group!r})
print("SECONDS", time.perf_counter() - t, tree_cpu(jvm) - c)
spark.stop()
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("SECONDS"):
            _, wall, cpu = line.split()
            return round(float(wall), 2), round(float(cpu), 2)
    raise RuntimeError(proc.stderr[-3000:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--cli", default=str(HERE.parents[1] / "target" / "release" / "mcpsift"))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--spark-only", action="store_true")
    ap.add_argument("--group", default="folder", choices=["folder", "file", "all"])
    ap.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "corpus"
        size = build_corpus(root, args.copies)
        result = {"copies": args.copies, "bytes": size, "cpu_count": os.cpu_count(),
                  "group": args.group,
                  "load_before": os.getloadavg()}
        if not args.spark_only:
            result["stages_in_process"] = time_stages(root)
        for threads in () if args.spark_only else (1, 2):
            result[f"cli_threads_{threads}_wall_cpu_s"] = min(
                time_cli(args.cli, root, threads) for _ in range(args.runs))
        for cores in args.cores:
            result[f"spark_local_{cores}_wall_cpu_s"] = min(time_spark(root, cores, args.group)
                                                        for _ in range(args.runs))
        result["load_after"] = os.getloadavg()
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
