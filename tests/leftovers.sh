#!/bin/bash
# Runs a test command (`make unit`: cargo test) and then fails if anything of
# that run is left behind. The harness leaves the pid of each test process in
# the directory CNI_MULTI_TEST_RUN names, and its temporary directories are
# /tmp/cni-multi-test-<tag>-<pid>-<n>, so what other runs on the machine
# leave does not count. Left behind means: such a directory, a mount point in
# one (a pinned network namespace, the directory `netns add` made a mount
# point), or a process of the run still alive (the plugin binary or a test
# binary of this checkout, or anything started with the run's environment),
# which keeps its network namespaces alive. What is found is listed, then
# removed, and the exit status is 1; otherwise the command's own status.
#   tests/leftovers.sh COMMAND [ARG...]
set -uo pipefail
cd "$(dirname "$0")/.."
run=$(mktemp -d /tmp/cni-multi-run.XXXXXX)
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")

CNI_MULTI_TEST_RUN=$run "$@"
rc=$?

left=()
# Processes first: one still running could still be writing files.
for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ "$pid" = $$ ] && continue
    exe=$(readlink "$proc/exe" 2>/dev/null) || continue
    ours=""
    case "$exe" in "$target"/debug/cni-multi | "$target"/debug/deps/*) ours=1 ;; esac
    if [ -z "$ours" ] && tr '\0' '\n' <"$proc/environ" 2>/dev/null | grep -qx "CNI_MULTI_TEST_RUN=$run"; then
        ours=1
    fi
    [ -n "$ours" ] || continue
    netns=$(readlink "$proc/ns/net" 2>/dev/null)
    left+=("process $pid ($netns): $(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null)")
    kill -KILL "$pid" 2>/dev/null
done
for mark in "$run"/*; do
    [ -e "$mark" ] || continue
    pid=$(basename "$mark")
    mounts=$(awk -v p="-$pid-" '$5 ~ "^/tmp/cni-multi-test-" && index($5, p) > 0 {print $5}' \
        /proc/self/mountinfo | sort -r)
    for m in $mounts; do
        left+=("mount $m ($(awk -v m="$m" '$5 == m {print $9; exit}' /proc/self/mountinfo))")
        umount -l "$m" 2>/dev/null
    done
    for d in /tmp/cni-multi-test-*-"$pid"-*; do
        [ -e "$d" ] || continue
        left+=("directory $d")
        rm -rf "$d"
    done
done
rm -rf "$run"

if [ "${#left[@]}" -gt 0 ]; then
    echo "leftovers: the test run left ${#left[@]} things behind (now removed):" >&2
    printf '  %s\n' "${left[@]}" >&2
    exit 1
fi
echo "leftovers: nothing left behind (no directory, mount or process of the run)"
exit "$rc"
