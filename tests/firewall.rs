//! firewall end to end (iptables backend): forwarding allowed for the
//! container's addresses under a DROP policy, CHECK, DEL restoring the filter
//! table, same-bridge isolation, refused backends and keys (firewalld:
//! tests/firewalld.rs).

mod harness;

use harness::{
    Netns, Runtime, enter_test_host, first_ip, iptables_table, merged, peer_netns, plugin_dir,
    run_in, tcp_fetch, tcp_server,
};
use serde_json::{Value, json};

fn filter() -> String {
    iptables_table("filter")
}

/// A bridge network followed by the firewall plugin with `firewall` keys.
fn network(rt: &Runtime, name: &str, bridge: &str, subnet: &str, firewall: Value) {
    let list = json!({
        "cniVersion": "1.0.0", "name": name,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": true,
             "ipam": {"type": "host-local", "subnet": subnet, "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            merged(json!({"type": "firewall"}), firewall)
        ]
    });
    rt.write_list(&format!("{name}.conflist"), &list);
}

/// A server namespace at 192.0.2.2 behind the host's 192.0.2.1, serving TCP 80.
fn server() -> Netns {
    let s = peer_netns("to-srv");
    tcp_server(s.path(), 80, "outside");
    s
}

#[test]
fn forwarding_is_opened_for_the_container_and_del_restores_the_table() {
    enter_test_host();
    let _srv = server();
    run_in(None, "iptables", &["-P", "FORWARD", "DROP"]);
    let s = Runtime::new("fw");
    network(&s, "fw-net", "cni-fw0", "10.50.0.0/24", json!({}));
    let before = filter();
    let ns = Netns::new();
    let out = s.run(&["add", "fw-net", ns.path()], &json!({})).ok();
    let ip = first_ip(&out);
    assert_eq!(
        tcp_fetch(Some(ns.path()), "192.0.2.2:80").as_deref(),
        Some("outside")
    );
    let rules = filter();
    for expected in [
        "-A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD".to_string(),
        "-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN"
            .into(),
        format!("-A CNI-FORWARD -d {ip}/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"),
        format!("-A CNI-FORWARD -s {ip}/32 -j ACCEPT"),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    s.run(&["check", "fw-net", ns.path()], &json!({})).ok();
    run_in(
        None,
        "iptables",
        &[
            "-D",
            "CNI-FORWARD",
            "-s",
            &format!("{ip}/32"),
            "-j",
            "ACCEPT",
        ],
    );
    assert_eq!(s.run(&["check", "fw-net", ns.path()], &json!({})).status, 1);
    s.run(&["del", "fw-net", ns.path()], &json!({})).ok();
    assert_eq!(filter(), before, "DEL leaves the filter table as it was");
}

#[test]
fn same_bridge_policy_isolates_bridges() {
    enter_test_host();
    let s = Runtime::new("fw");
    network(
        &s,
        "net-a",
        "cni-fwa",
        "10.51.0.0/24",
        json!({"ingressPolicy": "same-bridge"}),
    );
    network(
        &s,
        "net-b",
        "cni-fwb",
        "10.52.0.0/24",
        json!({"ingressPolicy": "same-bridge"}),
    );
    let (a1, a2, b1) = (Netns::new(), Netns::new(), Netns::new());
    s.run(&["add", "net-a", a1.path()], &json!({})).ok();
    s.run(&["add", "net-a", a2.path()], &json!({})).ok();
    s.run(&["add", "net-b", b1.path()], &json!({})).ok();
    tcp_server(a2.path(), 80, "a2");
    tcp_server(b1.path(), 80, "b1");
    assert_eq!(
        tcp_fetch(Some(a1.path()), "10.51.0.3:80").as_deref(),
        Some("a2"),
        "same bridge"
    );
    assert_eq!(
        tcp_fetch(Some(a1.path()), "10.52.0.2:80"),
        None,
        "other bridge is isolated"
    );
    let rules = filter();
    for expected in [
        "-A CNI-ISOLATION-STAGE-1 -i cni-fwa ! -o cni-fwa -m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge)\" -j CNI-ISOLATION-STAGE-2",
        "-A CNI-ISOLATION-STAGE-2 -o cni-fwa -m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge)\" -j DROP",
        "-A CNI-ISOLATION-STAGE-1 -j RETURN",
    ] {
        assert!(rules.contains(expected), "missing {expected}\n{rules}");
    }
    assert_eq!(
        rules.matches("-A CNI-ISOLATION-STAGE-1 -j RETURN").count(),
        1,
        "{rules}"
    );
}

#[test]
fn unsupported_backends_are_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let prev = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.50.0.5/24"}]});
    for (extra, code) in [
        (
            json!({"backend": "firewalld", "ingressPolicy": "isolated"}),
            7,
        ),
        (json!({"backend": "pf"}), 7),
        (json!({"ingressPolicy": "closed"}), 7),
        (json!({"iptablesAdminChainName": "bad name"}), 7),
    ] {
        let mut c =
            json!({"cniVersion": "1.0.0", "name": "fw", "type": "firewall", "prevResult": prev});
        if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        harness::Call::new("firewall", "ADD", "/run/netns/fw-none", &c.to_string())
            .path(&bin)
            .run()
            .err(code);
    }
}

#[test]
fn nftables_backend_accepts_the_container_and_del_restores_the_ruleset() {
    enter_test_host();
    let _srv = server();
    let s = Runtime::new("fw");
    network(
        &s,
        "fw-nft",
        "cni-fwn0",
        "10.53.0.0/24",
        json!({"backend": "nftables"}),
    );
    let ruleset = || run_in(None, "nft", &["list", "ruleset"]);
    let before = ruleset();
    let ns = Netns::new();
    let out = s.run(&["add", "fw-nft", ns.path()], &json!({})).ok();
    let ip = first_ip(&out);
    assert_eq!(
        tcp_fetch(Some(ns.path()), "192.0.2.2:80").as_deref(),
        Some("outside")
    );
    let rules = ruleset();
    for expected in [
        "table inet cni_firewall {".to_string(),
        "jump admin".into(),
        format!("ip daddr {ip} ct state established,related accept comment"),
        format!("ip saddr {ip} accept comment"),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    s.run(&["check", "fw-nft", ns.path()], &json!({})).ok();
    s.run(&["del", "fw-nft", ns.path()], &json!({})).ok();
    assert_eq!(ruleset(), before);
}
