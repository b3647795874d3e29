#!/usr/bin/env bash
# make bench: builds the static binary and the driver, then runs every
# measurement inside a private mount + network namespace (the root namespaces
# are never touched). REF_DIR=/usr/lib/cni adds the same runs with those plugins.
# Writes bench/results.md and bench/results.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BENCH_BIN:-target/cni-multi}
cargo build --release --locked --example bench >/dev/null
driver=target/release/examples/bench
if [ -z "${CNI_BENCH_INNER:-}" ]; then
    exec unshare --mount --net --propagation private env CNI_BENCH_INNER=1 "$0" "$@"
fi
mkdir -p /run/netns
mount -t tmpfs none /run/netns
ip link set lo up
"$driver" --bin "$bin" --ref "${REF_DIR:-}" --out bench/results \
    --iterations "${BENCH_ITERATIONS:-30}" --scale "${BENCH_SCALE:-300}"
