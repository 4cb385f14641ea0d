#!/bin/sh
# Runs every fuzz target for a bounded time each, one process (libFuzzer's default;
# -jobs would write to fuzz-N.log instead), on the committed corpora.
# Usage: fuzz/run-all.sh [SECONDS-PER-TARGET]   (default 60). Needs nightly and
# cargo-fuzz. Exits non-zero when a target finds a crash; the crash input is left in
# fuzz/artifacts/<target>/ (copy it to tests/fixtures/fuzz/ and fix it).
set -eu
secs="${1:-60}"
cd "$(dirname "$0")"
status=0
for target in $(cargo +nightly fuzz list); do
    mkdir -p "corpus/$target"
    if [ "$target" = analyse ]; then
        # Its corpus is regenerated: the samples and the small capture and HAR fixtures.
        cp ../samples/*.jsonl corpus/analyse/
        find ../tests/fixtures/pcap ../tests/fixtures/har -maxdepth 1 -type f -size -64k \
            \( -name '*.pcap*' -o -name '*.har' -o -name '*.jsonl' \) -exec cp {} corpus/analyse/ \;
    fi
    echo "== $target: ${secs}s"
    if ! cargo +nightly fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$secs" -max_len=65536 -print_final_stats=1 \
        2>&1 | tee "run-$target.log" | grep -E "stat::number_of_executed_units|SUMMARY|panicked"; then
        :
    fi
    if grep -q "SUMMARY\|panicked" "run-$target.log"; then
        status=1
    fi
done
exit $status
