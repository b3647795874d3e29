#!/bin/sh
# Usage: symlinks.sh [DIR]
# Makes one symlink per plugin name next to the cni-multi binary in DIR: for
# read-only images built once. A directory other installers also write to
# wants `cni-multi install` (a stub per name: a copy over one name costs that
# name only; docs/install.md).
# The names come from the binary itself (`cni-multi --list`), the only list.
#   DIR defaults to $DESTDIR$BINDIR (BINDIR default /opt/cni/bin).
#   CNI_MULTI: binary to ask for the list (default: the installed one), for
#   cross builds whose binary cannot run here.
set -eu
dir="${1:-${DESTDIR:-}${BINDIR:-/opt/cni/bin}}"
bin="${CNI_MULTI:-$dir/cni-multi}"
[ -x "$dir/cni-multi" ] || { echo "symlinks.sh: $dir/cni-multi not found" >&2; exit 1; }
names=$("$bin" --list)
for name in $names; do
    case "$name" in
        */* | "" | . | ..) echo "symlinks.sh: refusing plugin name '$name'" >&2; exit 1 ;;
    esac
    ln -sfn cni-multi "$dir/$name"
done
echo "symlinks.sh: $(echo "$names" | wc -w) plugin links in $dir"
