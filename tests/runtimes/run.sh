#!/usr/bin/env bash
# make test-runtimes: the installed plugins driven by two real runtimes.
#   containerd.sh  containerd 1.6's CRI plugin, driven as kubelet does (cri.py),
#                  its plugins and config put there by the install DaemonSet
#                  (contrib/kubernetes) run as its manifest says; then the
#                  doctor DaemonSet, on a node laid out as it expects
#   podman.sh      podman 4 with its CNI backend
#   crio.sh        cni-multi's cnitool called as CRI-O calls libcni (STATUS
#                  polling, GC at start after pods went without DEL)
# Each lane runs in its own network namespace (ip netns exec), and the whole
# run in a private mount + PID namespace: runtime state (/run, /var/lib/cni,
# /var/lib/containers) is a tmpfs there, and when the run ends, however it
# ends, the kernel kills every process it started and frees its namespaces.
#
#   PLUGIN_DIR=/usr/lib/cni     run against those plugins (default: build and
#                               install cni-multi into a temp dir, use that)
#   RUNTIMES="containerd podman crio"  the lanes to run (default all three)
#   CYCLES=20                   run/remove cycles per lane
#   LANE_TIMEOUT=900            seconds for all lanes together
#   CNIM_VENV=/var/tmp/cni-multi-venv  Python venv with grpcio (made if missing)
# Prints one "ok NAME" / "FAIL NAME: detail" line per check and ends with
# "N passed, M failed"; exits 1 if any check failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

RUNTIMES=${RUNTIMES:-containerd podman crio}
CYCLES=${CYCLES:-20}
LANE_TIMEOUT=${LANE_TIMEOUT:-900}
VENV=${CNIM_VENV:-/var/tmp/cni-multi-venv}
IMAGE=localhost/cnim-busybox:1
PINS="grpcio==1.66.2 grpcio-tools==1.66.2 protobuf==5.28.3 pyyaml==6.0.3"
# Where runtimes keep state by default, and the node's CNI config and plugin
# directories (the containerd lane's DaemonSets mount them from there):
# private tmpfs mounts in the lanes' mount namespace (created here first when
# missing, removed afterwards).
PRIVATE_DIRS="/var/lib/cni /var/lib/containers /etc/cni /opt/cni"

# --- inside the private mount + PID namespace (PID 1 here) -------------------
if [ "${CNIM_LANE_INNER:-}" = 1 ]; then
    # As the namespace's PID 1 this shell would ignore signals it has no
    # handler for; on one, exit (once the running lane has cleaned up), and
    # the kernel kills what is left.
    trap 'exit 143' INT TERM HUP
    mount -t tmpfs -o mode=755 cnim-run /run
    for dir in $PRIVATE_DIRS; do mount -t tmpfs -o mode=755 cnim-lane "$dir"; done
    mkdir -p /run/netns
    # `ip netns exec` replaces /sys, and with it the cgroup mounts; lib.sh's
    # restore_cgroups binds them back from here.
    mkdir -p "$CNIM_CGROUP"
    mount --rbind /sys/fs/cgroup "$CNIM_CGROUP"
    for rt in $RUNTIMES; do
        ns=cnim-$rt
        mkdir -p "$CNIM_ROOT/$rt"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        rc=0
        CNIM_TMP=$CNIM_ROOT/$rt ip netns exec "$ns" bash "$here/$rt.sh" || rc=$?
        [ "$rc" = 0 ] || fail "$rt lane" "stopped early (exit $rc); see the lines above"
        ip netns delete "$ns"
    done
    exit 0
fi

# --- outside: dependencies, plugins, client, image ---------------------------
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (namespaces, mounts, runtimes)" >&2; exit 1; }
for rt in $RUNTIMES; do
    case $rt in
        containerd | podman | crio) ;;
        *) echo "run.sh: unknown runtime '$rt' (RUNTIMES: containerd podman crio)" >&2; exit 1 ;;
    esac
done

missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing+=" $2"; }
need ip iproute2
need tc iproute2
need iptables-save iptables
need nft nftables
need nsenter util-linux
need ping iputils-ping
need python3 python3
[[ " $RUNTIMES " == *" containerd "* ]] && need containerd containerd && need ctr containerd
# cni-multi's install image (make image), which the containerd lane runs.
[ -n "${PLUGIN_DIR:-}" ] || [[ " $RUNTIMES " != *" containerd "* ]] || need buildah buildah
[[ " $RUNTIMES " == *" podman "* ]] && need podman podman
need runc runc
# The image's only binary: it must be the static one.
dpkg -s busybox-static >/dev/null 2>&1 || missing+=" busybox-static"
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=" python3-venv"
[ "${PLUGIN_DIR:-}" != /usr/lib/cni ] || [ -x /usr/lib/cni/bridge ] || missing+=" containernetworking-plugins"
if [ -n "$missing" ]; then
    echo "run.sh: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086 # a list of package names
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

tmp=$(mktemp -d /tmp/cni-multi-runtimes.XXXXXX)
made_dirs=""
cleanup() {
    local dir
    rm -rf --one-file-system "$tmp"
    for dir in $made_dirs; do rmdir "$dir" 2>/dev/null || true; done
}
trap cleanup EXIT
for dir in $PRIVATE_DIRS; do
    [ -d "$dir" ] || { mkdir -p "$dir"; made_dirs+=" $dir"; }
done

if [ -n "${PLUGIN_DIR:-}" ]; then
    plugins=$PLUGIN_DIR
else
    # In place (no DESTDIR): the plugin stubs run the binary where it is.
    make -C "$repo" install BINDIR="$tmp/install/bin" SYSTEMDDIR="$tmp/install/units" PREFIX="$tmp/prefix"
    plugins=$tmp/install/bin
    if [[ " $RUNTIMES " == *" containerd "* ]]; then
        # The containerd lane's plugins come from this image (see containerd.sh).
        make -C "$repo" image
        export CNIM_INSTALL_IMAGE=$repo/target/cni-multi-image.tar CNIM_INSTALL_BIN=$repo/target/cni-multi
        CNIM_INSTALL_REF=localhost/cni-multi:$("$CNIM_INSTALL_BIN" --version | awk 'NR == 1 {print $2}')
        export CNIM_INSTALL_REF
    fi
fi
for p in loopback bridge host-local portmap bandwidth tuning firewall; do
    [ -x "$plugins/$p" ] || { echo "run.sh: no $p plugin in $plugins" >&2; exit 1; }
done

# The CRI client's venv, made once and reused while its pins hold.
if [ "$(cat "$VENV/.cnim-pins" 2>/dev/null)" != "$PINS" ]; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    # shellcheck disable=SC2086 # a list of requirements
    timeout 600 "$VENV/bin/pip" install -q --disable-pip-version-check $PINS
    echo "$PINS" >"$VENV/.cnim-pins"
fi
mkdir "$tmp/gen" "$tmp/image"
"$VENV/bin/python" -m grpc_tools.protoc -I "$here" --python_out="$tmp/gen" --grpc_python_out="$tmp/gen" "$here/cri_api.proto"
python3 "$here/mkimage.py" /bin/busybox "$IMAGE" "$tmp/image"

echo "runtimes: $RUNTIMES; plugins: $plugins"
export CNIM_RESULTS=$tmp/results CNIM_ROOT=$tmp/lanes CNIM_CGROUP=$tmp/cgroup CNIM_PLUGINS=$plugins
export CNIM_GEN=$tmp/gen CNIM_PY=$VENV/bin/python CNIM_IMAGE=$IMAGE CNIM_IMAGE_DIR=$tmp/image CNIM_CYCLES=$CYCLES
export RUNTIMES
: >"$CNIM_RESULTS"
start=$SECONDS
# timeout(1) puts the lanes in a process group of their own, so a signal to
# ours (^C, CI stopping make) is passed on: unshare dies, and with it (its
# --kill-child) the namespace's PID 1 and so every process of the lanes.
CNIM_LANE_INNER=1 timeout --kill-after=10 "$LANE_TIMEOUT" \
    unshare --mount-proc --pid --fork --kill-child --propagation private bash "$here/run.sh" &
lanes=$!
interrupted=""
trap 'interrupted=1; kill -TERM "$lanes" 2>/dev/null || true' INT TERM HUP
rc=0
wait "$lanes" || rc=$?
if [ -n "$interrupted" ]; then
    wait "$lanes" 2>/dev/null || true
    echo "run.sh: interrupted" >&2
    exit 130
fi
case $rc in
    0) ;;
    124 | 137) fail "runtime lanes" "timed out after ${LANE_TIMEOUT}s" ;;
    *) fail "runtime lanes" "exited $rc" ;;
esac
passed=$(grep -c '^ok ' "$CNIM_RESULTS" || true)
failed=$(grep -c '^FAIL ' "$CNIM_RESULTS" || true)
echo "runtime lanes took $((SECONDS - start))s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
