//! macvlan end to end: two containers on one master reach each other, the
//! default-route master, MAC and MTU, CHECK, DEL idempotence.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Value, json};

fn conf(extra: Value, address: &str) -> Value {
    let mut c = json!({
        "cniVersion": "1.0.0",
        "name": "mv-net",
        "type": "macvlan",
        "master": "mv-master",
        "dns": {"nameservers": ["10.55.0.53"]},
        "ipam": {"type": "static", "addresses": [{"address": address}], "routes": [{"dst": "10.56.0.0/16"}]}
    });
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            c.insert(k.clone(), v.clone());
        }
    }
    c
}

fn call(cmd: &str, ns: &Netns, id: &str, conf: &Value, bin: &TempDir) -> Call {
    Call::new("macvlan", cmd, ns.path(), &conf.to_string())
        .set("CNI_CONTAINERID", id)
        .path(bin)
}

fn make_master() {
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "mv-master",
            "type",
            "veth",
            "peer",
            "name",
            "mv-peer",
        ],
    );
    run_in(None, "ip", &["link", "set", "mv-master", "up"]);
    run_in(None, "ip", &["link", "set", "mv-peer", "up"]);
}

fn eth0(ns: &Netns) -> Value {
    let out = ns.sh("ip", &["-j", "-d", "addr", "show", "dev", "eth0"]);
    serde_json::from_str::<Value>(&out).expect("ip json")[0].clone()
}

fn pings(from: &Netns, to: &str) -> bool {
    std::process::Command::new("nsenter")
        .args([&format!("--net={}", from.path()), "ping", "-c1", "-W2", to])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn two_macvlan_containers_on_one_master_reach_each_other() {
    enter_test_host();
    make_master();
    let bin = plugin_dir();
    let (a, b) = (Netns::new(), Netns::new());
    let ca = conf(
        json!({"mtu": 1400, "mac": "0a:58:0a:37:00:02"}),
        "10.55.0.2/24",
    );
    let out = call("ADD", &a, "ctr-a", &ca, &bin).run().ok();
    assert_eq!(
        out["interfaces"],
        json!([{"name": "eth0", "mac": "0a:58:0a:37:00:02", "sandbox": a.path()}])
    );
    assert_eq!(
        out["ips"],
        json!([{"address": "10.55.0.2/24", "interface": 0}])
    );
    assert_eq!(out["dns"], json!({"nameservers": ["10.55.0.53"]}));
    let cb = conf(json!({}), "10.55.0.3/24");
    call("ADD", &b, "ctr-b", &cb, &bin).run().ok();

    let link = eth0(&a);
    assert_eq!(link["linkinfo"]["info_kind"], "macvlan");
    assert_eq!(link["linkinfo"]["info_data"]["mode"], "bridge");
    assert_eq!(link["mtu"], 1400);
    assert_eq!(link["address"], "0a:58:0a:37:00:02");
    assert_eq!(
        a.sh("sysctl", &["-n", "net.ipv4.conf.eth0.arp_notify"])
            .trim(),
        "1"
    );
    assert!(a.sh("ip", &["route"]).contains("10.56.0.0/16 dev eth0"));
    assert!(pings(&a, "10.55.0.3"), "a reaches b");

    let mut checked = ca.clone();
    checked["prevResult"] = out.clone();
    call("CHECK", &a, "ctr-a", &checked, &bin).run().ok();
    let mut vepa = checked.clone();
    vepa["mode"] = json!("vepa");
    call("CHECK", &a, "ctr-a", &vepa, &bin).run().err(999);

    call("DEL", &a, "ctr-a", &ca, &bin).run().ok();
    assert!(
        a.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    call("DEL", &a, "ctr-a", &ca, &bin).run().ok();
    let gone = b.path().to_string();
    b.destroy();
    Call::new("macvlan", "DEL", &gone, &cb.to_string())
        .set("CNI_CONTAINERID", "ctr-b")
        .path(&bin)
        .run()
        .ok();
}

#[test]
fn master_defaults_to_the_default_route_interface_and_bad_configs_fail() {
    enter_test_host();
    make_master();
    run_in(
        None,
        "ip",
        &["addr", "add", "10.200.0.1/24", "dev", "mv-master"],
    );
    let bin = plugin_dir();
    let ns = Netns::new();
    let mut c = conf(json!({"mode": "private"}), "10.55.0.9/24");
    c.as_object_mut().map(|o| o.remove("master"));
    // No default route yet: a clear error.
    let e = call("ADD", &ns, "ctr-d", &c, &bin).run().err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("no default route")),
        "{e}"
    );
    run_in(
        None,
        "ip",
        &[
            "route",
            "add",
            "default",
            "via",
            "10.200.0.254",
            "dev",
            "mv-master",
        ],
    );
    call("ADD", &ns, "ctr-d", &c, &bin).run().ok();
    let master: Value =
        serde_json::from_str(&run_in(None, "ip", &["-j", "link", "show", "mv-master"]))
            .expect("json");
    let link = eth0(&ns);
    assert_eq!(link["link_index"], master[0]["ifindex"], "{link}");
    assert_eq!(link["linkinfo"]["info_data"]["mode"], "private");
    call("DEL", &ns, "ctr-d", &c, &bin).run().ok();

    for (extra, code) in [
        (json!({"mode": "weird"}), 7),
        (json!({"mtu": 99999}), 7),
        (json!({"master": "nope0"}), 999),
    ] {
        call("ADD", &ns, "ctr-bad", &conf(extra, "10.55.0.9/24"), &bin)
            .run()
            .err(code);
    }
    // IPAM failing after the link exists leaves no link behind.
    let bad_ipam = json!({"ipam": {"type": "static", "addresses": [{"address": "10.55.0.9"}]}});
    call("ADD", &ns, "ctr-bad", &conf(bad_ipam, "x"), &bin)
        .run()
        .err(7);
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
}

#[test]
fn an_l2_only_macvlan_gets_no_announcement_sysctls() {
    enter_test_host();
    make_master();
    let bin = plugin_dir();
    let ns = Netns::new();
    // The namespace's defaults are off, so only the plugin could turn them on.
    ns.sh(
        "sysctl",
        &[
            "-qw",
            "net.ipv4.conf.default.arp_notify=0",
            "net.ipv6.conf.default.ndisc_notify=0",
        ],
    );
    let mut c = conf(json!({}), "10.55.0.4/24");
    c.as_object_mut().map(|o| o.remove("ipam"));
    let out = call("ADD", &ns, "ctr-l2", &c, &bin).run().ok();
    assert!(out.get("ips").is_none(), "{out}");
    let link = eth0(&ns);
    assert!(
        link["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("UP"))),
        "{link}"
    );
    let sysctl = |key: &str| ns.sh("sysctl", &["-n", key]).trim().to_string();
    assert_eq!(sysctl("net.ipv4.conf.eth0.arp_notify"), "0");
    assert_eq!(sysctl("net.ipv6.conf.eth0.ndisc_notify"), "0");
    call("DEL", &ns, "ctr-l2", &c, &bin).run().ok();

    // With IPAM both are on.
    let c = conf(json!({}), "10.55.0.4/24");
    call("ADD", &ns, "ctr-l3", &c, &bin).run().ok();
    assert_eq!(sysctl("net.ipv4.conf.eth0.arp_notify"), "1");
    assert_eq!(sysctl("net.ipv6.conf.eth0.ndisc_notify"), "1");
    call("DEL", &ns, "ctr-l3", &c, &bin).run().ok();
}
