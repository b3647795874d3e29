//! vrf: config checks everywhere; VRF tests where the kernel has VRFs (they skip
//! with a printed reason here, asserting the clean failure instead).

use crate::harness;

use harness::{Call, Netns, enter_test_host, kernel_supports, plugin_dir, skip};
use serde_json::{Value, json};

fn setup() -> (Netns, Value) {
    let ns = Netns::new();
    ns.sh(
        "ip",
        &["link", "add", "eth0", "type", "veth", "peer", "name", "p0"],
    );
    ns.sh("ip", &["addr", "add", "10.95.0.2/24", "dev", "eth0"]);
    ns.sh("ip", &["link", "set", "eth0", "up"]);
    ns.sh("ip", &["link", "set", "p0", "up"]);
    ns.sh("ip", &["route", "add", "10.96.0.0/16", "via", "10.95.0.1"]);
    ns.sh("ip", &["addr", "add", "fd95::2/64", "dev", "eth0", "nodad"]);
    ns.sh("ip", &["route", "add", "fd96::/48", "via", "fd95::1"]);
    let prev = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
                      "ips": [{"address": "10.95.0.2/24", "interface": 0}]});
    (ns, prev)
}

#[test]
fn vrf_name_is_required() {
    enter_test_host();
    let bin = plugin_dir();
    let (ns, prev) = setup();
    for extra in [json!({}), json!({"vrfname": ""}), json!({"vrfname": "a/b"})] {
        let mut c = json!({"cniVersion": "1.0.0", "name": "v", "type": "vrf", "prevResult": prev});
        if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        Call::new("vrf", "ADD", ns.path(), &c.to_string())
            .path(&bin)
            .run()
            .err(7);
    }
}

#[test]
fn interface_joins_the_vrf_with_its_routes() {
    enter_test_host();
    let bin = plugin_dir();
    let (ns, prev) = setup();
    let c = json!({"cniVersion": "1.0.0", "name": "v", "type": "vrf", "vrfname": "blue", "prevResult": prev});
    if let Err(reason) = kernel_supports("vrf", false, &["table", "10"]) {
        skip("interface_joins_the_vrf_with_its_routes", &reason);
        let e = Call::new("vrf", "ADD", ns.path(), &c.to_string())
            .path(&bin)
            .run()
            .err(999);
        assert!(e["msg"].as_str().is_some_and(|m| m.contains("blue")), "{e}");
        assert!(!ns.sh("ip", &["link", "show", "eth0"]).contains("master"));
        Call::new("vrf", "DEL", ns.path(), &c.to_string())
            .path(&bin)
            .run()
            .ok();
        return;
    }
    let out = Call::new("vrf", "ADD", ns.path(), &c.to_string())
        .path(&bin)
        .run()
        .ok();
    assert_eq!(out, prev);
    assert!(
        ns.sh("ip", &["link", "show", "eth0"])
            .contains("master blue")
    );
    // Created up, with the first free table.
    let vrf = ns.sh("ip", &["-d", "link", "show", "blue"]);
    assert!(vrf.contains("vrf table 1 ") && vrf.contains(",UP"), "{vrf}");
    let table = ns.sh("ip", &["route", "show", "vrf", "blue"]);
    assert!(table.contains("10.96.0.0/16 via 10.95.0.1"), "{table}");
    assert!(table.contains("10.95.0.0/24 dev eth0"), "{table}");
    let table1 = ns.sh("ip", &["route", "show", "table", "1"]);
    assert!(table1.contains("10.96.0.0/16 via 10.95.0.1"), "{table1}");
    let main = ns.sh("ip", &["route", "show", "table", "main"]);
    assert!(!main.contains("10.96.0.0/16"), "moved out of main: {main}");
    // IPv6 addresses and routes survive the move (enslaving drops them).
    let v6 = ns.sh("ip", &["-6", "addr", "show", "dev", "eth0"]);
    assert!(v6.contains("fd95::2/64"), "{v6}");
    let table6 = ns.sh("ip", &["-6", "route", "show", "vrf", "blue"]);
    assert!(table6.contains("fd96::/48 via fd95::1"), "{table6}");
    Call::new("vrf", "CHECK", ns.path(), &c.to_string())
        .path(&bin)
        .run()
        .ok();
    Call::new("vrf", "DEL", ns.path(), &c.to_string())
        .path(&bin)
        .run()
        .ok();
    assert!(!ns.sh("ip", &["-o", "link"]).contains("blue"));
    assert!(!ns.sh("ip", &["link", "show", "eth0"]).contains("master"));
    // A second DEL finds nothing to do.
    Call::new("vrf", "DEL", ns.path(), &c.to_string())
        .path(&bin)
        .run()
        .ok();
}

/// Two interfaces in one VRF with a configured table: the VRF stays while a
/// member is left, a different table for it is refused, and the last DEL
/// removes it.
#[test]
fn vrf_with_a_table_is_shared_and_goes_with_its_last_member() {
    enter_test_host();
    let bin = plugin_dir();
    let (ns, prev) = setup();
    if let Err(reason) = kernel_supports("vrf", false, &["table", "10"]) {
        skip(
            "vrf_with_a_table_is_shared_and_goes_with_its_last_member",
            &reason,
        );
        return;
    }
    ns.sh(
        "ip",
        &["link", "add", "eth1", "type", "veth", "peer", "name", "p1"],
    );
    ns.sh("ip", &["addr", "add", "10.97.0.2/24", "dev", "eth1"]);
    ns.sh("ip", &["link", "set", "eth1", "up"]);
    ns.sh("ip", &["link", "set", "p1", "up"]);
    let conf = |ifname: &str, table: u32| {
        let c = json!({"cniVersion": "1.0.0", "name": "v", "type": "vrf", "vrfname": "red",
                       "table": table, "prevResult": prev});
        Call::new("vrf", "ADD", ns.path(), &c.to_string())
            .set("CNI_IFNAME", ifname)
            .path(&bin)
    };
    conf("eth0", 42).run().ok();
    let vrf = ns.sh("ip", &["-d", "link", "show", "red"]);
    assert!(vrf.contains("vrf table 42 "), "{vrf}");
    let e = conf("eth1", 43).run().err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("different table")),
        "{e}"
    );
    conf("eth1", 42).run().ok();
    assert!(
        ns.sh("ip", &["link", "show", "eth1"])
            .contains("master red")
    );
    let table = ns.sh("ip", &["route", "show", "table", "42"]);
    assert!(
        table.contains("10.96.0.0/16 via 10.95.0.1") && table.contains("10.97.0.0/24 dev eth1"),
        "{table}"
    );
    conf("eth0", 42).set("CNI_COMMAND", "DEL").run().ok();
    assert!(!ns.sh("ip", &["link", "show", "eth0"]).contains("master"));
    assert!(
        ns.sh("ip", &["link", "show", "eth1"])
            .contains("master red")
    );
    conf("eth1", 42).set("CNI_COMMAND", "DEL").run().ok();
    assert!(!ns.sh("ip", &["-o", "link"]).contains("red"));
}
