#!/usr/bin/env bash
# End-to-end benchmark over several traffic shapes (docs/performance.md): MB/s and peak
# RSS of `mcpsift analyze --format jsonl` with --threads 1 and --threads 2, next to
# `cat FILE > /dev/null` and, for pcaps, tshark's cheapest HTTP pass on the same file
# in the same run, with the ratios.
#   bash bench/run.sh [DIR] [MB]     (DIR defaults to /tmp/mcpsift-bench, MB to 150)
# Inputs are generated once per DIR by committed generators; delete them (or use
# another DIR) after changing MB. Scale up with MB (e.g. 1000): the generators stream.
# LIMIT (seconds, default 300) stops one run that takes too long; it is then shown as
# "> LIMIT s". SHAPES restricts the run, e.g. SHAPES="keepalive har". Each mcpsift row is
# the fastest of REPEAT runs (default 3; peak memory of that run; a run past LIMIT is
# not repeated): a shared VM's timings swing by 20% or more from one run to the next.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/mcpsift-bench}
mb=${2:-150}
limit=${LIMIT:-300}
repeat=${REPEAT:-3}
shapes=${SHAPES:-"keepalive current flows large legacy legacy-many standalone resumed h2 har browser jsonl small stdio archive dir"}
mkdir -p "$dir"
cargo build --release --bin mcpsift --example gen_pcap --example ingest_only
bin=./target/release/mcpsift

file_of() {
    case $1 in
    keepalive) echo "$dir/keepalive.pcap" ;;
    current) echo "$dir/current.pcap" ;;
    flows) echo "$dir/flows.pcap" ;;
    large) echo "$dir/large.pcap" ;;
    legacy) echo "$dir/legacy.pcap" ;;
    legacy-many) echo "$dir/legacy-many.pcap" ;;
    standalone) echo "$dir/standalone.pcap" ;;
    resumed) echo "$dir/resumed.pcap" ;;
    h2) echo "$dir/h2.pcap" ;;
    har) echo "$dir/sessions.har" ;;
    browser) echo "$dir/browser.har" ;;
    jsonl) echo "$dir/sessions.jsonl" ;;
    small) echo "$dir/small-calls.jsonl" ;;
    stdio) echo "$dir/stdio.jsonl" ;;
    archive) echo "$dir/archive.tar.gz" ;;
    dir) echo "$dir/archive-dir" ;;
    esac
}
generate() {
    local f
    f=$(file_of "$1")
    [ -e "$f" ] && return
    case $1 in
    keepalive | flows | large) python3 bench/make_shapes_pcap.py "$1" "$f" "$mb" ;;
    current) ./target/release/examples/gen_pcap "$f" $((mb * 1000000 / 1048576)) ;;
    # Sessions of 20 calls on the legacy HTTP+SSE transport, about 35 KB each.
    legacy) SESSIONS=$((mb * 28)) CALLS=20 python3 bench/make_shapes_pcap.py legacy "$f" ;;
    # 200 legacy sessions at once, their calls taking turns: long streams that go
    # on while calls of every session are in flight (about 1.6 KB per call).
    legacy-many) CONCURRENT=200 CALLS=$((mb * 3)) python3 bench/make_shapes_pcap.py legacy "$f" ;;
    # 200 Streamable HTTP sessions at once, each with its standalone GET stream
    # open, where the server logs each call (about 1.9 KB per call).
    standalone) CONCURRENT=200 CALLS=$((mb * 8 / 3)) python3 bench/make_shapes_pcap.py standalone "$f" ;;
    # The same, each GET resuming the session's earlier stream (Last-Event-ID), as a
    # client reconnects after a proxy cut it.
    resumed) RESUMED=1 CONCURRENT=200 CALLS=$((mb * 8 / 3)) python3 bench/make_shapes_pcap.py standalone "$f" ;;
    # The same over HTTP/2 (h2c): one connection per session, its GET stream and its
    # POSTs multiplexed there (about 1.4 KB per call).
    h2) H2=1 CONCURRENT=200 CALLS=$((mb * 7 / 2)) python3 bench/make_shapes_pcap.py standalone "$f" ;;
    har) python3 tests/fixtures/har/make_big_har.py "$f" "$mb" 8 ;;
    browser) python3 bench/make_har_shapes.py browser "$f" "$mb" ;;
    jsonl) python3 bench/make_big_jsonl.py "$f" "$mb" 8 ;;
    small) python3 bench/make_small_calls.py "$f" "$mb" ;;
    stdio) python3 bench/make_stdio.py "$f" "$mb" ;;
    archive) python3 bench/make_archive.py "$f" "$mb" ;;
    dir) # The archive's members as files: a directory of many small logs.
        generate archive
        mkdir -p "$f"
        tar -xzf "$(file_of archive)" -C "$f"
        ;;
    esac
}

# Prints "seconds kilobytes" of one run; a run past LIMIT prints "-1 kilobytes".
timed() {
    local rc=0
    /usr/bin/time -f "%e %M" -o "$dir/.time" timeout "$limit" "$@" > /dev/null 2>&1 || rc=$?
    # time puts "Command exited with non-zero status N" first when a run fails (mcpsift
    # exits 1 or 2 on findings or unreadable input); the figures are the last line.
    read -r secs kb < <(tail -n 1 "$dir/.time") || true
    if [ "$rc" = 124 ]; then secs=-1; fi
    echo "${secs:-0} ${kb:-0}"
}
row() { # label, seconds, kilobytes, reference seconds (cat), tshark seconds
    awk -v l="$1" -v s="$2" -v k="$3" -v b="$size" -v c="$4" -v t="$5" -v lim="$limit" 'BEGIN {
        if (s < 0) { printf "%-26s  > %d s\n", l, lim; exit }
        if (s < 0.01) s = 0.01
        printf "%-26s %8.2f s %8.0f MB/s %8.1f MB peak", l, s, b / 1e6 / s, k / 1024
        # time(1) counts in hundredths: a cat under that shows as 0.01 s, and counts so.
        if (c != "") printf "   cat/this %6.3f", (c < 0.01 ? 0.01 : c) / s
        if (t != "" && t > 0) printf "   tshark/this %6.1fx", t / s
        printf "\n" }'
}

printf '%s\n' "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB, $(uname -r), $(rustc --version)"
for shape in $shapes; do
    generate "$shape"
    f=$(file_of "$shape")
    # MB/s counts an archive's tar stream (its logs before compression) and a
    # directory's files; cat reads what is on disk (the archive compressed).
    case $shape in
    archive) size=$(gzip -dc "$f" | wc -c) ;;
    dir) size=$(du -sb "$f" | cut -f1) ;;
    *) size=$(stat -c %s "$f") ;;
    esac
    echo "== $shape: $(basename "$f") ($((size / 1000000)) MB)"
    if [ -d "$f" ]; then
        find "$f" -type f -exec cat {} + > /dev/null # warm the page cache
        read -r cs ck < <(timed sh -c "find '$f' -type f -exec cat {} + > /dev/null")
        row "cat every file" "$cs" "$ck" "" ""
    else
        cat "$f" > /dev/null # warm the page cache
        read -r cs ck < <(timed sh -c "cat '$f' > /dev/null")
        row "cat FILE > /dev/null" "$cs" "$ck" "" ""
    fi
    ts=""
    case $f in *.pcap)
        if command -v tshark > /dev/null; then
            read -r ts tk < <(timed tshark -r "$f" -Y http.request -T fields -e frame.number)
            row "tshark -Y http.request" "$ts" "$tk" "" ""
        else
            # A missing tshark would otherwise time as a 0.01 s run.
            echo "tshark                     not installed (apt-get install tshark): no ratio"
        fi
        ;;
    esac
    for t in 1 2; do
        best_s="" best_k=0
        for _ in $(seq "$repeat"); do
            read -r s k < <(timed "$bin" analyze "$f" --format jsonl --threads "$t")
            # A run past LIMIT (-1) is shown as such, and not tried again.
            if [ "$s" = -1 ]; then
                best_s=${best_s:--1}
                break
            fi
            if [ -z "$best_s" ] || awk -v a="$s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then
                best_s=$s best_k=$k
            fi
        done
        row "mcpsift --threads $t" "$best_s" "$best_k" "$cs" "$ts"
    done
done
