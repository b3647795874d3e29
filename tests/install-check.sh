#!/bin/sh
# The static release binary installs into a DESTDIR with one stub per plugin
# naming the binary where it will be ($BINDIR, not the DESTDIR), and every
# stub answers VERSION with the seven spec versions.
set -eu
bin=target/cni-multi
file -L "$bin" | grep -q "statically linked\|static-pie linked" || {
    echo "install-check: $bin is not statically linked: $(file -L "$bin")" >&2; exit 1; }
# The plugins' code is linked in front (bench/hot-text.ld): without it a
# plugin run maps nearly all of the text.
hot=$(objdump -h "$bin" | awk '$2 == ".text.hot" { print $3 }')
[ $((0x${hot:-0})) -ge 65536 ] || {
    echo "install-check: $bin has no .text.hot section of plugin code (bench/hot-text.ld not linked)" >&2; exit 1; }
# ...and the read-only data that code references, apart from the daemons'.
rohot=$(objdump -h "$bin" | awk '$2 == ".rodata.hot" { print $3 }')
[ $((0x${rohot:-0})) -ge 16384 ] || {
    echo "install-check: $bin has no .rodata.hot section of plugin data (bench/hot-text.ld not linked, or written before it placed data)" >&2; exit 1; }
# Packed relocations (RELR): start-up reads a few KB, not an entry per pointer.
readelf -SW "$bin" | grep -q '\.relr\.dyn' || {
    echo "install-check: $bin has no .relr.dyn (not linked with -z pack-relative-relocs)" >&2; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
make -s install DESTDIR="$d" >/dev/null
dir="$d/opt/cni/bin"
want='"supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]'
count=0
for name in $("$dir/cni-multi" --list); do
    [ -f "$dir/$name" ] && [ ! -L "$dir/$name" ] || { echo "install-check: no stub for $name" >&2; exit 1; }
    [ "$(head -n 1 "$dir/$name")" = "#!/opt/cni/bin/cni-multi --stub" ] ||
        { echo "install-check: $name: $(head -n 1 "$dir/$name")" >&2; exit 1; }
    # As the kernel runs the stub once the files are in /opt/cni/bin.
    out=$(CNI_COMMAND=VERSION "$dir/cni-multi" --stub "$dir/$name" </dev/null)
    case "$out" in
        *"$want"*) count=$((count + 1)) ;;
        *) echo "install-check: $name VERSION gave: $out" >&2; exit 1 ;;
    esac
done
size=$(stat -c %s "$dir/cni-multi")
echo "install-check: static binary ($size bytes, $((0x$hot)) of them hot plugin code), $count plugin stubs answer VERSION"
