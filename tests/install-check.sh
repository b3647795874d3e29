#!/bin/sh
# The static release binary installs into a DESTDIR with one symlink per plugin,
# and every link answers VERSION with the seven spec versions.
set -eu
bin=target/cni-multi
file -L "$bin" | grep -q "statically linked\|static-pie linked" || {
    echo "install-check: $bin is not statically linked: $(file -L "$bin")" >&2; exit 1; }
# The plugins' code is linked in front (src/hot-text.ld): without it a
# plugin run maps nearly all of the text.
hot=$(objdump -h "$bin" | awk '$2 == ".text.hot" { print $3 }')
[ $((0x${hot:-0})) -ge 65536 ] || {
    echo "install-check: $bin has no .text.hot section of plugin code (src/hot-text.ld not linked)" >&2; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
make -s install DESTDIR="$d" >/dev/null
dir="$d/opt/cni/bin"
want='"supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]'
count=0
for name in $("$dir/cni-multi" --list); do
    [ -L "$dir/$name" ] || { echo "install-check: no symlink for $name" >&2; exit 1; }
    out=$(CNI_COMMAND=VERSION "$dir/$name" </dev/null)
    case "$out" in
        *"$want"*) count=$((count + 1)) ;;
        *) echo "install-check: $name VERSION gave: $out" >&2; exit 1 ;;
    esac
done
size=$(stat -c %s "$dir/cni-multi")
echo "install-check: static binary ($size bytes, $((0x$hot)) of them hot plugin code), $count plugin symlinks answer VERSION"
