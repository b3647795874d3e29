//! mptcp, chained after ptp: endpoints of the pod's address with the flags
//! the config gives and the namespace's limits, read back with `ip mptcp`;
//! CHECK notices them gone; DEL removes them; bad configs are refused (7).

use crate::harness;

use harness::{Netns, TempDir, enter_test_host, plugin_dir, skip};
use serde_json::{Value, json};

fn has_mptcp(test: &str) -> bool {
    if std::path::Path::new("/proc/sys/net/mptcp/enabled").exists() {
        return true;
    }
    skip(test, "this kernel has no MPTCP");
    false
}

struct Node {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    bin: TempDir,
}

impl Node {
    fn new(mptcp: Value) -> Node {
        let n = Node {
            conf: TempDir::new("mptcp-conf"),
            cache: TempDir::new("mptcp-cache"),
            store: TempDir::new("mptcp-store"),
            bin: plugin_dir(),
        };
        let mut plugin = json!({"type": "mptcp"});
        for (k, v) in mptcp.as_object().into_iter().flatten() {
            plugin[k] = v.clone();
        }
        let list = json!({"cniVersion": "1.1.0", "name": "mptcp-net", "plugins": [
            {"type": "ptp", "ipam": {"type": "host-local", "dataDir": n.store.0,
                                      "ranges": [[{"subnet": "10.72.0.0/24"}]]}},
            plugin
        ]});
        std::fs::write(n.conf.0.join("mptcp.conflist"), list.to_string()).expect("conf");
        n
    }

    fn run(&self, verb: &str, ns: &Netns) -> harness::Outcome {
        harness::cnitool_in(
            &self.conf.0,
            &self.cache.0,
            &self.bin.0,
            &[],
            &[verb, "mptcp-net", ns.path()],
        )
    }
}

#[test]
fn mptcp_sets_endpoints_and_limits_check_sees_them_del_removes_them() {
    enter_test_host();
    if !has_mptcp("mptcp_sets_endpoints_and_limits_check_sees_them_del_removes_them") {
        return;
    }
    let node = Node::new(json!({
        "endpoints": [{"flags": ["signal", "backup"]}],
        "limits": {"subflows": 2, "addAddrAccepted": 3}
    }));
    let pod = Netns::new();
    let out = node.run("add", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let ip = out.json()["ips"][0]["address"]
        .as_str()
        .expect("address")
        .split('/')
        .next()
        .expect("ip")
        .to_string();
    let endpoints = pod.sh("ip", &["mptcp", "endpoint", "show"]);
    assert!(
        endpoints.contains(&ip)
            && endpoints.contains("signal")
            && endpoints.contains("backup")
            && endpoints.contains("dev eth0"),
        "{endpoints}"
    );
    let limits = pod.sh("ip", &["mptcp", "limits", "show"]);
    assert!(
        limits.contains("add_addr_accepted 3") && limits.contains("subflows 2"),
        "{limits}"
    );
    let out = node.run("check", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let out = node.run("del", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(pod.sh("ip", &["mptcp", "endpoint", "show"]).trim(), "");
    // Idempotent.
    assert_eq!(node.run("del", &pod).status, 0);

    // CHECK sees an endpoint gone.
    let pod = Netns::new();
    assert_eq!(node.run("add", &pod).status, 0);
    pod.sh("ip", &["mptcp", "endpoint", "flush"]);
    let out = node.run("check", &pod);
    assert_ne!(out.status, 0, "CHECK passes without the endpoint: {out:?}");
    assert!(out.stderr.contains("mptcp: endpoint"), "{out:?}");
    assert_eq!(node.run("del", &pod).status, 0);
}

#[test]
fn mptcp_refuses_bad_configs() {
    enter_test_host();
    if !has_mptcp("mptcp_refuses_bad_configs") {
        return;
    }
    for (keys, why) in [
        (
            json!({"endpoints": [{"flags": ["sig"]}]}),
            "unknown endpoint flag",
        ),
        (
            json!({"endpoints": [{"flags": ["signal", "fullmesh"]}]}),
            "both signal and fullmesh",
        ),
        (json!({"limits": {"subflows": 9}}), "at most 8"),
        (
            json!({"endpoints": [{"address": "10.99.0.1", "flags": ["subflow"]}]}),
            "not an address of the interface",
        ),
    ] {
        let node = Node::new(keys);
        let pod = Netns::new();
        let out = node.run("add", &pod);
        assert_ne!(out.status, 0, "{out:?}");
        assert!(out.stderr.contains(why), "{why}: {out:?}");
        // DEL takes what ADD refuses, and cleans up the chain.
        let out = node.run("del", &pod);
        assert_eq!(out.status, 0, "{out:?}");
    }
}
