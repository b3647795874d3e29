//! macvlan, ipvlan, vlan and host-device keep IPAM's DNS in their result when
//! their config has no `dns` (the reference's drop it); a config `dns` that
//! says something still replaces it. A DHCP lease's name servers reaching the
//! result is tests/it/dhcp.rs's.

use crate::harness;

use harness::{Call, Netns, enter_test_host, kernel_supports, plugin_dir, run_in, skip};
use serde_json::{Value, json};

fn ipam_dns() -> Value {
    json!({"nameservers": ["10.66.0.53"], "search": ["ipam.example"]})
}

fn veth(name: &str) {
    let peer = format!("{name}p");
    run_in(
        None,
        "ip",
        &["link", "add", name, "type", "veth", "peer", "name", &peer],
    );
    run_in(None, "ip", &["link", "set", name, "up"]);
}

/// The DNS of ADD's result for each config `dns` (none, empty, set); each
/// attachment is deleted again.
fn dns_of(plugin: &str, keys: Value, device: Option<&str>) -> Vec<Value> {
    let bin = plugin_dir();
    let mut seen = vec![];
    for dns in [
        None,
        Some(json!({})),
        Some(json!({"nameservers": ["10.66.0.99"]})),
    ] {
        if let Some(d) = device {
            veth(d);
        }
        let mut conf = json!({
            "cniVersion": "1.0.0", "name": "dnsk-net", "type": plugin,
            "ipam": {"type": "static", "addresses": [{"address": "10.66.0.2/24"}],
                     "dns": ipam_dns()}
        });
        for (k, v) in keys.as_object().into_iter().flatten() {
            conf[k] = v.clone();
        }
        if let Some(dns) = dns {
            conf["dns"] = dns;
        }
        let ns = Netns::new();
        let out = Call::new(plugin, "ADD", ns.path(), &conf.to_string())
            .path(&bin)
            .run()
            .ok();
        seen.push(out.get("dns").cloned().unwrap_or(Value::Null));
        Call::new(plugin, "DEL", ns.path(), &conf.to_string())
            .path(&bin)
            .run()
            .ok();
        if let Some(d) = device {
            run_in(None, "ip", &["link", "del", d]);
        }
    }
    seen
}

fn assert_kept(plugin: &str, seen: Vec<Value>) {
    let config = json!({"nameservers": ["10.66.0.99"]});
    assert_eq!(seen, vec![ipam_dns(), ipam_dns(), config], "{plugin}");
}

#[test]
fn macvlan_keeps_ipam_dns_without_config_dns() {
    enter_test_host();
    veth("dnsk-mv");
    let seen = dns_of("macvlan", json!({"master": "dnsk-mv"}), None);
    assert_kept("macvlan", seen);
}

#[test]
fn ipvlan_keeps_ipam_dns_without_config_dns() {
    enter_test_host();
    if let Err(reason) = kernel_supports("ipvlan", true, &[]) {
        return skip("ipvlan_keeps_ipam_dns_without_config_dns", &reason);
    }
    veth("dnsk-ipv");
    let seen = dns_of("ipvlan", json!({"master": "dnsk-ipv"}), None);
    assert_kept("ipvlan", seen);
}

#[test]
fn vlan_keeps_ipam_dns_without_config_dns() {
    enter_test_host();
    if let Err(reason) = kernel_supports("vlan", true, &["id", "7"]) {
        return skip("vlan_keeps_ipam_dns_without_config_dns", &reason);
    }
    veth("dnsk-vl");
    let seen = dns_of("vlan", json!({"master": "dnsk-vl", "vlanId": 7}), None);
    assert_kept("vlan", seen);
}

#[test]
fn host_device_keeps_ipam_dns_without_config_dns() {
    enter_test_host();
    let seen = dns_of("host-device", json!({"device": "dnsk-hd"}), Some("dnsk-hd"));
    assert_kept("host-device", seen);
}
