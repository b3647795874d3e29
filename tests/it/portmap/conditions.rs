//! `conditionsV4`/`conditionsV6` (nftables): encoded over netlink, gating
//! traffic to the mapping, refused when they cannot be encoded.

use super::*;

/// nft-syntax conditions are encoded over netlink (nft reads them back as
/// written) and gate the mapping: a source outside `ip saddr` is not
/// forwarded; one inside, arriving on the named interface, is; the host's own
/// traffic (no input interface) is not.
#[test]
fn nft_conditions_are_encoded_and_only_matching_traffic_is_forwarded() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let caps = maps(&[(8080, 80, "tcp", "")]);
    let net = network(json!({"conditionsV4": ["ip saddr 10.99.0.0/16"]}));
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected = format!("ip saddr 10.99.0.0/16 tcp dport 8080 dnat to {ip}:80");
    assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080"),
        None,
        "a source outside the condition's network is not forwarded"
    );
    assert_eq!(
        tcp_fetch_soon(None, &format!("{ip}:80"), 10).as_deref(),
        Some("hello"),
        "the server answers directly"
    );
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();

    let net = network(
        json!({"conditionsV4": ["ip", "saddr", "192.0.2.0/24", "iifname", "\"to-client\""]}),
    );
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected =
        format!("ip saddr 192.0.2.0/24 iifname \"to-client\" tcp dport 8080 dnat to {ip}:80");
    assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    // The first container had this address: the host may still hold a
    // reachable neighbour entry naming its MAC, and the new container's
    // gratuitous ARP (arp_notify on link up) can be lost while its host end
    // is still joining the bridge.
    run_in(None, "ip", &["neigh", "flush", "dev", "cni-pm0"]);
    let got = tcp_fetch_soon(Some(client.path()), "192.0.2.1:8080", 10);
    assert_eq!(
        got.as_deref(),
        Some("hello"),
        "a source inside, on the named interface, is forwarded to {ip}\n\
         neighbours: {}\ncontainer links: {}\nbridge fdb: {}",
        run_in(None, "ip", &["neigh", "show", "dev", "cni-pm0"]),
        ns.sh("ip", &["-o", "link"]),
        run_in(None, "bridge", &["fdb", "show", "br", "cni-pm0"]),
    );
    assert_eq!(
        tcp_fetch(None, "192.0.2.1:8080"),
        None,
        "the host's own connection has no input interface"
    );
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
}

/// A client namespace at fd00:c::2 reaching the host at fd00:c::1, with
/// duplicate address detection off so the addresses work at once.
fn client6() -> Netns {
    for key in ["all", "default"] {
        run_in(
            None,
            "sysctl",
            &["-qw", &format!("net.ipv6.conf.{key}.accept_dad=0")],
        );
    }
    run_in(None, "sysctl", &["-qw", "net.ipv6.conf.all.forwarding=1"]);
    let peer = Netns::new();
    let link = ["link", "add", "to-client6", "type", "veth", "peer", "name"];
    run_in(
        None,
        "ip",
        &[&link[..], &["p0", "netns", peer.path()]].concat(),
    );
    run_in(
        None,
        "ip",
        &["addr", "add", "fd00:c::1/64", "dev", "to-client6", "nodad"],
    );
    run_in(None, "ip", &["link", "set", "to-client6", "up"]);
    peer.sh("ip", &["addr", "add", "fd00:c::2/64", "dev", "p0", "nodad"]);
    peer.sh("ip", &["link", "set", "p0", "up"]);
    peer.sh("ip", &["link", "set", "lo", "up"]);
    peer.sh("ip", &["-6", "route", "add", "default", "via", "fd00:c::1"]);
    peer
}

/// bridge (IPv6 only) + portmap with nftables and these `conditionsV6`.
fn network6(conditions_v6: Value) -> Runtime {
    let rt = Runtime::new("pm6");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "pm-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-pm6", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "fd00:40::/64", "dataDir": "@STORE@",
                      "routes": [{"dst": "::/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": true},
             "backend": "nftables", "conditionsV6": conditions_v6}
        ]
    });
    rt.write_list("pm.conflist", &list);
    rt
}

/// The IPv6 twin of the test above: `conditionsV6` gate IPv6 traffic to the
/// mapping as `conditionsV4` gate IPv4.
#[test]
fn nft_conditions_v6_gate_ipv6_traffic_to_the_mapping() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client6();
    let caps = maps(&[(8080, 80, "tcp", "")]);
    let net = network6(json!(["ip6 saddr fd00:99::/64"]));
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    assert!(ip.starts_with("fd00:40::"), "{ip}");
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected = "ip6 saddr fd00:99::/64 tcp dport 8080 dnat";
    assert!(rules.contains(expected), "missing {expected}\n{rules}");
    assert_eq!(
        tcp_fetch(Some(client.path()), "[fd00:c::1]:8080"),
        None,
        "a source outside the condition's network is not forwarded"
    );
    assert_eq!(
        tcp_fetch(Some(client.path()), &format!("[{ip}]:80")).as_deref(),
        Some("hello"),
        "the server answers the client directly"
    );
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();

    let net = network6(json!([
        "ip6",
        "saddr",
        "fd00:c::/64",
        "iifname",
        "\"to-client6\""
    ]));
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected = "ip6 saddr fd00:c::/64 iifname \"to-client6\" tcp dport 8080 dnat";
    assert!(rules.contains(expected), "missing {expected}\n{rules}");
    // The first container had this address: the host may still hold a
    // reachable neighbour entry naming its MAC (IPv6 has no gratuitous ARP),
    // and would send the forwarded traffic there for up to ~45 s.
    run_in(None, "ip", &["-6", "neigh", "flush", "dev", "cni-pm6"]);
    assert_eq!(
        tcp_fetch_soon(Some(client.path()), "[fd00:c::1]:8080", 30).as_deref(),
        Some("hello"),
        "a source inside, on the named interface, is forwarded to {ip}"
    );
    assert_eq!(
        tcp_fetch(None, "[fd00:c::1]:8080"),
        None,
        "the host's own connection has no input interface"
    );
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
}

/// A condition cni-multi cannot encode is refused with code 7 naming its word
/// (never dropped, which would open the port to everyone), before any rule.
#[test]
fn nft_conditions_that_cannot_be_encoded_are_refused_naming_the_token() {
    enter_test_host();
    let bin = plugin_dir();
    let before = ruleset();
    let caps = maps(&[(8080, 80, "tcp", "")]);
    for (extra, token) in [
        (
            json!({"conditionsV4": ["ip saddr 10.0.0.0/8", "counter"]}),
            "\"counter\"",
        ),
        (
            json!({"conditionsV6": ["ip6 saddr fd00::/8 meta skuid 0"]}),
            "\"skuid\"",
        ),
        (json!({"conditionsV4": ["ip6 saddr fd00::/8"]}), "\"ip6\""),
        (
            json!({"conditionsV4": ["ip saddr { 10.0.0.1, 10.0.0.2 }"]}),
            "\"{\"",
        ),
        (
            json!({"conditionsV4": ["ip daddr 300.0.0.1"]}),
            "\"300.0.0.1\"",
        ),
    ] {
        let key = extra
            .as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default();
        let conf = direct(extra, &["10.40.0.5/24", "fd00:40::5/64"], caps.clone());
        let err = call("ADD", "ctr-1", &conf, &bin).err(7);
        let msg = err["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(token) && msg.contains(&key), "{err}");
    }
    assert_eq!(ruleset(), before, "nothing was written");
}
