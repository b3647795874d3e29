//! host-device end to end: a host veth end moved into the container by name and
//! by MAC, configured, reachable, and moved back with its name on DEL; a move
//! that fails half-way (either way) leaves the device where it was, as it was.

mod harness;

use harness::{Call, Netns, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Value, json};

fn call(cmd: &str, ns: &Netns, c: &Value, bin: &TempDir) -> Call {
    Call::new("host-device", cmd, ns.path(), &c.to_string()).path(bin)
}

fn host_links() -> String {
    run_in(None, "ip", &["-o", "link"])
}

fn make_device() {
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "hd-dev",
            "address",
            "0a:58:0a:16:00:02",
            "type",
            "veth",
            "peer",
            "name",
            "hd-peer",
        ],
    );
    run_in(
        None,
        "ip",
        &["addr", "add", "10.22.0.1/24", "dev", "hd-peer"],
    );
    run_in(None, "ip", &["link", "set", "hd-peer", "up"]);
}

#[test]
fn device_moves_in_by_name_and_back_on_del() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = json!({
        "cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "device": "hd-dev",
        "ipam": {"type": "static", "addresses": [{"address": "10.22.0.2/24"}]}
    });
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(
        out["interfaces"],
        json!([{"name": "eth0", "mac": "0a:58:0a:16:00:02", "sandbox": ns.path()}])
    );
    assert!(!host_links().contains("hd-dev"), "moved out of the host");
    let link: Value =
        serde_json::from_str(&ns.sh("ip", &["-j", "link", "show", "eth0"])).expect("json");
    assert_eq!(link[0]["ifalias"], "hd-dev", "{link}");
    let ping = std::process::Command::new("nsenter")
        .args([
            &format!("--net={}", ns.path()),
            "ping",
            "-c1",
            "-W2",
            "10.22.0.1",
        ])
        .output()
        .expect("ping");
    assert!(
        ping.status.success(),
        "container reaches the peer through the device"
    );

    let mut checked = c.clone();
    checked["prevResult"] = out;
    call("CHECK", &ns, &checked, &bin).run().ok();

    call("DEL", &ns, &c, &bin).run().ok();
    let back: Value =
        serde_json::from_str(&run_in(None, "ip", &["-j", "link", "show", "hd-dev"])).expect("json");
    assert_eq!(back[0]["address"], "0a:58:0a:16:00:02");
    assert!(back[0].get("ifalias").is_none_or(|a| a == ""), "{back}");
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    call("DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn device_found_by_mac_and_missing_devices_fail() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "hwaddr": "0A:58:0A:16:00:02"});
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(out["interfaces"][0]["name"], "eth0");
    assert!(ns.sh("ip", &["link", "show", "eth0"]).contains("UP"));
    call("DEL", &ns, &c, &bin).run().ok();
    assert!(host_links().contains("hd-dev"));

    let none = json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device"});
    call("ADD", &ns, &none, &bin).run().err(7);
    let missing =
        json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "device": "nope0"});
    call("ADD", &ns, &missing, &bin).run().err(999);
    let escaping = json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "kernelpath": "/sys/devices/../../etc"});
    call("ADD", &ns, &escaping, &bin).run().err(7);
    let pci =
        json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "pciBusID": "../x"});
    call("ADD", &ns, &pci, &bin).run().err(7);
    // IPAM failure after the move gives the device back to the host.
    let bad_ipam = json!({
        "cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "device": "hd-dev",
        "ipam": {"type": "static", "addresses": [{"address": "10.22.0.2/24"}], "routes": [{"dst": "10.99.0.0/16", "gw": "10.77.0.1"}]}
    });
    call("ADD", &ns, &bad_ipam, &bin).run().err(999);
    assert!(
        host_links().contains("hd-dev"),
        "device returned after a failed ADD"
    );
}

fn link_json(netns: Option<&Netns>, name: &str) -> Value {
    let out = match netns {
        Some(ns) => ns.sh("ip", &["-j", "link", "show", name]),
        None => run_in(None, "ip", &["-j", "link", "show", name]),
    };
    serde_json::from_str::<Value>(&out).expect("ip json")[0].clone()
}

fn admin_up(link: &Value) -> bool {
    link["flags"]
        .as_array()
        .is_some_and(|f| f.contains(&json!("UP")))
}

fn alias(link: &Value) -> &str {
    link.get("ifalias").and_then(Value::as_str).unwrap_or("")
}

#[test]
fn the_device_arrives_up_with_its_alias_and_returns_down_without_it() {
    enter_test_host();
    make_device();
    run_in(None, "ip", &["link", "set", "hd-dev", "up"]);
    let bin = plugin_dir();
    let ns = Netns::new();
    let c =
        json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "device": "hd-dev"});
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(
        out,
        json!({"cniVersion": "1.0.0",
               "interfaces": [{"name": "eth0", "mac": "0a:58:0a:16:00:02", "sandbox": ns.path()}]}),
        "without IPAM: the link alone, no DNS"
    );
    let inside = link_json(Some(&ns), "eth0");
    assert_eq!(alias(&inside), "hd-dev", "{inside}");
    assert!(admin_up(&inside), "{inside}");
    // Only the device and lo moved: nothing else of the host went along.
    assert_eq!(ns.sh("ip", &["-o", "link"]).lines().count(), 2);

    call("DEL", &ns, &c, &bin).run().ok();
    let back = link_json(None, "hd-dev");
    assert_eq!(alias(&back), "", "{back}");
    assert!(!admin_up(&back), "left down, as the reference: {back}");
    assert_eq!(back["address"], "0a:58:0a:16:00:02");
}

#[test]
fn a_name_taken_in_the_container_leaves_the_device_in_the_host_as_it_was() {
    enter_test_host();
    make_device();
    run_in(None, "ip", &["link", "set", "hd-dev", "up"]);
    let bin = plugin_dir();
    let ns = Netns::new();
    ns.sh(
        "ip",
        &["link", "add", "eth0", "type", "veth", "peer", "name", "p0"],
    );
    let c =
        json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "device": "hd-dev"});
    let e = call("ADD", &ns, &c, &bin).run().err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with("failed to move link") && msg.contains("to container NS"),
        "{e}"
    );
    let host = link_json(None, "hd-dev");
    assert_eq!(host["address"], "0a:58:0a:16:00:02", "{host}");
    assert_eq!(alias(&host), "", "alias cleared again: {host}");
    assert!(admin_up(&host), "up again, as before ADD: {host}");
    let theirs = link_json(Some(&ns), "eth0");
    assert_eq!(theirs["link"], "p0", "the container's own eth0: {theirs}");
    assert_eq!(alias(&theirs), "");

    // A device that was down stays down after a failed ADD.
    run_in(None, "ip", &["link", "set", "hd-dev", "down"]);
    call("ADD", &ns, &c, &bin).run().err(999);
    assert!(!admin_up(&link_json(None, "hd-dev")));
}

#[test]
fn a_name_taken_in_the_host_leaves_the_device_in_the_container_as_it_was() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c =
        json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device", "device": "hd-dev"});
    call("ADD", &ns, &c, &bin).run().ok();
    // Something else took the device's host name meanwhile.
    run_in(
        None,
        "ip",
        &[
            "link", "add", "hd-dev", "type", "veth", "peer", "name", "hd-other",
        ],
    );
    let e = call("DEL", &ns, &c, &bin).run().err(999);
    assert!(
        e["msg"].as_str().unwrap_or_default().contains("to hostNS"),
        "{e}"
    );
    let inside = link_json(Some(&ns), "eth0");
    assert_eq!(inside["address"], "0a:58:0a:16:00:02", "{inside}");
    assert_eq!(
        alias(&inside),
        "hd-dev",
        "alias kept for the next DEL: {inside}"
    );
    assert!(admin_up(&inside), "up again in the container: {inside}");

    run_in(None, "ip", &["link", "del", "hd-dev"]);
    call("DEL", &ns, &c, &bin).run().ok();
    assert_eq!(
        link_json(None, "hd-dev")["address"],
        "0a:58:0a:16:00:02",
        "the device itself is back"
    );
}

#[test]
fn an_unknown_device_id_is_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device",
                   "device": "hd-dev", "runtimeConfig": {"deviceID": "0000:ff:1f.7"}});
    let e = call("ADD", &ns, &c, &bin).run().err(999);
    assert_eq!(
        e["msg"],
        "runtime config DeviceID 0000:ff:1f.7 not found or unsupported"
    );
}
