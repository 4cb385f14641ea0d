#!/usr/bin/env bash
# End-to-end benchmark: MB/s and peak RSS of `mcpsift analyze --format jsonl` on a
# generated pcap (1 GiB), JSONL (300 MB) and HAR (300 MB), each next to
# `cat FILE > /dev/null` on the same file in the same run. Results: docs/performance.md.
#   bash bench/run.sh [DIR]        (DIR defaults to /tmp; needs ~2 GB free)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp}
cargo build --release --bin mcpsift --example gen_pcap --example ingest_only
[ -f "$dir/bench1g.pcap" ] || ./target/release/examples/gen_pcap "$dir/bench1g.pcap" 1024
[ -f "$dir/bench.jsonl" ] || python3 bench/make_big_jsonl.py "$dir/bench.jsonl" 300
[ -f "$dir/bench.har" ] || python3 tests/fixtures/har/make_big_har.py "$dir/bench.har" 300
measure() { # label, command...
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o "$dir/.time" "$@" > /dev/null 2>&1
    read -r secs kb < "$dir/.time"
    awk -v l="$label" -v s="$secs" -v b="$size" -v k="$kb" \
        'BEGIN { printf "%-34s %7.2f s %9.0f MB/s %8.1f MB peak\n", l, s, b / 1e6 / s, k / 1024 }'
}
for f in "$dir/bench1g.pcap" "$dir/bench.jsonl" "$dir/bench.har"; do
    size=$(stat -c %s "$f")
    echo "== $(basename "$f") ($((size / 1000000)) MB)"
    cat "$f" > /dev/null # warm the page cache
    measure "cat FILE > /dev/null" sh -c "cat '$f' > /dev/null"
    measure "mcpsift analyze --format jsonl" ./target/release/mcpsift analyze "$f" --format jsonl
    case $f in *.pcap) measure "ingest only (examples/ingest_only)" ./target/release/examples/ingest_only "$f" ;; esac
done
