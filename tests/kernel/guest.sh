#!/bin/bash
# Runs inside the stock-kernel VM (started by tests/kernel/run.sh): loads the
# modules the tests need from the Debian kernel's /lib/modules, then runs every
# group of tests listed in $SHARED/run-groups ("group binary": the tests named
# in $SHARED/groups/<group>, of that test binary) with CNI_MULTI_REQUIRE_KERNEL=1.
# Writes $SHARED/<group>.log and $SHARED/<group>.rc per group, $SHARED/modules.rc,
# and $SHARED/guest.done last; the host reads them after the VM is gone.
#   guest.sh SHARED_DIR REPO_DIR
set -u
shared=$1
repo=$2
threads=$(cat "$shared/test-threads")
per_binary_timeout=$(cat "$shared/binary-timeout")
cd "$repo" || exit 1

echo "guest: kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"

# Link kinds, protocols and netfilter/tc pieces the suite uses. The kernel
# autoloads most of them on first use too; loading them here makes a missing
# module an explicit failure instead of a confusing test error.
modules="dummy 8021q ipvlan vrf sctp bridge veth macvlan ifb tun vxlan
 nf_tables nft_compat nft_chain_nat nft_nat nft_masq nft_ct nf_conntrack nf_nat
 nf_conntrack_netlink iptable_nat iptable_filter iptable_mangle ip6table_nat
 ip6table_filter ip6table_mangle xt_nat xt_MASQUERADE xt_mark xt_comment
 xt_multiport xt_addrtype xt_conntrack xt_tcpudp xt_sctp
 sch_tbf sch_ingress cls_u32 act_mirred"
modules_rc=0
for m in $modules; do
    if ! out=$(modprobe "$m" 2>&1); then
        echo "guest: FAIL modprobe $m: $out"
        modules_rc=1
    fi
done
echo "$modules_rc" >"$shared/modules.rc"
[ "$modules_rc" = 0 ] && echo "guest: modules loaded"

# / is this machine's, over 9p without a page cache: every exec of a file
# there reads it again through the emulated device (seconds for the 37 MB
# debug plugin binary under TCG). Run the binaries from tmpfs instead: the
# plugin binary (the snapshot, mounted where the tests look for it), each test
# binary, and copies of the tools the tests exec most, with their libraries.
fast=/run/cni-multi-kernel
mkdir -p "$fast/tools"
cp "$shared/bin/cni-multi" "$fast/cni-multi"
mount --bind "$fast/cni-multi" "$(cat "$shared/cni-multi-path")" || exit 1
for tool in ip tc bridge nft iptables iptables-save iptables-restore ip6tables \
    ip6tables-save ip6tables-restore xtables-nft-multi nsenter ping sh sha512sum; do
    path=$(command -v "$tool") || continue
    readlink -f "$path"
    ldd "$path" 2>/dev/null | grep -o '/[^ ]*'
done | xargs -r readlink -f | sort -u | while read -r f; do
    copy="$fast/tools/$(echo "$f" | tr / _)"
    cp "$f" "$copy" && mount --bind "$copy" "$f"
done

# Some portmap tests check what the nf_tables flavour of iptables is run for,
# and skip elsewhere; here a skip fails. When this userland's alternatives
# pick legacy, links to xtables-nft-multi (same package) go first on PATH,
# which the tests and the plugins they run find their tools through.
if ! iptables --version 2>/dev/null | grep -q nf_tables; then
    nft_multi=$(command -v xtables-nft-multi) || nft_multi=""
    if [ -n "$nft_multi" ]; then
        mkdir -p "$fast/nft-flavour"
        for t in iptables iptables-save iptables-restore ip6tables ip6tables-save \
            ip6tables-restore; do
            ln -sf "$nft_multi" "$fast/nft-flavour/$t"
        done
        export PATH="$fast/nft-flavour:$PATH"
        echo "guest: iptables is legacy here; the nf_tables flavour goes first on PATH"
    else
        echo "guest: FAIL no xtables-nft-multi: the nf_tables iptables tests will fail"
    fi
fi

export CNI_MULTI_REQUIRE_KERNEL=1
export RUST_BACKTRACE=1

# The test binaries, copied to tmpfs once (every group of the test crate runs
# the same one).
while read -r _ bin; do
    [ -e "$fast/$bin" ] || cp "$shared/bin/$bin" "$fast/$bin"
done <"$shared/run-groups"

# One group: its tests by exact name; its output goes to the console in one
# piece when it ends (two run at a time).
run_group() {
    local name=$1 bin start rc tests=()
    start=$(date +%s)
    bin=$(awk -v g="$name" '$1 == g {print $2}' "$shared/run-groups")
    mapfile -t tests <"$shared/groups/$name"
    timeout -k 10 "$per_binary_timeout" "$fast/$bin" --test-threads="$threads" --nocapture \
        --exact "${tests[@]}" >"$shared/$name.log" 2>&1
    rc=$?
    echo "$rc" >"$shared/$name.rc"
    {
        flock 9
        echo "guest: ===== $name"
        cat "$shared/$name.log"
        echo "guest: ===== $name exit $rc in $(($(date +%s) - start))s"
    } 9>>"$fast/console.lock"
}

# Under TCG most tests are chains of process starts on one vCPU, so two
# groups run at once, longest first (under TCG, without the host-only stress
# loops: portmap, hostile_input, unit tests, cnitool, bridge ~1 min, most
# others well under). bandwidth measures throughput: it runs first and alone.
alone="bandwidth"
longest="dhcp portmap hostile_input unit-lib-cni_multi bridge cnitool chained ipmasq host_local multus"
names=$(cut -d' ' -f1 "$shared/run-groups")
ordered=""
for n in $longest; do
    echo "$names" | grep -qx "$n" && ordered="$ordered $n"
done
for n in $names; do
    case " $alone $ordered " in *" $n "*) ;; *) ordered="$ordered $n" ;; esac
done
for n in $alone; do
    echo "$names" | grep -qx "$n" && run_group "$n"
done
running=0
for n in $ordered; do
    if [ "$running" -ge 2 ]; then
        wait -n
        running=$((running - 1))
    fi
    run_group "$n" &
    running=$((running + 1))
done
wait
sync
echo finished >"$shared/guest.done"
sync
