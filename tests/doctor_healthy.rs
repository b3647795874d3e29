//! No false positive: on a node with 30 live pods spread over every main
//! plugin (bridge with ipMasq, portmap TCP and UDP, bandwidth, firewall and
//! tuning; ptp with ipMasq and portmap; macvlan; host-device; tap; loopback;
//! ipvlan, vlan and dummy where the kernel has them), `cnitool doctor` finds
//! nothing, even with `--min-age 0`, and `--fix` changes nothing. The pods'
//! namespaces are pinned as runtimes pin them, so the doctor judges each
//! (a `/proc` path it could not).

mod harness;

use harness::{PinnedNetns, Runtime, enter_test_host, kernel_supports, run_in, skip};
use serde_json::{Value, json};
use std::path::Path;

const TEST: &str = "thirty_live_pods_of_every_main_plugin_are_no_finding";

fn veth(name: &str) {
    let peer = format!("{name}p");
    run_in(
        None,
        "ip",
        &["link", "add", name, "type", "veth", "peer", "name", &peer],
    );
    run_in(None, "ip", &["link", "set", name, "up"]);
}

fn host_local(subnet: &str) -> Value {
    json!({"type": "host-local", "subnet": subnet, "dataDir": "@STORE@",
           "routes": [{"dst": "0.0.0.0/0"}]})
}

/// One conflist per main plugin (host-device: one per pod, each its own
/// device); the plugins' own dataDirs in the test's store.
fn networks(rt: &Runtime, data: &Path) -> Vec<(String, Value)> {
    let data = data.to_string_lossy();
    let dir = |what: &str| format!("{data}/{what}");
    let list = |name: &str, plugins: Value| -> (String, Value) {
        (
            name.to_string(),
            json!({"cniVersion": "1.0.0", "name": name, "plugins": plugins}),
        )
    };
    let mut out = vec![
        list(
            "hb-bridge",
            json!([
                {"type": "bridge", "bridge": "cni-hb0", "isGateway": true, "ipMasq": true,
                 "ipam": host_local("10.160.0.0/24")},
                {"type": "tuning", "mtu": 1400, "dataDir": dir("tuning")},
                {"type": "portmap", "capabilities": {"portMappings": true},
                 "dataDir": dir("portmap")},
                {"type": "firewall", "backend": "iptables", "dataDir": dir("firewall")},
                {"type": "bandwidth", "ingressRate": 8_000_000, "ingressBurst": 80_000,
                 "egressRate": 8_000_000, "egressBurst": 80_000, "dataDir": dir("bandwidth")}
            ]),
        ),
        list(
            "hb-ptp",
            json!([
                {"type": "ptp", "ipMasq": true, "ipam": host_local("10.161.0.0/24")},
                {"type": "portmap", "capabilities": {"portMappings": true},
                 "dataDir": dir("portmap")}
            ]),
        ),
        list(
            "hb-macvlan",
            json!([{"type": "macvlan", "master": "hb-mv", "ipam": host_local("10.162.0.0/24")}]),
        ),
        list(
            "hb-tap",
            json!([{"type": "tap", "ipam": host_local("10.163.0.0/24")}]),
        ),
        list("hb-lo", json!([{"type": "loopback"}])),
    ];
    veth("hb-mv");
    for (kind, options, plugin) in [
        (
            "ipvlan",
            &[][..],
            json!({"type": "ipvlan", "master": "hb-ipv", "ipam": host_local("10.164.0.0/24")}),
        ),
        (
            "vlan",
            &["id", "7"][..],
            // The VLAN id is set per pod (one link per id and master).
            json!({"type": "vlan", "master": "hb-vl", "ipam": host_local("10.165.0.0/24")}),
        ),
        (
            "dummy",
            &[][..],
            json!({"type": "dummy", "ipam": host_local("10.166.0.0/24")}),
        ),
    ] {
        if let Err(reason) = kernel_supports(kind, kind != "dummy", options) {
            skip(TEST, &format!("{reason} (its pods are left out)"));
            continue;
        }
        if let Some(master) = plugin["master"].as_str() {
            veth(master);
        }
        out.push(list(&format!("hb-{kind}"), json!([plugin])));
    }
    for (name, l) in &out {
        rt.write_list(&format!("{name}.conflist"), l);
    }
    out
}

#[test]
fn thirty_live_pods_of_every_main_plugin_are_no_finding() {
    enter_test_host();
    let rt = Runtime::new("hb");
    let data = rt.store.0.join("plugins");
    let mut nets: Vec<String> = networks(&rt, &data).into_iter().map(|(n, _)| n).collect();
    nets.push("host-device".into());
    let mut pods = Vec::new();
    for i in 0..30u16 {
        let pod = PinnedNetns::new();
        let net = nets[usize::from(i) % nets.len()].clone();
        let net = if net == "hb-vlan" {
            let name = format!("hb-vlan{i}");
            let list = json!({"cniVersion": "1.0.0", "name": name, "plugins": [
                {"type": "vlan", "master": "hb-vl", "vlanId": 100 + i,
                 "ipam": host_local("10.165.0.0/24")}]});
            rt.write_list(&format!("{name}.conflist"), &list);
            name
        } else if net == "host-device" {
            // Each pod its own device (a veth end moved in), its own list.
            let dev = format!("hb-hd{i}");
            veth(&dev);
            let name = format!("hb-hd{i}");
            let list = json!({"cniVersion": "1.0.0", "name": name, "plugins": [
                {"type": "host-device", "device": dev, "dataDir": data.join("host-device"),
                 "ipam": host_local("10.167.0.0/24")}]});
            rt.write_list(&format!("{name}.conflist"), &list);
            name
        } else {
            net
        };
        let caps = json!({"portMappings": [
            {"hostPort": 20000 + i, "containerPort": 80, "protocol": "tcp"},
            {"hostPort": 20000 + i, "containerPort": 53, "protocol": "udp"}]});
        let out = rt.run(&["add", &net, pod.path()], &caps);
        assert_eq!(out.status, 0, "{net}: {out:?}");
        pods.push((pod, net, caps));
    }
    let doctor = |args: &[&str]| {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        rt.run(&all, &json!({}))
    };
    for args in [&[][..], &["--min-age", "0"], &["--fix", "--min-age", "0"]] {
        let out = doctor(args);
        assert_eq!(out.status, 0, "{args:?}: {out:?}");
        assert_eq!(out.json(), json!({"findings": []}), "{args:?}");
    }
    // Nothing was changed: every pod still passes CHECK.
    for (pod, net, caps) in &pods {
        let out = rt.run(&["check", net, pod.path()], caps);
        assert_eq!(out.status, 0, "{net}: {out:?}");
    }
    // The same doctor does see a pod gone without DEL.
    let (gone, net, _) = pods.remove(0);
    gone.destroy();
    let out = doctor(&["--min-age", "0"]);
    assert_eq!(out.status, 1, "{out:?}");
    let found = out.json()["findings"].as_array().expect("findings").clone();
    assert!(
        !found.is_empty()
            && found
                .iter()
                .all(|f| f["network"] == net.as_str() || f["network"] == ""),
        "{found:?}"
    );
    assert_eq!(doctor(&["--fix", "--min-age", "0"]).status, 0);
    for (pod, net, caps) in &pods {
        rt.run(&["del", net, pod.path()], caps).ok();
    }
}
