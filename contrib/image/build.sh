#!/bin/sh
# Usage: build.sh OUT.tar ARCH=BINARY...   (e.g. amd64=target/cni-multi arm64=target/arm64/cni-multi)
# A multi-arch OCI image: for each ARCH, an image from scratch holding only the
# static BINARY as /cni-multi, whose entrypoint installs it into the host's
# /opt/cni/bin (mounted at /host/opt/cni/bin): `cni-multi install --dir
# /host/opt/cni/bin --host-dir /opt/cni/bin` (the plugin stubs run the binary
# where the node sees it; a later --host-dir in the container's args wins, for
# nodes with another dir). Written as an OCI archive whose one index, named
# localhost/cni-multi:<version>, lists them all, so a node pulls or imports its
# own architecture's; no registry involved. buildah keeps its storage in a
# temporary directory, removed afterwards.
set -eu
out=${1:?usage: build.sh OUT.tar ARCH=BINARY...}
shift
[ $# -gt 0 ] || { echo "image: no ARCH=BINARY given" >&2; exit 1; }
command -v buildah >/dev/null 2>&1 || {
    echo "image: needs buildah (apt-get install buildah)" >&2; exit 1; }
# The version, from a binary that runs on this machine, natively or under
# qemu-user (all come from one tree).
version=""
for pair in "$@"; do
    arch=${pair%%=*} bin=${pair#*=}
    case "$arch" in
        amd64) machine="x86-64" qemu=qemu-x86_64-static ;;
        arm64) machine="ARM aarch64" qemu=qemu-aarch64-static ;;
        *) echo "image: unknown architecture '$arch' (amd64, arm64)" >&2; exit 1 ;;
    esac
    # Each slot must hold its own architecture's static binary.
    file -L "$bin" | grep -q "ELF 64-bit LSB .*, $machine," || {
        echo "image: $bin is not an $arch binary: $(file -L "$bin")" >&2; exit 1; }
    file -L "$bin" | grep -q "statically linked\|static-pie linked" || {
        echo "image: $bin is not a static binary" >&2; exit 1; }
    [ -n "$version" ] || version=$("$bin" --version 2>/dev/null | awk 'NR == 1 {print $2}')
    [ -n "$version" ] || ! command -v "$qemu" >/dev/null 2>&1 ||
        version=$("$qemu" "$bin" --version 2>/dev/null | awk 'NR == 1 {print $2}')
done
[ -n "$version" ] || { echo "image: none of the binaries answers --version here (natively or through qemu-user-static)" >&2; exit 1; }
ref=localhost/cni-multi:$version
tmp=$(mktemp -d)
b() { buildah --root "$tmp/root" --runroot "$tmp/run" --storage-driver vfs "$@"; }
ctr=""
cleanup() {
    [ -z "$ctr" ] || b rm "$ctr" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
b manifest create "$ref" >/dev/null
for pair in "$@"; do
    arch=${pair%%=*} bin=${pair#*=}
    ctr=$(b from scratch)
    b copy --chmod 0755 "$ctr" "$bin" /cni-multi >/dev/null
    b config --os linux --arch "$arch" \
        --entrypoint '["/cni-multi","install","--dir","/host/opt/cni/bin","--host-dir","/opt/cni/bin"]' \
        --label org.opencontainers.image.title=cni-multi \
        --label org.opencontainers.image.version="$version" \
        --label org.opencontainers.image.description="The CNI plugins in one static binary; installs itself into /host/opt/cni/bin" \
        "$ctr"
    id=$(b commit --quiet --format oci "$ctr")
    b rm "$ctr" >/dev/null
    ctr=""
    b manifest add --os linux --arch "$arch" "$ref" "$id" >/dev/null
done
rm -f "$out"
b manifest push --quiet --all --format oci "$ref" "oci-archive:$out:$ref" >/dev/null

# The archive's index lists exactly the architectures asked for.
index=$(tar -xOf "$out" index.json | sed -n 's/.*"digest":"sha256:\([0-9a-f]*\)".*/\1/p')
got=$(tar -xOf "$out" "blobs/sha256/$index" | grep -o '"architecture":"[a-z0-9]*"' | cut -d'"' -f4 | sort | tr '\n' ' ')
want=$(for pair in "$@"; do echo "${pair%%=*}"; done | sort | tr '\n' ' ')
[ "$got" = "$want" ] || { echo "image: $out lists architectures '$got', not '$want'" >&2; exit 1; }
echo "image: $out ($ref for ${want% }, $(stat -c %s "$out") bytes)"
