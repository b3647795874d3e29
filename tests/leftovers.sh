#!/bin/bash
# Runs a test command (`make unit`: cargo test) and then fails if anything of
# that run is left behind: the run's temporary files go to a directory of its
# own (TMPDIR, which the harness's TempDir honours), so other runs on the
# machine do not count. Left behind means: a file or directory there, a mount
# point there (a pinned network namespace, a bind mount), or a process of the
# run still alive (the plugin binary or the test binary of this checkout, or
# anything started with the run's TMPDIR), which would keep its network
# namespaces alive. What is found is listed, then removed, and the exit
# status is 1; otherwise the command's own status.
#   tests/leftovers.sh COMMAND [ARG...]
set -uo pipefail
cd "$(dirname "$0")/.."
run=$(mktemp -d /tmp/cni-multi-run.XXXXXX)
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")

TMPDIR=$run "$@"
rc=$?

left=()
# Processes first: one still running could still be writing files.
for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ "$pid" = $$ ] && continue
    exe=$(readlink "$proc/exe" 2>/dev/null) || continue
    ours=""
    case "$exe" in "$target"/debug/cni-multi | "$target"/debug/deps/it-*) ours=1 ;; esac
    if [ -z "$ours" ] && tr '\0' '\n' <"$proc/environ" 2>/dev/null | grep -qx "TMPDIR=$run"; then
        ours=1
    fi
    [ -n "$ours" ] || continue
    netns=$(readlink "$proc/ns/net" 2>/dev/null)
    left+=("process $pid ($netns): $(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null)")
    kill -KILL "$pid" 2>/dev/null
done
mounts=$(awk -v d="$run" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
for m in $mounts; do
    left+=("mount $m ($(awk -v m="$m" '$5 == m {print $9; exit}' /proc/self/mountinfo))")
    umount -l "$m" 2>/dev/null
done
while read -r f; do
    [ -n "$f" ] && left+=("file $f")
done < <(find "$run" -mindepth 1 -maxdepth 1 2>/dev/null | sort)
rm -rf "$run"

if [ "${#left[@]}" -gt 0 ]; then
    echo "leftovers: the test run left ${#left[@]} things behind (now removed):" >&2
    printf '  %s\n' "${left[@]}" >&2
    exit 1
fi
echo "leftovers: nothing left behind (no file, mount or process of the run)"
exit "$rc"
