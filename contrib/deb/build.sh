#!/bin/sh
# Usage: build.sh BINARY OUT.deb
# A Debian package of the static BINARY with dpkg-deb: the binary in
# /usr/lib/cni with one stub per plugin beside it (where Debian's
# containernetworking-plugins puts them, which it replaces), the same stubs in
# /opt/cni/bin (where runtimes look by default), /usr/bin/cni-multi, the
# systemd units of contrib/systemd, the doctor units' environment file as
# /etc/default/cni-multi-doctor (a conffile), the manual pages the binary
# writes from its own command line (--generate-man), and the copyright file.
#   MAINTAINER  the Maintainer field (default: the last commit's author)
#   DEB_ARCH    the Architecture field, BINARY's (default amd64; make deb ARCH=arm64)
#   QEMU        runs BINARY for --version and --list when it is built for another
#               architecture than this machine's (e.g. qemu-aarch64-static)
set -eu
bin=$1
out=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
arch=${DEB_ARCH:-amd64}
run=${QEMU:-}
[ -z "$run" ] || command -v "$run" >/dev/null 2>&1 || {
    echo "deb: $run runs the $arch binary here: apt-get install qemu-user-static" >&2; exit 1; }
version=$($run "$bin" --version | awk 'NR == 1 {print $2}')
[ -n "$version" ] || { echo "deb: $bin does not answer --version here" >&2; exit 1; }
debversion=${DEB_VERSION:-$version-1}
maintainer=${MAINTAINER:-$(git -C "$repo" log -1 --format='%an <%ae>' 2>/dev/null || echo "cni-multi <root@localhost>")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
doc=$root/usr/share/doc/cni-multi
install -d "$root/DEBIAN" "$root/usr/lib/cni" "$root/opt/cni/bin" "$root/usr/bin" \
    "$root/lib/systemd/system" "$root/etc/default" "$doc" "$root/usr/share/lintian/overrides"

install -m 0755 "$bin" "$root/usr/lib/cni/cni-multi"
ln -s ../lib/cni/cni-multi "$root/usr/bin/cni-multi"
ln -s /usr/lib/cni/cni-multi "$root/opt/cni/bin/cni-multi"
# A plugin stub as `cni-multi install` writes it (src/plugins/stub.rs; make
# test-deb checks they are the same): a file, not a link, so another
# installer's copy over one name costs that name only.
stub() {
    printf '#!/usr/lib/cni/cni-multi --stub\n# cni-multi plugin stub: runs the binary above as the plugin this file is named after\n' >"$1"
    chmod 0755 "$1"
}
for name in $($run "$bin" --list); do
    case "$name" in */* | "" | . | ..) echo "deb: refusing plugin name '$name'" >&2; exit 1 ;; esac
    stub "$root/usr/lib/cni/$name"
    stub "$root/opt/cni/bin/$name"
done

# Manual pages (cni-multi.1, cni-multi-cnitool.1, ..., flanneld.8), gzipped as
# dh_compress does; lintian renders them.
$run "$bin" --generate-man "$tmp/man" >/dev/null || { echo "deb: $bin --generate-man failed" >&2; exit 1; }
for page in "$tmp"/man/*; do
    section=${page##*.}
    case "$section" in 1 | 8) ;; *) echo "deb: unexpected manual page $page" >&2; exit 1 ;; esac
    install -d "$root/usr/share/man/man$section"
    gzip -9n <"$page" >"$root/usr/share/man/man$section/$(basename "$page").gz"
    chmod 0644 "$root/usr/share/man/man$section/$(basename "$page").gz"
done

# Every unit in contrib/systemd (the dhcp daemon's, and any other there);
# ExecStart names the package's binary.
for unit in "$repo"/contrib/systemd/*.service "$repo"/contrib/systemd/*.socket "$repo"/contrib/systemd/*.timer; do
    [ -f "$unit" ] || continue
    sed 's|@BINDIR@|/usr/lib/cni|g' "$unit" >"$root/lib/systemd/system/$(basename "$unit")"
    chmod 0644 "$root/lib/systemd/system/$(basename "$unit")"
done

# The doctor units' environment (EnvironmentFile=-/etc/default/cni-multi-doctor),
# every line commented: a conffile, so dpkg keeps the operator's edits.
install -m 0644 "$repo/contrib/systemd/cni-multi-doctor.env" "$root/etc/default/cni-multi-doctor"
echo /etc/default/cni-multi-doctor >"$root/DEBIAN/conffiles"
chmod 0644 "$root/DEBIAN/conffiles"

{
    echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    echo "Upstream-Name: cni-multi"
    echo "Comment: the CNI reference plugins rewritten in Rust as one static binary"
    echo
    echo "Files: *"
    echo "Copyright: $(date -u +%Y -d "@${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)}") the cni-multi authors"
    echo "License: Apache-2.0"
    echo
    echo "License: Apache-2.0"
    # The project's LICENSE is the Apache License 2.0, which Debian ships.
    grep -q "Apache License" "$repo/LICENSE" && grep -q "Version 2.0" "$repo/LICENSE" || {
        echo "deb: LICENSE is not the Apache License 2.0; update the copyright file" >&2; exit 1; }
    echo " Licensed under the Apache License, Version 2.0 (the \"License\");"
    echo " you may not use this file except in compliance with the License."
    echo " ."
    echo " On Debian systems, the complete text of the Apache License, Version 2.0"
    echo " can be found in \"/usr/share/common-licenses/Apache-2.0\"."
} >"$doc/copyright"
{
    echo "cni-multi ($debversion) unstable; urgency=medium"
    echo
    echo "  * Package of cni-multi $version."
    echo
    echo " -- $maintainer  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$doc/changelog.Debian.gz"
chmod 0644 "$doc/copyright" "$doc/changelog.Debian.gz"

# Runtimes find plugins in /opt/cni/bin by default: the links there are the point.
# The binary is static by design (arm64's plain static; amd64's static-pie,
# which lintian takes for a library and does not flag).
cat >"$root/usr/share/lintian/overrides/cni-multi" <<'OVR'
cni-multi: dir-or-file-in-opt
cni-multi: statically-linked-binary [usr/lib/cni/cni-multi]
OVR
chmod 0644 "$root/usr/share/lintian/overrides/cni-multi"

# systemd learns of the units; none is enabled or started by the package
# (the socket starts the dhcp daemon when a dhcp plugin first calls it).
# Nothing runs when dpkg installs into another root (DPKG_ROOT).
for script in postinst postrm; do
    cat >"$root/DEBIAN/$script" <<'SCRIPT'
#!/bin/sh
set -e
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
exit 0
SCRIPT
    chmod 0755 "$root/DEBIAN/$script"
done

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: cni-multi
Version: $debversion
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Section: net
Priority: optional
Homepage: https://www.cni.dev/plugins/
Provides: containernetworking-plugins
Conflicts: containernetworking-plugins
Replaces: containernetworking-plugins
Description: CNI plugins in one static binary
 The Container Network Interface reference plugins (bridge, ptp, macvlan,
 ipvlan, host-local, dhcp, portmap, bandwidth, firewall, tuning and the
 others) as a single statically linked multicall binary, with one stub per
 plugin in /usr/lib/cni and /opt/cni/bin. It also provides cnitool and the
 dhcp lease daemon with its systemd units.
CONTROL
# Conffiles are left out, as dh_md5sums does: dpkg records their sums itself.
(cd "$root" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "deb: $out"
