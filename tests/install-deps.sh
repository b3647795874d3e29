#!/bin/sh
# Installs the system tools the tests need when they are missing (fresh CI machine).
# Plugins never exec these; tests use them to inspect kernel state independently.
set -eu
missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need ip iproute2
need nsenter util-linux
need file file
need iptables-restore iptables
need nft nftables
need dnsmasq dnsmasq
need ping iputils-ping
# portmap tests load and list conntrack entries (the plugin itself uses netlink).
need conntrack conntrack
# tests/it/doctor_leaks.rs kills ADDs at chosen syscalls with strace's --inject;
# tests/it/o1_per_pod.rs counts what one ADD and one DEL read.
need strace strace
# firewall's firewalld backend (tests/it/firewalld.rs): a private bus and the real daemon.
need dbus-daemon dbus-daemon
need dbus-send dbus-bin
need firewalld firewalld
# ring (rustls, for flanneld's etcd TLS) compiles C: clang builds it for aarch64
# (make ARCH=arm64). The flanneld lane (make test-flanneld) and
# tests/it/etcd_client.rs run a real etcd; openssl makes the TLS test's certificates.
need clang clang
need etcd etcd-server
need etcdctl etcd-client
need openssl openssl
# The flanneld lane asks the daemon's health probes over HTTP.
need curl curl
# tests/it/man.rs renders the generated manual pages as man(1) and lintian do.
need man man-db
# Go's libcni 1.1 (Debian's source package) and Go, for the doctor's tests on
# attachments a runtime made through it (tests/it/doctor.rs, bench/libcni).
need go golang-go
[ -d /usr/share/gocode/src/github.com/containernetworking/cni/libcni ] || missing="$missing golang-github-appc-cni-dev"
# The reference's plugins (Go), for the tests that share a node with them.
[ -x /usr/lib/cni/portmap ] && [ -x /usr/lib/cni/firewall ] || missing="$missing containernetworking-plugins"
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "install-deps: missing:$missing (run as root to install)" >&2
        exit 1
    fi
    echo "install-deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The tests run firewalld on a private bus in a namespace of its own; the
    # package must not start one on the host (policy-rc.d 101: no service starts).
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "install-deps: all present"
