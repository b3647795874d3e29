//! ipvlan, vlan and dummy: config validation everywhere; link tests where the
//! kernel has these link kinds (they skip with a printed reason elsewhere).

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, kernel_supports, plugin_dir, run_in, skip};
use serde_json::{Value, json};

fn conf(plugin: &str, extra: Value) -> Value {
    let mut c = json!({
        "cniVersion": "1.0.0",
        "name": "virt-net",
        "type": plugin,
        "master": "virt-master",
        "ipam": {"type": "static", "addresses": [{"address": "10.44.0.2/24"}]}
    });
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            c.insert(k.clone(), v.clone());
        }
    }
    c
}

fn call(plugin: &str, cmd: &str, ns: &Netns, c: &Value, bin: &TempDir) -> Call {
    Call::new(plugin, cmd, ns.path(), &c.to_string()).path(bin)
}

fn make_master() {
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "virt-master",
            "type",
            "veth",
            "peer",
            "name",
            "virt-peer",
        ],
    );
    run_in(None, "ip", &["link", "set", "virt-master", "up"]);
}

fn eth0(ns: &Netns) -> Value {
    let out = ns.sh("ip", &["-j", "-d", "addr", "show", "dev", "eth0"]);
    serde_json::from_str::<Value>(&out).expect("ip json")[0].clone()
}

/// ADD gives eth0 of `kind` with the static address; CHECK passes; DEL twice.
fn add_check_del(plugin: &str, kind: &str, extra: Value) -> Value {
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = conf(plugin, extra);
    let out = call(plugin, "ADD", &ns, &c, &bin).run().ok();
    assert_eq!(
        out["ips"],
        json!([{"address": "10.44.0.2/24", "interface": 0}])
    );
    let link = eth0(&ns);
    assert_eq!(link["linkinfo"]["info_kind"], kind, "{link}");
    let mut checked = c.clone();
    checked["prevResult"] = out.clone();
    call(plugin, "CHECK", &ns, &checked, &bin).run().ok();
    call(plugin, "DEL", &ns, &c, &bin).run().ok();
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    call(plugin, "DEL", &ns, &c, &bin).run().ok();
    link
}

#[test]
fn configs_are_validated_before_touching_the_kernel() {
    enter_test_host();
    make_master();
    let bin = plugin_dir();
    let ns = Netns::new();
    for (plugin, extra, code) in [
        ("ipvlan", json!({"mode": "l4"}), 7),
        ("ipvlan", json!({"mtu": 100000}), 7),
        ("ipvlan", json!({"master": "nope0"}), 999),
        ("vlan", json!({"master": ""}), 7),
        ("vlan", json!({"vlanId": 4095}), 7),
        ("vlan", json!({"vlanId": -1}), 7),
        ("vlan", json!({"vlanId": 5, "ipam": {}}), 7),
        ("dummy", json!({"ipam": {}}), 7),
    ] {
        call(plugin, "ADD", &ns, &conf(plugin, extra.clone()), &bin)
            .run()
            .err(code);
    }
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
}

/// Pings `addr` once from `ns`.
fn pings(ns: &Netns, addr: &str) -> bool {
    std::process::Command::new("nsenter")
        .args([&format!("--net={}", ns.path()), "ping", "-c1", "-W2", addr])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The master's peer answers at 10.44.0.1 (on `peer_dev`, made by the caller).
fn peer_answers_at(peer_dev: &str) {
    run_in(
        None,
        "ip",
        &["addr", "add", "10.44.0.1/24", "dev", peer_dev],
    );
    run_in(None, "ip", &["link", "set", "virt-peer", "up"]);
    run_in(None, "ip", &["link", "set", peer_dev, "up"]);
}

#[test]
fn ipvlan_l2_l3_and_l3s() {
    enter_test_host();
    if let Err(reason) = kernel_supports("ipvlan", true, &[]) {
        skip("ipvlan_l2_l3_and_l3s", &reason);
        return fails_cleanly_without_kernel_support("ipvlan", json!({}));
    }
    make_master();
    let link = add_check_del("ipvlan", "ipvlan", json!({}));
    assert_eq!(link["linkinfo"]["info_data"]["mode"], "l2");
    let link = add_check_del("ipvlan", "ipvlan", json!({"mode": "l3"}));
    assert_eq!(link["linkinfo"]["info_data"]["mode"], "l3");
    let link = add_check_del("ipvlan", "ipvlan", json!({"mode": "l3s", "mtu": 1400}));
    assert_eq!(link["linkinfo"]["info_data"]["mode"], "l3s");
    assert_eq!(link["mtu"], 1400);
    // CHECK compares the mode with the config's.
    let (bin, ns) = (plugin_dir(), Netns::new());
    let c = conf("ipvlan", json!({"mode": "l3"}));
    let out = call("ipvlan", "ADD", &ns, &c, &bin).run().ok();
    let mut other = conf("ipvlan", json!({"mode": "l3s"}));
    other["prevResult"] = out;
    call("ipvlan", "CHECK", &ns, &other, &bin).run().err(999);
    call("ipvlan", "DEL", &ns, &c, &bin).run().ok();
    // An L2 ipvlan reaches the master's link.
    peer_answers_at("virt-peer");
    let ns = Netns::new();
    let c = conf("ipvlan", json!({"mode": "l2"}));
    call("ipvlan", "ADD", &ns, &c, &bin).run().ok();
    assert!(pings(&ns, "10.44.0.1"), "ipvlan l2 -> master's peer");
    call("ipvlan", "DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn vlan_with_id() {
    enter_test_host();
    if let Err(reason) = kernel_supports("vlan", true, &["id", "7"]) {
        skip("vlan_with_id", &reason);
        return fails_cleanly_without_kernel_support("vlan", json!({"vlanId": 7}));
    }
    make_master();
    let link = add_check_del("vlan", "vlan", json!({"vlanId": 7}));
    assert_eq!(link["linkinfo"]["info_data"]["id"], 7);
    assert_eq!(link["linkinfo"]["info_data"]["protocol"], "802.1Q");
    // Tagged frames reach VLAN 7 on the other end of the master's link.
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "link",
            "virt-peer",
            "name",
            "virt-peer.7",
            "type",
            "vlan",
            "id",
            "7",
        ],
    );
    peer_answers_at("virt-peer.7");
    let (bin, ns) = (plugin_dir(), Netns::new());
    let c = conf("vlan", json!({"vlanId": 7, "mtu": 1400}));
    let out = call("vlan", "ADD", &ns, &c, &bin).run().ok();
    assert_eq!(eth0(&ns)["mtu"], 1400);
    assert!(pings(&ns, "10.44.0.1"), "vlan 7 -> peer's vlan 7");
    let mut checked = c.clone();
    checked["prevResult"] = out;
    call("vlan", "CHECK", &ns, &checked, &bin).run().ok();
    call("vlan", "DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn dummy_with_ipam() {
    enter_test_host();
    if let Err(reason) = kernel_supports("dummy", false, &[]) {
        skip("dummy_with_ipam", &reason);
        return fails_cleanly_without_kernel_support("dummy", json!({}));
    }
    add_check_del("dummy", "dummy", json!({}));
}

/// Where the kernel lacks the kind, ADD reports the kernel's reason and leaves nothing.
fn fails_cleanly_without_kernel_support(plugin: &str, extra: Value) {
    make_master();
    let bin = plugin_dir();
    let ns = Netns::new();
    let e = call(plugin, "ADD", &ns, &conf(plugin, extra), &bin)
        .run()
        .err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("Unknown device type")),
        "{e}"
    );
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    assert!(!run_in(None, "ip", &["-o", "link"]).contains("veth"));
}

#[test]
fn chained_ipvlan_takes_the_single_interface_of_prev_result_as_master() {
    enter_test_host();
    let (bin, ns) = (plugin_dir(), Netns::new());
    let chained = |interfaces: Value| {
        let mut c = conf("ipvlan", json!({"ipam": {}}));
        c.as_object_mut().map(|o| o.remove("master"));
        c["prevResult"] = json!({
            "cniVersion": "1.0.0",
            "interfaces": interfaces,
            "ips": [{"address": "10.44.0.7/24", "interface": 0}]
        });
        c
    };
    // Not exactly one named interface: the reference's error, before any link is made.
    for interfaces in [
        json!([{"name": "virt-master"}, {"name": "other0"}]),
        json!([]),
    ] {
        let e = call("ipvlan", "ADD", &ns, &chained(interfaces), &bin)
            .run()
            .err(999);
        assert_eq!(
            e["msg"],
            "chained master failure. PrevResult lacks a single named interface"
        );
    }
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );

    if let Err(reason) = kernel_supports("ipvlan", true, &[]) {
        skip(
            "chained_ipvlan_takes_the_single_interface_of_prev_result_as_master",
            &reason,
        );
        return;
    }
    make_master();
    // One interface: the master, and prevResult's IPs on the ipvlan (no IPAM).
    let c = chained(json!([{"name": "virt-master"}]));
    let out = call("ipvlan", "ADD", &ns, &c, &bin).run().ok();
    assert_eq!(
        out["ips"],
        json!([{"address": "10.44.0.7/24", "interface": 0}])
    );
    let link = eth0(&ns);
    assert_eq!(link["linkinfo"]["info_kind"], "ipvlan", "{link}");
    let master: Value =
        serde_json::from_str(&run_in(None, "ip", &["-j", "link", "show", "virt-master"]))
            .expect("json");
    assert_eq!(link["link_index"], master[0]["ifindex"], "{link}");
    call("ipvlan", "DEL", &ns, &c, &bin).run().ok();
}
