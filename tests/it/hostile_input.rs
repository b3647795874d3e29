//! Hostile names and prevResults: a name that would inject iptables-restore text
//! (`x\nCOMMIT\n*nat\n-F\n#` flushes the host's nat table if it gets through) is
//! refused with code 7 by every plugin that takes names from prevResult or the
//! config, with the host's tables unchanged; a prevResult that does not
//! describe the container is refused instead of passing as a silent no-op.

use crate::harness;

use harness::{Call, Netns, enter_test_host, iptables_table, nft_ruleset, plugin_dir, run_in};
use serde_json::{Value, json};

const EVIL: &str = "x\nCOMMIT\n*nat\n-F\n#";

/// The host's netfilter state: both iptables tables we touch and nftables.
fn tables() -> String {
    format!(
        "{}{}{}",
        iptables_table("nat"),
        iptables_table("filter"),
        nft_ruleset()
    )
}

/// A nat table with a rule of the host's own, which the injection would flush.
fn host_rule() {
    run_in(
        None,
        "iptables",
        &[
            "-t",
            "nat",
            "-A",
            "POSTROUTING",
            "-s",
            "10.99.0.0/24",
            "-j",
            "MASQUERADE",
        ],
    );
}

fn chained(plugin: &str, extra: Value, prev: Value) -> String {
    let mut c = json!({"cniVersion": "1.0.0", "name": "hostile", "type": plugin,
                       "prevResult": prev});
    if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            o.insert(k.clone(), v.clone());
        }
    }
    c.to_string()
}

/// Plugins that read prevResult, each with what makes it act on it.
fn chained_plugins() -> Vec<(&'static str, Value)> {
    vec![
        ("firewall", json!({"backend": "iptables"})),
        ("firewall", json!({"backend": "nftables"})),
        (
            "portmap",
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80}]}}),
        ),
        (
            "bandwidth",
            json!({"ingressRate": 8000, "ingressBurst": 8000}),
        ),
        ("sbr", json!({})),
        ("tuning", json!({"mac": "c2:00:00:00:00:01"})),
        ("vrf", json!({"vrfname": "vrf-h"})),
    ]
}

#[test]
fn injected_interface_names_in_prev_result_are_refused_by_every_chained_plugin() {
    enter_test_host();
    host_rule();
    let bin = plugin_dir();
    let ns = Netns::new();
    let before = tables();
    for name in [
        EVIL,
        "eth0\r",
        "a\u{1}b",
        "",
        "0123456789abcdef",
        "a/b",
        "..",
        "a b",
    ] {
        let prev = json!({"cniVersion": "1.0.0",
            // The firewall's bridge is interfaces[0]; the container's is [1].
            "interfaces": [{"name": name}, {"name": name, "sandbox": ns.path()}],
            "ips": [{"interface": 1, "address": "10.99.0.5/24", "gateway": "10.99.0.1"}]});
        for (plugin, extra) in chained_plugins() {
            let conf = chained(plugin, extra.clone(), prev.clone());
            // DEL and CHECK may refuse, fail for want of state, or not read
            // prevResult at all (state found by name, a no-op CHECK): whichever,
            // the tables below stay as they were.
            for command in ["DEL", "CHECK"] {
                let out = Call::new(plugin, command, ns.path(), &conf)
                    .path(&bin)
                    .run();
                assert!(out.status == 0 || out.json()["code"].is_u64(), "{out:?}");
            }
            let e = Call::new(plugin, "ADD", ns.path(), &conf)
                .path(&bin)
                .run()
                .err(7);
            let msg = e["msg"].as_str().unwrap_or_default();
            assert!(
                msg.contains("prevResult.interfaces[0].name"),
                "{plugin} {name:?}: {e}"
            );
        }
    }
    assert_eq!(tables(), before, "the host's tables are unchanged");
}

#[test]
fn injected_link_names_in_the_config_are_refused() {
    enter_test_host();
    host_rule();
    let bin = plugin_dir();
    let ns = Netns::new();
    let before = tables();
    let ipam = json!({"type": "host-local", "subnet": "10.98.0.0/24", "dataDir": "/run/cni-multi-test-hostile"});
    for (plugin, key, extra) in [
        (
            "bridge",
            "bridge",
            json!({"ipMasq": true, "isGateway": true}),
        ),
        ("macvlan", "master", json!({})),
        ("ipvlan", "master", json!({})),
        ("vlan", "master", json!({"vlanId": 5})),
        ("host-device", "device", json!({})),
        ("tap", "bridge", json!({})),
    ] {
        let mut c = json!({"cniVersion": "1.0.0", "name": "hostile", "type": plugin, "ipam": ipam});
        c[key] = json!(EVIL);
        if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        let e = Call::new(plugin, "ADD", ns.path(), &c.to_string())
            .path(&bin)
            .run()
            .err(7);
        let msg = e["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(&format!("invalid {key}")), "{plugin}: {e}");
    }
    // The network name reaches ipMasq's rule comments: refused at the gate.
    let c = json!({"cniVersion": "1.0.0", "name": EVIL, "type": "bridge", "ipMasq": true, "ipam": ipam});
    Call::new("bridge", "ADD", ns.path(), &c.to_string())
        .path(&bin)
        .run()
        .err(7);
    assert_eq!(tables(), before, "the host's tables are unchanged");
    assert!(!run_in(None, "ip", &["-o", "link"]).contains("veth"));
}

#[test]
fn a_prev_result_that_does_not_describe_the_container_is_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let before = tables();
    let itfs = json!([{"name": "cni0"}, {"name": "eth0", "sandbox": ns.path()}]);
    // An ips[] entry pointing past the interface list.
    let out_of_range = json!({"cniVersion": "1.0.0", "interfaces": itfs,
        "ips": [{"interface": 2, "address": "10.99.0.5/24"}]});
    // An address without its prefix length.
    let no_prefix = json!({"cniVersion": "1.0.0", "interfaces": itfs,
        "ips": [{"interface": 1, "address": "10.99.0.5"}]});
    for (plugin, extra) in chained_plugins() {
        for (prev, what) in [
            (
                &out_of_range,
                "prevResult.ips[0].interface 2 is out of range",
            ),
            (&no_prefix, "prevResult.ips[0].address"),
        ] {
            let e = Call::new(
                plugin,
                "ADD",
                ns.path(),
                &chained(plugin, extra.clone(), prev.clone()),
            )
            .path(&bin)
            .run()
            .err(7);
            let msg = e["msg"].as_str().unwrap_or_default();
            assert!(msg.contains(what), "{plugin}: {e}");
        }
    }
    // No address of CNI_IFNAME: portmap would publish nothing, sbr route nothing.
    let other_if = json!({"cniVersion": "1.0.0",
        "interfaces": [{"name": "cni0"}, {"name": "net1", "sandbox": ns.path()}],
        "ips": [{"interface": 1, "address": "10.99.0.5/24"}]});
    for (plugin, extra) in [
        (
            "portmap",
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80}]}}),
        ),
        ("sbr", json!({})),
    ] {
        let e = Call::new(
            plugin,
            "ADD",
            ns.path(),
            &chained(plugin, extra, other_if.clone()),
        )
        .path(&bin)
        .run()
        .err(7);
        let msg = e["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains("prevResult has no address of"),
            "{plugin}: {e}"
        );
    }
    assert_eq!(tables(), before, "the host's tables are unchanged");
}

/// The netfilter lock is private: another user could otherwise open it and
/// hold it, stalling every portmap, ipMasq and firewall call on the node.
#[test]
fn the_netfilter_lock_is_private() {
    use std::os::unix::fs::PermissionsExt;
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let prev = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
                      "ips": [{"interface": 0, "address": "10.97.0.5/24"}]});
    let conf = chained("firewall", json!({"backend": "iptables"}), prev);
    Call::new("firewall", "ADD", ns.path(), &conf)
        .path(&bin)
        .run()
        .ok();
    Call::new("firewall", "DEL", ns.path(), &conf)
        .path(&bin)
        .run()
        .ok();
    let mode = std::fs::metadata("/run/cni-multi.netfilter.lock")
        .expect("lock file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// stdin is read up to 16 MiB: a bigger config is refused with code 6, not
/// read into memory whole.
#[test]
fn stdin_larger_than_16_mib_is_refused_with_code_6() {
    enter_test_host();
    let ns = Netns::new();
    let pad = "x".repeat(17 << 20);
    let conf = format!(r#"{{"cniVersion":"1.0.0","name":"n","type":"loopback","pad":"{pad}"}}"#);
    let e = Call::new("loopback", "ADD", ns.path(), &conf).run().err(6);
    assert!(
        e["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("larger than 16777216 bytes"),
        "{e}"
    );
    // Just under the limit is read and works.
    let pad = "x".repeat(15 << 20);
    let conf = format!(r#"{{"cniVersion":"1.0.0","name":"n","type":"loopback","pad":"{pad}"}}"#);
    Call::new("loopback", "ADD", ns.path(), &conf).run().ok();
}

/// Container IDs are bounded where they enter: one too long for a netlink
/// attribute is refused before anything is created.
#[test]
fn an_overlong_container_id_is_refused_early() {
    enter_test_host();
    let ns = Netns::new();
    let conf = r#"{"cniVersion":"1.0.0","name":"n","type":"loopback"}"#;
    let id = "a".repeat(70_000);
    let e = Call::new("loopback", "ADD", ns.path(), conf)
        .set("CNI_CONTAINERID", &id)
        .run()
        .err(4);
    assert!(
        e["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("longer than"),
        "{e}"
    );
}
