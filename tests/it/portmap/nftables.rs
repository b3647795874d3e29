//! The nftables backend: reachability, the ruleset restored by DEL, cycles
//! that leave nothing, host-IP mappings before wildcards, a second ADD.

use super::*;

#[test]
fn nftables_backend_reachability_rules_and_del_restore_the_ruleset() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({"backend": "nftables"}));
    let before = ruleset();
    let (ns, caps, ip) = mapped_container(&net);
    assert_reachable(&client, &ns);
    let id = format!("cnitool-{}", sha512_prefix(ns.path(), 20));
    let rules = ruleset();
    for expected in [
        "table ip cni_hostport {".to_string(),
        "comment \"CNI portmap plugin\"".into(),
        format!("tcp dport 8080 dnat to {ip}:80 comment \"{id}\""),
        format!("ip daddr 192.0.2.1 tcp dport 9090 dnat to {ip}:90 comment \"{id}\""),
        format!("ip saddr {ip} ip daddr {ip} masquerade comment \"{id}\""),
        format!("ip saddr 127.0.0.1 ip daddr {ip} masquerade comment \"{id}\""),
        "fib daddr type local jump hostports_all".into(),
        "jump hostip_hostports".into(),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(ruleset(), before, "DEL leaves the ruleset as it was");
    assert_eq!(tcp_fetch(Some(client.path()), "192.0.2.1:8080"), None);
}

#[test]
fn nftables_backend_runs_no_process_and_cycles_leave_nothing() {
    enter_test_host();
    let net = network(json!({"backend": "nftables"}));
    let (wrappers, log, _) = logging_wrappers("pm-nft-wrap", false);
    // Only the wrappers on PATH: any netfilter tool run would be logged.
    let path = wrappers.0.to_string_lossy().into_owned();
    let before = ruleset();
    for i in 0..100u16 {
        let ns = Netns::new();
        let caps = maps(&[(8000 + i, 80, "tcp", ""), (9000 + i, 53, "udp", "")]);
        let add = net
            .command(&["add", "pm-net", ns.path()], &caps, Some(&path))
            .spawn()
            .expect("cnitool");
        Outcome::of(add).ok();
        if i == 0 {
            assert!(
                ruleset().contains("tcp dport 8000 dnat to"),
                "{}",
                ruleset()
            );
        }
        let del = net
            .command(&["del", "pm-net", ns.path()], &caps, Some(&path))
            .spawn()
            .expect("cnitool");
        Outcome::of(del).ok();
    }
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_default(),
        "",
        "no netfilter process"
    );
    assert_eq!(ruleset(), before);
}

#[test]
fn nftables_ipmasq_for_bridge() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("nft-masq"));
    let c = json!({
        "cniVersion": "1.0.0", "name": "nmasq", "type": "bridge", "bridge": "cni-nm0",
        "isGateway": true, "ipMasq": true, "ipMasqBackend": "nftables",
        "ipam": {"type": "host-local", "subnet": "10.41.0.0/24", "dataDir": store.0}
    });
    let before = ruleset();
    let ns = Netns::new();
    harness::Call::new("bridge", "ADD", ns.path(), &c.to_string())
        .set("CNI_CONTAINERID", "nm1")
        .path(&bin)
        .run()
        .ok();
    let rules = ruleset();
    let instance = format!(
        "{}-{}",
        sha512_prefix("nmasq", 16),
        sha512_prefix("eth0:nm1", 16)
    );
    for expected in [
        "table inet cni_plugins_masquerade {".to_string(),
        "comment \"Masquerading for plugins from github.com/containernetworking/plugins\"".into(),
        format!(
            "ip saddr 10.41.0.2 ip daddr != 10.41.0.0/24 masquerade comment \"{instance}, net: nmasq, if: eth0, id: nm1\""
        ),
        "ip daddr 224.0.0.0/4 return".into(),
        "ip6 daddr ff00::/8 return".into(),
        "goto masq_checks".into(),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    let path = ns.path().to_string();
    ns.destroy();
    harness::Call::new("bridge", "DEL", &path, &c.to_string())
        .set("CNI_CONTAINERID", "nm1")
        .path(&bin)
        .run()
        .ok();
    assert_eq!(ruleset(), before);
}

/// A host-IP mapping, in `hostip_hostports`, is consulted before any wildcard
/// mapping of the same port, whichever was added first (the reference appends
/// both to `hostports`, so an earlier wildcard would shadow it).
#[test]
fn nft_host_ip_mapping_is_not_shadowed_by_an_earlier_wildcard_on_the_same_port() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({"backend": "nftables"}));
    let wild = Netns::new();
    let wild_caps = maps(&[(8080, 80, "tcp", "")]);
    net.run(&["add", "pm-net", wild.path()], &wild_caps).ok();
    tcp_server(wild.path(), 80, "wildcard");
    let pinned = Netns::new();
    let pinned_caps = maps(&[(8080, 80, "tcp", "192.0.2.1")]);
    net.run(&["add", "pm-net", pinned.path()], &pinned_caps)
        .ok();
    tcp_server(pinned.path(), 80, "host-ip");
    // The host-IP rule is in `hostip_hostports`, which `hostports_all` jumps to first.
    let rules = ruleset();
    let chain = rules
        .split("chain hostip_hostports {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .unwrap_or_default();
    assert!(chain.contains("ip daddr 192.0.2.1"), "{rules}");
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080").as_deref(),
        Some("host-ip"),
        "the host-IP mapping answers on its IP\n{}",
        ruleset()
    );
    assert_eq!(
        tcp_fetch(None, "10.40.0.1:8080").as_deref(),
        Some("wildcard"),
        "the wildcard answers on the host's other addresses"
    );
    net.run(&["check", "pm-net", pinned.path()], &pinned_caps)
        .ok();
    net.run(&["del", "pm-net", pinned.path()], &pinned_caps)
        .ok();
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080").as_deref(),
        Some("wildcard"),
        "without it, the wildcard takes the port"
    );
    net.run(&["del", "pm-net", wild.path()], &wild_caps).ok();
}

/// A second ADD of the same attachment replaces its rules: one set remains,
/// CHECK passes, and DEL removes them all.
#[test]
fn nft_second_add_of_the_same_attachment_leaves_exactly_one_set_of_rules() {
    enter_test_host();
    let bin = plugin_dir();
    let before = ruleset();
    let conf = direct(
        json!({"backend": "nftables"}),
        &["10.40.0.5/24"],
        maps(&[(8080, 80, "tcp", ""), (9090, 90, "tcp", "192.0.2.1")]),
    );
    let mine = || {
        let rules = ruleset();
        let lines: Vec<String> = rules
            .lines()
            .filter(|l| l.contains("comment \"ctr-1\""))
            .map(|l| l.trim().to_string())
            .collect();
        lines
    };
    call("ADD", "ctr-1", &conf, &bin).ok();
    let first = mine();
    // Two DNAT rules and the two masquerade rules (hairpin, localhost).
    assert_eq!(first.len(), 4, "{first:?}");
    call("ADD", "ctr-1", &conf, &bin).ok();
    let mut second = mine();
    assert_eq!(second.len(), 4, "{second:?}\n{}", ruleset());
    let mut first = first;
    first.sort();
    second.sort();
    assert_eq!(first, second);
    call("CHECK", "ctr-1", &conf, &bin).ok();
    call("DEL", "ctr-1", &conf, &bin).ok();
    assert!(mine().is_empty());
    assert_eq!(ruleset(), before);
}
