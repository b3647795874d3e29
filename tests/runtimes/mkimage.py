#!/usr/bin/env python3
"""Builds the lane's only image from the host's static busybox, without a registry.

Usage: mkimage.py BUSYBOX NAME OUT_DIR

Writes OUT_DIR/rootfs.tar (for `podman import`) and OUT_DIR/oci.tar, an OCI
image layout (oci-layout, index.json, blobs/sha256/...) for
`ctr images import`, whose index names the image NAME. The image is one
uncompressed layer: bin/busybox, a symlink per applet, and the few directories
and files a container expects. Its entrypoint is the pod sandbox's "pause"
process: a shell that sleeps until SIGTERM/SIGKILL.
"""
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tarfile

PAUSE = ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"]


def add(tar, name, typ=tarfile.REGTYPE, data=b"", mode=0o644, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime, info.linkname = typ, mode, 0, link
    info.uid = info.gid = 0
    info.size = len(data) if typ == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if typ == tarfile.REGTYPE else None)


def rootfs(busybox):
    with open(busybox, "rb") as f:
        binary = f.read()
    applets = subprocess.run([busybox, "--list"], check=True, capture_output=True, text=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d, mode in [("bin", 0o755), ("dev", 0o755), ("etc", 0o755), ("proc", 0o555),
                        ("root", 0o700), ("sys", 0o555), ("tmp", 0o1777), ("var", 0o755)]:
            add(tar, d, tarfile.DIRTYPE, mode=mode)
        add(tar, "bin/busybox", data=binary, mode=0o755)
        for name in sorted(set(applets) - {"busybox"}):
            add(tar, "bin/" + name, tarfile.SYMTYPE, link="busybox", mode=0o777)
        add(tar, "etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\n")
        add(tar, "etc/group", data=b"root:x:0:\n")
        add(tar, "etc/hosts", data=b"127.0.0.1 localhost\n::1 localhost\n")
    return buf.getvalue()


def blob(tar, data):
    digest = hashlib.sha256(data).hexdigest()
    add(tar, "blobs/sha256/" + digest, data=data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def main():
    busybox, name, out = sys.argv[1:4]
    layer = rootfs(busybox)
    with open(os.path.join(out, "rootfs.tar"), "wb") as f:
        f.write(layer)
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {"Entrypoint": PAUSE, "Env": ["PATH=/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
        "history": [{"created_by": "tests/runtimes/mkimage.py"}],
    }
    with tarfile.open(os.path.join(out, "oci.tar"), "w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "blobs", tarfile.DIRTYPE, mode=0o755)
        add(tar, "blobs/sha256", tarfile.DIRTYPE, mode=0o755)
        layer_desc = blob(tar, layer)
        config_desc = blob(tar, json.dumps(config, sort_keys=True).encode())
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_desc},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer_desc}],
        }
        manifest_desc = blob(tar, json.dumps(manifest, sort_keys=True).encode())
        index = {
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **manifest_desc,
                "platform": {"architecture": arch, "os": "linux"},
                # containerd takes the full name from its own annotation;
                # ref.name is the OCI layout's tag.
                "annotations": {"io.containerd.image.name": name,
                                "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]},
            }],
        }
        add(tar, "oci-layout", data=json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        add(tar, "index.json", data=json.dumps(index, sort_keys=True).encode())


if __name__ == "__main__":
    main()
