//! tap end to end: a persistent tap in the container with owner, group, MTU,
//! MAC, a bridge in the container, IPAM; CHECK; DEL idempotence.

mod harness;

use harness::{Call, Netns, TempDir, enter_test_host, plugin_dir};
use serde_json::{Value, json};

fn call(cmd: &str, ns: &Netns, c: &Value, bin: &TempDir) -> Call {
    Call::new("tap", cmd, ns.path(), &c.to_string()).path(bin)
}

fn tap_json(ns: &Netns) -> Value {
    let out = ns.sh("ip", &["-j", "-d", "addr", "show", "dev", "eth0"]);
    serde_json::from_str::<Value>(&out).expect("ip json")[0].clone()
}

#[test]
fn tap_with_owner_group_mtu_mac_and_ipam() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = json!({
        "cniVersion": "1.0.0", "name": "tap-net", "type": "tap",
        "owner": 42420, "group": 42421, "mtu": 1300, "mac": "0a:58:0a:33:00:05",
        "ipam": {"type": "static", "addresses": [{"address": "10.33.0.5/24"}]}
    });
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(
        out["interfaces"],
        json!([{"name": "eth0", "mac": "0a:58:0a:33:00:05", "sandbox": ns.path()}])
    );
    assert_eq!(
        out["ips"],
        json!([{"address": "10.33.0.5/24", "interface": 0}])
    );
    let tap = tap_json(&ns);
    assert_eq!(tap["linkinfo"]["info_kind"], "tun", "{tap}");
    let data = &tap["linkinfo"]["info_data"];
    assert_eq!(data["type"], "tap", "{tap}");
    assert_eq!(data["user"], 42420, "{tap}");
    assert_eq!(data["group"], 42421, "{tap}");
    assert_eq!(
        data["pi"], true,
        "reference netlink path keeps packet info: {tap}"
    );
    assert_eq!(data["persist"], true, "{tap}");
    assert_eq!(data["vnet_hdr"], true, "{tap}");
    assert_eq!(tap["mtu"], 1300);
    assert_eq!(tap["addr_info"][0]["local"], "10.33.0.5");

    let mut checked = c.clone();
    checked["prevResult"] = out;
    call("CHECK", &ns, &checked, &bin).run().ok();
    call("DEL", &ns, &c, &bin).run().ok();
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    call("DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn tap_without_ipam_joins_a_bridge_in_the_container() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    ns.sh("ip", &["link", "add", "br-vm", "type", "bridge"]);
    let c = json!({
        "cniVersion": "1.0.0", "name": "tap-net", "type": "tap",
        "bridge": "br-vm", "multiQueue": true
    });
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert!(out.get("ips").is_none(), "{out}");
    let tap = tap_json(&ns);
    assert_eq!(tap["master"], "br-vm");
    assert_eq!(tap["linkinfo"]["info_data"]["multi_queue"], true, "{tap}");
    assert!(
        tap["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("UP"))),
        "{tap}"
    );
    // A second ADD with the same name fails and leaves the first tap alone.
    call("ADD", &ns, &c, &bin).run().err(999);
    assert_eq!(tap_json(&ns)["master"], "br-vm");
    call("DEL", &ns, &c, &bin).run().ok();
    // selinuxContext: never ignored. Without SELinux the reference's exec label
    // write fails, and so does ADD; with it, cni-multi refuses (no exec).
    let mut selinux = c.clone();
    selinux["selinuxContext"] = json!("system_u:system_r:container_t:s0");
    if std::path::Path::new("/sys/fs/selinux/enforce").exists() {
        let e = call("ADD", &ns, &selinux, &bin).run().err(7);
        assert!(
            e["msg"]
                .as_str()
                .unwrap_or_default()
                .contains("not supported"),
            "{e}"
        );
    } else {
        let e = call("ADD", &ns, &selinux, &bin).run().err(999);
        assert_eq!(
            e["msg"],
            "failed set socket label: write /proc/thread-self/attr/exec: invalid argument"
        );
    }
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0")),
        "no tap made"
    );
    // DEL does not care about the label.
    call("DEL", &ns, &selinux, &bin).run().ok();
    // A missing bridge: clear error, no tap left.
    let mut no_bridge = c.clone();
    no_bridge["bridge"] = json!("nope");
    call("ADD", &ns, &no_bridge, &bin).run().err(999);
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("tap"))
    );
}
