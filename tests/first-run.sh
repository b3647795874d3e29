#!/bin/bash
# make first-run: the README's "A first run" block, verbatim (read from README.md
# here, so the two cannot drift), as a new user types it: as root, from the
# repository, in a login shell's environment, on a machine with no CNI installed.
# It runs in a throwaway mount namespace and a fresh network namespace: /run and
# every directory the block or `make install` writes (/opt/cni, /etc/cni,
# /var/lib/cni, /usr/local/bin, /etc/bash_completion.d, the systemd unit
# directory) start as empty tmpfs, and all of it, the pinned netns too, goes with the namespaces.
# Only target/ in the repository is written, as `make` writes it (a no-op
# cargo run when the build is current). Every line must succeed, and the add
# must print eth0 in /run/netns/demo with an address in 10.22.0.0/16. Then
# docs/troubleshooting.md's blocks run on the same node (tests/troubleshooting.sh).
set -euo pipefail
fail() { echo "first-run: $*" >&2; exit 1; }
cd "$(dirname "$0")/.."
repo=$PWD

if [ "${1:-}" != --inside ]; then
    [ "$(id -u)" = 0 ] || fail "must run as root (the README's first run is run as root)"
    exec unshare --mount --propagation private --net -- "$repo/tests/first-run.sh" --inside
fi

# Each starts as an empty tmpfs here (/run first, see below).
dirs="/opt/cni /etc/cni /var/lib/cni /usr/local/bin /etc/bash_completion.d /usr/lib/systemd/system"
for d in /run $dirs; do
    case "$repo/" in "$d"/*) fail "the repository is under $d, which this test covers with a tmpfs; run it from a clone elsewhere" ;; esac
done
block=$(awk '/^## A first run/ { s = 1 } s && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' README.md)
[ -n "$block" ] || fail "no \`\`\`sh block under '## A first run' in README.md"

# A fresh /run: the netns pins (`cnitool netns add` makes /run/netns a shared
# mount, here only in this namespace), the plugins' locks and state, and the
# scratch space below.
mount -t tmpfs -o mode=0755 tmpfs /run
scratch=/run/first-run
mkdir "$scratch"

# A directory this machine lacks gets its mount point without a write to the
# host: its nearest existing ancestor is overlaid with a tmpfs upper layer. A
# repository under it (a clone in /var/lib or /opt) is bound back over the
# overlay, so `make` writes the real target/.
mkdir "$scratch/repo"
mount --rbind "$repo" "$scratch/repo"
overlaid=" "
for d in $dirs; do
    [ -d "$d" ] && continue
    p=$d
    while [ ! -e "$p" ]; do p=$(dirname "$p"); done
    [ -d "$p" ] && [ "$p" != / ] || fail "cannot make a mount point for $d (nearest existing: $p)"
    case "$overlaid" in *" $p "*) ;; *)
        n=$scratch/overlay/$(echo "$overlaid" | wc -w)
        mkdir -p "$n/upper" "$n/work"
        mount -t overlay overlay -o "lowerdir=$p,upperdir=$n/upper,workdir=$n/work" "$p"
        overlaid="$overlaid$p "
        ;;
    esac
    mkdir -p "$d"
done
for p in $overlaid; do
    case "$repo/" in "$p"/*) mount --rbind "$scratch/repo" "$repo"; break ;; esac
done
for d in $dirs; do mount -t tmpfs -o mode=0755 tmpfs "$d"; done
cd "$repo"

# The block under `set -e`, traced to a file of its own (the trace says which
# line failed; the block's output stays what the user sees).
log=$scratch/log
trace=$scratch/trace
status=0
env -i HOME=/root TERM=dumb bash -l -c "exec 9>$trace; BASH_XTRACEFD=9; set -ex
$block" >"$log" 2>&1 </dev/null || status=$?
if [ "$status" != 0 ]; then
    sed 's/^/first-run: | /' "$log" >&2
    fail "the README's first run failed (exit $status) at: $(grep '^+' "$trace" | tail -1)"
fi

# The add's result: the JSON object cnitool prints, from a line "{" to a line "}".
result=$(awk '/^\{$/ { j = 1 } j { print } /^\}$/ { j = 0 }' "$log")
echo "$result" | grep -A3 '"name": "eth0"' | grep -q '"sandbox": "/run/netns/demo"' ||
    { sed 's/^/first-run: | /' "$log" >&2; fail "the add printed no eth0 in /run/netns/demo"; }
address=$(echo "$result" | sed -n 's|^ *"address": "\(10\.22\.0\.[0-9]*/16\)",*$|\1|p' | head -1)
[ -n "$address" ] || { sed 's/^/first-run: | /' "$log" >&2; fail "the add printed no address in 10.22.0.0/16"; }
# cni-multi was found on PATH through the link `make install` made.
link=$(readlink /usr/local/bin/cni-multi) || fail "/usr/local/bin/cni-multi is not a link"
[ "$link" = /opt/cni/bin/cni-multi ] || fail "/usr/local/bin/cni-multi points to $link, not /opt/cni/bin/cni-multi"
echo "first-run: the README's $(echo "$block" | wc -l) lines ran in a login shell on empty /opt/cni, /etc/cni, /var/lib/cni, /usr/local/bin; the add gave eth0 $address"

# docs/troubleshooting.md's commands, on this node (tests/troubleshooting.sh).
"$repo/tests/troubleshooting.sh" --inside-first-run
