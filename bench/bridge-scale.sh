#!/usr/bin/env bash
# ADD latency of the first and last 20 of N containers on one bridge
# (bridge + host-local), driven through the plugin binaries directly.
# Runs in its own mount + network namespace: the root namespace is never touched.
# Usage: bench/bridge-scale.sh [N] [PLUGIN_DIR]   (PLUGIN_DIR: e.g. /usr/lib/cni)
set -euo pipefail

if [ -z "${CNI_BENCH_INNER:-}" ]; then
    exec unshare --mount --net --propagation private env CNI_BENCH_INNER=1 "$0" "$@"
fi

n=${1:-200}
bin=${BIN:-target/x86_64-unknown-linux-gnu/release/cni-multi}
work=$(mktemp -d /tmp/cni-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p /run/netns
mount -t tmpfs none /run/netns
ip link set lo up

plugins=${2:-}
if [ -z "$plugins" ]; then
    plugins=$work/bin
    mkdir -p "$plugins"
    for p in $("$bin" --list); do ln -s "$(readlink -f "$bin")" "$plugins/$p"; done
fi

conf=$(printf '{"cniVersion":"0.4.0","name":"scale","type":"bridge","bridge":"cni-scale","isGateway":true,"ipam":{"type":"host-local","subnet":"10.120.0.0/20","dataDir":"%s/store"}}' "$work")

ms_now() { date +%s%N; }
times=()
for i in $(seq 1 "$n"); do
    ip netns add "c$i"
    t0=$(ms_now)
    echo "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID="c$i" CNI_NETNS="/run/netns/c$i" \
        CNI_IFNAME=eth0 CNI_PATH="$plugins" "$plugins/bridge" >/dev/null
    t1=$(ms_now)
    times+=($(( (t1 - t0) / 1000 )))
done
for i in $(seq 1 "$n"); do
    echo "$conf" | CNI_COMMAND=DEL CNI_CONTAINERID="c$i" CNI_NETNS="/run/netns/c$i" \
        CNI_IFNAME=eth0 CNI_PATH="$plugins" "$plugins/bridge" >/dev/null
    ip netns del "c$i"
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
first=$(median "${times[@]:0:20}")
last=$(median "${times[@]: -20}")
ratio=$(awk -v a="$first" -v b="$last" 'BEGIN {printf "%.2f", b / a}')
echo "| containers | first 20 median ADD (ms) | last 20 median ADD (ms) | last/first |"
echo "| --- | --- | --- | --- |"
awk -v n="$n" -v a="$first" -v b="$last" -v r="$ratio" \
    'BEGIN {printf "| %d | %.1f | %.1f | %s |\n", n, a / 1000, b / 1000, r}'
