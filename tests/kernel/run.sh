#!/bin/bash
# make test-kernel: the whole test suite inside a VM booted from Debian's stock
# kernel (package linux-image-amd64, with its modules), where ipvlan, 8021q,
# dummy, vrf, bridge VLAN filtering and SCTP exist. The VM runs this machine's
# own userland (virtme-ng shares / read-only over 9p), so the test binaries are
# built here and run there unchanged: every test of `cargo test` (the
# integration test crate tests/it, one group per top-level module such as
# `bridge` or `portmap`, and the crate's unit tests), two groups at a time;
# under TCG less the
# few host-only stress loops named below, and tests that need nothing of the
# stock kernel but crawl under emulation (the reference's Go plugins, firewalld). CNI_MULTI_REQUIRE_KERNEL=1 turns
# every skip into a failure: "kernel lacks X" and "tool X missing" alike (the
# tools come from tests/install-deps.sh, run below; guest.sh puts the nf_tables
# iptables first on PATH).
#
# As root. Installs what is missing (apt: linux-image-amd64, qemu-system-x86,
# kmod, busybox-static, python3-venv; PyPI: virtme-ng, pinned, in a venv).
# Uses KVM when it boots a kernel here, else TCG (software emulation).
#
#   KERNEL_VM_ACCEL=auto|kvm|tcg   (default auto: KVM if a probe boot works)
#   KERNEL_VM_MEMORY=2G  KERNEL_VM_CPUS=2
#   KERNEL_TEST_THREADS=2          libtest threads per group in the VM
#   KERNEL_VM_TIMEOUT=1800         seconds for the whole VM run (boot + tests)
#   KERNEL_BINARY_TIMEOUT=900      seconds for one group of tests in the VM
#   KERNEL_LANE_VENV=/var/tmp/cni-multi-vng-venv
#   KERNEL_LANE_KEEP=1             keep the log directory even on success
#   KERNEL_HOST_ONLY="module::test ..."  tests not run in the VM under TCG, by
#                                  their full path in the test crate (default
#                                  below; set it empty to run every test there)
#   KERNEL_TESTS="group[::filter] ..."  run only these groups (a module of
#                                  tests/it such as `virtual_links`, or a unit
#                                  test binary such as unit-lib-cni_multi), each
#                                  optionally with a libtest name filter on the
#                                  rest of the path, e.g.
#                                  KERNEL_TESTS=virtual_links::ipvlan
# Ends with "N passed, M failed" (libtest results of every group; a group
# that failed without a result line counts as one failure); exits 1 on any
# failure, a missing module, or a VM that did not finish.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

ACCEL=${KERNEL_VM_ACCEL:-auto}
MEMORY=${KERNEL_VM_MEMORY:-2G}
CPUS=${KERNEL_VM_CPUS:-2}
THREADS=${KERNEL_TEST_THREADS:-2}
VM_TIMEOUT=${KERNEL_VM_TIMEOUT:-1800}
BINARY_TIMEOUT=${KERNEL_BINARY_TIMEOUT:-900}
VENV=${KERNEL_LANE_VENV:-/var/tmp/cni-multi-vng-venv}
# Under TCG a process start costs ~0.2 s, so these stress loops (1000 ADDs,
# 100 ADD/DEL cycles, 2000 dhcp ADD/DEL cycles, 108 ADDs under strace each
# followed by four doctor runs: thousands of plugin and iptables runs, ~20 minutes
# together) would not fit the lane's budget. Each is about repetition, not
# about a kernel feature the CI machine lacks, and `make test` runs them on
# the host; so do the etcd client's tests (etcd servers, nothing of the
# kernel). Likewise the longest tests of the doctor, install and multus
# (30 pods of every plugin, builds swapped under load, a 128,000-entry
# annotation decoded by a debug build: minutes each under TCG, all of it
# process starts and CPU), and the per-pod cost tests beside 500 pods. Every other test of every binary runs in the VM.
# With KVM they run in the VM too.
DEFAULT_HOST_ONLY="host_local::a_thousand_adds_are_distinct_round_robin_and_in_reference_format
 ipmasq::del_with_the_netns_gone_still_removes_the_rules_and_cycles_leave_nothing
 portmap::iptables::hundred_add_del_cycles_and_gc_leave_only_the_shared_chains
 portmap::nftables::nftables_backend_runs_no_process_and_cycles_leave_nothing
 dhcp::the_daemon_stays_flat_over_many_add_del_cycles
 portmap::iptables::reference_portmap_adds_all_succeed_while_our_dels_loop
 firewall::reference_firewall_adds_all_succeed_while_our_dels_loop
 firewalld::firewalld_backend_makes_the_address_a_trusted_source_check_sees_it_del_removes_it
 firewalld::firewalld_zone_is_configurable_for_both_families_add_is_idempotent_and_ingress_policy_isolates
 firewalld::unset_backend_is_firewalld_when_it_owns_its_name_else_iptables
 firewalld::del_succeeds_and_says_so_when_firewalld_or_its_bus_is_gone
 firewalld::gc_removes_the_sources_of_unkept_attachments
 firewalld::the_watcher_repairs_after_each_firewalld_reload_and_fails_when_the_bus_goes
 doctor::firewalld_sources_of_dead_and_ownerless_attachments_are_removed
 doctor_hazards::spoofed_reload_signals_from_another_user_cause_no_pass
 doctor::libcni_1_1_attachments_are_judged_fixed_and_repaired
 doctor_leaks::adds_killed_at_every_mutating_syscall_are_found_and_fixed
 install::install_killed_at_any_rename_rolls_back_or_reinstalls
 install::install_killed_at_any_backup_link_rolls_back_or_reinstalls
 foreign_writers::cp_over_a_plugin_name_costs_that_name_only
 foreign_writers::cp_force_over_a_plugin_name_costs_that_name_only
 foreign_writers::install_1_over_a_plugin_name_costs_that_name_only
 foreign_writers::an_o_trunc_write_through_a_plugin_name_costs_that_name_only
 config_errors::the_reference_says_what_the_table_says_it_does
 install::a_run_prints_one_summary_line_and_a_dry_run_says_would
 install::a_dry_run_works_for_a_user_who_cannot_write
 foreign_writers::shutil_copyfile_over_a_plugin_name_costs_that_name_only
 foreign_writers::tar_x_over_a_plugin_name_costs_that_name_only
 foreign_writers::dd_conv_notrunc_over_a_plugin_name_costs_that_name_only
 foreign_writers::a_binary_clobbered_through_a_link_is_reported_and_repaired
 foreign_writers::a_name_left_to_another_installer_is_neither_taken_nor_reported
 etcd_client::keys_put_range_prefix_create_if_absent_conditional_put_and_delete
 etcd_client::a_lease_is_granted_kept_alive_and_its_revocation_deletes_its_key
 etcd_client::a_watch_sees_puts_and_deletes_in_order_from_its_start_revision_and_progress
 etcd_client::a_watch_from_below_the_compaction_horizon_says_compacted
 etcd_client::auth_refuses_a_wrong_password_and_authenticates_again_when_the_token_expires
 etcd_client::tls_with_a_client_certificate_works_and_without_one_or_with_another_ca_fails
 etcd_client::calls_and_watches_fail_over_from_a_dead_endpoint_and_say_when_none_is_left
 doctor::every_kind_of_dead_and_ownerless_state_is_found_and_fixed_and_live_state_kept
 doctor_leaks::leaks_of_the_reference_plugins_are_found_and_fixed_on_a_mixed_node
 doctor_leaks::leaks_of_our_plugins_are_found_and_fixed
 install::an_older_build_is_upgraded_and_rolled_back_under_load
 install::the_reference_is_replaced_with_force_and_rolled_back_under_load
 multus::del_from_a_128000_selection_annotation_runs_at_most_the_cap
 o1_per_pod::host_local_add_and_del_touch_the_same_files_at_10_and_500_pods
 o1_per_pod::portmap_nftables_add_and_del_read_the_same_at_10_and_500_pods
 o1_per_pod::bridge_ipmasq_and_macspoofchk_add_and_del_read_the_same_at_10_and_500_pods
 o1_per_pod::firewall_nftables_add_and_del_read_the_same_at_10_and_500_pods
 xtnft::scale::an_add_and_a_del_read_as_much_beside_500_attachments_as_beside_10"
# virtme-ng and its dependencies, pinned (1.42 ships its guest init prebuilt).
VNG_PINS="virtme-ng==1.42 argcomplete==3.7.2 requests==2.34.2 certifi==2026.10.18
 charset-normalizer==3.5.2 idna==3.20 urllib3==2.8.0"

log() { echo "kernel-lane: $*"; }
die() {
    echo "kernel-lane: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}
[ "$(id -u)" = 0 ] || die "needs root (installs packages, runs the suite as root in the VM)"
lane_start=$(date +%s)

# --- packages ----------------------------------------------------------------
missing=""
for pkg in linux-image-amd64 qemu-system-x86 kmod busybox-static python3-venv; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    log "installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
./tests/install-deps.sh

# The stock kernel the package depends on (linux-image-<version>), not the
# running one.
image_pkg=$(dpkg-query -W -f='${Depends}' linux-image-amd64 |
    tr ',' '\n' | sed -n 's/^ *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1)
kver=${image_pkg#linux-image-}
vmlinuz=/boot/vmlinuz-$kver
if [ -z "$kver" ] || [ ! -r "$vmlinuz" ] || [ ! -d "/lib/modules/$kver" ]; then
    die "no stock kernel found (package '$image_pkg', $vmlinuz, /lib/modules/$kver)"
fi
log "stock kernel $kver ($vmlinuz); running kernel $(uname -r)"

if ! "$VENV/bin/vng" --version 2>/dev/null | grep -q ' 1\.42$'; then
    log "installing virtme-ng into $VENV"
    rm -rf "$VENV"
    /usr/bin/python3 -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install -q --disable-pip-version-check $VNG_PINS
fi
export PATH="$VENV/bin:$PATH"
log "$(vng --version)"

# --- test binaries, built here ----------------------------------------------
work=$(mktemp -d /var/tmp/cni-multi-kernel.XXXXXX)
keep=${KERNEL_LANE_KEEP:-}
cleanup() {
    if [ -z "$keep" ]; then rm -rf "$work"; else log "logs kept in $work"; fi
}
trap cleanup EXIT

log "building the test binaries (cargo test --no-run)"
cargo test --no-run --locked --message-format=json >"$work/build.json" ||
    die "cargo test --no-run failed"
# One "name path" line per test binary: the integration test crate as `it`,
# the crate's own unit tests as unit-<kind>-<name>.
/usr/bin/python3 - "$work/build.json" "$work/binaries" "$work/cni-multi-path" <<'PY'
import json, sys
seen, plugin = {}, None
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    t = m["target"]
    kind = t["kind"][0]
    if not m["profile"]["test"]:
        if kind == "bin" and t["name"] == "cni-multi":
            plugin = m["executable"]
        continue
    name = t["name"] if kind == "test" else "unit-%s-%s" % (kind, t["name"])
    seen[name] = m["executable"]
with open(sys.argv[2], "w") as out:
    for name in sorted(seen):
        print(name, seen[name], file=out)
if plugin:
    open(sys.argv[3], "w").write(plugin + "\n")
PY
[ -s "$work/cni-multi-path" ] || die "the build made no cni-multi binary"
for b in it unit-lib-cni_multi; do
    grep -q "^$b " "$work/binaries" || die "no test binary '$b' built"
done
# Every test by its full name: "group name" lines, the group being a top-level
# module of tests/it (its tests/it/<group>.rs or tests/it/<group>/) or, for
# the unit test binaries, the binary.
: >"$work/all-tests"
while read -r bin path; do
    "$path" --list --format terse 2>/dev/null | sed -n 's/: test$//p' | while read -r t; do
        if [ "$bin" = it ]; then echo "${t%%::*} $t"; else echo "$bin $t"; fi
    done >>"$work/all-tests"
done <"$work/binaries"
for f in tests/it/*.rs tests/it/*/mod.rs; do
    m=$(basename "${f%/mod.rs}" .rs)
    case "$m" in main | harness) continue ;; esac
    grep -q "^$m " "$work/all-tests" || die "no tests listed for tests/it module '$m'"
done
# KERNEL_TESTS narrows the run to some groups, each with an optional filter
# on the rest of the test's path (a substring, as libtest filters).
if [ -n "${KERNEL_TESTS:-}" ]; then
    : >"$work/selected-tests"
    for entry in $KERNEL_TESTS; do
        group=${entry%%::*}
        filter=""
        [ "$entry" = "$group" ] || filter=${entry#*::}
        grep -q "^$group " "$work/all-tests" || die "KERNEL_TESTS: no test group '$group'"
        awk -v g="$group" -v f="$filter" \
            '$1 == g && (f == "" || index(substr($2, length(g) + 3), f) > 0)' "$work/all-tests" \
            >>"$work/selected-tests"
        grep -q "^$group " "$work/selected-tests" || die "KERNEL_TESTS: no test in '$group' matches '$filter'"
    done
    sort -u "$work/selected-tests" >"$work/tests"
else
    cp "$work/all-tests" "$work/tests"
fi
log "$(wc -l <"$work/tests") tests in $(cut -d' ' -f1 "$work/tests" | sort -u | wc -l) groups"
# A snapshot of what was just built: the VM runs these copies (the tests find
# the plugin binary at its build path, where the guest mounts the copy), so a
# build in this checkout while the VM runs cannot change them under it.
mkdir "$work/bin"
while read -r name path; do cp "$path" "$work/bin/$name"; done <"$work/binaries"
cp "$(cat "$work/cni-multi-path")" "$work/bin/cni-multi"
echo "$THREADS" >"$work/test-threads"
echo "$BINARY_TIMEOUT" >"$work/binary-timeout"

# --- accelerator ---------------------------------------------------------------
# /dev/kvm can exist and still not run a guest (nested virtualization that
# hangs or refuses MSRs): boot the kernel once with KVM, with no root, and see
# it get as far as panicking for want of one.
kvm_boots() {
    [ -w /dev/kvm ] || return 1
    timeout -k 5 40 qemu-system-x86_64 -accel kvm -cpu host,topoext=on -m 256 -nic none \
        -display none -no-reboot -serial "file:$work/kvm-probe.log" -monitor none \
        -kernel "$vmlinuz" -append "console=ttyS0 panic=-1" </dev/null \
        >"$work/kvm-probe.out" 2>&1 || true
    grep -q "Kernel panic" "$work/kvm-probe.log" 2>/dev/null
}
case "$ACCEL" in
kvm) vng_accel=() ;;
tcg) vng_accel=(--disable-kvm) ;;
auto)
    if kvm_boots; then
        ACCEL=kvm
        vng_accel=()
    else
        ACCEL=tcg
        vng_accel=(--disable-kvm)
    fi
    ;;
*) die "KERNEL_VM_ACCEL must be auto, kvm or tcg, not '$ACCEL'" ;;
esac
log "accelerator: $ACCEL"
if [ "$ACCEL" = tcg ]; then
    host_only=${KERNEL_HOST_ONLY-$DEFAULT_HOST_ONLY}
else
    host_only=${KERNEL_HOST_ONLY-}
fi
for entry in $host_only; do
    grep -q " $entry\$" "$work/all-tests" || die "KERNEL_HOST_ONLY: no test '$entry'"
    grep -q " $entry\$" "$work/tests" || continue
    grep -v " $entry\$" "$work/tests" >"$work/tests.next" || true
    mv "$work/tests.next" "$work/tests"
    log "host-only under $ACCEL (not run in the VM; make test runs it): $entry"
done
# What the guest runs: "group binary" per group left, and each group's exact
# test names in groups/<group>.
mkdir "$work/groups"
: >"$work/run-groups"
while read -r group test; do
    echo "$test" >>"$work/groups/$group"
done <"$work/tests"
for f in "$work"/groups/*; do
    group=$(basename "$f")
    case "$group" in unit-*) bin=$group ;; *) bin=it ;; esac
    echo "$group $bin" >>"$work/run-groups"
done
[ -s "$work/run-groups" ] || die "no test left to run in the VM"
log "$(wc -l <"$work/run-groups") groups: $(cut -d' ' -f1 "$work/run-groups" | tr '\n' ' ')"

# --- the VM --------------------------------------------------------------------
# / is shared read-only; the repository gets a throwaway overlay (tests may
# write there, nothing reaches this machine); $work is shared read-write for
# the results. The guest has its own network stack: nothing touches this
# machine's namespaces.
log "booting $kver: $CPUS CPUs, $MEMORY, timeout ${VM_TIMEOUT}s"
vm_start=$(date +%s)
set +e
timeout -k 30 "$VM_TIMEOUT" vng --run "$vmlinuz" "${vng_accel[@]}" \
    --user root --cpus "$CPUS" --memory "$MEMORY" --append "mitigations=off init_on_alloc=0" \
    --overlay-rwdir "$repo" --rwdir "$work" --cwd "$repo" \
    --exec "bash $here/guest.sh $work $repo" </dev/null 2>&1 | tee "$work/console.log"
vm_rc=${PIPESTATUS[0]}
set -e
log "VM exited with $vm_rc after $(( $(date +%s) - vm_start ))s"

# --- results -------------------------------------------------------------------
passed=0
failed=0
problems=()
if [ ! -f "$work/guest.done" ]; then
    problems+=("the guest did not finish (VM exit $vm_rc; timeout ${VM_TIMEOUT}s?)")
fi
if [ "$(cat "$work/modules.rc" 2>/dev/null)" != 0 ]; then
    problems+=("modules missing or not loaded in the guest (see 'guest: FAIL modprobe')")
fi
while read -r name _; do
    rc=$(cat "$work/$name.rc" 2>/dev/null || echo missing)
    p=0
    f=0
    if [ -f "$work/$name.log" ]; then
        read -r p f < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed;.*/\1 \2/p' \
            "$work/$name.log" | awk '{p += $1; f += $2} END {print p + 0, f + 0}')
    fi
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        f=1
        problems+=("$name exited with $rc without a failed test (crash or timeout?)")
    elif [ "$rc" != 0 ]; then
        problems+=("$name: $f failed")
    fi
    passed=$((passed + p))
    failed=$((failed + f))
done <"$work/run-groups"
log "lane wall time $(( $(date +%s) - lane_start ))s (accelerator $ACCEL)"
if [ "${#problems[@]}" -gt 0 ]; then
    keep=1
    for p in "${problems[@]}"; do log "FAIL $p"; done
    [ "$failed" -gt 0 ] || failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
