# shellcheck shell=bash
# Shared by the runtime lanes (containerd.sh, podman.sh), which run inside
# their lane's network namespace under `ip netns exec`. Every check prints one
# line, "ok NAME" or "FAIL NAME: detail", and appends it to $CNIM_RESULTS,
# which run.sh counts.

# shellcheck disable=SC2034 # the lanes fill these in
LEAK_IDS=() LEAK_IPS=()

pass() { echo "ok $1" | tee -a "$CNIM_RESULTS"; }
fail() { echo "FAIL $1: $2" | tee -a "$CNIM_RESULTS"; }

# check NAME CMD...: ok when CMD succeeds, else FAIL with the end of its
# output. CMD runs in this shell (not a subshell), so it can record state.
check() {
    local name=$1 out=$CNIM_TMP/check.out
    shift
    if "$@" >"$out" 2>&1; then
        pass "$name"
    else
        fail "$name" "$(tail -c 400 "$out" | tr '\n' ' ')"
    fi
}

# `ip netns exec` mounted a sysfs of the lane's namespace over /sys, which
# hides the cgroup mounts the OCI runtime needs; run.sh bound them at
# $CNIM_CGROUP before entering, so put them back (in this mount namespace only).
restore_cgroups() {
    mount --rbind "$CNIM_CGROUP" /sys/fs/cgroup
}

# retry SECONDS CMD...: runs CMD until it succeeds or SECONDS have passed.
retry() {
    local until=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < until)) || return 1
        sleep 0.5
    done
}

in_subnet() {
    python3 -c 'import ipaddress, sys; sys.exit(ipaddress.ip_address(sys.argv[1]) not in ipaddress.ip_network(sys.argv[2]))' "$1" "$2"
}

# pod_addresses NETNS: the global addresses of eth0 in that pod netns, sorted.
pod_addresses() {
    nsenter --net="$1" ip -o addr show dev eth0 scope global | awk '{sub("/.*", "", $4); print $4}' | sort
}

# check_addresses NETNS V4_SUBNET V6_SUBNET IPS...: the pod has one address of
# each family in the network's ranges, and they are what the runtime reported.
check_addresses() {
    local netns=$1 v4net=$2 v6net=$3 v4=0 v6=0 ip reported actual
    shift 3
    for ip in "$@"; do
        if in_subnet "$ip" "$v4net"; then
            v4=$((v4 + 1))
        elif in_subnet "$ip" "$v6net"; then
            v6=$((v6 + 1))
        else
            echo "address $ip outside $v4net and $v6net"
            return 1
        fi
    done
    if [ "$v4" != 1 ] || [ "$v6" != 1 ]; then
        echo "runtime reported '$*': want one IPv4 and one IPv6"
        return 1
    fi
    reported=$(printf '%s\n' "$@" | sort)
    actual=$(pod_addresses "$netns") || { echo "no eth0 in $netns"; return 1; }
    [ "$reported" = "$actual" ] || { echo "runtime reported '$*', eth0 in the pod has '$(echo "$actual" | tr '\n' ' ')'"; return 1; }
}

# ping_from NETNS IP: the pod in NETNS reaches IP (v4 or v6). The first probes
# can meet IPv6 duplicate address detection still running, hence the retries.
ping_from() {
    local fam=-4
    [[ $2 == *:* ]] && fam=-6
    retry 10 nsenter --net="$1" ping "$fam" -c 1 -W 1 -q "$2" >/dev/null
}

# http_get URL WANT: an HTTP GET from this (the lane's host) namespace answers
# WANT; retried while the server in the pod starts. (busybox wget's own -T
# timeout crashes Debian 12's busybox-static, so timeout(1) bounds it.)
get() { timeout 5 busybox wget -q -O - "$1" 2>&1; }
get_is() { [ "$(get "$1")" = "$2" ]; }
http_get() {
    retry 15 get_is "$1" "$2" || { echo "GET $1 gave '$(get "$1")', want '$2'"; return 1; }
}

# host_veth NETNS: the host end, in this namespace, of the pod's eth0 veth.
host_veth() {
    local peer
    peer=$(nsenter --net="$1" ip -o link show dev eth0 | sed -n 's/^[0-9]*: eth0@if\([0-9]*\):.*/\1/p')
    [ -n "$peer" ] || return 1
    ip -o link show | awk -F': ' -v idx="$peer" '$1 == idx { sub("@.*", "", $2); print $2 }'
}

# check_bandwidth NETNS RATE: the bandwidth plugin's shaping for a pod, as
# tc shows it: tbf at RATE on the host veth (traffic into the pod), and an
# ingress qdisc on it redirecting to an IFB with tbf at RATE (traffic out).
check_ingress_tbf() {
    local veth qd
    veth=$(host_veth "$1") || { echo "no host veth for $1"; return 1; }
    qd=$(tc qdisc show dev "$veth")
    grep -q "qdisc tbf .*rate $2" <<<"$qd" || { echo "$veth: $qd"; return 1; }
}
check_egress_ifb() {
    local veth qd ifb
    veth=$(host_veth "$1") || { echo "no host veth for $1"; return 1; }
    qd=$(tc qdisc show dev "$veth")
    grep -q "qdisc ingress ffff:" <<<"$qd" || { echo "$veth has no ingress qdisc: $qd"; return 1; }
    tc filter show dev "$veth" parent ffff: | grep -q "mirred (Egress Redirect to device" ||
        { echo "$veth: no mirred redirect: $(tc filter show dev "$veth" parent ffff: | tr '\n' ' ')"; return 1; }
    ifb=$(tc filter show dev "$veth" parent ffff: | sed -n 's/.*Redirect to device \([^)]*\)).*/\1/p' | head -n1)
    ip -o link show type ifb | grep -q ": $ifb:" || { echo "redirect target $ifb is not an IFB"; return 1; }
    qd=$(tc qdisc show dev "$ifb")
    grep -q "qdisc tbf .*rate $2" <<<"$qd" || { echo "$ifb: $qd"; return 1; }
}

# Every netfilter rule set of this namespace, whichever backend wrote it.
netfilter_dump() {
    local t
    for t in iptables-save ip6tables-save iptables-legacy-save ip6tables-legacy-save; do
        if command -v "$t" >/dev/null; then "$t" 2>/dev/null || true; fi
    done
    nft list ruleset 2>/dev/null || true
}

no_links() {
    local links
    links=$(ip -o link show type "$1")
    [ -z "$links" ] || { echo "$links" | awk -F': ' '{print $2}' | tr '\n' ' '; return 1; }
}

# no_leases DIR: host-local keeps one file per allocated address (besides its
# lock and last_reserved_ip.N, and cni-multi's owner index: .cni-multi-owners and the
# directory .cni-multi-owners.d), named by the address.
no_leases() {
    local left
    [ -d "$1" ] || return 0
    left=$(find "$1" -maxdepth 1 -type f ! -name lock ! -name 'last_reserved_ip.*' ! -name .cni-multi-owners -printf '%f ')
    [ -z "$left" ] || { echo "$1: $left"; return 1; }
}

# no_netns_mounts DIR [PREFIX]: no netns file (named PREFIX*) left in DIR, nor
# mounted there.
no_netns_mounts() {
    local files mounts
    files=$(find "$1" -mindepth 1 -maxdepth 1 -name "${2:-}*" -printf '%f ' 2>/dev/null || true)
    mounts=$(awk -v p="$1/${2:-}" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | tr '\n' ' ')
    [ -z "$files$mounts" ] || { echo "files: $files mounts: $mounts"; return 1; }
}

# no_netfilter_leftovers: no rule or chain names a removed pod: its container
# ID (rule comments), its addresses, or a per-attachment chain (bridge ipMasq
# CNI-<hash>, portmap CNI-DN-/CNI-SN-<hash>).
no_netfilter_leftovers() {
    local dump hits="" id ip esc
    dump=$(netfilter_dump)
    for id in "${LEAK_IDS[@]}"; do
        grep -q -- "$id" <<<"$dump" && hits+="id ${id:0:12}; "
    done
    for ip in "${LEAK_IPS[@]}"; do
        esc=${ip//./\\.}
        grep -Eiq -- "(^|[^0-9a-f:.])$esc([^0-9a-f:.]|\$)" <<<"$dump" && hits+="ip $ip; "
    done
    hits+=$(grep -Eo -- 'CNI-(DN-|SN-)?[0-9a-f]{16,}' <<<"$dump" | sort -u | tr '\n' ' ' || true)
    [ -z "$hits" ] || { echo "left: $hits"; echo "$dump" >"$CNIM_TMP/netfilter-leak.txt"; return 1; }
}

# state_visible LEASE_DIR NETNS_DIR [NETNS_PREFIX]: while the pods run, the
# places the leak checks look at do show them (a check that cannot see a pod
# could not see its leak either): a host-local lease per address, every netns
# under NETNS_DIR, every container ID in a rule (bridge ipMasq's comment).
state_visible() {
    local n ns id dump
    n=$(find "$1" -maxdepth 1 -type f ! -name lock ! -name 'last_reserved_ip.*' ! -name .cni-multi-owners 2>/dev/null | wc -l)
    [ "$n" = "${#LEAK_IPS[@]}" ] || { echo "$1 holds $n leases for ${#LEAK_IPS[@]} addresses"; return 1; }
    # shellcheck disable=SC2153 # NETNS: the lane's pod -> netns path map
    for ns in "${NETNS[@]}"; do
        [[ $ns == "$2/${3:-}"* ]] || { echo "netns $ns is not under $2"; return 1; }
    done
    dump=$(netfilter_dump)
    for id in "${LEAK_IDS[@]}"; do
        grep -q -- "$id" <<<"$dump" || { echo "no netfilter rule names $id"; return 1; }
    done
}

# leak_checks PREFIX LEASE_DIR NETNS_DIR [NETNS_PREFIX]: after every pod of the lane is gone.
leak_checks() {
    check "$1: no veth left" no_links veth
    check "$1: no IFB left" no_links ifb
    check "$1: no host-local lease left" no_leases "$2"
    check "$1: no netns mount left" no_netns_mounts "$3" "${4:-}"
    check "$1: no netfilter rule/chain of a removed pod" no_netfilter_leftovers
}
