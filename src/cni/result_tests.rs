//! Every conversion pair across the seven versions, against expected JSON per
//! layout pair, plus round trips where the conversion is lossless.

use super::*;
use serde_json::{Value, json};

const VERSIONS: [&str; 7] = version::SUPPORTED;

/// A 1.1.0 result using every field, including the 1.1-only ones.
fn rich() -> Value {
    json!({
        "cniVersion": "1.1.0",
        "interfaces": [
            {"name": "cni0", "mac": "0a:00:00:00:00:01", "mtu": 1450},
            {"name": "eth0", "mac": "0a:00:00:00:00:02", "sandbox": "/run/netns/x",
             "socketPath": "/run/sock", "pciID": "0000:00:1f.6"}
        ],
        "ips": [
            {"interface": 1, "address": "10.1.0.5/24", "gateway": "10.1.0.1"},
            {"interface": 1, "address": "10.2.0.5/24"},
            {"interface": 1, "address": "fd00::5/64", "gateway": "fd00::1"}
        ],
        "routes": [
            {"dst": "0.0.0.0/0", "gw": "10.1.0.1"},
            {"dst": "192.168.0.0/16", "mtu": 1400, "table": 100, "scope": 0},
            {"dst": "::/0", "gw": "fd00::1", "priority": 5}
        ],
        "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local",
                "search": ["svc.cluster.local"], "options": ["ndots:5"]}
    })
}

fn dns() -> Value {
    rich()["dns"].clone()
}

/// What the rich result looks like at 0.1.0/0.2.0: first IP per family, routes
/// split by family with only dst and gw.
fn as_020() -> Value {
    json!({
        "ip4": {"ip": "10.1.0.5/24", "gateway": "10.1.0.1",
                "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}, {"dst": "192.168.0.0/16"}]},
        "ip6": {"ip": "fd00::5/64", "gateway": "fd00::1", "routes": [{"dst": "::/0", "gw": "fd00::1"}]},
        "dns": dns()
    })
}

/// At 0.3.x/0.4.0 from a 1.x result: `version` added, interface extras dropped,
/// routes kept whole (the reference's quirk).
fn as_040_from_100() -> Value {
    json!({
        "interfaces": [
            {"name": "cni0", "mac": "0a:00:00:00:00:01"},
            {"name": "eth0", "mac": "0a:00:00:00:00:02", "sandbox": "/run/netns/x"}
        ],
        "ips": [
            {"version": "4", "interface": 1, "address": "10.1.0.5/24", "gateway": "10.1.0.1"},
            {"version": "4", "interface": 1, "address": "10.2.0.5/24"},
            {"version": "6", "interface": 1, "address": "fd00::5/64", "gateway": "fd00::1"}
        ],
        "routes": rich()["routes"].clone(),
        "dns": dns()
    })
}

/// 1.x after a trip through 0.4.0: the interface extras are gone.
fn as_100_from_040() -> Value {
    let mut v = rich();
    v["interfaces"] = json!([
        {"name": "cni0", "mac": "0a:00:00:00:00:01"},
        {"name": "eth0", "mac": "0a:00:00:00:00:02", "sandbox": "/run/netns/x"}
    ]);
    v
}

/// 0.3.x/0.4.0 from a 0.1.0/0.2.0 result: ips without interface, routes ip4 then ip6.
fn as_040_from_020() -> Value {
    json!({
        "ips": [
            {"version": "4", "address": "10.1.0.5/24", "gateway": "10.1.0.1"},
            {"version": "6", "address": "fd00::5/64", "gateway": "fd00::1"}
        ],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}, {"dst": "192.168.0.0/16"},
                   {"dst": "::/0", "gw": "fd00::1"}],
        "dns": dns()
    })
}

fn as_100_from_020() -> Value {
    json!({
        "ips": [
            {"address": "10.1.0.5/24", "gateway": "10.1.0.1"},
            {"address": "fd00::5/64", "gateway": "fd00::1"}
        ],
        "routes": as_040_from_020()["routes"].clone(),
        "dns": dns()
    })
}

fn with_version(mut v: Value, ver: &str) -> Value {
    v["cniVersion"] = json!(ver);
    v
}

/// The rich result as a plugin at `ver` would have printed it.
fn rich_at(ver: &str) -> Versioned {
    let current = Versioned::parse(rich(), "1.1.0").expect("rich parses");
    current.convert(ver).expect("rich converts down")
}

fn printed(v: &Versioned) -> Value {
    serde_json::from_str(&v.to_json()).expect("printed JSON parses")
}

fn expected(from: &str, to: &str) -> Value {
    let fam = |v| Family::of(v).expect("family");
    let body = match (fam(from), fam(to)) {
        (_, Family::V020) => as_020(),
        (Family::V020, Family::V040) => as_040_from_020(),
        (Family::V020, Family::V100) => as_100_from_020(),
        (_, Family::V040) => as_040_from_100(),
        (Family::V100, Family::V100) => rich(),
        (Family::V040, Family::V100) => as_100_from_040(),
    };
    with_version(body, to)
}

#[test]
fn every_pair_converts_as_the_reference() {
    let mut checked = 0;
    for from in VERSIONS {
        let source = rich_at(from);
        assert_eq!(source.version(), from);
        for to in VERSIONS {
            let got = source
                .clone()
                .convert(to)
                .unwrap_or_else(|e| panic!("{from}->{to}: {e}"));
            assert_eq!(got.version(), to);
            assert_eq!(printed(&got), expected(from, to), "{from} -> {to}");
            checked += 1;
        }
    }
    assert_eq!(checked, 49);
}

#[test]
fn round_trips_are_lossless_where_the_layouts_allow() {
    for from in VERSIONS {
        let source = rich_at(from);
        for to in VERSIONS {
            let back = source
                .clone()
                .convert(to)
                .and_then(|r| r.convert(from))
                .unwrap_or_else(|e| panic!("{from}->{to}->{from}: {e}"));
            // Going down to a layout with fewer fields loses them; nothing else does.
            let fam = |v| Family::of(v).expect("family");
            let lossy = matches!(
                (fam(from), fam(to)),
                (Family::V100, Family::V040 | Family::V020) | (Family::V040, Family::V020)
            );
            if lossy {
                continue;
            }
            assert_eq!(back, source, "{from} -> {to} -> {from}");
        }
    }
    // 1.x -> 0.4 -> 1.x loses only the 1.1 interface fields.
    let back = rich_at("1.1.0")
        .convert("0.4.0")
        .and_then(|r| r.convert("1.1.0"));
    assert_eq!(
        back.map(|r| printed(&r)).ok(),
        Some(with_version(as_100_from_040(), "1.1.0"))
    );
}

#[test]
fn old_versions_cannot_carry_a_result_without_ips() {
    let l2 = NetResult {
        interfaces: vec![Interface {
            name: "eth0".into(),
            ..Default::default()
        }],
        ..NetResult::new()
    };
    for to in ["0.1.0", "0.2.0", ""] {
        let e = l2.render(to).expect_err("no IP at 0.1/0.2");
        assert!(
            e.msg.contains("cannot convert: no valid IP addresses"),
            "{e}"
        );
    }
    for to in &VERSIONS[2..] {
        assert!(l2.render(to).is_ok(), "{to}");
    }
}

#[test]
fn routes_of_a_family_without_ip_are_dropped_at_0_2_0() {
    let v6_only = json!({"cniVersion": "1.0.0",
        "ips": [{"address": "fd00::5/64"}],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}, {"dst": "::/0"}]});
    let r = Versioned::parse(v6_only, "1.0.0")
        .map_err(|e| e.to_string())
        .and_then(|r| r.convert("0.2.0").map_err(|e| e.msg));
    assert_eq!(
        r.map(|r| printed(&r)),
        Ok(
            json!({"cniVersion": "0.2.0", "ip6": {"ip": "fd00::5/64", "routes": [{"dst": "::/0"}]}, "dns": {}})
        )
    );
}

#[test]
fn printing_follows_each_layout() {
    let r = NetResult {
        ips: vec![IpConfig {
            interface: Some(0),
            address: "10.0.0.2/24".parse().expect("net"),
            gateway: None,
        }],
        ..NetResult::new()
    };
    // 0.4.0: struct order, dns always there.
    assert_eq!(
        r.render("0.4.0").ok().as_deref(),
        Some(
            "{\n    \"cniVersion\": \"0.4.0\",\n    \"ips\": [\n        {\n            \"version\": \"4\",\n            \"interface\": 0,\n            \"address\": \"10.0.0.2/24\"\n        }\n    ],\n    \"dns\": {}\n}"
        )
    );
    // 1.0.0: keys sorted, empty dns omitted.
    assert_eq!(
        r.render("1.0.0").ok().as_deref(),
        Some(
            "{\n    \"cniVersion\": \"1.0.0\",\n    \"ips\": [\n        {\n            \"address\": \"10.0.0.2/24\",\n            \"interface\": 0\n        }\n    ]\n}"
        )
    );
    assert_eq!(
        go_escape("{\"a\":\"<&>\"}"),
        "{\"a\":\"\\u003c\\u0026\\u003e\"}"
    );
}

#[test]
fn parsing_stamps_a_missing_version_and_checks_the_layout() {
    let r = Versioned::parse(json!({"ip4": {"ip": "10.0.0.2/24"}}), "0.2.0").expect("stamped");
    assert_eq!(r.version(), "0.2.0");
    let r = Versioned::parse(json!({"ip4": {"ip": "10.0.0.2/24"}}), "").expect("empty is 0.1.0");
    assert_eq!(r.version(), "0.1.0");
    let e = Versioned::parse(json!({"cniVersion": "1.0.0"}), "0.4.0").expect_err("layout");
    assert_eq!(
        e.to_string(),
        "result type supports [\"0.3.0\" \"0.3.1\" \"0.4.0\"] but unmarshalled CNIVersion is \"1.0.0\""
    );
    // Go treats null lists and empty gateways as absent.
    let r = Versioned::parse(
        json!({"cniVersion": "1.0.0", "ips": null, "routes": [{"dst": "0.0.0.0/0", "gw": ""}]}),
        "1.0.0",
    )
    .expect("nulls");
    assert_eq!(
        printed(&r),
        json!({"cniVersion": "1.0.0", "routes": [{"dst": "0.0.0.0/0"}]})
    );
    assert!(Versioned::parse(json!({}), "0.9.0").is_err());
}
