#!/usr/bin/env bash
# The CRI-O-shaped lane (run.sh starts it inside its own netns with `ip netns
# exec`): cni-multi's cnitool calls the plugins as CRI-O calls libcni. Each
# pod's ADD carries what CRI-O sends (bandwidth with its burst, cgroupPath,
# pod annotations, K8S_POD_* CNI_ARGS; no portMappings: CRI-O maps host ports
# itself), STATUS is polled all along as CRI-O does every 5 s, and after a
# runtime restart during which pods went without DEL, GC runs with the
# surviving sandboxes as the valid list, as CRI-O does at start (libcni: DEL
# of each stale cached attachment, then every plugin's GC). Checks STATUS
# never failed a healthy node, GC left nothing of the gone pods (doctor finds
# nothing) and kept every live one (CHECK passes, the gateway answers).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# Fixed, lane-private numbers (the other lanes have others).
V4NET=10.89.9.0/24 GW4=10.89.9.1 NET=cnimcrio
d=$CNIM_TMP
PODS=${CNIM_CYCLES:-20}
bin=$CNIM_PLUGINS/cni-multi
if [ ! -x "$bin" ]; then
    # The lane drives cni-multi's cnitool; other plugin sets have no STATUS or GC.
    echo "crio lane: no cni-multi in $CNIM_PLUGINS, not run"
    exit 0
fi
mkdir -p "$d/net.d" "$d/cache"
cat >"$d/net.d/10-$NET.conflist" <<EOF
{"cniVersion": "1.1.0", "name": "$NET", "plugins": [
  {"type": "bridge", "bridge": "cnimcrio0", "isGateway": true, "ipMasq": true,
   "capabilities": {"ips": true, "mac": true, "aliases": true},
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$V4NET"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "bandwidth", "capabilities": {"bandwidth": true, "cgroupPath": true}},
  {"type": "firewall", "capabilities": {"aliases": true}},
  {"type": "tuning", "sysctl": {"net.ipv4.conf.eth0.log_martians": "1"}}
]}
EOF

ct() {
    CNI_PATH=$CNIM_PLUGINS NETCONFPATH=$d/net.d "$bin" cnitool --cache-dir "$d/cache" "$@"
}
# cnitool's container ID for a netns path (libcni's cnitool derives it so).
cid() { echo "cnitool-$(printf %s "$1" | sha512sum | cut -c1-20)"; }

# What CRI-O sends with a pod's ADD and DEL (ocicni).
caps() {
    printf '{"bandwidth": {"ingressRate": 1000000, "ingressBurst": 4294967295, "egressRate": 1000000, "egressBurst": 4294967295}, "cgroupPath": "/kubepods/besteffort/pod%s", "aliases": {"%s": ["%s.alias"]}, "io.kubernetes.cri.pod-annotations": {"io.kubernetes.cri-o.Name": "%s"}}' "$1" "$NET" "$1" "$1"
}
pod_args() {
    echo "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$1;K8S_POD_INFRA_CONTAINER_ID=$(cid "/run/netns/$1");K8S_POD_UID=uid-$1"
}
add_pod() {
    ip netns add "$1"
    ct --args "$(pod_args "$1")" --cap-args "$(caps "$1")" add "$NET" "/run/netns/$1" >/dev/null
}
del_pod() {
    ct --args "$(pod_args "$1")" --cap-args "$(caps "$1")" del "$NET" "/run/netns/$1"
}

# STATUS as CRI-O polls it (every 5 s there; every 0.05 s here, through the churn).
status_log=$d/status.log
: >"$status_log"
poll_status() {
    while :; do
        if ct status "$NET" >/dev/null 2>"$d/status.err"; then
            echo ok >>"$status_log"
        else
            echo "FAIL $(tr '\n' ' ' <"$d/status.err")" >>"$status_log"
        fi
        sleep 0.05
    done
}
poll_status &
poller=$!
cleanup() {
    kill "$poller" 2>/dev/null || true
    for ns in $(ip netns list | awk '/^crio-/ {print $1}'); do
        del_pod "$ns" >/dev/null 2>&1 || true
        ip netns delete "$ns" 2>/dev/null || true
    done
}
trap cleanup EXIT

# Churn: pods come and go; every other one stays.
live=() gone=()
churn() {
    local i
    for i in $(seq 1 "$PODS"); do
        add_pod "crio-$i"
        if ((i % 2 == 0)); then
            del_pod "crio-$i"
            ip netns delete "crio-$i"
        else
            live+=("crio-$i")
        fi
    done
}
check "crio: $PODS pods added, half deleted again, under STATUS polling" churn

# A pod with the address and MAC it asks for, in CNI_ARGS as ocicni sends them.
static_pod() {
    local ns=crio-static args out
    args="$(pod_args "$ns");IP=10.89.9.200;MAC=0a:58:0a:59:09:c8"
    ip netns add "$ns"
    out=$(ct --args "$args" --cap-args "$(caps "$ns")" add "$NET" "/run/netns/$ns")
    echo "$out" | grep -q '"10.89.9.200/24"' || { echo "result: $out"; return 1; }
    nsenter --net="/run/netns/$ns" ip link show eth0 | grep -q 0a:58:0a:59:09:c8 || { echo "eth0 has another MAC"; return 1; }
    ct --args "$args" --cap-args "$(caps "$ns")" del "$NET" "/run/netns/$ns"
    ip netns delete "$ns"
}
check "crio: IP and MAC in CNI_ARGS give the pod that address and MAC" static_pod

# The runtime stops; a third of the live pods go meanwhile (no DEL runs).
survivors=()
for i in "${!live[@]}"; do
    if ((i % 3 == 0)); then
        gone+=("${live[$i]}")
        ip netns delete "${live[$i]}"
    else
        survivors+=("${live[$i]}")
    fi
done
# The runtime starts again: GC with its surviving sandboxes.
gc_at_start() {
    local valid=() ns
    for ns in "${survivors[@]}"; do valid+=(--valid "$(cid "/run/netns/$ns")/eth0"); done
    ct gc "$NET" "${valid[@]}"
}
check "crio: GC at start with ${#survivors[@]} valid of ${#live[@]} cached attachments" gc_at_start

gone_left_nothing() {
    local ns id
    for ns in "${gone[@]}"; do
        id=$(cid "/run/netns/$ns")
        if grep -rqs "$id" "$d/cache" /var/lib/cni/networks; then
            echo "state of $ns ($id) remains: $(grep -rls "$id" "$d/cache" /var/lib/cni/networks | tr '\n' ' ')"
            return 1
        fi
        if iptables-save | grep -q "$id"; then
            echo "rules of $ns ($id) remain"
            return 1
        fi
    done
    ct doctor --min-age 0
}
check "crio: nothing of the ${#gone[@]} gone pods remains (doctor finds nothing)" gone_left_nothing

survivors_work() {
    local ns
    for ns in "${survivors[@]}"; do
        ct --args "$(pod_args "$ns")" --cap-args "$(caps "$ns")" check "$NET" "/run/netns/$ns" || { echo "CHECK of $ns failed"; return 1; }
        ping_from "/run/netns/$ns" "$GW4" || { echo "$ns cannot reach $GW4"; return 1; }
    done
}
check "crio: the ${#survivors[@]} surviving pods pass CHECK and reach the gateway" survivors_work

status_never_failed() {
    local runs failures
    runs=$(grep -c . "$status_log" || true)
    failures=$(grep -c '^FAIL' "$status_log" || true)
    [ "$runs" -ge 5 ] || { echo "STATUS ran $runs times"; return 1; }
    [ "$failures" = 0 ] || { echo "$failures of $runs STATUS calls failed: $(grep -m1 '^FAIL' "$status_log")"; return 1; }
}
kill "$poller" 2>/dev/null || true
wait "$poller" 2>/dev/null || true
check "crio: STATUS never failed while pods came and went" status_never_failed

delete_all() {
    local ns
    for ns in "${survivors[@]}"; do
        del_pod "$ns"
        ip netns delete "$ns"
    done
    ct doctor --min-age 0
}
check "crio: the survivors' DELs leave a clean node" delete_all
