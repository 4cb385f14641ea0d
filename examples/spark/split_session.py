"""Splits one JSONL log of a single session into two files at a line, so that a test
can check that calls whose session spans two inputs are correlated as if the log
were one file (the command line on the original file is the reference).

    python3 split_session.py LOG LINE OUT_A OUT_B

Lines 1..LINE go to OUT_A, the rest to OUT_B; the two concatenated give LOG back
byte for byte.
"""

import sys


def split(log: str, line: int, out_a: str, out_b: str) -> None:
    with open(log, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    if not 0 < line < len(lines):
        raise SystemExit(f"{log}: has {len(lines)} lines; cannot split after line {line}")
    with open(out_a, "wb") as f:
        f.writelines(lines[:line])
    with open(out_b, "wb") as f:
        f.writelines(lines[line:])


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    split(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
