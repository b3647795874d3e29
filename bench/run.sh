#!/usr/bin/env bash
# make bench: builds the static binary and the driver, then runs every
# measurement inside a private mount + network namespace (the root namespaces
# are never touched). REF_DIR=/usr/lib/cni adds the same runs with those plugins.
# Every run is made with each client: Go's libcni (bench/libcni, as runtimes
# drive plugins; built when Go is here) and `cni-multi cnitool`.
# Writes bench/results.md and bench/results.json; with BENCH_LAYOUT=FILE it
# writes that linker script instead (`make hot-layout`, bench/layout.rs).
# BENCH_DOCTOR_BIN=PATH: the doctor row's node is judged by that binary's
# doctor (an older build, for a before/after); BENCH_ONLY=doctor runs that
# row alone and adds it to the results already there.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BENCH_BIN:-target/cni-multi}
cargo build --release --locked --example bench >/dev/null
driver=target/release/examples/bench
# The floors' no-op plugin (bench/noop.rs), linked statically as plugins are.
noop=target/bench-noop
if [ -z "${CNI_BENCH_INNER:-}" ]; then
    rustc --edition 2021 -C opt-level=s -C panic=abort -C strip=symbols \
        -C target-feature=+crt-static bench/noop.rs -o "$noop" 2>/dev/null || {
        echo "bench: no static C library: the no-op plugin is linked dynamically" >&2
        rustc --edition 2021 -C opt-level=s -C panic=abort -C strip=symbols bench/noop.rs -o "$noop"
    }
fi
# The libcni client (bench/libcni), when Go is here: Debian's libcni source
# package is installed if missing; BENCH_LIBCNI=0 leaves it out.
libcni=""
if [ -z "${CNI_BENCH_INNER:-}" ] && [ "${BENCH_LIBCNI:-1}" != 0 ] && command -v go >/dev/null; then
    gopath=/usr/share/gocode
    if [ ! -d "$gopath/src/github.com/containernetworking/cni/libcni" ] && [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-github-appc-cni-dev >/dev/null
    fi
    if (cd bench/libcni && GO111MODULE=off GOPATH=$gopath GOCACHE="$PWD/../../target/go-cache" \
            go build -o ../../target/libcni-driver .); then
        libcni=target/libcni-driver
    else
        echo "bench: the libcni client did not build; measuring with cnitool only" >&2
    fi
    export BENCH_LIBCNI_PATH=$libcni
fi
if [ -z "${CNI_BENCH_INNER:-}" ]; then
    exec unshare --mount --net --propagation private env CNI_BENCH_INNER=1 "$0" "$@"
fi
mkdir -p /run/netns
mount -t tmpfs none /run/netns
ip link set lo up
"$driver" --bin "$bin" --ref "${REF_DIR:-}" --out bench/results \
    --iterations "${BENCH_ITERATIONS:-30}" --scale "${BENCH_SCALE:-1000}" --budget "${BENCH_SCENARIO_BUDGET:-600}" --fallback "${BENCH_FALLBACK:-300}" \
    --libcni "${BENCH_LIBCNI_PATH:-}" --doctor-bin "${BENCH_DOCTOR_BIN:-}" --noop "$noop" \
    ${BENCH_LAYOUT:+--layout "$BENCH_LAYOUT"}
