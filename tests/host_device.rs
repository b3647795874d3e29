//! host-device end to end: a host veth end moved into the container by name and
//! by MAC, configured, reachable, and moved back with its name on DEL.

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
