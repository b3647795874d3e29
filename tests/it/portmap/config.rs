//! What a config may hold: bad configs refused, Go-cased mappings as
//! containerd sends them, a mapping without a usable port, CHECK of configs
//! ADD refuses.

use super::*;

#[test]
fn bad_configs_are_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let prev = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.40.0.5/24"}]});
    for (extra, code) in [
        (json!({"markMasqBit": 32}), 7),
        (
            json!({"markMasqBit": 5, "externalSetMarkChain": "KUBE-MARK-MASQ"}),
            7,
        ),
        (json!({"externalSetMarkChain": "bad chain"}), 7),
        (
            json!({"conditionsV4": ["-s", "10.0.0.0/8"], "conditionsV6": ["ip6", "saddr", "::1"]}),
            7,
        ),
        (
            json!({"backend": "iptables", "conditionsV4": ["ip", "saddr", "1.2.3.4"]}),
            7,
        ),
        (
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 0, "containerPort": 80, "protocol": "tcp"}]}}),
            7,
        ),
        (
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "icmp"}]}}),
            7,
        ),
    ] {
        let mut c = json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap", "prevResult": prev,
                           "runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "tcp"}]}});
        if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        harness::Call::new("portmap", "ADD", "/run/netns/pm-none", &c.to_string())
            .path(&bin)
            .run()
            .err(code);
    }
    // Not chained: an error; chained without mappings: prevResult back, no rules.
    let before = nat();
    let c = json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap"});
    harness::Call::new("portmap", "ADD", "/run/netns/pm-none", &c.to_string())
        .path(&bin)
        .run()
        .err(7);
    let mut chained = c.clone();
    chained["prevResult"] = prev.clone();
    let out = harness::Call::new("portmap", "ADD", "/run/netns/pm-none", &chained.to_string())
        .path(&bin)
        .run()
        .ok();
    assert_eq!(out, prev);
    assert_eq!(nat(), before);
}

/// containerd (go-cni) sends its PortMapping struct without JSON tags: the keys
/// arrive capitalised, and Go's decoder (so the reference) reads them.
#[test]
fn go_cased_mappings_as_containerd_sends_them_are_published_and_removed() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({}));
    let before = nat_but_shared();
    let ns = Netns::new();
    let caps = json!({"portMappings": [
        {"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""},
        {"HostPort": 5353, "ContainerPort": 53, "Protocol": "udp", "HostIP": ""},
        {"HostPort": 9090, "ContainerPort": 90, "Protocol": "tcp", "HostIP": "192.0.2.1"}]});
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    tcp_server(ns.path(), 80, "hello");
    tcp_server(ns.path(), 90, "ninety");
    udp_server(ns.path(), 53, "udp-hello");
    assert_reachable(&client, &ns);
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(
        nat_but_shared(),
        before,
        "DEL leaves the nat table as it was, but for the shared chains"
    );
}

/// A mapping that names no usable port (a key nobody reads, here `host_port`)
/// fails ADD with code 7 naming the entry, instead of publishing nothing while
/// the runtime believes the port is mapped; DEL of that config still succeeds.
#[test]
fn a_mapping_without_a_usable_host_port_fails_add_and_del_still_succeeds() {
    enter_test_host();
    let net = network(json!({}));
    let before = nat_but_shared();
    let bin = plugin_dir();
    let maps = json!([{"host_port": 8080, "containerPort": 80, "protocol": "tcp"}]);
    let c = json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap",
                   "runtimeConfig": {"portMappings": maps},
                   "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.40.0.5/24"}]}});
    let call = |command| {
        harness::Call::new("portmap", command, "/run/netns/pm-none", &c.to_string())
            .path(&bin)
            .run()
    };
    let err = call("ADD").err(7);
    let msg = err["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("runtimeConfig.portMappings[0]"), "{err}");
    call("DEL").ok();
    // The same through a runtime: the chain's ADD fails, its DEL cleans up.
    let ns = Netns::new();
    let caps = json!({"portMappings": maps});
    let add = net.run(&["add", "pm-net", ns.path()], &caps);
    assert!(
        add.status == 1 && add.stderr.contains("runtimeConfig.portMappings[0]"),
        "{add:?}"
    );
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(nat_but_shared(), before);
    assert!(!run_in(None, "ip", &["-o", "link"]).contains("veth"));
}

/// CHECK validates as ADD does: every config or capability ADD refuses, CHECK
/// refuses with the same code and message, even with the container's rules in
/// place (a CHECK that skipped the validation would find them and pass).
#[test]
fn check_refuses_every_config_add_refuses_with_the_same_error() {
    enter_test_host();
    let bin = plugin_dir();
    let good = direct(json!({}), &["10.40.0.5/24"], maps(&[(8080, 80, "tcp", "")]));
    call("ADD", "ctr-1", &good, &bin).ok();
    call("CHECK", "ctr-1", &good, &bin).ok();
    let mapping = |m: Value| json!({"runtimeConfig": {"portMappings": [m]}});
    let other_ifname = json!({"prevResult": {"cniVersion": "1.0.0",
        "interfaces": [{"name": "eth1", "sandbox": "/run/netns/pm-none"}],
        "ips": [{"address": "10.40.0.5/24", "interface": 0}]}});
    for extra in [
        mapping(json!({"hostPort": 0, "containerPort": 80, "protocol": "tcp"})),
        mapping(json!({"hostPort": 70000, "containerPort": 80, "protocol": "tcp"})),
        mapping(json!({"hostPort": 8080, "containerPort": 0, "protocol": "tcp"})),
        mapping(json!({"host_port": 8080, "containerPort": 80, "protocol": "tcp"})),
        mapping(json!({"hostPort": 8080, "containerPort": 80, "protocol": "icmp"})),
        mapping(json!({"hostPort": 8080, "containerPort": 80, "hostIP": "bogus"})),
        json!({"markMasqBit": 32}),
        json!({"markMasqBit": 5, "externalSetMarkChain": "KUBE-MARK-MASQ"}),
        json!({"externalSetMarkChain": "bad chain"}),
        json!({"backend": "ebtables"}),
        json!({"conditionsV4": ["-s", "10.0.0.0/8"], "conditionsV6": ["ip6", "saddr", "::1"]}),
        json!({"backend": "iptables", "conditionsV4": ["ip", "saddr", "1.2.3.4"]}),
        json!({"conditionsV4": ["-s", "10.0.0.0/8\n-A x"]}),
        json!({"conditionsV4": ["ip saddr 10.0.0.0/8", "counter"]}),
        other_ifname,
        json!({"prevResult": null}),
    ] {
        let conf = merged(serde_json::from_str(&good).expect("json"), extra.clone()).to_string();
        let add = call("ADD", "ctr-2", &conf, &bin);
        assert_eq!(add.status, 1, "ADD took {extra}: {add:?}");
        let refused = add.json();
        let check = call("CHECK", "ctr-1", &conf, &bin);
        assert_eq!(check.status, 1, "CHECK took {extra}: {check:?}");
        assert_eq!(check.json(), refused, "{extra}");
    }
    call("DEL", "ctr-1", &good, &bin).ok();
}
