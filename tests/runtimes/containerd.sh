#!/usr/bin/env bash
# The containerd lane (run.sh starts it inside its own netns with `ip netns
# exec`): a private containerd whose CRI plugin runs the plugins under test
# for pods driven as kubelet drives them (cri.py), then checks addresses,
# reachability, port mapping, shaping, and that teardown leaves nothing, also
# over many cycles and across a SIGKILL + restart of containerd. With
# cni-multi's image, the install DaemonSet's pod, as its manifest runs it,
# first puts the plugins and the network config there, and last the doctor
# DaemonSet's pod runs as its manifest runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
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
# With cni-multi's install image (CNIM_INSTALL_IMAGE, from run.sh), the CRI
# uses the node's directories the install DaemonSet names, /opt/cni/bin and
# /etc/cni/net.d (private tmpfs mounts, run.sh), and its pod fills them: the
# plugins from the image, the network config from its ConfigMap, whose
# stand-in is a directory here (cri.py lays it out as kubelet does).
bin_dir=$CNIM_PLUGINS conf_dir=$d/net.d conf_src=$d/net.d
if [ -n "${CNIM_INSTALL_IMAGE:-}" ]; then
    bin_dir=/opt/cni/bin conf_dir=/etc/cni/net.d conf_src=$d/configmap/cni-multi-conf
    mkdir -p "$conf_src"
fi

# write_config FILE BIN_DIR CONF_DIR NETNS_UNDER_STATE: the daemon's config.
write_config() {
    cat >"$1" <<EOF
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
  netns_mounts_under_state_dir = $4
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
    bin_dir = "$2"
    conf_dir = "$3"
    max_conf_num = 1
EOF
}
config=$d/config.toml
write_config "$config" "$bin_dir" "$conf_dir" true

# containerd's default 10-containerd-net.conflist, dual-stack, plus the
# bandwidth and tuning plugins; host-local keeps its leases in a private dir.
cat >"$conf_src/10-cnim.conflist" <<EOF
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
    containerd --config "$config" >>"$d/containerd.log" 2>&1 &
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

# --- the install DaemonSet, as its manifest runs it ---------------------------
# contrib/kubernetes/cni-multi.yaml's pod, run through the CRI as kubelet
# would run it (cri.py run-manifest: its init container to exit 0, then its
# pause container; images, args, securityContext, limits, hostPath and
# ConfigMap volumes as the file says), with the image `make image` built,
# into this lane's /opt/cni/bin and /etc/cni/net.d, which the pods below then
# run on. The bin dir starts as other DaemonSets leave a node: flannel's and
# Multus's binaries there (theirs to keep: --leave), and a foreign bridge
# (--force replaces it and keeps it for --rollback). The lane has no
# registry: every image the manifest names but cni-multi's (the pause
# container's) is the lane's busybox, whose entrypoint is a pause.
install_manifest=$repo/contrib/kubernetes/cni-multi.yaml
INSTALL_SID="" INIT_CID="" PAUSE_CID=""
foreign() { printf '#!/bin/sh\necho "I am %s, from another installer"\n' "$1"; }

install_images() {
    local ref
    timeout 60 ctr -a "$sock" -n k8s.io images import --snapshotter native "$CNIM_INSTALL_IMAGE" >/dev/null || return 1
    for ref in $("$CNIM_PY" -c '
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "DaemonSet":
        spec = doc["spec"]["template"]["spec"]
        for c in spec.get("initContainers", []) + spec["containers"]:
            print(c["image"])' "$install_manifest" | sort -u); do
        [[ $ref == localhost/cni-multi:* ]] && continue
        timeout 30 ctr -a "$sock" -n k8s.io images tag --force "$CNIM_IMAGE" "$ref" >/dev/null || return 1
    done
}

declare -A MPOD
# run_manifest MANIFEST LOGNAME [cri.py run-manifest options]: MPOD[sandbox]
# is its sandbox, MPOD[NAME] the ID of its container NAME (init or not).
run_manifest() {
    local out rc=0 kind name id manifest=$1 log=$2
    shift 2
    mkdir -p "$d/logs/$log"
    MPOD=()
    out=$(cri run-manifest "$manifest" --log-dir "$d/logs/$log" "$@" 2>&1) || rc=$?
    while read -r kind name id; do
        case $kind in
            sandbox) MPOD[sandbox]=$name ;;
            init | container) MPOD[$name]=$id ;;
        esac
    done <<<"$out"
    [ "$rc" = 0 ] || { echo "$out"; return 1; }
}

# grep reads cri.py's whole output (no -q): under pipefail, a grep that exits at
# the first match fails the pipeline when cri.py's next print meets EPIPE.
running() { cri status "$1" | grep -x 'state CONTAINER_RUNNING' >/dev/null; }

# install_pod MANIFEST LOGNAME [options]: the pod runs: its init container
# `install` exited 0, then its container `pause` runs.
install_pod() {
    local m=$1 log=$2
    shift 2
    run_manifest "$m" "$log" --pod-dir "$d/pods" "$@" || { INSTALL_SID=${MPOD[sandbox]:-}; return 1; }
    INSTALL_SID=${MPOD[sandbox]} INIT_CID=${MPOD[install]:-} PAUSE_CID=${MPOD[pause]:-}
    if [ -z "$INIT_CID" ] || [ -z "$PAUSE_CID" ]; then
        echo "want an init container install and a container pause, got: ${!MPOD[*]}"
        return 1
    fi
    cri status "$INIT_CID" | grep -x 'exit 0' >/dev/null || { echo "install: $(cri status "$INIT_CID" | tr '\n' ' ')"; return 1; }
    retry 10 running "$PAUSE_CID" || { echo "pause: $(cri status "$PAUSE_CID" | tr '\n' ' ')"; return 1; }
}
rm_install() {
    [ -z "$INSTALL_SID" ] || cri rm-pod "$INSTALL_SID" || return 1
    INSTALL_SID="" INIT_CID="" PAUSE_CID=""
}

# installed DIR [SKIP...]: DIR holds the image's binary and, for every plugin
# name but SKIP, a stub running DIR/cni-multi that answers VERSION.
installed() {
    local dir=$1 name out
    shift
    if [ ! -f "$dir/cni-multi" ] || [ -L "$dir/cni-multi" ]; then echo "no cni-multi file in $dir"; return 1; fi
    cmp -s "$dir/cni-multi" "$CNIM_INSTALL_BIN" || { echo "$dir/cni-multi is not the image's binary"; return 1; }
    for name in $("$dir/cni-multi" --list); do
        [[ " $* " == *" $name "* ]] && continue
        [ "$(head -n 1 "$dir/$name")" = "#!$dir/cni-multi --stub" ] || { echo "$name is not a stub running $dir/cni-multi"; return 1; }
        if ! out=$(CNI_COMMAND=VERSION "$dir/$name" </dev/null 2>&1) || ! grep -q '"supportedVersions"' <<<"$out"; then
            echo "$dir/$name VERSION: $out"
            return 1
        fi
    done
}

install_node() {
    local n
    mkdir -p "$bin_dir" || return 1
    for n in flannel multus bridge; do
        foreign "$n" >"$bin_dir/$n" && chmod 0755 "$bin_dir/$n" || return 1
    done
    install_images
}

left_alone() {
    local n
    for n in flannel multus; do
        [ "$(cat "$bin_dir/$n")" = "$(foreign "$n")" ] || { echo "$n now holds: $(head -c 120 "$bin_dir/$n")"; return 1; }
    done
}

bridge_kept() {
    local f
    for f in "$bin_dir"/.cni-multi/backup/bridge*; do
        [ "$(cat "$f" 2>/dev/null)" != "$(foreign bridge)" ] || return 0
    done
    echo "no backup of the foreign bridge: $(find "$bin_dir/.cni-multi/backup" -mindepth 1 -printf '%f ' 2>&1)"
    return 1
}

conf_installed() {
    cmp "$conf_src/10-cnim.conflist" "$conf_dir/10-cnim.conflist"
}

# hardened: the OCI specs containerd made of the two containers hold what the
# manifest's securityContext, limits and hostNetwork ask for: no capability
# at all, no_new_privs, a read-only root, a seccomp profile, a memory limit,
# the user (install root, pause 65535), the node's network namespace and a
# PID namespace of its own, and the ConfigMap mounted read-only.
hardened() {
    local id uid
    for id in "$INIT_CID:0" "$PAUSE_CID:65535"; do
        uid=${id##*:} id=${id%%:*}
        [ -n "$id" ] || { echo "no container"; return 1; }
        timeout 30 ctr -a "$sock" -n k8s.io containers info "$id" | "$CNIM_PY" -c '
import json, os, sys
c = json.load(sys.stdin)
s, name = c["Spec"], c["Labels"].get("io.kubernetes.container.name", c["ID"])
p, linux, bad = s["process"], s["linux"], []
caps = {k: v for k, v in p.get("capabilities", {}).items() if v}
if caps:
    bad.append("capabilities %s" % caps)
if not p.get("noNewPrivileges"):
    bad.append("no no_new_privs")
if not s.get("root", {}).get("readonly"):
    bad.append("root writable")
if not linux.get("seccomp"):
    bad.append("no seccomp profile")
if not linux.get("resources", {}).get("memory", {}).get("limit"):
    bad.append("no memory limit")
if p["user"]["uid"] != int(sys.argv[1]):
    bad.append("uid %s" % p["user"]["uid"])
# A container joins the network namespace of its sandbox by path, for
# hostNetwork the one of the node (this lane); a PID namespace without a path
# is its own.
ns = {n["type"]: n.get("path", "") for n in linux.get("namespaces", [])}
if "network" in ns and (not ns["network"] or os.stat(ns["network"]).st_ino != os.stat("/proc/self/ns/net").st_ino):
    bad.append("not in the network namespace of the node: %s" % ns)
if ns.get("pid", "-") != "":
    bad.append("not in a PID namespace of its own: %s" % ns)
for m in s.get("mounts", []):
    if "kubernetes.io~configmap" in m.get("source", "") and "ro" not in m.get("options", []):
        bad.append("ConfigMap mount %s writable" % m["destination"])
if bad:
    sys.exit("%s: %s" % (name, "; ".join(bad)))' "$uid" || return 1
    done
}

# A restart of the DaemonSet's pod, its ConfigMap gone (optional: the volume
# is empty): install changes nothing, flannel's and Multus's files stay theirs,
# the installed config stays.
install_again() {
    local before
    before=$(find "$bin_dir" "$conf_dir" -type f -exec sha256sum {} + | sort)
    rm_install || return 1
    install_pod "$install_manifest" install-again || return 1
    cri log "$INIT_CID" --stream stdout | grep -x 'cni-multi install: nothing to change in /host/opt/cni/bin' >/dev/null ||
        { echo "install: $(cri log "$INIT_CID" | grep -v ': unchanged$' | tail -n 5 | tr '\n' ' ')"; return 1; }
    [ "$before" = "$(find "$bin_dir" "$conf_dir" -type f -exec sha256sum {} + | sort)" ] || { echo "the node's files changed"; return 1; }
    left_alone && conf_installed
}

# The bin dir a setting: the manifest with the lines its comments mark
# "BIN DIR" set to another directory installs there, every stub naming it.
install_elsewhere() {
    local alt=/opt/cni/alt m=$d/cni-multi-alt.yaml
    sed "/# BIN DIR/s|/opt/cni/bin|$alt|" "$install_manifest" >"$m"
    [ "$(diff "$install_manifest" "$m" | grep -c '^>')" = 2 ] ||
        { echo "want two lines marked BIN DIR naming /opt/cni/bin: $(diff "$install_manifest" "$m" | tr '\n' ' ')"; return 1; }
    rm_install || return 1
    install_pod "$m" install-alt || return 1
    installed "$alt" || return 1
    rm_install && rm -rf "$alt"
}

# The example ConfigMap, commented out after "# ---" at the end of the
# manifest: the one the DaemonSet's volume names, each config accepted by
# install's checks (a dry run).
example_conf() {
    local ex=$d/example out
    mkdir -p "$ex/cm" || return 1
    "$CNIM_PY" -c '
import os, sys, yaml
lines = open(sys.argv[1]).read().splitlines()
cm = yaml.safe_load("\n".join(line[2:] for line in lines[lines.index("# ---") + 1:]))
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
names = [v["configMap"]["name"] for v in ds["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
if cm["kind"] != "ConfigMap" or [cm["metadata"]["name"]] != names:
    sys.exit("example %s %s, the volume names %s" % (cm["kind"], cm["metadata"]["name"], names))
for key, text in cm["data"].items():
    open(os.path.join(sys.argv[2], key), "w").write(text)' "$install_manifest" "$ex/cm" || return 1
    out=$("$CNIM_INSTALL_BIN" install --dry-run --verbose --dir "$ex/bin" --conf-from "$ex/cm" --conf-dir "$ex/net.d" 2>&1) ||
        { echo "$out" | tail -n 3; return 1; }
    [ "$(grep -c "^$ex/net.d/.*: would install$" <<<"$out")" = "$(find "$ex/cm" -type f | wc -l)" ] || { echo "$out" | tail -n 3; return 1; }
}

if [ -n "${CNIM_INSTALL_IMAGE:-}" ]; then
    check "containerd/install: the manifest's example ConfigMap (commented out) is the volume's, its configs accepted by install" \
        example_conf
    check "containerd/install: node with flannel's, Multus's and a foreign bridge in $bin_dir; images $CNIM_INSTALL_REF and the manifest's others" \
        install_node
    check "containerd/install: the manifest's pod runs (ConfigMap cni-multi-conf from a stand-in): init container install exits 0, then pause runs" \
        install_pod "$install_manifest" install --configmap "cni-multi-conf=$conf_src"
    check "containerd/install: cni-multi and a stub per plugin in $bin_dir, each answering VERSION" installed "$bin_dir" flannel multus
    check "containerd/install: flannel and multus, placed there before, left as they were (--leave)" left_alone
    check "containerd/install: the foreign bridge replaced, kept for --rollback (--force)" bridge_kept
    check "containerd/install: the ConfigMap's conflist installed into $conf_dir" conf_installed
    check "containerd/install: both containers as the manifest hardens them (no capability, no_new_privs, read-only root, seccomp, memory limit, user, host network only)" \
        hardened
    check "containerd/install: the pod restarted without its ConfigMap: nothing changes, flannel and multus still theirs" install_again
    check "containerd/install: the manifest with its BIN DIR lines set to /opt/cni/alt installs there" install_elsewhere
    check "containerd/install: the pod removed" rm_install
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

# --- cnitool on containerd's own attachments ---------------------------------
# `cni-multi cnitool` on what the CRI made (libcni's cache in /var/lib/cni,
# written by containerd's libcni 1.1: no netns in it): `ls` lists the four
# pods alive with their addresses; `check --container-id` passes on pod bw
# (its namespace found from the host's view) and `del --container-id` deletes
# exactly bw's attachment, with containerd's cached config, CNI_ARGS and
# capability args: its veth, IFB, leases, rules and cache entry go, the other
# pods stay. containerd's own teardown of bw then succeeds (rm_all_pods) and
# the leak checks after it find nothing.
cnitool_bin=""
for b in "$bin_dir/cni-multi" "$CNIM_PLUGINS/cni-multi" "$repo/target/cni-multi"; do
    if [ -x "$b" ]; then cnitool_bin=$b && break; fi
done
ctd_cnitool() {
    CNI_PATH=$bin_dir NETCONFPATH=$conf_dir timeout 60 "$cnitool_bin" cnitool --cache-dir /var/lib/cni "$@"
}
cnitool_lists_pods() {
    local out p
    out=$(ctd_cnitool ls --json) || { echo "$out"; return 1; }
    for p in web bw a b; do
        python3 -c '
import json, sys
rows = [a for a in json.load(sys.stdin)["attachments"]
        if a.get("containerId") == sys.argv[1] and a.get("network") == sys.argv[2]]
if len(rows) != 1:
    sys.exit("%s: %d rows" % (sys.argv[1][:12], len(rows)))
a, want = rows[0], set(sys.argv[3].split())
got = {ip.split("/")[0] for ip in a["addresses"]}
if a["state"] != "alive" or a["ifname"] != "eth0" or got != want:
    sys.exit("%s: %s, want alive eth0 %s" % (sys.argv[1][:12], a, sorted(want)))' "${SID[$p]}" "$NET" "${IPS[$p]}" <<<"$out" || return 1
    done
}
cnitool_deletes_bw() {
    local id=${SID[bw]} veth ip p
    veth=$(host_veth "${NETNS[bw]}") || { echo "no host veth of bw"; return 1; }
    ctd_cnitool del --container-id "$id" "$NET" || return 1
    [ ! -e "/var/lib/cni/results/$NET-$id-eth0" ] || { echo "its cache entry is still there"; return 1; }
    ! ip link show "$veth" >/dev/null 2>&1 || { echo "its host veth $veth is still there"; return 1; }
    ! nsenter --net="${NETNS[bw]}" ip link show eth0 >/dev/null 2>&1 || { echo "eth0 is still in pod bw"; return 1; }
    for ip in ${IPS[bw]}; do
        [ ! -e "$ipam/$NET/$ip" ] || { echo "its lease $ip is still there"; return 1; }
    done
    ! netfilter_dump | grep -q -- "$id" || { echo "a rule still names $id"; return 1; }
    no_links ifb || return 1
    for p in web a b; do
        [ -e "/var/lib/cni/results/$NET-${SID[$p]}-eth0" ] || { echo "pod $p lost its cache entry"; return 1; }
    done
    ping_from "${NETNS[a]}" "$(ip_of b 4)" || { echo "pod a no longer reaches pod b"; return 1; }
    ! ctd_cnitool check --container-id "$id" "$NET" 2>/dev/null || { echo "a CHECK of bw still passes"; return 1; }
}
if [ -z "$cnitool_bin" ]; then
    echo "skip containerd/cnitool: no cni-multi binary to run cnitool from"
elif [ -n "${SID[bw]:-}" ]; then
    check "containerd/cnitool: ls lists the four pods the CRI attached, alive, with their addresses" cnitool_lists_pods
    check "containerd/cnitool: check --container-id passes on pod bw as the CRI attached it" \
        ctd_cnitool check --container-id "${SID[bw]}" "$NET"
    check "containerd/cnitool: del --container-id deletes exactly pod bw's attachment (veth, IFB, leases, rules, cache entry)" \
        cnitool_deletes_bw
else
    fail "containerd/cnitool: --container-id on pod bw" "pod bw did not start"
fi

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

# --- the doctor DaemonSet, as its manifest runs it ----------------------------
# contrib/kubernetes/cni-multi-doctor.yaml's pod, run through the CRI as
# kubelet would run it (cri.py run-manifest reads the command, env, hostPath
# mounts and their propagation, host namespaces, securityContext and limits
# from the file), with the image `make image` built, on this lane laid out as
# the node the manifest expects: plugins in /opt/cni/bin (put there by the
# install DaemonSet above), the config in /etc/cni/net.d (both private tmpfs, run.sh),
# cache and host-local's store under /var/lib/cni, the pods' netns pinned
# under /var/run/netns (containerd's default), and every mount shared, as
# systemd leaves a node: a HostToContainer mount then receives what the node
# mounts after the container started, and a container's root is a slave
# mount, as it is on a node. This shell's mount namespace is the lane's own
# (`ip netns exec` made it, its mounts copies of run.sh's private ones), so
# sharing here reaches neither run.sh's namespace nor the host; it must be
# done here, not in run.sh: a slave copy of a shared mount would not pass on
# what is mounted in this namespace.
# The network uses the nftables backends: the image holds no iptables, and
# the manifest keeps the DaemonSet off nodes whose networks use iptables.
DNET=cnim-doc DV4NET=10.88.8.0/24 DV6NET=fd00:88:8::/64 DGW4=10.88.8.1 DHOSTPORT=18281
manifest=$repo/contrib/kubernetes/cni-multi-doctor.yaml
dstore=/var/lib/cni/networks/$DNET
ct() { CNI_PATH=/opt/cni/bin NETCONFPATH=/etc/cni/net.d timeout 60 /opt/cni/bin/cni-multi cnitool "$@"; }

doctor_node() {
    stop_containerd
    mount --make-rshared / || return 1
    installed /opt/cni/bin flannel multus || return 1
    # The doctor's network alone: the lane's pods of the conflist above are gone.
    rm -f /etc/cni/net.d/10-cnim.conflist
    mkdir -p /etc/cni/net.d
    config=$d/config-doctor.toml
    write_config "$config" /opt/cni/bin /etc/cni/net.d false
    cat >/etc/cni/net.d/10-cnim-doc.conflist <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$DNET",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cnimd0",
      "isGateway": true,
      "ipMasq": true,
      "ipMasqBackend": "nftables",
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$DV4NET"}], [{"subnet": "$DV6NET"}]],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "backend": "nftables"},
    {"type": "bandwidth", "capabilities": {"bandwidth": true}},
    {"type": "tuning"}
  ]
}
EOF
    start_containerd >/dev/null || { echo "restart failed: $(tail -n 5 "$d/containerd.log")"; return 1; }
}

cnitool_id() { printf 'cnitool-%s' "$(printf %s "$1" | sha512sum | cut -c1-20)"; }

declare -A CT_ID CT_IPS
# plant NAME: an attachment as a runtime on libcni 1.2 leaves it (the cache
# entry names its netns): cnitool's, in /run/netns/NAME.
plant() {
    local out ip
    ct netns add "$1" >/dev/null || return 1
    out=$(ct add "$DNET" "/run/netns/$1" 2>&1) || { echo "$out"; return 1; }
    CT_ID[$1]=$(cnitool_id "/run/netns/$1")
    CT_IPS[$1]=$(python3 -c 'import json, sys; print(" ".join(i["address"].split("/")[0] for i in json.load(sys.stdin)["ips"]))' <<<"$out")
    LEAK_IDS+=("${CT_ID[$1]}")
    for ip in ${CT_IPS[$1]}; do LEAK_IPS+=("$ip"); done
    [ -f "/var/lib/cni/results/$DNET-${CT_ID[$1]}-eth0" ] || { echo "no cache entry of $1"; return 1; }
}
# plant_dead NAME: an attachment whose runtime never ran the DEL: its netns is
# gone, its cache entry, reservations and rules stay.
plant_dead() {
    plant "$1" && ct netns del "$1" >/dev/null
}

# Everything the doctor judges made older than its --min-age (300 s).
age_state() {
    find /var/lib/cni /run/cni -type f -exec touch -h -d '10 minutes ago' {} + 2>/dev/null || true
}

# What a doctor run could remove: cache entries, reservations, rules, links.
node_state() {
    find /var/lib/cni/results "$dstore" -type f | sort
    nft list ruleset 2>/dev/null
    ip -o link show | awk -F': ' '{print $2}'
}

# The pods: a dead attachment, a live one pinned in /run/netns, and three CRI
# pods (hostPort + bandwidth, two plain).
doctor_pods() {
    plant_dead cnimdoc-dead || return 1
    plant cnimdoc-live || return 1
    run_pod dweb --host-port "$DHOSTPORT:80" --bandwidth "$RATE" || return 1
    run_pod da || return 1
    run_pod db || return 1
    age_state
}

# passed NAME CMD...: check, and whether it passed.
passed() {
    check "$@"
    tail -n 1 "$CNIM_RESULTS" | grep -q '^ok '
}

DOCTOR_SID="" DOCTOR_CID=""
run_doctor() { # run_doctor LOGNAME [cri.py run-manifest options]
    local rc=0
    run_manifest "$manifest" "$@" || rc=1
    DOCTOR_SID=${MPOD[sandbox]:-} DOCTOR_CID=${MPOD[doctor]:-}
    return $rc
}
rm_doctor() {
    [ -z "$DOCTOR_SID" ] || cri rm-pod "$DOCTOR_SID" || return 1
    DOCTOR_SID="" DOCTOR_CID=""
}
exited() { cri status "$1" | grep -x 'state CONTAINER_EXITED' >/dev/null; }
finished() { exited "$1" || reported "$1"; }
# A run's report: its table's header, or "no stale CNI state found" (stdout).
reported() { cri log "$1" --stream stdout | grep -Eq '^KIND |no stale CNI state found'; }
# settled CID: its log did not grow for a second.
settled() {
    local a b
    a=$(cri log "$1" | wc -c)
    sleep 1
    b=$(cri log "$1" | wc -c)
    [ "$a" = "$b" ]
}
# The finding rows of a report (FILE): those whose first column is a kind.
rows_of() {
    awk '$1 ~ /^(cache|ipam|dhcp|masq|portmap|firewall|macspoofchk|repair|veth|ifb|tuning|flannel|multus|devinfo|record|tmp)$/' "$1"
}
# mounts_seen PID: its mounts of /, /run and /var/run (and below) with their
# propagation (mountinfo's optional fields).
mounts_seen() {
    awk '$5 == "/" || $5 ~ /^\/(var\/)?run(\/|$)/ {
            tags = ""; for (i = 7; $i != "-"; i++) tags = tags " " $i; print $5 (tags == "" ? " private" : tags) }' \
        "/proc/$1/mountinfo" 2>/dev/null | tr '\n' ';'
}
# named IDS...: the planted attachments' names for their container IDs.
named() {
    local id n out=""
    for id in "$@"; do
        for n in "${!CT_ID[@]}"; do [ "${CT_ID[$n]}" != "$id" ] || out+="$n "; done
    done
    echo "$out"
}

# The manifest's container: its first run (of --every) lists the dead
# attachment's state and removes it, every finding fixed, and nothing else;
# the --every loop keeps running.
doctor_fixes_dead() {
    local id=${CT_ID[cnimdoc-dead]} rows kinds k ip
    run_doctor doctor || return 1
    retry 60 finished "$DOCTOR_CID" || { echo "no report in 60 s: $(cri log "$DOCTOR_CID" | tail -n 5 | tr '\n' ' ')"; return 1; }
    retry 10 settled "$DOCTOR_CID" || true
    cri log "$DOCTOR_CID" >"$d/doctor.out"
    cri status "$DOCTOR_CID" | grep -x 'state CONTAINER_RUNNING' >/dev/null ||
        { echo "the --every loop ended: $(cri status "$DOCTOR_CID" | tr '\n' ' '); log: $(tail -n 20 "$d/doctor.out")"; return 1; }
    rows=$(rows_of "$d/doctor.out")
    [ -n "$rows" ] || { echo "no finding: $(cat "$d/doctor.out")"; return 1; }
    if awk -v id="$id" '$3 != id || $NF != "yes"' <<<"$rows" | grep -q .; then
        echo "findings not of $id, or not fixed: $(awk -v id="$id" '$3 != id || $NF != "yes"' <<<"$rows" | tr '\n' ' ')"
        return 1
    fi
    kinds=$(awk '{print $1}' <<<"$rows" | sort -u | tr '\n' ' ')
    for k in cache ipam masq; do
        [[ " $kinds" == *" $k "* ]] || { echo "no $k finding (found: $kinds)"; return 1; }
    done
    [ ! -e "/var/lib/cni/results/$DNET-$id-eth0" ] || { echo "its cache entry is still there"; return 1; }
    for ip in ${CT_IPS[cnimdoc-dead]}; do
        [ ! -e "$dstore/$ip" ] || { echo "its reservation $ip is still there"; return 1; }
    done
    ! nft list ruleset 2>/dev/null | grep -q -- "$id" || { echo "a rule still names $id"; return 1; }
}

# Every live attachment kept: cache entries, reservations, the pods' addresses.
doctor_kept_live() {
    local f p ip dead=${CT_ID[cnimdoc-dead]} ips entry
    # The dead attachment's owner-index entry goes with it: sha512 of
    # "<id>\n<ifname>", 32 hex digits (src/ipam/index.rs).
    entry=$(printf '%s\n%s' "$dead" eth0 | sha512sum | cut -c1-32)
    while read -r f; do
        [[ $f == *"$dead"* ]] && continue
        [ "$f" = "$dstore/.cni-multi-owners.d/$entry" ] && continue
        for ip in ${CT_IPS[cnimdoc-dead]}; do [ "$f" = "$dstore/$ip" ] && continue 2; done
        [ -e "$f" ] || { echo "$f was removed"; return 1; }
    done < <(grep '^/' <<<"$DOCTOR_BEFORE")
    for p in dweb da db; do
        ips=$(tr ' ' '\n' <<<"${IPS[$p]% }" | sort)
        [ "$(pod_addresses "${NETNS[$p]}")" = "$ips" ] || { echo "pod $p has $(pod_addresses "${NETNS[$p]}" | tr '\n' ' ')"; return 1; }
    done
    ips=$(tr ' ' '\n' <<<"${CT_IPS[cnimdoc-live]}" | sort)
    [ "$(pod_addresses /run/netns/cnimdoc-live)" = "$ips" ] || { echo "cnimdoc-live lost its addresses"; return 1; }
}

# doctor_sees_later_pin NAME [refuses]: a pod pinned (in /run/netns/NAME) after
# the doctor's container started reaches it only by propagation. A run in that
# container (plain, no --fix) judges the pod alive and finds the node clean;
# with "refuses", it must instead see the bare file and refuse (exit 2).
doctor_sees_later_pin() {
    local out rc=0
    plant "$1" || return 1
    age_state
    out=$(cri exec "$DOCTOR_CID" -- /cni-multi cnitool doctor --min-age 300 2>&1) || rc=$?
    if [ -n "${2:-}" ]; then
        if [ "$rc" != 2 ] || ! grep -q 'cannot inspect the node' <<<"$out" || ! grep -q "/run/netns/$1" <<<"$out"; then
            echo "exit $rc: $out"
            return 1
        fi
        return 0
    fi
    if [ "$rc" != 0 ] || ! grep -q 'no stale CNI state found' <<<"$out"; then
        echo "exit $rc: $out"
        return 1
    fi
}

# The same container with every mount but no propagation: a pod pinned after
# it started shows as a bare file, and the doctor refuses (exit 2) rather than
# judge it dead: the HostToContainer of the manifest is what it needs.
doctor_private_refuses() {
    run_doctor doctor-private --private-propagation || return 1
    retry 60 finished "$DOCTOR_CID" || { echo "no report in 60 s: $(cri log "$DOCTOR_CID" | tail -n 5 | tr '\n' ' ')"; return 1; }
    exited "$DOCTOR_CID" && { echo "its first run refused: $(cri log "$DOCTOR_CID" | tail -n 3 | tr '\n' ' ')"; return 1; }
    doctor_sees_later_pin cnimdoc-late2 refuses || return 1
    rm_doctor
}

# Without the mounts that show it the node's netns pins (the manifest's
# /run/netns, /var/run/netns, /run and /var/run), the same container must not
# judge: it exits 2 and removes nothing, neither a dead attachment (planted
# anew) nor the live pinned ones, whose netns it cannot see.
doctor_refuses_without_mounts() {
    local before after st pid mounts
    plant_dead cnimdoc-dead2 || return 1
    age_state
    before=$(node_state)
    run_doctor doctor-nomounts --without /run --without /var/run || return 1
    retry 60 finished "$DOCTOR_CID" || { echo "neither exited nor reported in 60 s: $(cri log "$DOCTOR_CID" | tail -n 5)"; return 1; }
    retry 10 settled "$DOCTOR_CID" || true
    st=$(cri status "$DOCTOR_CID")
    pid=$(sed -n 's/^pid //p' <<<"$st")
    mounts=$(mounts_seen "$pid")
    cri log "$DOCTOR_CID" >"$d/doctor-nomounts.out"
    after=$(node_state)
    rm_doctor || return 1
    if ! grep -qx 'exit 2' <<<"$st" || grep -qx 'state CONTAINER_RUNNING' <<<"$st"; then
        # shellcheck disable=SC2046 # a list of IDs
        echo "it did not refuse ($(grep '^state' <<<"$st" | cut -d' ' -f2)): it judged dead and ran the DEL of:" \
            "$(named $(rows_of "$d/doctor-nomounts.out" | awk '$1 == "cache" {print $3}'))(its mounts: $mounts)"
        return 1
    fi
    grep -q 'cannot inspect the node' "$d/doctor-nomounts.out" || { echo "log: $(cat "$d/doctor-nomounts.out")"; return 1; }
    [ "$before" = "$after" ] || { echo "it changed the node: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 10 | tr '\n' ' ')"; return 1; }
}

doctor_cleanup() {
    local n
    rm_doctor || true
    for n in cnimdoc-dead cnimdoc-dead2; do ct del "$DNET" "/run/netns/$n" >/dev/null 2>&1 || true; done
    for n in cnimdoc-live cnimdoc-late cnimdoc-late2; do
        [ -e "/run/netns/$n" ] || continue
        ct del "$DNET" "/run/netns/$n" || return 1
        ct netns del "$n" || return 1
    done
    rm_all_pods
}

if [ -n "${CNIM_INSTALL_IMAGE:-}" ]; then
    if passed "containerd/doctor: node laid out as the manifest expects (/opt/cni/bin from the install DaemonSet, /etc/cni/net.d, netns in /var/run/netns, mounts shared)" doctor_node &&
        passed "containerd/doctor: a dead attachment (netns gone, no DEL), a live pinned one and 3 CRI pods on $DNET (nftables)" doctor_pods; then
        DOCTOR_BEFORE=$(node_state)
        check "containerd/doctor: the manifest's container finds the dead attachment and fixes it (cache entry, reservations, rules gone), its --every loop running" \
            doctor_fixes_dead
        check "containerd/doctor: every live attachment keeps its cache entry, reservations and addresses" doctor_kept_live
        check "containerd/doctor: a netns pinned after the container started is seen (HostToContainer): a run in it finds the node clean" \
            doctor_sees_later_pin cnimdoc-late
        rm_doctor || true
        for fam in 4 6; do
            check "containerd/doctor: pod da still reaches pod db over IPv$fam" ping_from "${NETNS[da]}" "$(ip_of db "$fam")"
        done
        check "containerd/doctor: pod db still reaches the pinned live pod" ping_from "${NETNS[db]}" "${CT_IPS[cnimdoc-live]%% *}"
        check "containerd/doctor: hostPort $DHOSTPORT still reaches pod dweb" http_get "http://$DGW4:$DHOSTPORT/" "hello from dweb"
        check "containerd/doctor: with the mounts but no propagation, a netns pinned after it started makes it refuse (exit 2)" \
            doctor_private_refuses
        check "containerd/doctor: without its /run and /var/run mounts (the netns pins) the manifest's container exits 2, 'cannot inspect the node', and removes nothing" \
            doctor_refuses_without_mounts
    fi
    check "containerd/doctor: every pod and attachment removed" doctor_cleanup
    leak_checks "containerd/doctor" "$dstore" /run/netns cni-
    check "containerd/doctor: no netns of cnitool's left" no_netns_mounts /run/netns cnimdoc-
fi
