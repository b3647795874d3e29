//! sbr end to end: with two interfaces in one netns, replies from the second
//! interface's address leave by that interface (strict rp_filter on the host
//! drops them otherwise); rules and tables as the reference; DEL removes rules.

mod harness;

use harness::{
    Netns, Runtime, enter_test_host, peer_netns, plugin_dir, run_in, tcp_fetch, tcp_server,
};
use serde_json::json;

#[test]
fn replies_leave_by_the_interface_of_their_source_address() {
    enter_test_host();
    let s = Runtime::new("sbr");
    let net_a = json!({"cniVersion": "1.0.0", "name": "net-a", "plugins": [
        {"type": "bridge", "bridge": "cni-sa", "isGateway": true,
         "ipam": {"type": "host-local", "subnet": "10.81.0.0/24", "dataDir": s.store.0, "routes": [{"dst": "0.0.0.0/0"}]}}]});
    let net_b = json!({"cniVersion": "1.0.0", "name": "net-b", "plugins": [
        {"type": "bridge", "bridge": "cni-sb", "isGateway": true,
         "ipam": {"type": "host-local", "subnet": "10.82.0.0/24", "dataDir": s.store.0}},
        {"type": "sbr"}]});
    std::fs::write(s.conf.0.join("a.conflist"), net_a.to_string()).expect("conf");
    std::fs::write(s.conf.0.join("b.conflist"), net_b.to_string()).expect("conf");
    // A client at 192.0.2.2 behind the host; strict reverse-path filtering on the host.
    let client = peer_netns("to-cl");
    run_in(None, "sysctl", &["-w", "net.ipv4.conf.all.rp_filter=1"]);

    let ns = Netns::new();
    s.run(&["add", "net-a", ns.path()], &json!({})).ok();
    s.run(&["-i", "net1", "add", "net-b", ns.path()], &json!({}))
        .ok();
    tcp_server(ns.path(), 80, "hello");

    let rules = ns.sh("ip", &["rule"]);
    assert!(rules.contains("from 10.82.0.2 lookup 100"), "{rules}");
    let table = ns.sh("ip", &["route", "show", "table", "100"]);
    assert!(table.contains("default via 10.82.0.1 dev net1"), "{table}");
    assert!(table.contains("10.82.0.0/24 dev net1"), "{table}");
    let main = ns.sh("ip", &["route"]);
    assert!(
        !main.contains("net1"),
        "net1's routes moved out of main: {main}"
    );

    assert_eq!(
        tcp_fetch(Some(client.path()), "10.82.0.2:80").as_deref(),
        Some("hello"),
        "via net1"
    );
    assert_eq!(
        tcp_fetch(Some(client.path()), "10.81.0.2:80").as_deref(),
        Some("hello"),
        "via eth0"
    );

    // Without the rule, replies from 10.82.0.2 take eth0's default route and
    // the host's rp_filter drops them: the rule is what made it work.
    let rules_only = ns.sh("ip", &["rule"]);
    for line in rules_only.lines().filter(|l| l.contains("10.82.0.2")) {
        let spec: Vec<&str> = line.split_whitespace().skip(1).collect();
        let mut args = vec!["rule", "del"];
        args.extend(spec);
        ns.sh("ip", &args);
    }
    assert_eq!(
        tcp_fetch(Some(client.path()), "10.82.0.2:80"),
        None,
        "no rule: replies dropped"
    );
    s.run(&["-i", "net1", "del", "net-b", ns.path()], &json!({}))
        .ok();
    assert!(!ns.sh("ip", &["rule"]).contains("10.82.0.2"));
}

#[test]
fn a_fixed_table_gets_only_rules() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    ns.sh(
        "ip",
        &["link", "add", "eth0", "type", "veth", "peer", "name", "p0"],
    );
    ns.sh("ip", &["addr", "add", "10.83.0.5/24", "dev", "eth0"]);
    ns.sh("ip", &["link", "set", "p0", "up"]);
    ns.sh("ip", &["link", "set", "eth0", "up"]);
    let prev = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
                      "ips": [{"address": "10.83.0.5/24", "gateway": "10.83.0.1", "interface": 0}]});
    let conf = json!({"cniVersion": "1.0.0", "name": "sbr-t", "type": "sbr", "table": 500, "prevResult": prev});
    let out = harness::Call::new("sbr", "ADD", ns.path(), &conf.to_string())
        .path(&bin)
        .run()
        .ok();
    assert_eq!(out, prev, "output is prevResult");
    assert!(ns.sh("ip", &["rule"]).contains("from 10.83.0.5 lookup 500"));
    assert!(
        ns.sh("ip", &["route"]).contains("10.83.0.0/24 dev eth0"),
        "main table untouched"
    );
    harness::Call::new("sbr", "DEL", ns.path(), &conf.to_string())
        .path(&bin)
        .run()
        .ok();
    assert!(!ns.sh("ip", &["rule"]).contains("lookup 500"));
    harness::Call::new("sbr", "DEL", ns.path(), &conf.to_string())
        .path(&bin)
        .run()
        .ok();
}
