//! static IPAM end to end: address sources and their priority, results at every
//! version, CHECK against prevResult, DEL without state.

use crate::harness;

use harness::{Call, VERSIONS, enter_test_host};
use serde_json::{Value, json};

/// IPAM plugins never enter the netns; any path that is not our own will do.
const NETNS: &str = "/run/netns/cni-multi-ipam-test";

fn conf(version: &str, ipam: Value) -> Value {
    let mut ipam = ipam;
    ipam["type"] = json!("static");
    json!({"cniVersion": version, "name": "st-net", "type": "bridge", "ipam": ipam})
}

fn call(cmd: &str, stdin: &Value) -> Call {
    Call::new("static", cmd, NETNS, &stdin.to_string()).set("CNI_CONTAINERID", "ctr-1")
}

fn dual_stack() -> Value {
    json!({
        "addresses": [
            {"address": "10.10.0.1/24", "gateway": "10.10.0.254"},
            {"address": "3ffe:ffff:0:1ff::1/64", "gateway": "3ffe:ffff:0::1"}
        ],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "192.168.0.0/16", "gw": "10.10.5.1"}],
        "dns": {"nameservers": ["8.8.8.8"], "domain": "example.com", "search": ["example.com"]}
    })
}

#[test]
fn add_returns_the_configured_addresses_routes_and_dns() {
    enter_test_host();
    let out = call("ADD", &conf("1.0.0", dual_stack())).run().ok();
    assert_eq!(
        out,
        json!({
            "cniVersion": "1.0.0",
            "ips": [
                {"address": "10.10.0.1/24", "gateway": "10.10.0.254"},
                {"address": "3ffe:ffff:0:1ff::1/64", "gateway": "3ffe:ffff::1"}
            ],
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "192.168.0.0/16", "gw": "10.10.5.1"}],
            "dns": {"nameservers": ["8.8.8.8"], "domain": "example.com", "search": ["example.com"]}
        })
    );
    call("DEL", &conf("1.0.0", dual_stack())).run().ok();
}

#[test]
fn every_version_prints_its_own_layout() {
    enter_test_host();
    let one = json!({"addresses": [{"address": "10.10.0.1/24", "gateway": "10.10.0.254"}]});
    for v in VERSIONS {
        let out = call("ADD", &conf(v, one.clone())).run().ok();
        assert_eq!(out["cniVersion"], v);
        match v {
            "0.1.0" | "0.2.0" => assert_eq!(out["ip4"]["ip"], "10.10.0.1/24", "{v}"),
            "0.3.0" | "0.3.1" | "0.4.0" => {
                assert_eq!(out["ips"][0]["version"], "4", "{v}");
                assert_eq!(out["ips"][0]["address"], "10.10.0.1/24", "{v}");
            }
            _ => assert_eq!(out["ips"][0]["address"], "10.10.0.1/24", "{v}"),
        }
    }
    // Two addresses of one family need 0.3.0 or later.
    let two = json!({"addresses": [{"address": "10.10.0.1/24"}, {"address": "10.10.1.1/24"}]});
    let e = call("ADD", &conf("0.2.0", two.clone())).run().err(7);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("more than 1 address per family")),
        "{e}"
    );
    assert_eq!(
        call("ADD", &conf("0.3.1", two)).run().ok()["ips"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn cni_args_append_and_set_gateways_args_and_runtime_config_replace() {
    enter_test_host();
    let base = json!({"addresses": [{"address": "10.10.0.1/24"}]});
    let out = call("ADD", &conf("1.0.0", base.clone()))
        .set("CNI_ARGS", "IP=10.20.0.5/16,fd00::5/64;GATEWAY=10.20.0.1")
        .run()
        .ok();
    assert_eq!(
        out["ips"],
        json!([
            {"address": "10.10.0.1/24"},
            {"address": "10.20.0.5/16", "gateway": "10.20.0.1"},
            {"address": "fd00::5/64"}
        ])
    );

    let mut with_args = conf("1.0.0", base.clone());
    with_args["args"] = json!({"cni": {"ips": ["10.30.0.7/24"]}});
    let out = call("ADD", &with_args)
        .set("CNI_ARGS", "IP=10.20.0.5/16")
        .run()
        .ok();
    assert_eq!(out["ips"], json!([{"address": "10.30.0.7/24"}]));

    with_args["runtimeConfig"] = json!({"ips": ["10.40.0.9/24", "fd00::9/64"]});
    let out = call("ADD", &with_args).run().ok();
    assert_eq!(
        out["ips"],
        json!([{"address": "10.40.0.9/24"}, {"address": "fd00::9/64"}])
    );
}

#[test]
fn addresses_must_be_cidr() {
    enter_test_host();
    let e = call(
        "ADD",
        &conf("1.0.0", json!({"addresses": [{"address": "10.10.0.1"}]})),
    )
    .run()
    .err(7);
    assert!(
        e["msg"].as_str().is_some_and(|m| m.contains("10.10.0.1")),
        "{e}"
    );
    call(
        "ADD",
        &conf("1.0.0", json!({"addresses": [{"gateway": "10.0.0.1"}]})),
    )
    .run()
    .err(7);
    let mut c = conf("1.0.0", json!({}));
    c["runtimeConfig"] = json!({"ips": ["10.40.0.9"]});
    call("ADD", &c).run().err(7);
    call("ADD", &conf("1.0.0", json!({})))
        .set("CNI_ARGS", "IP=10.40.0.9")
        .run()
        .err(4);
    call("ADD", &conf("1.0.0", json!({})))
        .set("CNI_ARGS", "GATEWAY=nope")
        .run()
        .err(4);
    let mut no_ipam = conf("1.0.0", json!({}));
    no_ipam.as_object_mut().map(|o| o.remove("ipam"));
    call("ADD", &no_ipam).run().err(7);
}

#[test]
fn check_compares_with_prev_result() {
    enter_test_host();
    for v in ["0.4.0", "1.0.0", "1.1.0"] {
        let added = call("ADD", &conf(v, dual_stack())).run().ok();
        let mut c = conf(v, dual_stack());
        c["prevResult"] = added.clone();
        call("CHECK", &c).run().ok();

        // A prevResult missing an address or with another gateway fails.
        let mut missing = added.clone();
        missing["ips"].as_array_mut().map(|a| a.pop());
        c["prevResult"] = missing;
        call("CHECK", &c).run().err(999);
        let mut moved = added;
        moved["ips"][0]["gateway"] = json!("10.10.0.253");
        c["prevResult"] = moved;
        call("CHECK", &c).run().err(999);

        c.as_object_mut().map(|o| o.remove("prevResult"));
        call("CHECK", &c).run().err(7);
    }
}
