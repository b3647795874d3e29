//! Every chained plugin prints prevResult, with only the reference's
//! modifications, at 0.3.1, 0.4.0, 1.0.0 and 1.1.0.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Value, json};

/// prevResult as a 0.x or 1.x plugin prints it for `eth0` at 10.97.0.2 in `ns`.
fn prev(version: &str, ns: &Netns) -> Value {
    let mut ip = json!({"address": "10.97.0.2/24", "gateway": "10.97.0.1", "interface": 1});
    let mut p = json!({
        "cniVersion": version,
        "interfaces": [
            {"name": "hostv", "mac": "0a:58:00:00:00:0a"},
            {"name": "eth0", "mac": "0a:58:00:00:00:0b", "sandbox": ns.path()}
        ],
        "routes": [{"dst": "0.0.0.0/0"}]
    });
    if version.starts_with("0.") {
        ip["version"] = json!("4");
        p["dns"] = json!({});
    }
    p["ips"] = json!([ip]);
    p
}

#[test]
fn outputs_are_prev_result_with_only_the_reference_changes() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("chained");
    let ns = Netns::new();
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "hostv",
            "address",
            "0a:58:00:00:00:0a",
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "address",
            "0a:58:00:00:00:0b",
            "netns",
            ns.path(),
        ],
    );
    run_in(None, "ip", &["link", "set", "hostv", "up"]);
    run_in(
        None,
        "ip",
        &["route", "add", "10.97.0.0/24", "dev", "hostv"],
    );
    ns.sh("ip", &["addr", "add", "10.97.0.2/24", "dev", "eth0"]);
    ns.sh("ip", &["link", "set", "eth0", "up"]);
    for version in ["0.3.1", "0.4.0", "1.0.0", "1.1.0"] {
        let p = prev(version, &ns);
        let cases: Vec<(&str, Value)> = vec![
            (
                "portmap",
                json!({"runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}}),
            ),
            ("firewall", json!({})),
            ("sbr", json!({"table": 300})),
            (
                "tuning",
                json!({"mac": "0a:58:00:00:00:0c", "dataDir": data.0}),
            ),
            (
                "bandwidth",
                json!({"ingressRate": 1000000, "ingressBurst": 100000, "egressRate": 1000000, "egressBurst": 100000}),
            ),
        ];
        for (plugin, extra) in cases {
            let mut c =
                json!({"cniVersion": version, "name": "chained", "type": plugin, "prevResult": p});
            if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
                for (k, v) in e {
                    o.insert(k.clone(), v.clone());
                }
            }
            let call = |cmd: &str| Call::new(plugin, cmd, ns.path(), &c.to_string()).path(&bin);
            let out = call("ADD").run().ok();
            let mut expected = p.clone();
            match plugin {
                "tuning" => expected["interfaces"][1]["mac"] = json!("0a:58:00:00:00:0c"),
                "bandwidth" => {
                    let ifb = out["interfaces"][2].clone();
                    assert!(
                        ifb["name"].as_str().is_some_and(|n| n.starts_with("bwp")),
                        "{version}: {out}"
                    );
                    if let Some(list) = expected["interfaces"].as_array_mut() {
                        list.push(ifb);
                    }
                }
                _ => {}
            }
            assert_eq!(out, expected, "{plugin} at {version}");
            call("DEL").run().ok();
        }
    }
}
