//! loopback end to end, in throwaway namespaces, at every spec version.

use crate::harness;

use harness::{Call, Netns, VERSIONS, enter_test_host};
use serde_json::json;

/// The README's example config (testdata/loopback.conf) at `version`.
fn conf(version: &str) -> String {
    let text = std::fs::read_to_string("testdata/loopback.conf").expect("testdata/loopback.conf");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    v["cniVersion"] = json!(version);
    v.to_string()
}

fn lo_is_up(ns: &Netns) -> bool {
    let line = ns.sh("ip", &["-o", "link", "show", "lo"]);
    let flags = line.split(['<', '>']).nth(1).unwrap_or_default();
    flags.split(',').any(|f| f == "UP")
}

#[test]
fn add_brings_lo_up_and_reports_its_addresses_at_every_version() {
    enter_test_host();
    for version in VERSIONS {
        let ns = Netns::new();
        assert!(!lo_is_up(&ns), "a fresh netns starts with lo down");
        let out = Call::new("loopback", "ADD", ns.path(), &conf(version))
            .run()
            .ok();
        assert!(lo_is_up(&ns), "{version}: lo up after ADD");
        assert_eq!(out["cniVersion"], version);
        match version {
            "0.1.0" | "0.2.0" => {
                assert_eq!(out["ip4"]["ip"], "127.0.0.1/8", "{version}: {out}");
                assert_eq!(out["ip6"]["ip"], "::1/128", "{version}: {out}");
                assert_eq!(out["dns"], json!({}), "{version}: dns always printed");
                assert!(out.get("interfaces").is_none());
            }
            _ => {
                assert_eq!(
                    out["interfaces"],
                    json!([{"name": "lo", "mac": "00:00:00:00:00:00", "sandbox": ns.path()}])
                );
                let ips = out["ips"].as_array().expect("ips");
                assert_eq!(ips.len(), 2, "{version}: {out}");
                assert_eq!(ips[0]["address"], "127.0.0.1/8");
                assert_eq!(ips[0]["interface"], 0);
                assert_eq!(ips[1]["address"], "::1/128");
                let has_version_key = ips[0].get("version").is_some();
                assert_eq!(has_version_key, version.starts_with("0."), "{version}");
                // 0.3/0.4 always print dns; 1.x omits it when empty.
                assert_eq!(
                    out.get("dns").is_some(),
                    version.starts_with("0."),
                    "{version}"
                );
            }
        }
    }
}

#[test]
fn output_bytes_match_the_reference_layout() {
    enter_test_host();
    let ns = Netns::new();
    let out = Call::new("loopback", "ADD", ns.path(), &conf("1.0.0")).run();
    let expected = format!(
        "{{\n    \"cniVersion\": \"1.0.0\",\n    \"interfaces\": [\n        {{\n            \"mac\": \"00:00:00:00:00:00\",\n            \"name\": \"lo\",\n            \"sandbox\": \"{}\"\n        }}\n    ],\n    \"ips\": [\n        {{\n            \"address\": \"127.0.0.1/8\",\n            \"interface\": 0\n        }},\n        {{\n            \"address\": \"::1/128\",\n            \"interface\": 0\n        }}\n    ]\n}}",
        ns.path()
    );
    assert_eq!(out.stdout, expected);
}

#[test]
fn check_passes_after_add_and_fails_when_lo_is_down() {
    enter_test_host();
    let ns = Netns::new();
    Call::new("loopback", "ADD", ns.path(), &conf("1.1.0"))
        .run()
        .ok();
    Call::new("loopback", "CHECK", ns.path(), &conf("1.1.0"))
        .run()
        .ok();
    ns.sh("ip", &["link", "set", "lo", "down"]);
    let e = Call::new("loopback", "CHECK", ns.path(), &conf("1.1.0"))
        .run()
        .err(999);
    assert_eq!(e["msg"], "loopback interface is down");
}

#[test]
fn del_brings_lo_down_and_is_idempotent() {
    enter_test_host();
    let ns = Netns::new();
    Call::new("loopback", "ADD", ns.path(), &conf("0.4.0"))
        .run()
        .ok();
    assert_eq!(
        Call::new("loopback", "DEL", ns.path(), &conf("0.4.0"))
            .run()
            .ok(),
        serde_json::Value::Null,
        "DEL prints nothing"
    );
    assert!(!lo_is_up(&ns));
    Call::new("loopback", "DEL", ns.path(), &conf("0.4.0"))
        .run()
        .ok();
    // No netns given, or the netns already gone: still success.
    Call::new("loopback", "DEL", "", &conf("0.4.0")).run().ok();
    let gone = ns.path().to_string();
    ns.destroy();
    Call::new("loopback", "DEL", &gone, &conf("0.4.0"))
        .run()
        .ok();
}

#[test]
fn add_passes_a_previous_result_through() {
    enter_test_host();
    let ns = Netns::new();
    let prev = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "mac": "0a:58:0a:16:00:05", "sandbox": ns.path()}],
        "ips": [{"address": "10.22.0.5/16", "gateway": "10.22.0.1", "interface": 0}],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.22.0.1"}],
        "dns": {"nameservers": ["10.96.0.10"]}
    });
    for version in ["1.0.0", "1.1.0"] {
        let mut stdin = json!({"cniVersion": version, "name": "lo-net", "type": "loopback"});
        let mut p = prev.clone();
        p["cniVersion"] = json!(version);
        stdin["prevResult"] = p.clone();
        let out = Call::new("loopback", "ADD", ns.path(), &stdin.to_string())
            .run()
            .ok();
        assert_eq!(out, p, "{version}: prevResult passes through unchanged");
    }
    // A 0.4.0 prevResult in a 0.4.0 config keeps its version keys.
    let stdin = json!({"cniVersion": "0.4.0", "name": "lo-net", "type": "loopback",
        "prevResult": {"cniVersion": "0.4.0",
            "ips": [{"version": "4", "address": "10.22.0.5/16", "interface": 0}]}});
    let out = Call::new("loopback", "ADD", ns.path(), &stdin.to_string())
        .run()
        .ok();
    assert_eq!(out["ips"][0]["version"], "4");
    assert_eq!(out["dns"], json!({}));
}

#[test]
fn ignores_cni_ifname_and_cni_args_like_the_reference() {
    enter_test_host();
    let ns = Netns::new();
    let out = Call::new("loopback", "ADD", ns.path(), &conf("1.0.0"))
        .set("CNI_IFNAME", "whatever0")
        .set("CNI_ARGS", "K8S_POD_NAME=x;UNKNOWN=y")
        .run()
        .ok();
    assert_eq!(out["interfaces"][0]["name"], "lo");
}
