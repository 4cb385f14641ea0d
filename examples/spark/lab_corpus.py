"""A corpus made from the lab's captures (lab/captures): every scenario once, in a
rotating choice of its recordings (HAR, pcap, pcapng, JSONL exchange log, stdio
transcript), so every reader runs; two sessions split into two JSONL files each by
``split_session.py``. The Spark test and ``measure.py`` build it."""

import pathlib
import shutil

import split_session

LAB = pathlib.Path(__file__).resolve().parents[2] / "lab" / "captures"
RECORDINGS = ["exchanges.jsonl", "capture.har", "capture.pcap", "capture.pcapng"]
# Split after the first attempt of a call that is sent again, so that the repeat,
# the replay finding and the tool annotations (from tools/list) span both files.
SPLITS = {"long_session_py": 149, "no_response_replay_py": 3}


def build(root: pathlib.Path, prefix: str = ""):
    """Writes the corpus under ``root/prefix``; returns the names (relative to
    ``root``) of the whole files, and {split folder name: original log}."""
    whole, splits = [], {}
    scenarios = sorted(d for d in LAB.iterdir() if d.is_dir())
    for n, d in enumerate(scenarios):
        folder = pathlib.PurePosixPath(prefix) / d.name if prefix else pathlib.PurePosixPath(d.name)
        (root / folder).mkdir(parents=True)
        if d.name in SPLITS:
            a, b = root / folder / "part-1.jsonl", root / folder / "part-2.jsonl"
            split_session.split(str(d / "exchanges.jsonl"), SPLITS[d.name], str(a), str(b))
            assert a.read_bytes() + b.read_bytes() == (d / "exchanges.jsonl").read_bytes()
            splits[str(folder)] = d / "exchanges.jsonl"
            continue
        order = RECORDINGS[n % 4:] + RECORDINGS[: n % 4] + ["transcript.jsonl"]
        src = next(d / f for f in order if (d / f).is_file())
        shutil.copy(src, root / folder / src.name)
        whole.append(f"{folder}/{src.name}")
    return whole, splits
