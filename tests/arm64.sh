#!/usr/bin/env bash
# make test-arm64: the arm64 build, checked on this machine under qemu-user.
#   - `make ARCH=arm64` gives target/arm64/cni-multi, a static aarch64 ELF (no
#     interpreter, no shared libraries) with the plugins' code linked in front.
#   - `make test-deb ARCH=arm64`: the package says Architecture: arm64 and
#     passes tests/deb-check.sh, which runs every plugin stub of it under
#     qemu-aarch64-static as the kernel runs a stub (`cni-multi --stub STUB`).
#   - Under qemu-aarch64-static, in a private network + mount namespace, from
#     the package's files: loopback ADD through its stub brings `lo` up in a
#     throwaway netns (`ip netns add`) and DEL takes it down; `cnitool --help`.
#   - Where a user namespace can have its own binfmt_misc (Linux 6.7+), aarch64
#     binaries execute there as on an arm64 node (registered in that namespace
#     only): `cni-multi install` (which runs every stub it writes), every
#     plugin name exec'd for VERSION as a runtime execs it (#! line, then
#     qemu), then cnitool's netns add, ADD, CHECK and DEL of a loopback
#     network, cnitool exec'ing the plugin. Elsewhere this part is skipped
#     with a note.
# Installs qemu-user-static, clang and Rust's aarch64-unknown-linux-musl
# target when missing. Ends with the wall time and the binary's size.
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.."
BIN=target/arm64/cni-multi
DEB=target/arm64/cni-multi.deb
WANT='"supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]'
CONF='{"cniVersion":"1.1.0","name":"arm64-lo","type":"loopback"}'
# The qemu that runs aarch64 code here; none on an arm64 machine.
Q=qemu-aarch64-static
[ "$(uname -m)" != aarch64 ] || Q=""
fail() { echo "arm64: FAIL: $*" >&2; exit 1; }
say() { echo "arm64: $*"; }

# lo_state NETNS: UP or DOWN, from the kernel (ip), not from the plugin.
lo_state() {
    case "$(ip -n "$1" -o link show lo)" in
        *"<LOOPBACK,UP,"*) echo UP ;;
        *) echo DOWN ;;
    esac
}

# --- inside: a private network + mount namespace, /run a tmpfs there ---------
# $2: the package's files (dpkg-deb -x); its stubs run /usr/lib/cni/cni-multi.
if [ "${1:-}" = --qemu ]; then
    lib=$2/usr/lib/cni
    mount -t tmpfs -o mode=755 arm64-run /run
    ip netns add arm64-lane
    [ "$(lo_state arm64-lane)" = DOWN ] || fail "lo of a new netns is already up"
    # As the kernel runs the stub: its #! line's binary, --stub, the stub's path.
    call() {
        CNI_COMMAND=$1 CNI_CONTAINERID=arm64-lane CNI_NETNS=/run/netns/arm64-lane CNI_IFNAME=lo \
            CNI_PATH="$lib" $Q "$lib/cni-multi" --stub "$lib/loopback" <<<"$CONF"
    }
    out=$(call ADD) || fail "loopback ADD exited $?: $out"
    case "$out" in *'"127.0.0.1/8"'*) ;; *) fail "loopback ADD result: $out" ;; esac
    [ "$(lo_state arm64-lane)" = UP ] || fail "lo is not up after loopback ADD"
    out=$(call DEL) || fail "loopback DEL exited $?: $out"
    [ "$(lo_state arm64-lane)" = DOWN ] || fail "lo is still up after loopback DEL"
    ip netns delete arm64-lane
    say "ok: loopback ADD through the package's stub brings lo up in a throwaway netns, DEL takes it down"

    out=$($Q "$lib/cni-multi" cnitool --help) || fail "cnitool --help exited $?"
    case "$out" in *"Usage: cnitool"*) ;; *) fail "cnitool --help: $out" ;; esac
    say "ok: cnitool --help"
    exit 0
fi

# --- inside: a user namespace whose binfmt_misc runs aarch64 ELF with qemu ----
# $2: a directory to work in, holding the binary (cni-multi).
if [ "${1:-}" = --binfmt ]; then
    d=$2
    if [ -n "$Q" ]; then
        mount -t binfmt_misc arm64-binfmt /proc/sys/fs/binfmt_misc 2>/dev/null || {
            say "SKIP install and exec as on an arm64 node: no binfmt_misc of a user namespace's own (Linux 6.7+)"
            exit 0
        }
        # qemu's aarch64 entry (qemu-binfmt-conf.sh); F opens the interpreter now.
        printf '%s' ":arm64-lane:M::\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:$(command -v "$Q"):F" \
            >/proc/sys/fs/binfmt_misc/register
    fi
    mount -t tmpfs -o mode=755 arm64-run /run
    out=$("$d/cni-multi" install --verbose --dir "$d/inst" 2>&1) || fail "cni-multi install exited $?: $out"
    say "ok: cni-multi install ran every stub it wrote ($(grep -c ': installed$' <<<"$out") files)"
    count=0
    for name in $("$d/inst/cni-multi" --list); do
        out=$(CNI_COMMAND=VERSION "$d/inst/$name" </dev/null) || fail "$name VERSION exited $?: $out"
        case "$out" in *"$WANT"*) count=$((count + 1)) ;; *) fail "$name VERSION gave: $out" ;; esac
    done
    [ "$count" -ge 20 ] || fail "only $count plugin names"
    say "ok: $count plugin names answer VERSION exec'd as a runtime execs them"

    mkdir "$d/net.d" "$d/cache"
    echo "$CONF" >"$d/net.d/10-arm64-lo.conf"
    # The copy install ran from, not the installed binary: cnitool execs the
    # plugin (its own binary it would run in-process), as a runtime does.
    ct() { "$d/cni-multi" cnitool --conf-dir "$d/net.d" --cni-path "$d/inst" --cache-dir "$d/cache" -i lo "$@"; }
    out=$(ct netns add arm64-lane 2>&1) || fail "cnitool netns add exited $?: $out"
    [ "$(lo_state arm64-lane)" = DOWN ] || fail "lo of a new netns is already up"
    out=$(ct add arm64-lo arm64-lane 2>&1) || fail "cnitool add exited $?: $out"
    case "$out" in *'"127.0.0.1/8"'*) ;; *) fail "cnitool add result: $out" ;; esac
    [ "$(lo_state arm64-lane)" = UP ] || fail "lo is not up after cnitool add"
    out=$(ct check arm64-lo arm64-lane 2>&1) || fail "cnitool check exited $?: $out"
    out=$(ct del arm64-lo arm64-lane 2>&1) || fail "cnitool del exited $?: $out"
    [ "$(lo_state arm64-lane)" = DOWN ] || fail "lo is still up after cnitool del"
    out=$(ct netns del arm64-lane 2>&1) || fail "cnitool netns del exited $?: $out"
    say "ok: cnitool netns add, add, check, del of a loopback network (cnitool exec'ing the plugin)"
    exit 0
fi

# --- outside -------------------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "arm64: needs root (namespaces, packages)" >&2; exit 1; }
start=$(date +%s)
missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing+=" $2"; }
[ -z "$Q" ] || need "$Q" qemu-user-static
need file file
need readelf binutils
need ip iproute2
need unshare util-linux
# ring (rustls) compiles its C and assembly for aarch64 with clang.
need clang clang
if [ -n "$missing" ]; then
    say "installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086 # a list of package names
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-musl; then
    say "installing Rust's aarch64-unknown-linux-musl target"
    rustup target add aarch64-unknown-linux-musl
fi

make ARCH=arm64
desc=$(file -b "$BIN")
case "$desc" in
    "ELF 64-bit LSB "*", ARM aarch64, "*) ;;
    *) fail "$BIN is not an aarch64 ELF: $desc" ;;
esac
case "$desc" in
    *"statically linked"* | *"static-pie linked"*) ;;
    *) fail "$BIN is not static: $desc" ;;
esac
! readelf -lW "$BIN" | grep -q INTERP || fail "$BIN names a program interpreter"
! readelf -dW "$BIN" | grep -q NEEDED || fail "$BIN needs shared libraries"
hot=$(readelf -SW "$BIN" | sed -n 's/.*\] \.text\.hot *PROGBITS *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\) .*/\1/p')
[ $((0x${hot:-0})) -ge 65536 ] || fail "$BIN has no .text.hot section of plugin code (bench/hot-text.ld not linked)"
rohot=$(readelf -SW "$BIN" | sed -n 's/.*\] \.rodata\.hot *PROGBITS *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\) .*/\1/p')
[ $((0x${rohot:-0})) -ge 16384 ] || fail "$BIN has no .rodata.hot section of plugin data (bench/hot-text.ld not linked)"
size=$(stat -c %s "$BIN")
say "ok: $BIN: static aarch64 ELF, $size bytes ($((0x$hot)) of them hot plugin code)"

make test-deb ARCH=arm64
arch=$(dpkg-deb -f "$DEB" Architecture)
[ "$arch" = arm64 ] || fail "$DEB: Architecture: $arch"
say "ok: $DEB: Architecture: arm64"

d=$(mktemp -d /tmp/cni-multi-arm64.XXXXXX)
trap 'rm -rf --one-file-system "$d"' EXIT
dpkg-deb -x "$DEB" "$d/pkg"
unshare --net --mount --pid --fork --mount-proc "$self" --qemu "$d/pkg"
mkdir "$d/work"
cp "$BIN" "$d/work/cni-multi"
if unshare --user --map-root-user true 2>/dev/null; then
    unshare --user --map-root-user --net --mount --pid --fork --mount-proc "$self" --binfmt "$d/work"
else
    say "SKIP install and exec as on an arm64 node: no user namespace here"
fi
say "passed in $(($(date +%s) - start)) s; $BIN $size bytes"
