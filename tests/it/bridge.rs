//! bridge end to end in throwaway namespaces: host side, container side,
//! connectivity, CHECK, DEL idempotence, versions and bad configs.

use crate::harness;

use harness::{
    Call, Netns, TempDir, VERSIONS, enter_test_host, kernel_supports, plugin_dir, run_in, skip,
};
use serde_json::{Value, json};

fn conf(version: &str, store: &TempDir, extra: Value) -> Value {
    let mut c = json!({
        "cniVersion": version,
        "name": "br-net",
        "type": "bridge",
        "bridge": "cni-br0",
        "isGateway": true,
        "ipam": {
            "type": "host-local",
            "subnet": "10.88.0.0/24",
            "dataDir": store.0,
            "routes": [{"dst": "0.0.0.0/0"}]
        }
    });
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            c.insert(k.clone(), v.clone());
        }
    }
    c
}

fn call(cmd: &str, ns: &Netns, id: &str, conf: &Value, bin: &TempDir) -> Call {
    Call::new("bridge", cmd, ns.path(), &conf.to_string())
        .set("CNI_CONTAINERID", id)
        .path(bin)
}

fn host(args: &[&str]) -> String {
    run_in(None, args[0], &args[1..])
}

fn json_of(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn link_json(ns: Option<&Netns>, name: &str) -> Value {
    let out = match ns {
        Some(ns) => ns.sh("ip", &["-j", "-d", "addr", "show", "dev", name]),
        None => host(&["ip", "-j", "-d", "addr", "show", "dev", name]),
    };
    json_of(&out)[0].clone()
}

fn addrs(link: &Value) -> Vec<String> {
    link["addr_info"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|i| i["scope"] == "global")
                .map(|i| format!("{}/{}", i["local"].as_str().unwrap_or(""), i["prefixlen"]))
                .collect()
        })
        .unwrap_or_default()
}

fn pings(from: &Netns, to: &str) -> bool {
    std::process::Command::new("nsenter")
        .args([
            "--net=".to_string() + from.path(),
            "ping".into(),
            "-c1".into(),
            "-W2".into(),
            to.into(),
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn add_builds_the_host_and_container_sides_and_containers_ping_each_other() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-store"));
    let c = conf("1.0.0", &store, json!({"mtu": 1400, "hairpinMode": true}));
    let (a, b) = (Netns::new(), Netns::new());
    let out_a = call("ADD", &a, "ctr-a", &c, &bin).run().ok();
    let out_b = call("ADD", &b, "ctr-b", &c, &bin).run().ok();

    // Result: bridge, host veth, container; the IP on interface 2 with the gateway.
    let ifs = out_a["interfaces"].as_array().expect("interfaces");
    assert_eq!(ifs.len(), 3, "{out_a}");
    assert_eq!(ifs[0]["name"], "cni-br0");
    let host_veth = ifs[1]["name"].as_str().expect("host veth").to_string();
    assert!(
        host_veth.starts_with("veth") && host_veth.len() == 12,
        "{host_veth}"
    );
    assert_eq!(ifs[2]["name"], "eth0");
    assert_eq!(ifs[2]["sandbox"], a.path());
    assert_eq!(
        out_a["ips"],
        json!([{"address": "10.88.0.2/24", "gateway": "10.88.0.1", "interface": 2}])
    );
    assert_eq!(out_b["ips"][0]["address"], "10.88.0.3/24");

    // Host: bridge up with the gateway address, the veth enslaved with hairpin.
    let br = link_json(None, "cni-br0");
    assert_eq!(br["linkinfo"]["info_kind"], "bridge");
    assert_eq!(addrs(&br), ["10.88.0.1/24"]);
    assert_eq!(br["address"], ifs[0]["mac"]);
    let hv = link_json(None, &host_veth);
    assert_eq!(hv["master"], "cni-br0");
    assert_eq!(hv["mtu"], 1400);
    assert_eq!(hv["linkinfo"]["info_slave_data"]["hairpin"], true, "{hv}");
    assert_eq!(hv["operstate"], "UP");
    assert_eq!(host(&["sysctl", "-n", "net.ipv4.ip_forward"]).trim(), "1");

    // Container: eth0 with the address, MTU and MAC of the result, the default route.
    let eth0 = link_json(Some(&a), "eth0");
    assert_eq!(addrs(&eth0), ["10.88.0.2/24"]);
    assert_eq!(eth0["mtu"], 1400);
    assert_eq!(eth0["address"], ifs[2]["mac"]);
    let routes = a.sh("ip", &["-j", "route", "show", "default"]);
    assert_eq!(json_of(&routes)[0]["gateway"], "10.88.0.1", "{routes}");

    // The bridge MAC is pinned: a port with a lower MAC does not move it.
    let low = Netns::new();
    call("ADD", &low, "ctr-low", &c, &bin)
        .set("CNI_ARGS", "IgnoreUnknown=1;MAC=02:00:00:00:00:01")
        .run()
        .ok();
    assert_eq!(link_json(None, "cni-br0")["address"], ifs[0]["mac"]);
    call("DEL", &low, "ctr-low", &c, &bin).run().ok();

    assert!(pings(&a, "10.88.0.3"), "a reaches b");
    assert!(pings(&b, "10.88.0.2"), "b reaches a");
    assert!(pings(&a, "10.88.0.1"), "a reaches its gateway");

    // CHECK passes, then fails once the address is gone.
    let mut checked = c.clone();
    checked["prevResult"] = out_a.clone();
    call("CHECK", &a, "ctr-a", &checked, &bin).run().ok();
    a.sh("ip", &["addr", "del", "10.88.0.2/24", "dev", "eth0"]);
    call("CHECK", &a, "ctr-a", &checked, &bin).run().err(999);
    // and after a route is removed
    let mut checked_b = c.clone();
    checked_b["prevResult"] = out_b.clone();
    call("CHECK", &b, "ctr-b", &checked_b, &bin).run().ok();
    b.sh("ip", &["route", "del", "default"]);
    call("CHECK", &b, "ctr-b", &checked_b, &bin).run().err(999);

    // DEL removes the veth and the reservation; a second DEL succeeds.
    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    assert!(
        a.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    assert!(!host(&["ip", "-o", "link"]).contains(&host_veth));
    assert!(!store.0.join("br-net").join("10.88.0.2").exists());
    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    call("DEL", &b, "ctr-b", &c, &bin).run().ok();
    let left: Vec<String> = std::fs::read_dir(store.0.join("br-net"))
        .expect("store")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lock" && !n.starts_with("last_reserved_ip"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn del_releases_the_ip_when_the_netns_is_empty_or_gone() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-gone"));
    let c = conf("1.0.0", &store, json!({}));
    let ns = Netns::new();
    let out = call("ADD", &ns, "ctr-gone", &c, &bin).run().ok();
    assert_eq!(out["ips"][0]["address"], "10.88.0.2/24");
    let path = ns.path().to_string();
    ns.destroy();
    Call::new("bridge", "DEL", &path, &c.to_string())
        .set("CNI_CONTAINERID", "ctr-gone")
        .path(&bin)
        .run()
        .ok();
    assert!(!store.0.join("br-net").join("10.88.0.2").exists());

    let ns = Netns::new();
    call("ADD", &ns, "ctr-empty", &c, &bin).run().ok();
    call("DEL", &ns, "ctr-empty", &c, &bin)
        .set("CNI_NETNS", "")
        .run()
        .ok();
    assert!(!store.0.join("br-net").join("10.88.0.2").exists());
}

#[test]
fn every_version_gets_its_layout_and_l2_only_works() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-ver"));
    for (i, v) in VERSIONS.iter().enumerate() {
        let c = conf(v, &store, json!({}));
        let ns = Netns::new();
        let id = format!("ctr-{i}");
        let out = call("ADD", &ns, &id, &c, &bin).run().ok();
        assert_eq!(out["cniVersion"], *v);
        match *v {
            "0.1.0" | "0.2.0" => assert!(out["ip4"]["ip"].is_string(), "{out}"),
            _ => assert_eq!(out["ips"][0]["interface"], 2, "{out}"),
        }
        call("DEL", &ns, &id, &c, &bin).run().ok();
    }
    // No IPAM: a layer-2 port, the container end up with no address.
    let mut l2 = conf("1.0.0", &store, json!({"bridge": "cni-l2"}));
    l2.as_object_mut().map(|o| o.remove("ipam"));
    let ns = Netns::new();
    let out = call("ADD", &ns, "ctr-l2", &l2, &bin).run().ok();
    assert!(out.get("ips").is_none(), "{out}");
    let eth0 = link_json(Some(&ns), "eth0");
    assert!(addrs(&eth0).is_empty());
    assert_eq!(eth0["operstate"], "UP");
    call("DEL", &ns, "ctr-l2", &l2, &bin).run().ok();
}

#[test]
fn bad_configs_and_failures_leave_nothing_behind() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-bad"));
    let ns = Netns::new();
    for (extra, code) in [
        (json!({"vlan": 5000}), 7),
        (json!({"hairpinMode": true, "promiscMode": true}), 7),
        (json!({"vlanTrunk": [{"minID": 10}]}), 7),
        (json!({"mtu": -1}), 7),
        (json!({"mac": "nope"}), 7),
    ] {
        call("ADD", &ns, "ctr-bad", &conf("1.0.0", &store, extra), &bin)
            .run()
            .err(code);
    }
    // An existing non-bridge link with the bridge's name.
    host(&[
        "ip", "link", "add", "notabr", "type", "veth", "peer", "name", "notabr-p",
    ]);
    let e = call(
        "ADD",
        &ns,
        "ctr-bad",
        &conf("1.0.0", &store, json!({"bridge": "notabr"})),
        &bin,
    )
    .run()
    .err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("not a bridge")),
        "{e}"
    );
    // IPAM failure (range exhausted) after the veth exists: veth removed.
    let tiny = json!({"bridge": "cni-tiny", "ipam": {"type": "host-local", "subnet": "10.99.0.0/30", "dataDir": store.0}});
    let other = Netns::new();
    call(
        "ADD",
        &other,
        "ctr-first",
        &conf("1.0.0", &store, tiny.clone()),
        &bin,
    )
    .run()
    .ok();
    call("ADD", &ns, "ctr-second", &conf("1.0.0", &store, tiny), &bin)
        .run()
        .err(999);
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    // The requested MAC is used.
    let out = call(
        "ADD",
        &ns,
        "ctr-mac",
        &conf("1.0.0", &store, json!({})),
        &bin,
    )
    .set("CNI_ARGS", "IgnoreUnknown=1;MAC=0a:58:0a:58:00:99")
    .run()
    .ok();
    assert_eq!(out["interfaces"][2]["mac"], "0a:58:0a:58:00:99");
}

/// ipMasq's rules are written while the container side is configured: an
/// ADD that fails after they started (here: the bridge holds another address
/// of the subnet) removes them, with the address and the veth.
#[test]
fn a_failure_after_ipmasq_started_removes_the_masquerading() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-mq"));
    host(&["ip", "link", "add", "cni-mq", "type", "bridge"]);
    host(&["ip", "addr", "add", "10.88.0.254/24", "dev", "cni-mq"]);
    let ns = Netns::new();
    let c = conf("1.0.0", &store, json!({"bridge": "cni-mq", "ipMasq": true}));
    let e = call("ADD", &ns, "ctr-mq", &c, &bin).run().err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("already has an IP address")),
        "{e}"
    );
    let nat = harness::iptables_table("nat");
    assert!(!nat.contains("ctr-mq"), "{nat}");
    let left: Vec<String> = std::fs::read_dir(store.0.join("br-net"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("10."))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    // The same ADD with the conflict gone succeeds and masquerades.
    host(&["ip", "addr", "del", "10.88.0.254/24", "dev", "cni-mq"]);
    call("ADD", &ns, "ctr-mq", &c, &bin).run().ok();
    assert!(harness::iptables_table("nat").contains("ctr-mq"));
    call("DEL", &ns, "ctr-mq", &c, &bin).run().ok();
    assert!(!harness::iptables_table("nat").contains("ctr-mq"));
}

/// The VLANs of a bridge port: (id, PVID, egress untagged), by id.
fn port_vlans(port: &str) -> Vec<(u64, bool, bool)> {
    let vlans = json_of(&host(&["bridge", "-j", "vlan", "show", "dev", port]));
    vlans[0]["vlans"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .flat_map(|v| {
            let flags = v["flags"].as_array().cloned().unwrap_or_default();
            let first = v["vlan"].as_u64().unwrap_or(0);
            // A range (vlan..vlanEnd) has the same flags for each id.
            let last = v["vlanEnd"].as_u64().unwrap_or(first);
            (first..=last).map(move |id| {
                (
                    id,
                    flags.contains(&json!("PVID")),
                    flags.contains(&json!("Egress Untagged")),
                )
            })
        })
        .collect()
}

fn host_port(out: &Value) -> String {
    out["interfaces"][1]["name"]
        .as_str()
        .expect("host veth")
        .to_string()
}

#[test]
fn vlan_access_and_trunk_ports() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-vlan"));
    let c = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-vlan", "isGateway": false, "vlan": 100, "vlanTrunk": [{"id": 200}, {"minID": 300, "maxID": 302}]}),
    );
    let ns = Netns::new();
    if let Err(reason) = kernel_supports("bridge", false, &["vlan_filtering", "1"]) {
        skip("vlan_access_and_trunk_ports", &reason);
        // Without VLAN filtering the bridge cannot be made: a clear error, nothing left.
        let e = call("ADD", &ns, "ctr-v", &c, &bin).run().err(999);
        assert!(
            e["msg"].as_str().is_some_and(|m| m.contains("cni-vlan")),
            "{e}"
        );
        assert!(!host(&["ip", "-o", "link"]).contains("veth"));
        assert!(!store.0.join("br-net").join("10.88.0.2").exists());
        return;
    }
    let out = call("ADD", &ns, "ctr-v", &c, &bin).run().ok();
    let port = host_port(&out);
    let ids: Vec<(u64, bool)> = port_vlans(&port)
        .into_iter()
        .map(|(id, pvid, _)| (id, pvid))
        .collect();
    assert_eq!(
        ids,
        [
            (100, true),
            (200, false),
            (300, false),
            (301, false),
            (302, false)
        ]
    );
    // The bridge filters VLANs; the access VLAN leaves the port untagged, the trunk tagged.
    let br = link_json(None, "cni-vlan");
    assert_eq!(br["linkinfo"]["info_data"]["vlan_filtering"], 1, "{br}");
    assert_eq!(
        port_vlans(&port),
        [
            (100, true, true),
            (200, false, false),
            (300, false, false),
            (301, false, false),
            (302, false, false)
        ]
    );
    call("CHECK", &ns, "ctr-v", &merged_prev(&c, &out), &bin)
        .run()
        .ok();

    // preserveDefaultVlan keeps VLAN 1 on the port (no longer its PVID).
    let keep = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-vlan", "isGateway": false, "vlan": 100, "preserveDefaultVlan": true}),
    );
    let ns_keep = Netns::new();
    let out_keep = call("ADD", &ns_keep, "ctr-keep", &keep, &bin).run().ok();
    assert_eq!(
        port_vlans(&host_port(&out_keep)),
        [(1, false, true), (100, true, true)]
    );

    // A trunk without an access VLAN: VLAN 1 is the native (untagged PVID) one.
    let trunk = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-vlan", "isGateway": false, "vlanTrunk": [{"id": 200}]}),
    );
    let ns_trunk = Netns::new();
    let out_trunk = call("ADD", &ns_trunk, "ctr-trunk", &trunk, &bin).run().ok();
    assert_eq!(
        port_vlans(&host_port(&out_trunk)),
        [(1, true, true), (200, false, false)]
    );

    // Ports in the same access VLAN reach each other; VLAN 1 (the trunk's
    // native one) is another VLAN and does not reach them.
    let ip = |out: &Value| harness::first_ip(out);
    assert!(pings(&ns, &ip(&out_keep)), "VLAN 100 <-> VLAN 100");
    assert!(!pings(&ns_trunk, &ip(&out)), "VLAN 1 -/-> VLAN 100");

    for (ns, id, c) in [
        (&ns, "ctr-v", &c),
        (&ns_keep, "ctr-keep", &keep),
        (&ns_trunk, "ctr-trunk", &trunk),
    ] {
        call("DEL", ns, id, c, &bin).run().ok();
    }
    assert!(!host(&["ip", "-o", "link"]).contains("veth"));
}

fn merged_prev(c: &Value, prev: &Value) -> Value {
    let mut c = c.clone();
    c["prevResult"] = prev.clone();
    c
}

#[test]
fn dual_stack_gateway_and_default_routes() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-dual"));
    let c = json!({
        "cniVersion": "1.1.0", "name": "br-dual", "type": "bridge", "bridge": "cni-dual",
        "isDefaultGateway": true,
        "ipam": {"type": "host-local", "dataDir": store.0, "ranges": [
            [{"subnet": "10.89.0.0/24"}], [{"subnet": "fd89::/64"}]
        ]}
    });
    let (a, b) = (Netns::new(), Netns::new());
    let out = call("ADD", &a, "ctr-a", &c, &bin).run().ok();
    call("ADD", &b, "ctr-b", &c, &bin).run().ok();
    assert_eq!(
        out["ips"],
        json!([
            {"address": "10.89.0.2/24", "gateway": "10.89.0.1", "interface": 2},
            {"address": "fd89::2/64", "gateway": "fd89::1", "interface": 2}
        ])
    );
    assert_eq!(
        out["routes"],
        json!([{"dst": "0.0.0.0/0", "gw": "10.89.0.1"}, {"dst": "::/0", "gw": "fd89::1"}])
    );
    let br = link_json(None, "cni-dual");
    let mut have = addrs(&br);
    have.sort();
    assert_eq!(have, ["10.89.0.1/24", "fd89::1/64"]);
    // The v6 address has left the tentative state (ADD waited for DAD).
    let v6 = a.sh("ip", &["-6", "addr", "show", "dev", "eth0"]);
    assert!(
        v6.contains("fd89::2/64") && !v6.contains("tentative"),
        "{v6}"
    );
    assert!(
        a.sh("ip", &["-6", "route", "show", "default"])
            .contains("via fd89::1")
    );
    let ping6 = std::process::Command::new("nsenter")
        .args([
            &format!("--net={}", a.path()),
            "ping",
            "-6",
            "-c1",
            "-W2",
            "fd89::3",
        ])
        .output()
        .expect("ping -6");
    assert!(ping6.status.success(), "v6 between containers");
    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    call("DEL", &b, "ctr-b", &c, &bin).run().ok();
}

#[test]
fn bridge_options_force_address_promisc_isolation_dad_and_disabled_interface() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-opts"));
    host(&["ip", "link", "add", "cni-opt", "type", "bridge"]);
    host(&["ip", "addr", "add", "10.88.0.254/24", "dev", "cni-opt"]);
    let base = json!({"bridge": "cni-opt"});
    let ns = Netns::new();
    // Another IPv4 address on the bridge is a conflict...
    let e = call(
        "ADD",
        &ns,
        "ctr-o",
        &conf("1.0.0", &store, base.clone()),
        &bin,
    )
    .run()
    .err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("already has an IP address")),
        "{e}"
    );
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    // ...that forceAddress replaces.
    let forced = json!({
        "bridge": "cni-opt", "forceAddress": true, "promiscMode": true,
        "portIsolation": true, "enabledad": true
    });
    let c = conf("1.0.0", &store, forced);
    let out = call("ADD", &ns, "ctr-o", &c, &bin).run().ok();
    let br = link_json(None, "cni-opt");
    assert_eq!(addrs(&br), ["10.88.0.1/24"]);
    assert!(
        br["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("PROMISC"))),
        "{br}"
    );
    let port = out["interfaces"][1]["name"]
        .as_str()
        .expect("host veth")
        .to_string();
    let hv = link_json(None, &port);
    assert_eq!(hv["linkinfo"]["info_slave_data"]["isolated"], true, "{hv}");
    let sysctl = |key: &str| ns.sh("sysctl", &["-n", key]).trim().to_string();
    assert_eq!(sysctl("net.ipv6.conf.eth0.enhanced_dad"), "1");
    assert_eq!(sysctl("net.ipv6.conf.eth0.accept_dad"), "1");
    assert_eq!(sysctl("net.ipv4.conf.eth0.arp_notify"), "1");
    call("DEL", &ns, "ctr-o", &c, &bin).run().ok();

    // disableContainerInterface: L2 only, the container end stays down.
    let mut disabled = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-opt", "disableContainerInterface": true}),
    );
    call("ADD", &ns, "ctr-d", &disabled, &bin).run().err(7);
    disabled.as_object_mut().map(|o| o.remove("ipam"));
    call("ADD", &ns, "ctr-d", &disabled, &bin).run().ok();
    assert_eq!(link_json(Some(&ns), "eth0")["operstate"], "DOWN");
    call("DEL", &ns, "ctr-d", &disabled, &bin).run().ok();
}

#[test]
fn the_bridge_keeps_the_mac_it_had_before_its_first_port() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-mac"));
    // A bridge the plugin makes: a port's MAC would be the lowest, yet the
    // bridge reports and keeps its own.
    let c = conf("1.0.0", &store, json!({"bridge": "cni-mac"}));
    let ns = Netns::new();
    let out = call("ADD", &ns, "ctr-m", &c, &bin).run().ok();
    let ifs = &out["interfaces"];
    assert_ne!(ifs[0]["mac"], ifs[1]["mac"], "{out}");
    assert_eq!(link_json(None, "cni-mac")["address"], ifs[0]["mac"]);
    call("DEL", &ns, "ctr-m", &c, &bin).run().ok();
    assert_eq!(link_json(None, "cni-mac")["address"], ifs[0]["mac"]);

    // A bridge made beforehand: the MAC it had before any port, for life.
    host(&["ip", "link", "add", "cni-mac2", "type", "bridge"]);
    let before = link_json(None, "cni-mac2")["address"].clone();
    let c2 = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-mac2", "ipam": {"type": "host-local", "subnet": "10.87.0.0/24", "dataDir": store.0}}),
    );
    let (a, b) = (Netns::new(), Netns::new());
    let out_a = call("ADD", &a, "ctr-a", &c2, &bin).run().ok();
    assert_eq!(out_a["interfaces"][0]["mac"], before);
    assert_ne!(out_a["interfaces"][1]["mac"], before);
    let out_b = call("ADD", &b, "ctr-b", &c2, &bin).run().ok();
    assert_eq!(out_b["interfaces"][0]["mac"], before);
    call("DEL", &a, "ctr-a", &c2, &bin).run().ok();
    call("DEL", &b, "ctr-b", &c2, &bin).run().ok();
    assert_eq!(link_json(None, "cni-mac2")["address"], before);

    // A bridge whose last port left has no MAC (all zeros): it keeps the one
    // it takes from the new port.
    host(&["ip", "link", "add", "cni-mac3", "type", "bridge"]);
    host(&[
        "ip", "link", "add", "mac3-a", "type", "veth", "peer", "name", "mac3-b",
    ]);
    host(&["ip", "link", "set", "mac3-a", "master", "cni-mac3"]);
    host(&["ip", "link", "del", "mac3-a"]);
    assert_eq!(link_json(None, "cni-mac3")["address"], "00:00:00:00:00:00");
    let c3 = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-mac3", "ipam": {"type": "host-local", "subnet": "10.86.0.0/24", "dataDir": store.0}}),
    );
    let out = call("ADD", &a, "ctr-a3", &c3, &bin).run().ok();
    let mac = &out["interfaces"][0]["mac"];
    assert_eq!(*mac, out["interfaces"][1]["mac"]);
    assert_eq!(link_json(None, "cni-mac3")["address"], *mac);
    call("DEL", &a, "ctr-a3", &c3, &bin).run().ok();
    assert_eq!(link_json(None, "cni-mac3")["address"], *mac);
}

#[test]
fn accept_ra_is_cleared_on_every_add() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-ra"));
    let c = conf("1.0.0", &store, json!({"bridge": "cni-ra"}));
    let accept_ra = || host(&["sysctl", "-n", "net.ipv6.conf.cni-ra.accept_ra"]);
    let (a, b) = (Netns::new(), Netns::new());
    call("ADD", &a, "ctr-a", &c, &bin).run().ok();
    assert_eq!(accept_ra().trim(), "0");
    // Turned back on behind the plugin's back: the next ADD clears it again.
    host(&["sysctl", "-qw", "net.ipv6.conf.cni-ra.accept_ra=2"]);
    call("ADD", &b, "ctr-b", &c, &bin).run().ok();
    assert_eq!(accept_ra().trim(), "0");
    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    call("DEL", &b, "ctr-b", &c, &bin).run().ok();
}

#[test]
fn every_vlan_the_kernel_gives_a_new_port_is_removed() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-pvid"));
    let c = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-pvid", "isGateway": false, "vlan": 100}),
    );
    let ns = Netns::new();
    if let Err(reason) = kernel_supports("bridge", false, &["vlan_filtering", "1"]) {
        skip("every_vlan_the_kernel_gives_a_new_port_is_removed", &reason);
        // The port's VLANs are read fine (there are none); adding one fails
        // and the veth goes again.
        host(&["ip", "link", "add", "cni-pvid", "type", "bridge"]);
        call("ADD", &ns, "ctr-p", &c, &bin).run().err(999);
        assert!(!host(&["ip", "-o", "link"]).contains("veth"));
        return;
    }
    // New ports get the bridge's default PVID, here 7 rather than 1.
    host(&[
        "ip",
        "link",
        "add",
        "cni-pvid",
        "type",
        "bridge",
        "vlan_filtering",
        "1",
        "vlan_default_pvid",
        "7",
    ]);
    let out = call("ADD", &ns, "ctr-p", &c, &bin).run().ok();
    assert_eq!(port_vlans(&host_port(&out)), [(100, true, true)]);
    // preserveDefaultVlan keeps it (no longer the PVID).
    let mut keep = c.clone();
    keep["preserveDefaultVlan"] = json!(true);
    let ns_keep = Netns::new();
    let out_keep = call("ADD", &ns_keep, "ctr-k", &keep, &bin).run().ok();
    assert_eq!(
        port_vlans(&host_port(&out_keep)),
        [(7, false, true), (100, true, true)]
    );
    call("DEL", &ns, "ctr-p", &c, &bin).run().ok();
    call("DEL", &ns_keep, "ctr-k", &keep, &bin).run().ok();
}

#[test]
fn vlan_gateway_is_a_veth_port_of_that_vlan() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-vgw"));
    // `<bridge>.<vlan>` must be a link name: checked before anything is made.
    let long = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-vgw-longnam", "vlan": 100}),
    );
    let ns = Netns::new();
    call("ADD", &ns, "ctr-l", &long, &bin).run().err(7);
    assert!(!host(&["ip", "-o", "link"]).contains("cni-vgw-longnam"));

    let c = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-vgw", "vlan": 100, "isDefaultGateway": true}),
    );
    if let Err(reason) = kernel_supports("bridge", false, &["vlan_filtering", "1"]) {
        skip("vlan_gateway_is_a_veth_port_of_that_vlan", &reason);
        return;
    }
    let out = call("ADD", &ns, "ctr-g", &c, &bin).run().ok();
    // interfaces: bridge, host veth, container, then the gateway (no sandbox);
    // the IP stays on the container's (2).
    let ifs = out["interfaces"].as_array().expect("interfaces");
    assert_eq!(ifs.len(), 4, "{out}");
    let gw = link_json(None, "cni-vgw.100");
    assert_eq!(
        ifs[3],
        json!({"name": "cni-vgw.100", "mac": gw["address"].clone()})
    );
    assert_eq!(
        out["ips"],
        json!([{"address": "10.88.0.2/24", "gateway": "10.88.0.1", "interface": 2}])
    );
    // The gateway address is on the veth, up in the host namespace, not on the bridge.
    assert_eq!(gw["linkinfo"]["info_kind"], "veth");
    assert_eq!(addrs(&gw), ["10.88.0.1/24"]);
    assert!(
        gw["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("UP"))),
        "{gw}"
    );
    assert!(addrs(&link_json(None, "cni-vgw")).is_empty());
    // Its peer is a port of the bridge in VLAN 100 only, untagged.
    // `ip -j` names a peer in the same namespace ("link"), not its index.
    let peer = link_json(None, gw["link"].as_str().expect("peer in the host"));
    assert_eq!(peer["master"], "cni-vgw", "{peer}");
    let peer_name = peer["ifname"].as_str().expect("peer name").to_string();
    assert_eq!(port_vlans(&peer_name), [(100, true, true)]);
    assert!(
        pings(&ns, "10.88.0.1"),
        "container reaches its VLAN gateway"
    );
    call("CHECK", &ns, "ctr-g", &merged_prev(&c, &out), &bin)
        .run()
        .ok();
    assert_eq!(
        json_of(&ns.sh("ip", &["-j", "route", "show", "default"]))[0]["gateway"],
        "10.88.0.1"
    );

    // A second ADD reuses the gateway and reports it again, at the same place.
    let ns2 = Netns::new();
    let out2 = call("ADD", &ns2, "ctr-g2", &c, &bin).run().ok();
    assert_eq!(out2["interfaces"][3], ifs[3], "{out2}");
    assert_eq!(link_json(None, "cni-vgw.100")["link"], gw["link"]);
    assert!(pings(&ns2, "10.88.0.2"), "containers share VLAN 100");

    // DEL leaves the gateway, as it leaves the bridge.
    call("DEL", &ns, "ctr-g", &c, &bin).run().ok();
    call("DEL", &ns2, "ctr-g2", &c, &bin).run().ok();
    assert_eq!(addrs(&link_json(None, "cni-vgw.100")), ["10.88.0.1/24"]);
}

/// `groupFwdMask` (upstream main, not yet released): the mask goes to the
/// bridge it creates and, on every ADD, to one that exists; 0 leaves the
/// bridge's own; bits the kernel refuses and values out of range are refused
/// before anything is made.
#[test]
fn group_fwd_mask_is_written_to_the_bridge() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("br-gfm"));
    let mask = |br: &str| {
        let out = host(&["ip", "-d", "link", "show", "dev", br]);
        let mut words = out.split_whitespace();
        words.find(|w| *w == "group_fwd_mask");
        words.next().unwrap_or_default().to_string()
    };
    let (a, b, c) = (Netns::new(), Netns::new(), Netns::new());
    let made = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-gfm", "groupFwdMask": 16384}),
    );
    call("ADD", &a, "ctr-a", &made, &bin).run().ok();
    assert_eq!(mask("cni-gfm"), "0x4000", "set at creation");
    let zero = conf(
        "1.0.0",
        &store,
        json!({"bridge": "cni-gfm", "groupFwdMask": 0}),
    );
    call("ADD", &b, "ctr-b", &zero, &bin).run().ok();
    assert_eq!(mask("cni-gfm"), "0x4000", "0 leaves it");
    host(&[
        "ip",
        "link",
        "set",
        "cni-gfm",
        "type",
        "bridge",
        "group_fwd_mask",
        "0",
    ]);
    call("ADD", &c, "ctr-c", &made, &bin).run().ok();
    assert_eq!(mask("cni-gfm"), "0x4000", "set again on an existing bridge");
    for (ns, id, c) in [
        (&a, "ctr-a", &made),
        (&b, "ctr-b", &zero),
        (&c, "ctr-c", &made),
    ] {
        call("DEL", ns, id, c, &bin).run().ok();
    }

    let d = Netns::new();
    for bad in [json!(1), json!(0x4004), json!(65536), json!(-1)] {
        let c = conf(
            "1.0.0",
            &store,
            json!({"bridge": "cni-gfm-bad", "groupFwdMask": bad}),
        );
        let e = call("ADD", &d, "ctr-d", &c, &bin).run().err(7);
        assert!(
            e["msg"]
                .as_str()
                .is_some_and(|m| m.contains("invalid groupFwdMask")),
            "{e}"
        );
    }
    assert!(
        !host(&["ip", "-o", "link"]).contains("cni-gfm-bad"),
        "no bridge made"
    );
}
