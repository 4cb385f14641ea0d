"""A local Spark (``local[2]``, loopback only) and the mcpsift binary the job's
output is compared with (``MCPSIFT_CLI``, else ``target/debug/mcpsift``)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
LAB = REPO / "lab" / "captures"


def _cli_path() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("MCPSIFT_CLI", REPO / "target" / "debug" / "mcpsift"))
    if not path.is_file():
        raise RuntimeError(f"{path}: no mcpsift binary; run `cargo build` first or set MCPSIFT_CLI")
    return path


def _run_cli(args, cwd=None):
    """``mcpsift analyze ARGS --format jsonl`` as a list of records."""
    proc = subprocess.run(
        [str(_cli_path()), "analyze", "--format", "jsonl", "--quiet", *map(str, args)],
        cwd=cwd,
        capture_output=True,
    )
    assert proc.returncode in (0, 1, 2), proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="session")
def cli():
    _cli_path()
    return _run_cli


@pytest.fixture(scope="session")
def spark():
    # Workers run this interpreter (the venv with mcpsift installed), and the job
    # module is shipped to them as a cluster would ship it with --py-files.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("mcpsift-test")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        # List the corpus on the driver: a parallel listing is a Spark job of its own.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.sparkContext.addPyFile(str(HERE / "mcpsift_job.py"))
    yield session
    session.stop()
