#!/bin/bash
# docs/troubleshooting.md's blocks, verbatim (read from the page here), each on a
# node where its symptom holds. Run by tests/first-run.sh at its end, inside its
# throwaway node (mount and network namespaces; /opt/cni/bin, /etc/cni,
# /var/lib/cni, /run empty tmpfs with cni-multi installed by the README's block).
# Two pods on chain-net (bridge, portmap, bandwidth, tuning): `web` with a hostPort,
# alive; `leaky`, whose namespace went without a DEL. Then each section's block
# runs in a login shell with NET, ID and NETNS set as the page says; every command
# must be one cni-multi knows (no usage error), and each section's answer must
# show its symptom.
set -euo pipefail
fail() { echo "troubleshooting: $*" >&2; exit 1; }
[ "${1:-}" = --inside-first-run ] || fail "run by tests/first-run.sh (it needs that test's throwaway node)"
cd "$(dirname "$0")/.."
page=docs/troubleshooting.md
scratch=/run/troubleshooting
mkdir -p "$scratch" /etc/cni/net.d
cp testdata/chain.conflist /etc/cni/net.d/10-chain.conflist
export CNI_PATH=/opt/cni/bin
cni=/usr/local/bin/cni-multi

# The node: one live pod with a hostPort, one whose namespace is gone.
$cni cnitool netns add web >/dev/null
$cni cnitool --cap-args '{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}' \
    add --container-id pod-web chain-net web >/dev/null
$cni cnitool netns add leaky >/dev/null
$cni cnitool add --container-id pod-leaky chain-net leaky >/dev/null
umount /run/netns/leaky && rm /run/netns/leaky
# Pods older than the doctor's --min-age, as a symptom's pods are.
find /var/lib/cni -exec touch -h -d '-1 hour' {} +

# The block under the heading starting with $1.
block() {
    awk -v h="$1" 'index($0, "## " h) == 1 { s = 1; next } s && /^## / { exit }
        s && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' "$page"
}

# Runs one section's block line by line; its output in $scratch/<n>.out.
n=0
run() {
    local heading=$1 code=0
    local text
    text=$(block "$heading")
    [ -n "$text" ] || fail "no \`\`\`sh block under '## $heading' in $page"
    n=$((n + 1))
    out=$scratch/$n.out
    : >"$out"
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        code=0
        env -i HOME=/root TERM=dumb PATH="/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
            NET=chain-net ID=pod-web NETNS=web CNI_PATH=/opt/cni/bin \
            bash -c "$line" >>"$out" 2>&1 </dev/null || code=$?
        echo "exit $code: $line" >>"$out"
        # 0, or 1 for a finding (the doctor, a failed check, validate's errors).
        if [ "$code" -gt 1 ] || grep -qE "^(error: (unexpected|unrecognized|invalid value)|Usage: )" "$out"; then
            sed 's/^/troubleshooting: | /' "$out" >&2
            fail "'## $heading': \`$line\` exited $code"
        fi
    done <<<"$text"
}
expect() { grep -qE -- "$2" "$out" || { sed 's/^/troubleshooting: | /' "$out" >&2; fail "'## $1': no /$2/ in its output"; }; }

run "First: is the config"
expect "First" "^exit 0: cni-multi cnitool validate$"

run "A pod has no address"
expect "A pod has no address" "chain-net +pod-web +eth0 .*alive"
expect "A pod has no address" "chain-net +pod-leaky .*dead"
expect "A pod has no address" "^exit 0: cni-multi cnitool check"
expect "A pod has no address" "portmap"
expect "A pod has no address" "bandwidth"

run "A pod is unreachable"
expect "A pod is unreachable" "eth0 .*10\.24\.0\."

# Before the hostPort's: that --fix would take the dead pod too.
run "Addresses leak"
expect "Addresses leak" '"state": *"dead"'
[ ! -e /var/lib/cni/results/chain-net-pod-leaky-eth0 ] || fail "'## Addresses leak': the doctor's --fix left the dead attachment's cache entry"
[ -e /var/lib/cni/results/chain-net-pod-web-eth0 ] || fail "'## Addresses leak': the doctor's --fix removed the live attachment"

# The firewall reload: portmap's DNAT rules are gone.
iptables -t nat -F CNI-HOSTPORT-DNAT
run "A hostPort stopped"
expect "A hostPort stopped" "portmap"
iptables -t nat -S | grep -q -- "--dport 8080" || fail "'## A hostPort stopped': the doctor's --fix did not put the hostPort back"

run '"failed to find plugin"'
expect '"failed to find plugin"' "^exit 0: cni-multi install --dry-run --verbose"

$cni cnitool del --container-id pod-web chain-net >/dev/null
$cni cnitool netns del web >/dev/null
echo "troubleshooting: $n sections of $page ran on a node with their symptoms"
