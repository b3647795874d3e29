use super::*;

fn ok(text: &str) -> NetworkConfig {
    parse(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The error of a refused config; it must name `key`.
fn refused(text: &str, key: &str) -> String {
    match parse(text.as_bytes()) {
        Ok(c) => panic!("{text} accepted: {c:?}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(key), "{text}: {msg:?} does not name {key}");
            msg
        }
    }
}

fn ip4(s: &str) -> Ipv4Addr {
    s.parse().expect("ip")
}

fn ip6(s: &str) -> Ipv6Addr {
    s.parse().expect("ip")
}

/// `pkg/subnet/config.go` CheckNetworkConfig: /24 for a /22 or larger, two
/// more bits for a smaller one, nothing under a /28.
#[test]
fn subnet_len_defaults_by_the_networks_prefix() {
    for (network, len) in [
        ("10.0.0.0/8", 24),
        ("10.5.0.0/16", 24),
        ("10.5.0.0/22", 24),
        ("10.5.0.0/23", 25),
        ("10.5.0.0/26", 28),
        ("10.5.0.0/28", 30),
    ] {
        let c = ok(&format!(r#"{{"Network":"{network}"}}"#));
        assert_eq!(c.subnet_len, len, "{network}");
    }
    refused(r#"{"Network":"10.5.0.0/29"}"#, "Network");
    refused(r#"{"Network":"10.5.0.0/16","SubnetLen":31}"#, "SubnetLen");
    refused(r#"{"Network":"10.5.0.0/16","SubnetLen":17}"#, "SubnetLen");
    refused(r#"{"Network":"10.5.0.0/16","SubnetLen":-1}"#, "SubnetLen");
    refused(r#"{"Network":"10.5.0.0/16","SubnetLen":24.0}"#, "SubnetLen");
    refused(r#"{"Network":"10.5.0.0/16","SubnetLen":"24"}"#, "SubnetLen");
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16","SubnetLen":18}"#).subnet_len,
        18
    );
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16","SubnetLen":30}"#).subnet_len,
        30
    );
    // 0 is flannel's "unset".
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16","SubnetLen":0}"#).subnet_len,
        24
    );
}

/// SubnetMin skips the network's first subnet, SubnetMax is its last; given
/// ones must lie in the network on a subnet boundary.
#[test]
fn subnet_min_skips_the_first_subnet_and_max_is_the_last() {
    let c = ok(r#"{"Network":"10.5.0.0/16","Backend":{"Type":"vxlan"}}"#);
    assert_eq!(
        (c.subnet_min, c.subnet_max),
        (ip4("10.5.1.0"), ip4("10.5.255.0"))
    );
    let c = ok(r#"{"Network":"10.5.0.0/28"}"#);
    assert_eq!(
        (c.subnet_min, c.subnet_max),
        (ip4("10.5.0.4"), ip4("10.5.0.12"))
    );
    // flannel's documented example, with a backend we have.
    let c = ok(
        r#"{"Network":"10.0.0.0/8","SubnetLen":20,"SubnetMin":"10.10.0.0",
        "SubnetMax":"10.99.0.0","Backend":{"Type":"vxlan","Port":7890}}"#,
    );
    assert_eq!(
        (c.subnet_len, c.subnet_min, c.subnet_max),
        (20, ip4("10.10.0.0"), ip4("10.99.0.0"))
    );
    // 0.0.0.0 is unset.
    let c = ok(r#"{"Network":"10.5.0.0/16","SubnetMin":"0.0.0.0"}"#);
    assert_eq!(c.subnet_min, ip4("10.5.1.0"));
    refused(
        r#"{"Network":"10.5.0.0/16","SubnetMin":"10.5.1.128"}"#,
        "SubnetMin",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","SubnetMax":"10.5.1.1"}"#,
        "SubnetMax",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","SubnetMin":"10.6.1.0"}"#,
        "SubnetMin",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","SubnetMax":"10.4.0.0"}"#,
        "SubnetMax",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","SubnetMin":"10.5.9.0","SubnetMax":"10.5.8.0"}"#,
        "SubnetMin",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","SubnetMin":"fc00::"}"#,
        "SubnetMin",
    );
}

/// The whole IPv4 space's top half in /30s: no overflow at the end.
#[test]
fn the_largest_networks_do_not_overflow() {
    let c = ok(r#"{"Network":"128.0.0.0/1","SubnetLen":30}"#);
    assert_eq!(
        (c.subnet_min, c.subnet_max),
        (ip4("128.0.0.4"), ip4("255.255.255.252"))
    );
    let c = ok(
        r#"{"Network":"10.0.0.0/8","EnableIPv6":true,"IPv6Network":"8000::/1","IPv6SubnetLen":126}"#,
    );
    let v6 = c.ipv6.expect("ipv6");
    assert_eq!(v6.subnet_min, ip6("8000::4"));
    assert_eq!(
        v6.subnet_max,
        ip6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc")
    );
}

/// Go's encoding/json: keys case-insensitive, the last entry wins, null
/// keeps a plain field, unknown keys ignored; a masked Network.
#[test]
fn keys_are_read_as_go_reads_them() {
    let c = ok(
        r#"{"network":"10.1.0.0/16","NETWORK":"10.2.3.4/16","subnetlen":20,
        "SubnetLen":null,"Unknown":[1,{"x":2}],"backend":{"type":"VXLAN","vni":7,"VNI":9,
        "directrouting":true,"Learning":null}}"#,
    );
    assert_eq!(c.network, "10.2.0.0/16".parse::<Ipv4Net>().expect("net"));
    assert_eq!(c.subnet_len, 20);
    assert_eq!(
        c.backend,
        Backend::Vxlan {
            vni: 9,
            port: 0,
            mtu: None,
            gbp: false,
            learning: false,
            direct_routing: true
        }
    );
    // flannel's address types refuse null, and every entry is decoded.
    refused(r#"{"Network":"10.5.0.0/16","network":null}"#, "Network");
    refused(
        r#"{"Network":"10.5.0.0/33","Network":"10.5.0.0/16"}"#,
        "Network",
    );
    refused(r#"{"Network":"10.5.0.0/16","SubnetMin":null}"#, "SubnetMin");
    refused(r#"{"Network":10}"#, "Network");
    refused(r#"{"Network":"fc00::/48"}"#, "Network");
    refused(r#"{}"#, "Network");
    refused(r#"null"#, "Network");
    refused(r#"{"Network":"0.0.0.0/0"}"#, "Network");
    refused(r#"[1]"#, "object");
    refused(r#"{"Network":"10.5.0.0/16""#, "JSON");
}

#[test]
fn ipv4_off_is_refused_with_etcd() {
    refused(
        r#"{"EnableIPv4":false,"EnableIPv6":true,"IPv6Network":"fc00::/48"}"#,
        "EnableIPv4",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","EnableIPv4":"yes"}"#,
        "EnableIPv4",
    );
}

/// The IPv6 analogues: /64 for a /62 or larger, two more bits below, nothing
/// under a /124, at most /126; IPv6SubnetMin/Max pointers (null resets).
#[test]
fn ipv6_side_follows_flannel() {
    let c = ok(r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/48"}"#);
    let v6 = c.ipv6.expect("ipv6");
    assert_eq!(v6.subnet_len, 64);
    assert_eq!(v6.subnet_min, ip6("fc00:0:0:1::"));
    assert_eq!(v6.subnet_max, ip6("fc00:0:0:ffff::"));
    let c = ok(r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/120"}"#);
    assert_eq!(c.ipv6.expect("ipv6").subnet_len, 122);
    let c = ok(
        r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/48",
        "IPv6SubnetMin":"fc00:0:0:5::","IPv6SubnetMin":null,"IPv6SubnetMax":"fc00:0:0:9::"}"#,
    );
    let v6 = c.ipv6.expect("ipv6");
    assert_eq!(
        (v6.subnet_min, v6.subnet_max),
        (ip6("fc00:0:0:1::"), ip6("fc00:0:0:9::"))
    );
    let base = r#""Network":"10.5.0.0/16","EnableIPv6":true"#;
    refused(&format!("{{{base}}}"), "IPv6Network");
    refused(
        &format!(r#"{{{base},"IPv6Network":"fc00::/125"}}"#),
        "IPv6Network",
    );
    refused(
        &format!(r#"{{{base},"IPv6Network":"fc00::/48","IPv6SubnetLen":127}}"#),
        "IPv6SubnetLen",
    );
    refused(
        &format!(r#"{{{base},"IPv6Network":"fc00::/48","IPv6SubnetLen":49}}"#),
        "IPv6SubnetLen",
    );
    refused(
        &format!(r#"{{{base},"IPv6Network":"fc00::/48","IPv6SubnetMin":"fc00:0:0:1::1"}}"#),
        "IPv6SubnetMin",
    );
    refused(
        &format!(r#"{{{base},"IPv6Network":"fc00::/48","IPv6SubnetMax":"fc01::"}}"#),
        "IPv6SubnetMax",
    );
    refused(
        &format!(r#"{{{base},"IPv6Network":"10.0.0.0/8"}}"#),
        "IPv6Network",
    );
    refused(
        &format!(r#"{{{base},"IPv6Network":"::ffff:0:0/104"}}"#),
        "IPv6Network",
    );
    // IPv6 keys mean nothing while EnableIPv6 is off.
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16","IPv6Network":"bad"}"#).ipv6,
        None
    );
}

/// An absent Backend is vxlan (flannel's documentation; its code says udp);
/// host-gw; any other type refused by name.
#[test]
fn backend_types() {
    let vxlan = |vni, port, mtu| Backend::Vxlan {
        vni,
        port,
        mtu,
        gbp: false,
        learning: false,
        direct_routing: false,
    };
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16"}"#).backend,
        vxlan(1, 0, None)
    );
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16","Backend":null}"#).backend,
        vxlan(1, 0, None)
    );
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16","Backend":{"VNI":2}}"#).backend,
        vxlan(2, 0, None)
    );
    assert_eq!(
        ok(r#"{"Network":"10.5.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789,"MTU":9000,"GBP":true}}"#).backend,
        Backend::Vxlan { vni: 4096, port: 4789, mtu: Some(9000), gbp: true, learning: false, direct_routing: false }
    );
    let hostgw = ok(r#"{"Network":"10.5.0.0/16","Backend":{"Type":"host-gw","VNI":"ignored"}}"#);
    assert_eq!(hostgw.backend, Backend::HostGw);
    assert_eq!(hostgw.backend.type_name(), "host-gw");
    let msg = refused(
        r#"{"Network":"10.5.0.0/16","Backend":{"Type":"udp"}}"#,
        "Backend.Type",
    );
    assert!(
        msg.contains("\"udp\"") && msg.contains("vxlan or host-gw"),
        "{msg}"
    );
    refused(r#"{"Network":"10.5.0.0/16","Backend":"vxlan"}"#, "Backend");
    refused(
        r#"{"Network":"10.5.0.0/16","Backend":{"Type":1}}"#,
        "Backend.Type",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","Backend":{"VNI":16777216}}"#,
        "Backend.VNI",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","Backend":{"VNI":-1}}"#,
        "Backend.VNI",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","Backend":{"Port":65536}}"#,
        "Backend.Port",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","Backend":{"MTU":-5}}"#,
        "Backend.MTU",
    );
    refused(
        r#"{"Network":"10.5.0.0/16","Backend":{"GBP":1}}"#,
        "Backend.GBP",
    );
    assert!(ok(r#"{"Network":"10.5.0.0/16","EnableNFTables":true}"#).enable_nftables);
}

/// A message quotes what it refuses without its control characters.
#[test]
fn messages_carry_no_control_characters() {
    let msg = refused("{\"Network\":\"10.0.0.0/8\\n\\u001b[2J\"}", "Network");
    assert!(!msg.chars().any(char::is_control), "{msg:?}");
}
