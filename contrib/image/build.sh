#!/bin/sh
# Usage: build.sh BINARY OUT.tar
# An OCI image from scratch holding only the static BINARY as /cni-multi, whose
# entrypoint installs it into the host's /opt/cni/bin (mounted at
# /host/opt/cni/bin): `cni-multi install --dir /host/opt/cni/bin --host-dir
# /opt/cni/bin` (the plugin stubs run the binary where the node sees it; a
# later --host-dir in the container's args wins, for nodes with another dir). Written as
# an OCI archive named localhost/cni-multi:<version>; no registry involved.
# buildah keeps its storage in a temporary directory, removed afterwards.
set -eu
bin=$1
out=$2
command -v buildah >/dev/null 2>&1 || {
    echo "image: needs buildah (apt-get install buildah)" >&2; exit 1; }
file -L "$bin" | grep -q "statically linked\|static-pie linked" || {
    echo "image: $bin is not a static binary" >&2; exit 1; }
version=$("$bin" --version | awk '{print $2}')
tmp=$(mktemp -d)
b() { buildah --root "$tmp/root" --runroot "$tmp/run" --storage-driver vfs "$@"; }
ctr=""
cleanup() {
    [ -z "$ctr" ] || b rm "$ctr" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
ctr=$(b from scratch)
b copy --chmod 0755 "$ctr" "$bin" /cni-multi >/dev/null
b config --entrypoint '["/cni-multi","install","--dir","/host/opt/cni/bin","--host-dir","/opt/cni/bin"]' \
    --label org.opencontainers.image.title=cni-multi \
    --label org.opencontainers.image.version="$version" \
    --label org.opencontainers.image.description="The CNI plugins in one static binary; installs itself into /host/opt/cni/bin" \
    "$ctr"
rm -f "$out"
b commit --quiet --format oci "$ctr" "oci-archive:$out:localhost/cni-multi:$version" >/dev/null
echo "image: $out (localhost/cni-multi:$version, $(stat -c %s "$out") bytes)"
