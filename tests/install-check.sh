#!/bin/sh
# The static release binary installs into a DESTDIR with one symlink per plugin,
# and every link answers VERSION with the seven spec versions.
set -eu
bin=target/cni-multi
file -L "$bin" | grep -q "statically linked\|static-pie linked" || {
    echo "install-check: $bin is not statically linked: $(file -L "$bin")" >&2; exit 1; }
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
echo "install-check: static binary ($size bytes), $count plugin symlinks answer VERSION"
