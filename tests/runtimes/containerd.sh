#!/usr/bin/env bash
# The containerd lane (run.sh starts it inside its own netns with `ip netns
# exec`): a private containerd whose CRI plugin runs the plugins under test
# for pods driven as kubelet drives them (cri.py), then checks addresses,
# reachability, port mapping, shaping, and that teardown leaves nothing, also
# over many cycles and across a SIGKILL + restart of containerd.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# Fixed, lane-private numbers (the podman lane has others).
V4NET=10.88.7.0/24 V6NET=fd00:88:7::/64 GW4=10.88.7.1 GW6=fd00:88:7::1
NET=cnim-ctd HOSTPORT=18280 RATE=1M TC_RATE=1Mbit
d=$CNIM_TMP
sock=$d/containerd.sock
state=$d/state
ipam=$d/ipam
netnsdir=$state/io.containerd.grpc.v1.cri/netns # netns_mounts_under_state_dir
ctd_pid=""

restore_cgroups
mkdir -p "$d/net.d" "$d/logs" "$ipam"
# With cni-multi's install image (CNIM_INSTALL_IMAGE, from run.sh), the CRI's
# plugin directory starts empty and that image, run by containerd, fills it.
bin_dir=$CNIM_PLUGINS
if [ -n "${CNIM_INSTALL_IMAGE:-}" ]; then
    bin_dir=$d/cni-bin
    mkdir -p "$bin_dir"
fi

cat >"$d/config.toml" <<EOF
version = 2
root = "$d/root"
state = "$state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.overlayfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$CNIM_IMAGE"
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$bin_dir"
    conf_dir = "$d/net.d"
    max_conf_num = 1
EOF

# containerd's default 10-containerd-net.conflist, dual-stack, plus the
# bandwidth and tuning plugins; host-local keeps its leases in a private dir.
cat >"$d/net.d/10-cnim.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$NET",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cnim0",
      "isGateway": true,
      "ipMasq": true,
      "promiscMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$ipam",
        "ranges": [[{"subnet": "$V4NET"}], [{"subnet": "$V6NET"}]],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
    {"type": "bandwidth", "capabilities": {"bandwidth": true}},
    {"type": "tuning"}
  ]
}
EOF

cri() { timeout 180 "$CNIM_PY" "$here/cri.py" --sock "$sock" --gen "$CNIM_GEN" "$@"; }

start_containerd() {
    containerd --config "$d/config.toml" >>"$d/containerd.log" 2>&1 &
    ctd_pid=$!
    cri version --wait 30
}

stop_containerd() {
    [ -n "$ctd_pid" ] || return 0
    kill -TERM "$ctd_pid" 2>/dev/null || true
    timeout 20 tail --pid="$ctd_pid" -f /dev/null || kill -KILL "$ctd_pid" 2>/dev/null || true
    wait "$ctd_pid" 2>/dev/null || true
    ctd_pid=""
}

# Whatever a failed run left: removed through the CRI as kubelet would, so
# the shims exit; run.sh's namespaces take the rest with them.
cleanup() {
    local id
    if [ -n "$ctd_pid" ]; then
        for id in $(cri list 2>/dev/null); do cri rm-pod "$id" >/dev/null 2>&1 || true; done
    fi
    stop_containerd
}
trap cleanup EXIT

declare -A SID NETNS IPS
# run_pod NAME [cri.py run-pod options]: starts a pod with its server
# container and records its sandbox, netns and addresses.
run_pod() {
    local name=$1 out key val
    shift
    mkdir -p "$d/logs/$name"
    if ! out=$(cri run-pod "$name" --image "$CNIM_IMAGE" --log-dir "$d/logs/$name" "$@" 2>&1); then
        echo "$out"
        return 1
    fi
    read -r "SID[$name]" _ <<<"$out"
    LEAK_IDS+=("${SID[$name]}")
    IPS[$name]="" NETNS[$name]=""
    while read -r key val; do
        case $key in
            ip) IPS[$name]+="$val " LEAK_IPS+=("$val") ;;
            netns) NETNS[$name]=$val ;;
        esac
    done < <(cri pod "${SID[$name]}")
    if [ -z "${NETNS[$name]}" ] || [ "${NETNS[$name]}" = - ]; then
        echo "no netns path in PodSandboxStatus"
        return 1
    fi
}

ip_of() { # ip_of NAME 4|6
    local ip
    for ip in ${IPS[$1]}; do
        if { [ "$2" = 6 ] && [[ $ip == *:* ]]; } || { [ "$2" = 4 ] && [[ $ip != *:* ]]; }; then echo "$ip"; fi
    done
}

rm_pod() {
    cri rm-pod "${SID[$1]}"
    unset "SID[$1]"
}

rm_all_pods() {
    local id ok=0
    for id in $(cri list); do cri rm-pod "$id" || ok=1; done
    [ -z "$(cri list)" ] || { echo "sandboxes still listed: $(cri list | tr '\n' ' ')"; return 1; }
    return $ok
}

# --- up ---------------------------------------------------------------------
# (not in $(...): start_containerd records the daemon's PID in this shell)
if ! start_containerd >"$d/version.out" 2>&1; then
    fail "containerd: CRI answers" "$(cat "$d/version.out"); log: $(tail -n 5 "$d/containerd.log" | tr '\n' ' ')"
    exit 1
fi
pass "containerd: CRI answers ($(cat "$d/version.out"))"
check "containerd: image $CNIM_IMAGE imported" \
    timeout 60 ctr -a "$sock" -n k8s.io images import --snapshotter native "$CNIM_IMAGE_DIR/oci.tar"
check "containerd: CRI image service knows $CNIM_IMAGE" cri image "$CNIM_IMAGE"

# The DaemonSet's init container, as containerd runs it: the image installs
# cni-multi and its links into the bind-mounted directory the pods then use.
install_with_image() {
    local c=(ctr -a "$sock" -n cnim-install) name
    timeout 60 "${c[@]}" images import --snapshotter native "$CNIM_INSTALL_IMAGE" >/dev/null || return 1
    timeout 120 "${c[@]}" run --rm --snapshotter native \
        --mount "type=bind,src=$bin_dir,dst=/host/opt/cni/bin,options=rbind:rw" \
        "$CNIM_INSTALL_REF" cnim-install >"$d/install.out" 2>&1 || { tail -n 5 "$d/install.out"; return 1; }
    [ -f "$bin_dir/cni-multi" ] && [ ! -L "$bin_dir/cni-multi" ] || { echo "no cni-multi file in $bin_dir"; return 1; }
    cmp -s "$bin_dir/cni-multi" "$CNIM_INSTALL_BIN" || { echo "$bin_dir/cni-multi is not the image's binary"; return 1; }
    for name in $("$bin_dir/cni-multi" --list); do
        [ "$(readlink "$bin_dir/$name")" = cni-multi ] || { echo "$name is not a link to cni-multi"; return 1; }
    done
}
if [ -n "${CNIM_INSTALL_IMAGE:-}" ]; then
    check "containerd: the install image ($CNIM_INSTALL_REF) puts cni-multi and its links into the plugin dir" \
        install_with_image
fi

# --- four pods: hostPort, bandwidth, two plain --------------------------------
check "containerd: pod web (hostPort $HOSTPORT->80) runs" run_pod web --host-port "$HOSTPORT:80"
check "containerd: pod bw (bandwidth $RATE) runs" run_pod bw --bandwidth "$RATE"
check "containerd: pod a runs" run_pod a
check "containerd: pod b runs" run_pod b

for p in web bw a b; do
    if [ -z "${SID[$p]:-}" ]; then
        fail "containerd: pod $p dual-stack addresses" "pod did not start"
        continue
    fi
    # shellcheck disable=SC2086 # IPS is a list
    check "containerd: pod $p dual-stack addresses (${IPS[$p]% })" \
        check_addresses "${NETNS[$p]}" "$V4NET" "$V6NET" ${IPS[$p]}
done

for p in b web bw; do
    for fam in 4 6; do
        if [ -z "${SID[a]:-}" ] || [ -z "${SID[$p]:-}" ]; then
            fail "containerd: pod a reaches pod $p over IPv$fam" "pod a or $p did not start"
            continue
        fi
        check "containerd: pod a reaches pod $p over IPv$fam" ping_from "${NETNS[a]}" "$(ip_of "$p" "$fam")"
    done
done

check "containerd: hostPort $HOSTPORT reachable from the host namespace (IPv4 $GW4)" \
    http_get "http://$GW4:$HOSTPORT/" "hello from web"
check "containerd: hostPort $HOSTPORT reachable from the host namespace (IPv6 $GW6)" \
    http_get "http://[$GW6]:$HOSTPORT/" "hello from web"

if [ -n "${SID[bw]:-}" ]; then
    check "containerd: bandwidth ingress: tbf $TC_RATE on the host veth" check_ingress_tbf "${NETNS[bw]}" "$TC_RATE"
    check "containerd: bandwidth egress: ingress qdisc -> IFB with tbf $TC_RATE" check_egress_ifb "${NETNS[bw]}" "$TC_RATE"
else
    fail "containerd: bandwidth shaping" "pod bw did not start"
fi

check "containerd: the leak checks see the running pods (leases, netns, rules)" \
    state_visible "$ipam/$NET" "$netnsdir"
check "containerd: every pod stopped and removed" rm_all_pods
leak_checks "containerd/pods" "$ipam/$NET" "$netnsdir"

# --- start/stop cycles of a hostPort + bandwidth pod --------------------------
cycles() {
    local i errors=0 first=""
    for ((i = 1; i <= CNIM_CYCLES; i++)); do
        if ! run_pod "cycle$i" --host-port "$HOSTPORT:80" --bandwidth "$RATE" >"$d/cycle.out" 2>&1; then
            errors=$((errors + 1))
            [ -n "$first" ] || first="cycle $i: $(cat "$d/cycle.out")"
        fi
        if ! rm_all_pods >"$d/cycle.out" 2>&1; then
            errors=$((errors + 1))
            [ -n "$first" ] || first="cycle $i removal: $(cat "$d/cycle.out")"
        fi
    done
    [ "$errors" = 0 ] || { echo "$errors failures; first: $first"; return 1; }
}
check "containerd: $CNIM_CYCLES run/remove cycles of a hostPort+bandwidth pod" cycles
leak_checks "containerd/cycles" "$ipam/$NET" "$netnsdir"

# --- SIGKILL containerd, restart it, then tear down the pods it had -----------
restart_teardown() {
    run_pod k1 --host-port "$HOSTPORT:80" --bandwidth "$RATE" || return 1
    run_pod k2 || return 1
    kill -KILL "$ctd_pid" || return 1
    wait "$ctd_pid" 2>/dev/null || true
    ctd_pid=""
    start_containerd >/dev/null || { echo "restart failed: $(tail -n 5 "$d/containerd.log")"; return 1; }
    local listed
    listed=$(cri list | sort | tr '\n' ' ')
    [ "$listed" = "$(printf '%s\n' "${SID[k1]}" "${SID[k2]}" | sort | tr '\n' ' ')" ] ||
        { echo "after restart, listed: $listed"; return 1; }
    rm_pod k1 && rm_pod k2
}
check "containerd: pods made before a SIGKILL of containerd are removed after its restart" restart_teardown
leak_checks "containerd/restart" "$ipam/$NET" "$netnsdir"
