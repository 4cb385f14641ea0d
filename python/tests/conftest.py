"""Shared helpers: the repository's lab captures and the mcpsift binary the
package is compared with (``MCPSIFT_CLI``, else ``target/debug/mcpsift`` built by
``cargo build`` or ``cargo test``)."""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
LAB = REPO / "lab" / "captures"


def cli_path() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("MCPSIFT_CLI", REPO / "target" / "debug" / "mcpsift"))
    if not path.is_file():
        # A missing binary is a set-up error, never a reason to skip.
        raise RuntimeError(f"{path}: no mcpsift binary; run `cargo build` first or set MCPSIFT_CLI")
    return path


def run_cli(args, cwd=None, check_codes=(0, 1, 2)):
    """``mcpsift analyze ARGS --format jsonl`` as a list of records."""
    proc = subprocess.run(
        [str(cli_path()), "analyze", "--format", "jsonl", "--quiet", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.returncode in check_codes, proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="session")
def cli():
    """``run_cli``: the command line's records for some arguments."""
    cli_path()
    return run_cli


@pytest.fixture(scope="session")
def lab():
    assert LAB.is_dir(), LAB
    return LAB


@pytest.fixture(scope="session")
def lab_files(lab):
    """Every capture and log of the lab (the expected.json and notes are no input)."""
    files = sorted(
        p
        for p in lab.rglob("*")
        if p.is_file() and p.suffix in (".har", ".pcap", ".pcapng", ".jsonl")
    )
    assert len(files) > 150, len(files)
    return files


@pytest.fixture(scope="session")
def lab_records(lab):
    """``mcpsift.analyze`` over the whole lab, computed once."""
    import mcpsift

    return list(mcpsift.analyze(str(lab)))
