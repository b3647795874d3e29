#!/bin/sh
# make test-deb: the .deb (make deb) installs into a throwaway root with dpkg
# (--root, maintainer scripts run chrootless with DPKG_ROOT set, so they touch
# nothing of this machine), holds exactly the expected files, every plugin
# stub is the one `cni-multi install` writes and answers VERSION, lintian
# reports no error, and a purge leaves nothing.
# BINARY (default target/cni-multi) is the build the package was made from; its
# architecture must be the package's, and when that is not this machine's the
# binary runs under qemu-user (make test-deb ARCH=arm64).
set -eu
deb=${1:?usage: deb-check.sh PACKAGE.deb [BINARY]}
bin=${2:-target/cni-multi}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "deb-check: $*" >&2; exit 1; }

arch=$(dpkg-deb -f "$deb" Architecture)
case "$arch" in
    amd64) machine="x86-64" qemu=qemu-x86_64-static ;;
    arm64) machine="ARM aarch64" qemu=qemu-aarch64-static ;;
    *) fail "Architecture: $arch (amd64 or arm64 expected)" ;;
esac
file -L "$bin" | grep -q "ELF 64-bit LSB .*, $machine," || fail "Architecture: $arch, but $bin is $(file -bL "$bin")"
run=""
[ "$arch" = "$(dpkg --print-architecture)" ] || run=$qemu
[ -z "$run" ] || command -v "$run" >/dev/null 2>&1 || fail "the $arch plugins run here under $run: apt-get install qemu-user-static"

# The expected file list, from the binary's plugin list and contrib/systemd.
conffile=/etc/default/cni-multi-doctor
{
    echo /usr/bin/cni-multi
    echo /usr/lib/cni/cni-multi
    echo /opt/cni/bin/cni-multi
    for name in $($run "$bin" --list); do echo "/usr/lib/cni/$name"; echo "/opt/cni/bin/$name"; done
    for unit in contrib/systemd/*.service contrib/systemd/*.socket contrib/systemd/*.timer; do
        [ -f "$unit" ] && echo "/lib/systemd/system/$(basename "$unit")"
    done
    echo "$conffile"
    for page in man1/cni-multi.1 man1/cni-multi-cnitool.1 man1/cni-multi-install.1 \
        man8/flanneld.8 man8/cni-multi-dhcp-daemon.8; do
        echo "/usr/share/man/$page.gz"
    done
    echo /usr/share/doc/cni-multi/copyright
    echo /usr/share/doc/cni-multi/changelog.Debian.gz
    echo /usr/share/lintian/overrides/cni-multi
} | sort >"$d/want"

root=$d/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/log"
: >"$root/var/lib/dpkg/status"
dpkgr() { dpkg --root="$root" --force-not-root --force-script-chrootless --log=/dev/null "$@"; }
# The throwaway root's dpkg takes a foreign architecture's package as multiarch does.
[ -z "$run" ] || dpkgr --add-architecture "$arch"
dpkgr -i "$deb" >/dev/null || fail "dpkg -i into a throwaway root failed"
dpkgr -s cni-multi | grep -qx "Status: install ok installed" || fail "not installed: $(dpkgr -s cni-multi)"
for field in Provides Conflicts Replaces; do
    dpkgr -s cni-multi | grep -qx "$field: containernetworking-plugins" || fail "no $field: containernetworking-plugins"
done
# Files and links only (dpkg -L also lists the directories).
dpkgr -L cni-multi | while read -r p; do [ -d "$root$p" ] && [ ! -L "$root$p" ] || echo "$p"; done | sort >"$d/got"
diff -u "$d/want" "$d/got" >&2 || fail "file list differs (- expected, + packaged)"

[ -f "$root/usr/lib/cni/cni-multi" ] && [ ! -L "$root/usr/lib/cni/cni-multi" ] || fail "no binary in /usr/lib/cni"
cmp -s "$bin" "$root/usr/lib/cni/cni-multi" || fail "/usr/lib/cni/cni-multi is not $bin"
[ "$(readlink "$root/opt/cni/bin/cni-multi")" = /usr/lib/cni/cni-multi ] || fail "/opt/cni/bin/cni-multi link"
[ "$(readlink "$root/usr/bin/cni-multi")" = ../lib/cni/cni-multi ] || fail "/usr/bin/cni-multi link"
# The stubs run /usr/lib/cni/cni-multi, which is in the throwaway root: run
# them as the kernel would (`cni-multi --stub STUB`), and let install judge
# them (a dry run changes nothing when every stub is byte for byte its own).
count=0
for name in $($run "$bin" --list); do
    for dir in usr/lib/cni opt/cni/bin; do
        [ -f "$root/$dir/$name" ] && [ ! -L "$root/$dir/$name" ] || fail "/$dir/$name is not a stub file"
        [ "$(head -n 1 "$root/$dir/$name")" = "#!/usr/lib/cni/cni-multi --stub" ] || fail "/$dir/$name: $(head -n 1 "$root/$dir/$name")"
        CNI_COMMAND=VERSION $run "$root/usr/lib/cni/cni-multi" --stub "$root/$dir/$name" </dev/null |
            grep -q supportedVersions || fail "/$dir/$name does not answer VERSION"
    done
    count=$((count + 1))
done
for dir in usr/lib/cni opt/cni/bin; do
    $run "$bin" install --dry-run --dir "$root/$dir" --host-dir /usr/lib/cni 2>&1 | grep -v ': unchanged$' |
        grep -qx "cni-multi install: nothing to change in $root/$dir" ||
        fail "/$dir: install would change stubs: $($run "$bin" install --dry-run --dir "$root/$dir" --host-dir /usr/lib/cni 2>&1 | grep -v unchanged)"
done
# The manual pages render without a warning (as lintian renders them).
if command -v man >/dev/null 2>&1; then
    for page in "$root"/usr/share/man/man*/*.gz; do
        said=$(MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null) || fail "$page: man failed: $said"
        [ -z "$said" ] || fail "$page: $said"
    done
else
    echo "deb-check: man not installed; manual pages not rendered (apt-get install man-db)"
fi
# The doctor units' environment file: the example, a conffile (kept on upgrade, removed on purge).
cmp -s contrib/systemd/cni-multi-doctor.env "$root$conffile" || fail "$conffile is not contrib/systemd/cni-multi-doctor.env"
dpkgr -s cni-multi | grep -q "^ $conffile " || fail "$conffile is not a conffile"
for unit in "$root"/lib/systemd/system/*; do
    ! grep -q @BINDIR@ "$unit" || fail "$unit: @BINDIR@ not replaced"
    ! grep -q '^ExecStart=' "$unit" || grep -q '^ExecStart=/usr/lib/cni/cni-multi ' "$unit" || fail "$unit: ExecStart"
done

# Maintainer scripts: POSIX sh, and they do nothing under DPKG_ROOT (they ran above).
for script in postinst postrm; do
    f=$root/var/lib/dpkg/info/cni-multi.$script
    [ -x "$f" ] || fail "no $script"
    sh -n "$f" || fail "$script: syntax"
    grep -q 'DPKG_ROOT' "$f" || fail "$script ignores DPKG_ROOT"
done

if ! command -v lintian >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "deb-check: installing lintian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian >/dev/null ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian >/dev/null; }
fi
if command -v lintian >/dev/null 2>&1; then
    lintian --tag-display-limit 0 "$deb" >"$d/lintian" 2>&1 || true
    sed 's/^/deb-check: lintian: /' "$d/lintian" | grep -v "root privileges" || true
    ! grep -q '^E: ' "$d/lintian" || fail "lintian reports errors"
else
    echo "deb-check: lintian not installed; skipped (apt-get install lintian)"
fi

dpkgr -P cni-multi >/dev/null || fail "purge failed"
left=$(find "$root" -mindepth 1 ! -path "$root/var*" | sort)
[ -z "$left" ] || fail "purge left: $left"
echo "deb-check: $(basename "$deb") ($arch): $(wc -l <"$d/got") files, $count plugins answer VERSION${run:+ under $run}, installs and purges cleanly"
