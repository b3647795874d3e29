//! host-device end to end: a host veth end moved into the container by name and
//! by MAC, configured, reachable, and moved back with its name on DEL; a move
//! that fails half-way (either way) leaves the device where it was, as it was.
//! DEL moves back only the device ADD recorded, whatever the container did to
//! the links in its namespace (names, aliases, veth pairs and taps of its own,
//! a macvlan or ipvlan built on the device); a device a container could copy (a
//! tap; a macvlan in a pod with its own user namespace) is never moved back,
//! and DEL succeeds.

use crate::harness;

use harness::{
    Call, Netns, TempDir, enter_test_host, kernel_supports, merged, plugin_dir, run_in, skip,
};
use serde_json::{Value, json};

/// A host-device config whose state lives in the test's own directory
/// (every test uses the same container ID and ifname).
fn conf(state: &TempDir, keys: Value) -> Value {
    merged(
        json!({"cniVersion": "1.0.0", "name": "hd-net", "type": "host-device",
               "dataDir": state.0.join("state")}),
        keys,
    )
}

/// The state files ADD left.
fn state_files(state: &TempDir) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(state.0.join("state")) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}

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
    let state = TempDir::new("hd-state");
    let c = conf(
        &state,
        json!({"device": "hd-dev",
               "ipam": {"type": "static", "addresses": [{"address": "10.22.0.2/24"}]}}),
    );
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
    let state = TempDir::new("hd-state");
    let c = conf(&state, json!({"hwaddr": "0A:58:0A:16:00:02"}));
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(out["interfaces"][0]["name"], "eth0");
    assert!(ns.sh("ip", &["link", "show", "eth0"]).contains("UP"));
    call("DEL", &ns, &c, &bin).run().ok();
    assert!(host_links().contains("hd-dev"));

    assert!(state_files(&state).is_empty(), "DEL removed the state");

    let none = conf(&state, json!({}));
    call("ADD", &ns, &none, &bin).run().err(7);
    let missing = conf(&state, json!({"device": "nope0"}));
    call("ADD", &ns, &missing, &bin).run().err(999);
    let escaping = conf(&state, json!({"kernelpath": "/sys/devices/../../etc"}));
    call("ADD", &ns, &escaping, &bin).run().err(7);
    let pci = conf(&state, json!({"pciBusID": "../x"}));
    call("ADD", &ns, &pci, &bin).run().err(7);
    let data_dir = conf(
        &state,
        json!({"device": "hd-dev", "dataDir": "/run/../etc"}),
    );
    call("ADD", &ns, &data_dir, &bin).run().err(7);
    // IPAM failure after the move gives the device back to the host.
    let bad_ipam = conf(
        &state,
        json!({"device": "hd-dev",
               "ipam": {"type": "static", "addresses": [{"address": "10.22.0.2/24"}], "routes": [{"dst": "10.99.0.0/16", "gw": "10.77.0.1"}]}}),
    );
    call("ADD", &ns, &bad_ipam, &bin).run().err(999);
    assert!(
        host_links().contains("hd-dev"),
        "device returned after a failed ADD"
    );
    assert!(
        state_files(&state).is_empty(),
        "no state after a failed ADD"
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
    let state = TempDir::new("hd-state");
    let c = conf(&state, json!({"device": "hd-dev"}));
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
    let state = TempDir::new("hd-state");
    let c = conf(&state, json!({"device": "hd-dev"}));
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

    assert!(
        state_files(&state).is_empty(),
        "no state after a failed ADD"
    );
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
    let state = TempDir::new("hd-state");
    let c = conf(&state, json!({"device": "hd-dev"}));
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

const DEV_MAC: &str = "0a:58:0a:16:00:02";

/// Inside the container: a veth pair of its own, one end named `name`, with
/// the real device's MAC and `alias`.
fn fake_veth(ns: &Netns, name: &str, alias: &str) {
    ns.sh(
        "ip",
        &[
            "link",
            "add",
            name,
            "address",
            DEV_MAC,
            "type",
            "veth",
            "peer",
            "name",
            "fake-peer",
        ],
    );
    ns.sh("ip", &["link", "set", name, "alias", alias]);
}

/// The device is home: in the host under its name, paired with hd-peer.
fn assert_device_home() {
    let back = link_json(None, "hd-dev");
    assert_eq!(back["address"], DEV_MAC, "{back}");
    assert_eq!(back["link"], "hd-peer", "the real device: {back}");
    assert_eq!(alias(&back), "", "{back}");
}

/// A rename as a pod makes one: older kernels (before 6.2) refuse to rename
/// a link that is up, so down first.
fn rename_in(ns: &Netns, from: &str, to: &str) {
    ns.sh("ip", &["link", "set", from, "down"]);
    ns.sh("ip", &["link", "set", from, "name", to]);
}

/// What a rename or move of a host link would change: its index, name, MAC, addresses.
fn host_link_identity(name: &str) -> (Value, Value, Value, String) {
    let link = link_json(None, name);
    // IPv4 only: an IPv6 link-local address changes state (DAD) by itself.
    let addrs = run_in(None, "ip", &["-4", "-o", "addr", "show", "dev", name]);
    (
        link["ifindex"].clone(),
        link["ifname"].clone(),
        link["address"].clone(),
        addrs,
    )
}

fn no_link(ns: &Netns, name: &str) -> bool {
    ns.sh("ip", &["-o", "link"])
        .lines()
        .all(|l| !l.contains(&format!(" {name}:")) && !l.contains(&format!(" {name}@")))
}

#[test]
fn a_container_swapping_in_its_own_veth_with_the_alias_cannot_fool_del() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"device": "hd-dev"}));
    call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(state_files(&state).len(), 1, "ADD recorded the device");
    // The container renames the real device away and dresses up a veth of
    // its own as CNI_IFNAME, alias and MAC included.
    rename_in(&ns, "eth0", "real0");
    fake_veth(&ns, "eth0", "hd-dev");

    let e = call("DEL", &ns, &c, &bin).run().err(8);
    let msg = e["msg"].as_str().unwrap_or_default();
    // Names both: what ADD recorded and what sits at CNI_IFNAME.
    assert!(
        msg.contains("\"hd-dev\"") && msg.contains("peer in the host"),
        "{e}"
    );
    assert!(
        msg.contains("\"eth0\"") && msg.contains("peer in the container"),
        "{e}"
    );
    // The host did not get the container's veth...
    let fake = link_json(Some(&ns), "eth0");
    assert_eq!(fake["link"], "fake-peer", "still the container's: {fake}");
    // ...and the real device is not lost: found under its other name, home.
    assert_device_home();
    assert!(no_link(&ns, "real0"));
    // The retried DEL sees the device home and succeeds; the fake stays the pod's.
    call("DEL", &ns, &c, &bin).run().ok();
    assert!(state_files(&state).is_empty(), "state removed");
    assert_eq!(link_json(Some(&ns), "eth0")["link"], "fake-peer");
}

#[test]
fn a_container_hiding_the_device_and_faking_it_gets_nothing_moved() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let hideout = Netns::new();
    let c = conf(&state, json!({"device": "hd-dev"}));
    call("ADD", &ns, &c, &bin).run().ok();
    // The real device goes to a namespace of the container's own making
    // (here, one the test holds), a fake takes its place.
    let tid = hideout
        .path()
        .rsplit('/')
        .nth(2)
        .unwrap_or_default()
        .to_string();
    ns.sh("ip", &["link", "set", "eth0", "netns", &tid]);
    fake_veth(&ns, "eth0", "hd-dev");

    let e = call("DEL", &ns, &c, &bin).run().err(8);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("\"hd-dev\"") && msg.contains("\"eth0\""),
        "{e}"
    );
    assert!(
        !host_links().contains("hd-dev"),
        "nothing moved to the host"
    );
    assert_eq!(link_json(Some(&ns), "eth0")["link"], "fake-peer");
    assert_eq!(state_files(&state).len(), 1, "state kept for the next DEL");
    // The device back in the pod: the next DEL returns it.
    rename_in(&hideout, "eth0", "mine");
    let pod_tid = ns.path().rsplit('/').nth(2).unwrap_or_default().to_string();
    hideout.sh("ip", &["link", "set", "mine", "netns", &pod_tid]);
    let e = call("DEL", &ns, &c, &bin).run().err(8);
    assert!(
        e["msg"].as_str().unwrap_or_default().contains("\"eth0\""),
        "{e}"
    );
    assert_device_home();
}

#[test]
fn an_alias_naming_an_existing_host_link_does_not_break_del() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"device": "hd-dev"}));
    call("ADD", &ns, &c, &bin).run().ok();
    let peer_before = host_link_identity("hd-peer");
    ns.sh("ip", &["link", "set", "eth0", "alias", "hd-peer"]);

    call("DEL", &ns, &c, &bin).run().ok();
    assert_device_home();
    assert_eq!(host_link_identity("hd-peer"), peer_before, "untouched");
    assert!(no_link(&ns, "eth0"));
    assert!(state_files(&state).is_empty(), "state removed");
    call("DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn a_recorded_device_under_another_name_in_the_pod_comes_home() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"hwaddr": DEV_MAC}));
    call("ADD", &ns, &c, &bin).run().ok();
    rename_in(&ns, "eth0", "moved0");
    ns.sh("ip", &["link", "set", "moved0", "alias", "elsewhere"]);
    call("DEL", &ns, &c, &bin).run().ok();
    assert_device_home();
    assert!(state_files(&state).is_empty());
}

/// ADD as the reference (or an older cni-multi) did it: no state file.
fn add_without_state(ns: &Netns, c: &Value, bin: &TempDir, state: &TempDir) {
    call("ADD", ns, c, bin).run().ok();
    let files = state_files(state);
    assert_eq!(files.len(), 1, "ADD recorded the device: {files:?}");
    std::fs::remove_file(&files[0]).expect("remove state");
}

#[test]
fn del_moves_back_a_device_added_without_state() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    for keys in [json!({"device": "hd-dev"}), json!({"hwaddr": DEV_MAC})] {
        let c = conf(&state, keys);
        add_without_state(&ns, &c, &bin, &state);
        assert_eq!(alias(&link_json(Some(&ns), "eth0")), "hd-dev");
        call("DEL", &ns, &c, &bin).run().ok();
        assert_device_home();
        assert!(no_link(&ns, "eth0"));
        call("DEL", &ns, &c, &bin).run().ok();
    }
}

#[test]
fn without_state_del_never_moves_back_a_veth_the_container_made() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"device": "hd-dev"}));
    add_without_state(&ns, &c, &bin, &state);
    rename_in(&ns, "eth0", "real0");
    fake_veth(&ns, "eth0", "hd-dev");
    // Left in the container and said so; DEL succeeds, as the reference's would.
    let out = call("DEL", &ns, &c, &bin).run();
    out.ok();
    assert!(
        out.stderr.contains("\"eth0\"") && out.stderr.contains("peer in the container"),
        "{}",
        out.stderr
    );
    assert!(
        !host_links().contains("hd-dev"),
        "nothing moved to the host"
    );
    assert_eq!(link_json(Some(&ns), "eth0")["link"], "fake-peer");
}

#[test]
fn without_state_an_alias_naming_an_existing_host_link_is_a_clear_error() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    // Found by MAC: the alias is the only record of the host name.
    let by_mac = conf(&state, json!({"hwaddr": DEV_MAC}));
    add_without_state(&ns, &by_mac, &bin, &state);
    let peer_before = host_link_identity("hd-peer");
    ns.sh("ip", &["link", "set", "eth0", "alias", "hd-peer"]);
    let e = call("DEL", &ns, &by_mac, &bin).run().err(8);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("alias \"hd-peer\"") && msg.contains("already"),
        "{e}"
    );
    assert_eq!(host_link_identity("hd-peer"), peer_before, "untouched");
    assert_eq!(
        alias(&link_json(Some(&ns), "eth0")),
        "hd-peer",
        "left as it was"
    );
    // Named by the config, the device goes home under that name, alias or not.
    let by_name = conf(&state, json!({"device": "hd-dev"}));
    call("DEL", &ns, &by_name, &bin).run().ok();
    assert_device_home();
}

const TAP_MAC: &str = "0a:58:0a:16:00:09";

/// A host tap, `hdtap0`: a device with no bus device, no permanent MAC and no peer.
fn make_tap() {
    run_in(
        None,
        "ip",
        &["tuntap", "add", "dev", "hdtap0", "mode", "tap"],
    );
    run_in(None, "ip", &["link", "set", "hdtap0", "address", TAP_MAC]);
}

/// The tun owner `ip -d` reports for a link (None: root's, or not a tun).
fn tun_owner(netns: Option<&Netns>, name: &str) -> Option<u64> {
    let out = match netns {
        Some(ns) => ns.sh("ip", &["-d", "-j", "link", "show", name]),
        None => run_in(None, "ip", &["-d", "-j", "link", "show", name]),
    };
    let link = serde_json::from_str::<Value>(&out).expect("ip json")[0].clone();
    link["linkinfo"]["info_data"]["user"].as_u64()
}

#[test]
fn a_pod_made_tap_copying_kind_and_mac_is_never_moved_to_the_host() {
    enter_test_host();
    make_tap();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"device": "hdtap0"}));
    call("ADD", &ns, &c, &bin).run().ok();
    // The pod replaces the host's tap by one of its own (it keeps the fd:
    // user 4242) dressed in the same kind and MAC.
    ns.sh("ip", &["link", "del", "eth0"]);
    ns.sh(
        "ip",
        &[
            "tuntap", "add", "dev", "eth0", "mode", "tap", "user", "4242",
        ],
    );
    ns.sh("ip", &["link", "set", "eth0", "address", TAP_MAC]);

    let out = call("DEL", &ns, &c, &bin).run();
    out.ok();
    assert!(
        !host_links().contains("hdtap0"),
        "the pod's tap reached the host: {}",
        host_links()
    );
    assert_eq!(tun_owner(Some(&ns), "eth0"), Some(4242), "left in the pod");
    assert!(
        out.stderr.contains("\"eth0\"") && out.stderr.contains("hdtap0"),
        "says what it left and why: {}",
        out.stderr
    );
    assert!(state_files(&state).is_empty(), "state removed");
    call("DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn del_of_a_device_without_identity_whose_mac_changed_succeeds_and_moves_nothing_unprovable() {
    enter_test_host();
    make_tap();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"device": "hdtap0"}));
    call("ADD", &ns, &c, &bin).run().ok();
    // As a chained tuning plugin with `mac` does.
    ns.sh(
        "ip",
        &["link", "set", "eth0", "address", "0a:58:0a:16:00:77"],
    );

    let out = call("DEL", &ns, &c, &bin).run();
    out.ok();
    assert!(out.stderr.contains("\"eth0\""), "{}", out.stderr);
    // Nothing proves it is the host's tap: it stays, and dies with the pod's netns.
    assert!(!host_links().contains("hdtap0"), "{}", host_links());
    assert_eq!(link_json(Some(&ns), "eth0")["address"], "0a:58:0a:16:00:77");
    assert!(state_files(&state).is_empty(), "state removed");
    call("DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn without_a_record_del_of_a_tap_succeeds_as_the_reference() {
    enter_test_host();
    make_tap();
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"device": "hdtap0"}));
    add_without_state(&ns, &c, &bin, &state);

    let out = call("DEL", &ns, &c, &bin).run();
    out.ok();
    assert!(
        out.stderr.contains("\"eth0\"") && out.stderr.contains("tun"),
        "{}",
        out.stderr
    );
    // A tun the container could have made never goes to the host.
    assert!(!host_links().contains("hdtap0"), "{}", host_links());
    assert!(!no_link(&ns, "eth0"), "left in the pod");
    call("DEL", &ns, &c, &bin).run().ok();
    // Its namespace gone (the kernel ends it in the background), so is the tap.
    ns.destroy();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while host_links().contains("hdtap0") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!host_links().contains("hdtap0"), "{}", host_links());
}

/// A fake sysfs laid out as the kernel's: PCI device `addr`, listed under
/// `bus/pci/devices`, its `driver` linking to `bus/pci/drivers/<driver>`.
fn fake_sysfs(addr: &str, driver: &str) -> TempDir {
    use std::os::unix::fs::symlink;
    let sys = TempDir::new("hd-sys");
    let dev = sys.0.join("devices/pci0000:00").join(addr);
    std::fs::create_dir_all(&dev).expect("device dir");
    std::fs::create_dir_all(sys.0.join("bus/pci/drivers").join(driver)).expect("driver dir");
    std::fs::create_dir_all(sys.0.join("bus/pci/devices")).expect("bus dir");
    let listed = sys.0.join("bus/pci/devices").join(addr);
    symlink(format!("../../../devices/pci0000:00/{addr}"), listed).expect("bus link");
    let bound = format!("../../../bus/pci/drivers/{driver}");
    symlink(bound, dev.join("driver")).expect("driver link");
    sys
}

/// DPDK mode, from a PCI device bound to a userspace driver (a config
/// `DPDKMode` is overridden then) or from `DPDKMode` with no PCI address:
/// ADD moves nothing and reports the interface by name with IPAM's
/// addresses, configured nowhere; CHECK and DEL leave every link where it is.
/// The plugin reads a fake sysfs bound over /sys in its own mount namespace.
#[test]
fn dpdk_mode_moves_nothing_and_reports_ipam_for_the_named_interface() {
    enter_test_host();
    make_device();
    let bin = plugin_dir();
    let sys = fake_sysfs("0000:01:00.0", "vfio-pci");
    let ipam = json!({"type": "static", "addresses": [{"address": "10.22.0.2/24"}]});
    for keys in [
        json!({"pciBusID": "0000:01:00.0", "DPDKMode": false, "ipam": ipam}),
        json!({"device": "hd-dev", "DPDKMode": true, "ipam": ipam,
               "dns": {"nameservers": ["10.22.0.53"]}}),
    ] {
        let ns = Netns::new();
        let state = TempDir::new("hd-state");
        let c = conf(&state, keys.clone());
        let run = |cmd: &str, c: &Value| call(cmd, &ns, c, &bin).run_with_bind(&sys.0, "/sys");
        let out = run("ADD", &c).ok();
        assert_eq!(
            out["interfaces"],
            json!([{"name": "eth0", "sandbox": ns.path()}]),
            "{keys}"
        );
        assert_eq!(
            out["ips"],
            json!([{"address": "10.22.0.2/24", "interface": 0}])
        );
        assert_eq!(out["dns"], keys.get("dns").cloned().unwrap_or(json!(null)));
        assert!(host_links().contains("hd-dev"), "the device stays home");
        let inside = ns.sh("ip", &["-o", "link"]);
        assert_eq!(inside.lines().count(), 1, "only lo: {inside}");
        assert!(!ns.sh("ip", &["-o", "addr"]).contains("10.22.0.2"));
        assert!(state_files(&state).is_empty(), "nothing to record");
        run("CHECK", &merged(c.clone(), json!({"prevResult": out}))).ok();
        run("DEL", &c).ok();
        assert!(host_links().contains("hd-dev"));
        assert_eq!(ns.sh("ip", &["-o", "link"]).lines().count(), 1);
    }
}

/// A device that kept addresses (a node rebooted without DEL, then the host
/// gave it some again) takes none of them into the container: the kernel
/// drops a device's addresses when it changes namespace, and the container
/// ends up with exactly the result's.
#[test]
fn a_stale_address_on_the_device_stays_behind_when_it_moves_in() {
    enter_test_host();
    make_device();
    for stale in ["10.22.0.77/24", "2001:db8:22::77/64"] {
        run_in(
            None,
            "ip",
            &["addr", "add", stale, "dev", "hd-dev", "nodad"],
        );
    }
    let (bin, state, ns) = (plugin_dir(), TempDir::new("hd-stale"), Netns::new());
    let c = conf(
        &state,
        json!({"device": "hd-dev",
               "ipam": {"type": "static", "addresses": [{"address": "10.22.0.2/24"}]}}),
    );
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(out["ips"][0]["address"], "10.22.0.2/24", "{out}");
    let link: Value = serde_json::from_str::<Value>(&ns.sh("ip", &["-j", "addr", "show", "eth0"]))
        .expect("ip json")[0]
        .clone();
    let global: Vec<String> = link["addr_info"]
        .as_array()
        .expect("addr_info")
        .iter()
        .filter(|a| a["scope"] == "global")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap_or(""), a["prefixlen"]))
        .collect();
    assert_eq!(global, ["10.22.0.2/24"], "{link}");
    call("DEL", &ns, &c, &bin).run().ok();
    let back = run_in(None, "ip", &["addr", "show", "dev", "hd-dev"]);
    assert!(
        !back.contains("10.22.0.77") && !back.contains("2001:db8:22::77"),
        "{back}"
    );
}

/// After a reboot the pod's netns is gone and the runtime's DEL names none
/// (or one that no longer exists): DEL still releases what IPAM gave, as
/// an open upstream change does (not yet released: the reference returns
/// before IPAM when there is no netns).
#[test]
fn del_without_the_netns_releases_the_address_ipam_gave() {
    enter_test_host();
    let (bin, state, store) = (
        plugin_dir(),
        TempDir::new("hd-boot"),
        TempDir::new("hd-ipam"),
    );
    let c = conf(
        &state,
        json!({"device": "hd-dev",
               "ipam": {"type": "host-local", "subnet": "10.22.0.0/24", "dataDir": store.0}}),
    );
    let lease = |ip: &str| store.0.join("hd-net").join(ip);
    for (i, netns_for_del) in ["", "gone"].into_iter().enumerate() {
        make_device();
        let ns = Netns::new();
        let old_path = ns.path().to_string();
        let out = call("ADD", &ns, &c, &bin).run().ok();
        let ip = out["ips"][0]["address"].as_str().expect("ip").to_string();
        let ip = ip.split('/').next().expect("addr").to_string();
        assert!(lease(&ip).exists(), "round {i}: {ip} leased");
        drop(ns); // the reboot: the netns, and with it the veth pair, is gone
        // The kernel tears a netns down in the background.
        for _ in 0..500 {
            if !host_links().contains("hd-peer") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let path = if netns_for_del == "gone" {
            old_path
        } else {
            String::new()
        };
        Call::new("host-device", "DEL", &path, &c.to_string())
            .path(&bin)
            .run()
            .ok();
        assert!(!lease(&ip).exists(), "round {i}: {ip} released");
        assert!(state_files(&state).is_empty(), "round {i}: record removed");
    }
}

/// In the host: `hd-dev`, a `kind` link (`options` after the kind) on the
/// host veth `hd-low`, as a node agent makes one for a pod. Its ifindex.
fn make_link_device(kind: &str, options: &[&str]) -> Value {
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "hd-low",
            "type",
            "veth",
            "peer",
            "name",
            "hd-low-peer",
        ],
    );
    let mut args = vec!["link", "add", "link", "hd-low", "name", "hd-dev"];
    if kind == "macvlan" {
        args.extend_from_slice(&["address", DEV_MAC]);
    }
    args.extend_from_slice(&["type", kind]);
    args.extend_from_slice(options);
    run_in(None, "ip", &args);
    link_json(None, "hd-dev")["ifindex"].clone()
}

/// What `ip -d` tells of a link in the pod: its kind and whether its lower
/// device is in another namespace (the host, here).
fn kind_and_lower_elsewhere(ns: &Netns, name: &str) -> (Value, bool) {
    let out = ns.sh("ip", &["-d", "-j", "link", "show", name]);
    let link = serde_json::from_str::<Value>(&out).expect("ip json")[0].clone();
    (
        link["linkinfo"]["info_kind"].clone(),
        link.get("link_netnsid").is_some(),
    )
}

/// The pod renames the device away and builds a link of its kind on it at
/// CNI_IFNAME: the kernel puts a macvlan asked for on a macvlan (an ipvlan on
/// an ipvlan) on the real lower device, the host's, so the copy has the
/// device's kind, lower device, MAC (macvlan), alias and name. DEL moves the
/// real device home and fails (8) naming the copy, which stays in the pod; the
/// retried DEL succeeds.
fn a_copy_built_on_the_device_is_never_moved_to_the_host(kind: &str, options: &[&str]) {
    let host_index = make_link_device(kind, options);
    let bin = plugin_dir();
    let state = TempDir::new("hd-state");
    let ns = Netns::new();
    let c = conf(&state, json!({"device": "hd-dev"}));
    call("ADD", &ns, &c, &bin).run().ok();
    let device_index = link_json(Some(&ns), "eth0")["ifindex"].clone();
    rename_in(&ns, "eth0", "real0");
    let mut copy = vec!["link", "add", "link", "real0", "name", "eth0"];
    if kind == "macvlan" {
        copy.extend_from_slice(&["address", DEV_MAC]);
    }
    copy.extend_from_slice(&["type", kind]);
    copy.extend_from_slice(options);
    ns.sh("ip", &copy);
    ns.sh("ip", &["link", "set", "eth0", "alias", "hd-dev"]);
    let copy_index = link_json(Some(&ns), "eth0")["ifindex"].clone();
    assert_ne!(copy_index, device_index);
    assert_eq!(
        kind_and_lower_elsewhere(&ns, "eth0"),
        (json!(kind), true),
        "the copy sits on the host's link, as the device does"
    );

    let e = call("DEL", &ns, &c, &bin).run().err(8);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("\"eth0\"") && msg.contains("not at index") && msg.contains("\"real0\""),
        "{e}"
    );
    let home = link_json(None, "hd-dev");
    assert_eq!(
        home["ifindex"], host_index,
        "the real device is home: {home}"
    );
    assert_eq!(home["link"], "hd-low", "{home}");
    assert_eq!(alias(&home), "", "{home}");
    assert!(no_link(&ns, "real0"));
    assert_eq!(
        link_json(Some(&ns), "eth0")["ifindex"],
        copy_index,
        "the copy stays"
    );
    call("DEL", &ns, &c, &bin).run().ok();
    assert!(state_files(&state).is_empty(), "state removed");
    assert_eq!(link_json(None, "hd-dev")["ifindex"], host_index);
    assert_eq!(link_json(Some(&ns), "eth0")["ifindex"], copy_index);
}

#[test]
fn a_macvlan_the_pod_builds_on_the_device_is_never_moved_to_the_host() {
    enter_test_host();
    a_copy_built_on_the_device_is_never_moved_to_the_host("macvlan", &["mode", "bridge"]);
}

#[test]
fn an_ipvlan_the_pod_builds_on_the_device_is_never_moved_to_the_host() {
    enter_test_host();
    if let Err(reason) = kernel_supports("ipvlan", true, &[]) {
        skip(
            "an_ipvlan_the_pod_builds_on_the_device_is_never_moved_to_the_host",
            &reason,
        );
        return;
    }
    a_copy_built_on_the_device_is_never_moved_to_the_host("ipvlan", &["mode", "l2"]);
    // A pod in a user namespace of its own cannot build an ipvlan on the
    // device (the kernel wants CAP_NET_ADMIN over the host for it): there the
    // device's lower device proves it, and DEL moves it home.
    let pod = own_userns_pod();
    let (bin, state) = (plugin_dir(), TempDir::new("hd-userns"));
    let c = conf(&state, json!({"device": "hd-dev"}));
    let run = |cmd: &str| {
        Call::new("host-device", cmd, &pod.net(), &c.to_string())
            .path(&bin)
            .run()
    };
    run("ADD").ok();
    let refused = pod.ip(&[
        "link", "add", "link", "eth0", "name", "eth1", "type", "ipvlan",
    ]);
    assert!(!refused.status.success(), "the kernel let the pod build it");
    run("DEL").ok();
    assert_eq!(link_json(None, "hd-dev")["link"], "hd-low");
    assert!(state_files(&state).is_empty());
}

/// A process sleeping in namespaces of its own (`args` ends in `sleep`),
/// killed when dropped.
struct Sleeper(std::process::Child);

impl Sleeper {
    /// Starts `args` and waits until it runs `sleep` (the namespaces set up).
    fn start(args: &[&str]) -> Sleeper {
        let child = std::process::Command::new(args[0])
            .args(&args[1..])
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {args:?}: {e}"));
        let sleeper = Sleeper(child);
        let comm = format!("/proc/{}/comm", sleeper.pid());
        for _ in 0..500 {
            if std::fs::read_to_string(&comm).is_ok_and(|c| c == "sleep\n") {
                return sleeper;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("{args:?} never slept");
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }

    fn net(&self) -> String {
        format!("/proc/{}/ns/net", self.0.id())
    }

    /// `ip` as the process's namespaces see it: root of its user namespace.
    fn ip(&self, args: &[&str]) -> std::process::Output {
        let pid = self.pid();
        let mut all = vec!["--target", &pid, "--user", "--net", "ip"];
        all.extend_from_slice(args);
        std::process::Command::new("nsenter")
            .args(&all)
            .output()
            .expect("nsenter")
    }

    fn ip_ok(&self, args: &[&str]) -> String {
        let out = self.ip(args);
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn link(&self, name: &str) -> Value {
        let out = self.ip_ok(&["-d", "-j", "link", "show", name]);
        serde_json::from_str::<Value>(&out).expect("ip json")[0].clone()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A pod whose network namespace belongs to a user namespace of its own (as a
/// user-namespaced pod's): root there, with no right over the host.
fn own_userns_pod() -> Sleeper {
    Sleeper::start(&[
        "unshare",
        "--user",
        "--map-root-user",
        "--net",
        "sleep",
        "600",
    ])
}

/// In its own user namespace the pod can make a network namespace too: it
/// moves the macvlan there and builds its copy on it, back in the pod at the
/// device's index, name, MAC and alias. Nothing tells the two apart, so in
/// such a pod a macvlan never goes back to the host: DEL leaves it in the
/// pod, says so, and succeeds. So does DEL without a record.
#[test]
fn in_its_own_user_namespace_a_pod_copying_the_macvlan_index_included_gets_nothing_moved() {
    enter_test_host();
    make_link_device("macvlan", &["mode", "bridge"]);
    let (bin, state, pod) = (plugin_dir(), TempDir::new("hd-userns"), own_userns_pod());
    let c = conf(&state, json!({"device": "hd-dev"}));
    let run = |cmd: &str| {
        Call::new("host-device", cmd, &pod.net(), &c.to_string())
            .path(&bin)
            .run()
    };
    run("ADD").ok();
    let index = pod.link("eth0")["ifindex"].clone();
    let index_arg = index.to_string();
    let own = Sleeper::start(&[
        "nsenter",
        "--target",
        &pod.pid(),
        "--user",
        "--net",
        "unshare",
        "--net",
        "sleep",
        "600",
    ]);
    // Older kernels (Debian's 6.1) look the new link's index up in the
    // namespace the request comes from: the device must not hold it there.
    own.ip_ok(&[
        "link", "add", "hold0", "index", &index_arg, "type", "veth", "peer", "name", "hold1",
    ]);
    pod.ip_ok(&["link", "set", "eth0", "netns", &own.net()]);
    own.ip_ok(&["link", "del", "hold0"]);
    let pod_net = pod.net();
    own.ip_ok(&[
        "link", "add", "link", "eth0", "name", "eth0", "index", &index_arg, "address", DEV_MAC,
        "netns", &pod_net, "type", "macvlan", "mode", "bridge",
    ]);
    pod.ip_ok(&["link", "set", "eth0", "alias", "hd-dev"]);
    let copy = pod.link("eth0");
    assert_eq!(copy["ifindex"], index, "{copy}");
    assert_eq!(copy["linkinfo"]["info_kind"], "macvlan", "{copy}");
    assert!(
        copy.get("link_netnsid").is_some(),
        "on the host's link: {copy}"
    );

    let out = run("DEL");
    out.ok();
    assert!(
        !host_links().contains("hd-dev"),
        "the pod's copy reached the host: {}",
        host_links()
    );
    assert!(
        out.stderr.contains("\"eth0\"") && out.stderr.contains("user namespace"),
        "{}",
        out.stderr
    );
    assert_eq!(pod.link("eth0")["ifindex"], index, "left in the pod");
    assert!(state_files(&state).is_empty(), "state removed");
    run("DEL").ok();
    drop((own, pod));

    // Without a record, the same: the macvlan stays in the pod.
    run_in(None, "ip", &["link", "del", "hd-low"]);
    make_link_device("macvlan", &["mode", "bridge"]);
    let pod = own_userns_pod();
    let run = |cmd: &str| {
        Call::new("host-device", cmd, &pod.net(), &c.to_string())
            .path(&bin)
            .run()
    };
    run("ADD").ok();
    for file in state_files(&state) {
        std::fs::remove_file(file).expect("remove state");
    }
    let out = run("DEL");
    out.ok();
    assert!(!host_links().contains("hd-dev"), "{}", host_links());
    assert!(out.stderr.contains("user namespace"), "{}", out.stderr);
    assert_eq!(pod.link("eth0")["linkinfo"]["info_kind"], "macvlan");
}
