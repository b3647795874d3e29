//! vrf: config checks everywhere; VRF tests where the kernel has VRFs (they skip
//! with a printed reason here, asserting the clean failure instead).

mod harness;

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
    let table = ns.sh("ip", &["route", "show", "vrf", "blue"]);
    assert!(table.contains("10.96.0.0/16 via 10.95.0.1"), "{table}");
    Call::new("vrf", "CHECK", ns.path(), &c.to_string())
        .path(&bin)
        .run()
        .ok();
    Call::new("vrf", "DEL", ns.path(), &c.to_string())
        .path(&bin)
        .run()
        .ok();
    assert!(!ns.sh("ip", &["-o", "link"]).contains("blue"));
}
