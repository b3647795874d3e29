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
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "install-deps: all present"
