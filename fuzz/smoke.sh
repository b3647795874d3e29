#!/bin/bash
# make fuzz-smoke: builds every cargo-fuzz target and runs each for a short
# time over its committed corpus (fuzz/corpus/<target>); a crash fails.
#   FUZZ_SECONDS   seconds per target (default 20)
#   FUZZ_TARGETS   targets to run (default: all of `cargo fuzz list`)
# Long runs for the record: FUZZ_SECONDS=... or `cargo fuzz run <target> -- -runs=N`.
set -euo pipefail
cd "$(dirname "$0")/.."
# cargo-fuzz asks rustc for -Zsanitizer: the stable toolchain accepts it with
# RUSTC_BOOTSTRAP (its ASan runtime ships with rust-std), so no nightly is needed.
export RUSTC_BOOTSTRAP=1
CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
seconds=${FUZZ_SECONDS:-20}
targets=${FUZZ_TARGETS:-$(cargo fuzz list)}
cargo fuzz build -O 2>&1 | tail -3
for t in $targets; do
    mkdir -p "fuzz/corpus/$t"
    echo "fuzz-smoke: $t for ${seconds}s"
    # New inputs go to a scratch dir: the committed corpus changes only by hand (cmin).
    scratch=$(mktemp -d)
    log="$scratch.log"
    status=0
    # -max_len: mutate at the corpus's usual sizes; the big entries run whole below.
    cargo fuzz run -O "$t" "$scratch" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E 'stat::number_of_executed_units|ERROR|panicked|SUMMARY' "$log" || true
    if [ "$status" -ne 0 ]; then
        tail -40 "$log" >&2
        echo "fuzz-smoke: $t FAILED (artifacts in fuzz/artifacts/$t)" >&2
        exit 1
    fi
    rm -rf "$scratch" "$log"
done
# Inputs that once took super-linear time (an object of 100k keys decoded in
# minutes): each runs whole and must finish inside FUZZ_BIG_TIMEOUT seconds
# (libFuzzer's -timeout fails the run), sanitizers and all.
for input in fuzz/corpus/*/*-100k-*; do
    [ -e "$input" ] || continue
    t=$(basename "$(dirname "$input")")
    log=$(mktemp)
    status=0
    cargo fuzz run -O "$t" "$input" -- -timeout="${FUZZ_BIG_TIMEOUT:-1}" -rss_limit_mb=2048 >"$log" 2>&1 || status=$?
    grep -E '^Executed|ERROR|timeout' "$log" || true
    if [ "$status" -ne 0 ]; then
        tail -20 "$log" >&2
        echo "fuzz-smoke: $input took too long or crashed" >&2
        exit 1
    fi
    rm -f "$log"
done
echo "fuzz-smoke: $(echo $targets | wc -w) targets ran without a crash"
