//! `cnitool doctor` kind `repair`: live attachments whose netfilter state was
//! flushed get their portmap and masquerading state back, the rest is left alone.

mod harness;

use harness::{
    Netns, Runtime, enter_test_host, first_ip, iptables_table, nft_ruleset, peer_netns, run_in,
    tcp_fetch, tcp_server, udp_fetch, udp_server,
};
use serde_json::{Value, json};

/// bridge (ipMasq) + portmap on `backend`, as `rp-net`.
fn network(backend: &str) -> Runtime {
    let rt = Runtime::new("rp");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "rp-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-rp0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": backend,
             "ipam": {"type": "host-local", "subnet": "10.41.0.0/24", "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": true}, "backend": backend}
        ]
    });
    rt.write_list("rp.conflist", &list);
    rt
}

/// Pods with a TCP and a UDP hostPort each (8081.., 5301..), servers behind them.
fn pods(net: &Runtime, n: u16) -> Vec<(Netns, String)> {
    (0..n)
        .map(|i| {
            let ns = Netns::new();
            let caps = json!({"portMappings": [
                {"hostPort": 8081 + i, "containerPort": 80, "protocol": "tcp"},
                {"hostPort": 5301 + i, "containerPort": 53, "protocol": "udp"}
            ]});
            let out = net.run(&["add", "rp-net", ns.path()], &caps).ok();
            let ip = first_ip(&out);
            tcp_server(ns.path(), 80, "hello");
            udp_server(ns.path(), 53, "udp-hello");
            (ns, ip)
        })
        .collect()
}

fn reachable(client: &Netns, n: u16) -> bool {
    (0..n).all(|i| {
        tcp_fetch(Some(client.path()), &format!("192.0.2.1:{}", 8081 + i)) == Some("hello".into())
            && udp_fetch(Some(client.path()), &format!("192.0.2.1:{}", 5301 + i))
                == Some("udp-hello".into())
    })
}

fn doctor(net: &Runtime, fix: bool, status: i32) -> Vec<Value> {
    let mut args = vec!["doctor", "--json", "--min-age", "0"];
    if fix {
        args.push("--fix");
    }
    let out = net.run(&args, &json!({}));
    assert_eq!(out.status, status, "{out:?}");
    out.json()["findings"].as_array().expect("findings").clone()
}

/// The (object, fixed) of every repair finding of each pod, sorted.
fn listed(findings: &[Value]) -> Vec<(String, String, bool)> {
    let mut out: Vec<_> = findings
        .iter()
        .map(|f| {
            assert_eq!(f["kind"], "repair", "{f}");
            assert_eq!(f["network"], "rp-net", "{f}");
            (
                f["containerId"].as_str().unwrap_or_default().to_string(),
                f["object"].as_str().unwrap_or_default().to_string(),
                f["fixed"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

fn flush_then_repair(backend: &str, flush: &[&str], state: fn() -> String) {
    enter_test_host();
    let net = network(backend);
    let client = peer_netns("to-client");
    let pods = pods(&net, 2);
    assert!(reachable(&client, 2), "before the flush");
    assert!(doctor(&net, false, 0).is_empty(), "nothing is missing yet");

    run_in(None, flush[0], &flush[1..]);
    assert!(!reachable(&client, 2), "the flush took the hostPorts");
    let found = listed(&doctor(&net, false, 1));
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(
        found
            .iter()
            .all(|(_, o, fixed)| (o == "portmap rules" || o == "bridge masquerading") && !fixed),
        "{found:?}"
    );

    let fixed = listed(&doctor(&net, true, 0));
    assert_eq!(fixed.len(), 4, "{fixed:?}");
    assert!(fixed.iter().all(|(_, _, f)| *f), "{fixed:?}");
    assert!(reachable(&client, 2), "the hostPorts answer again");
    for (_, ip) in &pods {
        assert!(
            state().contains(ip.as_str()),
            "masquerading of {ip} is back"
        );
    }

    let before = state();
    assert!(
        doctor(&net, true, 0).is_empty(),
        "a second run finds nothing"
    );
    assert_eq!(state(), before, "and changes nothing");
}

fn nat() -> String {
    iptables_table("nat")
}

#[test]
fn repair_after_iptables_nat_flush() {
    flush_then_repair("iptables", &["iptables", "-t", "nat", "-F"], nat);
}

#[test]
fn repair_after_nft_flush_ruleset() {
    flush_then_repair("nftables", &["nft", "flush", "ruleset"], nft_ruleset);
}
