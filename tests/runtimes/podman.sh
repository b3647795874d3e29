#!/usr/bin/env bash
# The podman lane (run.sh starts it inside its own netns with `ip netns
# exec`): podman 4 with its CNI backend and a network it creates itself
# (bridge, portmap, firewall, tuning), private storage and config. Checks
# addresses, reachability and the port mapping, and that `podman rm -f`
# leaves nothing, also over many run/rm cycles.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# Fixed, lane-private numbers (the containerd lane has others).
V4NET=10.89.7.0/24 V6NET=fd00:89:7::/64 GW4=10.89.7.1 GW6=fd00:89:7::1
NET=cnimpod HOSTPORT=18380
d=$CNIM_TMP
# podman refuses a runroot path of more than 50 characters; /run is the
# lane's private tmpfs (run.sh).
runroot=/run/cnim-podman

restore_cgroups
mkdir -p "$d/net.d" "$d/tmp"

cat >"$d/containers.conf" <<EOF
[network]
network_backend = "cni"
cni_plugin_dirs = ["$CNIM_PLUGINS"]
network_config_dir = "$d/net.d"
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
tmp_dir = "$d/tmp"
image_copy_tmp_dir = "$d/tmp"
lock_type = "file"
EOF
cat >"$d/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$d/root"
runroot = "$runroot"
EOF
export CONTAINERS_CONF=$d/containers.conf CONTAINERS_STORAGE_CONF=$d/storage.conf

pm() {
    timeout 120 podman --root "$d/root" --runroot "$runroot" --storage-driver vfs "$@"
}

cleanup() {
    pm rm -f -a -t 0 >/dev/null 2>&1 || true
}
trap cleanup EXIT

server() { # the same server as the containerd lane's (cri.py)
    echo "mkdir -p /tmp/www && echo 'hello from $1' > /tmp/www/index.html && httpd -f -p 80 -h /tmp/www & trap 'exit 0' TERM; wait"
}

declare -A CID NETNS IPS
# run_ctr NAME [podman run options]: a detached server container on the
# lane's network; records its ID, netns and addresses.
run_ctr() {
    local name=$1 out
    shift
    out=$(pm run -d --name "cnimp-$name" --network "$NET" "$@" "$CNIM_IMAGE" /bin/sh -c "$(server "$name")") ||
        { echo "$out"; return 1; }
    CID[$name]=$out
    LEAK_IDS+=("$out")
    out=$(pm inspect -f '{{.NetworkSettings.SandboxKey}} {{range .NetworkSettings.Networks}}{{.IPAddress}} {{.GlobalIPv6Address}}{{end}}' "cnimp-$name") ||
        { echo "$out"; return 1; }
    read -r "NETNS[$name]" "IPS[$name]" <<<"$out"
    # shellcheck disable=SC2206 # a list of addresses
    LEAK_IPS+=(${IPS[$name]})
}

ip_of() { # ip_of NAME 4|6
    local ip
    for ip in ${IPS[$1]}; do
        if { [ "$2" = 6 ] && [[ $ip == *:* ]]; } || { [ "$2" = 4 ] && [[ $ip != *:* ]]; }; then echo "$ip"; fi
    done
}

rm_all() {
    pm rm -f -a -t 2 >/dev/null || return 1
    local left
    left=$(pm ps -a -q)
    [ -z "$left" ] || { echo "containers left: $left"; return 1; }
}

# --- up ---------------------------------------------------------------------
if ! out=$(pm version --format '{{.Client.Version}}' 2>&1); then
    fail "podman: answers" "$out"
    exit 1
fi
pass "podman: answers ($out)"
check "podman: image $CNIM_IMAGE imported" pm import -q "$CNIM_IMAGE_DIR/rootfs.tar" "$CNIM_IMAGE"

plugin_types() {
    python3 -c 'import json, sys; print(" ".join(p["type"] for p in json.load(open(sys.argv[1]))["plugins"]))' "$1"
}
if out=$(pm network create --subnet "$V4NET" --subnet "$V6NET" "$NET" 2>&1); then
    pass "podman: network $NET created ($(plugin_types "$d/net.d/$NET.conflist"))"
else
    fail "podman: network $NET created" "$out"
    exit 1
fi

# --- three containers: hostPort, two plain -----------------------------------
check "podman: container web (-p $HOSTPORT:80) runs" run_ctr web -p "$HOSTPORT:80"
check "podman: container a runs" run_ctr a
check "podman: container b runs" run_ctr b

for c in web a b; do
    if [ -z "${CID[$c]:-}" ]; then
        fail "podman: container $c dual-stack addresses" "container did not start"
        continue
    fi
    # shellcheck disable=SC2086 # IPS is a list
    check "podman: container $c dual-stack addresses (${IPS[$c]})" \
        check_addresses "${NETNS[$c]}" "$V4NET" "$V6NET" ${IPS[$c]}
done

for c in b web; do
    for fam in 4 6; do
        if [ -z "${CID[a]:-}" ] || [ -z "${CID[$c]:-}" ]; then
            fail "podman: container a reaches container $c over IPv$fam" "container a or $c did not start"
            continue
        fi
        check "podman: container a reaches container $c over IPv$fam" ping_from "${NETNS[a]}" "$(ip_of "$c" "$fam")"
    done
done

check "podman: port $HOSTPORT reachable from the host namespace (IPv4 $GW4)" \
    http_get "http://$GW4:$HOSTPORT/" "hello from web"
check "podman: port $HOSTPORT reachable from the host namespace (IPv6 $GW6)" \
    http_get "http://[$GW6]:$HOSTPORT/" "hello from web"

check "podman: the leak checks see the running containers (leases, netns, rules)" \
    state_visible "/var/lib/cni/networks/$NET" /run/netns netns-
check "podman: every container removed (rm -f)" rm_all
leak_checks "podman/containers" "/var/lib/cni/networks/$NET" /run/netns netns-

# --- run/rm cycles -------------------------------------------------------------
cycles() {
    local i errors=0 first=""
    for ((i = 1; i <= CNIM_CYCLES; i++)); do
        if ! run_ctr "cycle$i" -p "$HOSTPORT:80" >"$d/cycle.out" 2>&1; then
            errors=$((errors + 1))
            [ -n "$first" ] || first="cycle $i: $(cat "$d/cycle.out")"
        fi
        if ! rm_all >"$d/cycle.out" 2>&1; then
            errors=$((errors + 1))
            [ -n "$first" ] || first="cycle $i removal: $(cat "$d/cycle.out")"
        fi
    done
    [ "$errors" = 0 ] || { echo "$errors failures; first: $first"; return 1; }
}
check "podman: $CNIM_CYCLES run/rm cycles of a container with a published port" cycles
leak_checks "podman/cycles" "/var/lib/cni/networks/$NET" /run/netns netns-
