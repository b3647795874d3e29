//! DEL succeeds for every config the reference's DEL accepts, even one our ADD
//! refuses (a refused ADD is still followed by DEL, and a config can change
//! between ADD and DEL): ADD-only validation never runs on DEL. Each config
//! below is refused by our ADD at the time of writing and accepted by the
//! reference's config parsing on DEL. After an ADD attempt, DEL runs twice in
//! the live netns and once with a netns that is gone.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, merged, plugin_dir};
use serde_json::{Value, json};

/// (plugin, what ADD refuses, extra config keys)
fn cases(state: &TempDir) -> Vec<(&'static str, &'static str, Value)> {
    let store = state.0.join("store");
    let ipam = json!({"type": "host-local", "subnet": "10.99.0.0/24", "dataDir": store});
    let prev = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/gone"}],
        "ips": [{"address": "10.99.0.2/24", "interface": 0}]
    });
    vec![
        // bridge: the reference's DEL checks only VLAN IDs.
        (
            "bridge",
            "macspoofchk",
            json!({"macspoofchk": true, "ipam": ipam}),
        ),
        (
            "bridge",
            "hairpin with promisc",
            json!({"hairpinMode": true, "promiscMode": true}),
        ),
        (
            "bridge",
            "container interface disabled with IPAM",
            json!({"disableContainerInterface": true, "ipam": ipam}),
        ),
        ("bridge", "bridge name", json!({"bridge": "no/such bridge"})),
        ("bridge", "mtu", json!({"mtu": -1})),
        ("bridge", "mac", json!({"mac": "zz"})),
        (
            "bridge",
            "ipMasqBackend",
            json!({"ipMasq": true, "ipMasqBackend": "bogus", "ipam": ipam}),
        ),
        // ptp: its DEL parses nothing but JSON.
        ("ptp", "mtu", json!({"mtu": -1, "ipam": ipam})),
        (
            "ptp",
            "ipMasqBackend",
            json!({"ipMasq": true, "ipMasqBackend": "bogus", "ipam": ipam}),
        ),
        // The link plugins: the master need not exist, modes are not read.
        (
            "macvlan",
            "mode and master",
            json!({"master": "nope0", "mode": "bogus"}),
        ),
        (
            "ipvlan",
            "mode and master",
            json!({"master": "nope0", "mode": "bogus"}),
        ),
        (
            "vlan",
            "VLAN ID and master",
            json!({"master": "nope0", "vlanId": 5000, "ipam": ipam}),
        ),
        ("dummy", "no ipam", json!({})),
        (
            "tap",
            "selinuxContext",
            json!({"selinuxContext": "system_u:system_r:container_t:s0"}),
        ),
        (
            "tap",
            "bridge name and mtu",
            json!({"bridge": "no/such", "mtu": -1}),
        ),
        ("host-device", "device name", json!({"device": "bad/name"})),
        ("host-device", "hwaddr", json!({"hwaddr": "zz"})),
        (
            "host-device",
            "kernelpath",
            json!({"kernelpath": "/etc/passwd"}),
        ),
        ("host-device", "pciBusID", json!({"pciBusID": "../x"})),
        (
            "vrf",
            "vrfname",
            json!({"vrfname": "a-name-longer-than-15"}),
        ),
        // Chained plugins.
        (
            "firewall",
            "backend",
            json!({"backend": "bogus", "prevResult": prev}),
        ),
        (
            "firewall",
            "firewalld backend",
            json!({"backend": "firewalld", "prevResult": prev}),
        ),
        (
            "firewall",
            "admin chain name",
            json!({"iptablesAdminChainName": "bad name!", "prevResult": prev}),
        ),
        (
            "firewall",
            "ingressPolicy on nftables",
            json!({"backend": "nftables", "ingressPolicy": "isolated"}),
        ),
        (
            "portmap",
            "host IP",
            json!({"capabilities": {"portMappings": true}, "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": "not-an-ip"}]}, "prevResult": prev}),
        ),
        (
            "portmap",
            "protocol",
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "icmp"}]}}),
        ),
        (
            "portmap",
            "host port above 65535",
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 70000, "containerPort": 80}]}}),
        ),
        (
            "portmap",
            "externalSetMarkChain name",
            json!({"externalSetMarkChain": "bad chain!"}),
        ),
        (
            "portmap",
            "condition text",
            json!({"conditionsV4": ["-s", "10.0.0.0/8\n-j ACCEPT"]}),
        ),
        (
            "bandwidth",
            "both subnet lists",
            json!({"ingressRate": 8000, "ingressBurst": 8000, "shapedSubnets": ["10.0.0.0/8"], "unshapedSubnets": ["10.1.0.0/16"]}),
        ),
        (
            "bandwidth",
            "subnet",
            json!({"ingressRate": 8000, "ingressBurst": 8000, "shapedSubnets": ["bogus"]}),
        ),
        (
            "bandwidth",
            "queue size",
            json!({"ingressRate": 2_u64.pow(41), "ingressBurst": 8000}),
        ),
        (
            "bandwidth",
            "capability without a rate",
            json!({"capabilities": {"bandwidth": true}, "runtimeConfig": {"bandwidth": {"rate": 1}}}),
        ),
        (
            "tuning",
            "sysctl outside net",
            json!({"sysctl": {"kernel.panic": "1"}, "prevResult": prev}),
        ),
        (
            "tuning",
            "mac, mtu, txQLen",
            json!({"mac": "zz", "mtu": -1, "txQLen": -1}),
        ),
        (
            "tuning",
            "dataDir with ..",
            json!({"dataDir": "/run/../run/cni/tuning", "mtu": 1400}),
        ),
        ("sbr", "no prevResult", json!({})),
        // IPAM plugins, called directly.
        (
            "host-local",
            "dataDir with ..",
            json!({"ipam": {"type": "host-local", "subnet": "10.99.0.0/24", "dataDir": "/tmp/../tmp/x"}}),
        ),
        (
            "static",
            "address without prefix",
            json!({"ipam": {"type": "static", "addresses": [{"address": "10.99.0.9"}]}}),
        ),
        (
            "dhcp",
            "priority (and no daemon)",
            json!({"ipam": {"type": "dhcp", "priority": -1, "daemonSocketPath": state.0.join("no.sock")}}),
        ),
        (
            "flannel",
            "dataDir with ..",
            json!({"dataDir": "/tmp/../tmp/flannel"}),
        ),
    ]
}

#[test]
fn del_succeeds_for_configs_add_refuses() {
    enter_test_host();
    let bin = plugin_dir();
    let state = TempDir::new("del-tol");
    let live = Netns::new();
    let gone = Netns::new();
    let gone_path = gone.path().to_string();
    gone.destroy();
    let mut failed = Vec::new();
    for (plugin, refused, extra) in cases(&state) {
        let conf = merged(
            json!({"cniVersion": "1.0.0", "name": "deltol", "type": plugin}),
            extra,
        )
        .to_string();
        let call = |cmd: &str, netns: &str| Call::new(plugin, cmd, netns, &conf).path(&bin);
        // Refused today; should a helper's work make ADD take it, the DELs
        // after it must still succeed (and clean up).
        call("ADD", live.path()).run();
        for netns in [live.path(), live.path(), gone_path.as_str()] {
            let del = call("DEL", netns).run();
            if del.status != 0 || !del.stdout.is_empty() {
                failed.push(format!(
                    "{plugin} ({refused}) DEL in {netns}: exit {}: {} {}",
                    del.status, del.stdout, del.stderr
                ));
            }
        }
    }
    assert!(failed.is_empty(), "\n{}", failed.join("\n"));
}

/// What the reference's DEL refuses stays refused (no silent success over a
/// config that cannot be read).
#[test]
fn del_still_refuses_what_the_reference_refuses() {
    enter_test_host();
    let ns = Netns::new();
    for (plugin, extra) in [
        ("bridge", json!({"vlan": 5000})),
        ("bridge", json!({"vlanTrunk": [{"minID": 10}]})),
        ("firewall", json!({"ingressPolicy": "bogus"})),
        ("portmap", json!({"markMasqBit": 40})),
        ("vrf", json!({})),
        ("host-device", json!({})),
        ("bandwidth", json!({"ingressRate": 8000})),
        ("host-local", json!({"ipam": {"type": "host-local"}})),
    ] {
        let conf = merged(
            json!({"cniVersion": "1.0.0", "name": "deltol", "type": plugin}),
            extra.clone(),
        );
        let out = Call::new(plugin, "DEL", ns.path(), &conf.to_string()).run();
        assert_eq!(out.status, 1, "{plugin} {extra}: {out:?}");
    }
}
