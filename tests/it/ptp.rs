//! ptp end to end: point-to-point routes on both sides, host <-> container
//! connectivity, CHECK, DEL idempotence.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Value, json};

fn conf(store: &TempDir) -> Value {
    json!({
        "cniVersion": "1.0.0",
        "name": "ptp-net",
        "type": "ptp",
        "mtu": 1450,
        "ipam": {
            "type": "host-local",
            "subnet": "10.66.0.0/24",
            "dataDir": store.0,
            "routes": [{"dst": "0.0.0.0/0"}]
        }
    })
}

fn call(cmd: &str, ns: &Netns, id: &str, conf: &Value, bin: &TempDir) -> Call {
    Call::new("ptp", cmd, ns.path(), &conf.to_string())
        .set("CNI_CONTAINERID", id)
        .path(bin)
}

fn pings(netns: Option<&Netns>, to: &str) -> bool {
    let mut cmd = std::process::Command::new("nsenter");
    if let Some(ns) = netns {
        cmd.arg(format!("--net={}", ns.path()));
    }
    cmd.args(["ping", "-c1", "-W2", to])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn ptp_routes_both_sides_and_the_container_pings_its_host() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("ptp"));
    let c = conf(&store);
    let ns = Netns::new();
    let out = call("ADD", &ns, "ctr-p", &c, &bin).run().ok();
    let ifs = out["interfaces"].as_array().expect("interfaces");
    assert_eq!(ifs.len(), 2, "{out}");
    let host_veth = ifs[0]["name"].as_str().expect("host veth").to_string();
    assert_eq!(ifs[1]["name"], "eth0");
    assert_eq!(ifs[1]["sandbox"], ns.path());
    assert_eq!(
        out["ips"],
        json!([{"address": "10.66.0.2/24", "gateway": "10.66.0.1", "interface": 1}])
    );

    // Container: the gateway on-link, the subnet and default via the gateway.
    let routes = ns.sh("ip", &["-4", "route"]);
    assert!(
        routes.contains("10.66.0.1 dev eth0 scope link src 10.66.0.2"),
        "{routes}"
    );
    assert!(
        routes.contains("10.66.0.0/24 via 10.66.0.1 dev eth0 src 10.66.0.2"),
        "{routes}"
    );
    assert!(
        routes.contains("default via 10.66.0.1 dev eth0"),
        "{routes}"
    );
    assert!(
        !routes.contains("proto kernel"),
        "connected route replaced: {routes}"
    );
    assert!(ns.sh("ip", &["link", "show", "eth0"]).contains("mtu 1450"));
    // Host: the gateway /32 on the veth and a host route to the container.
    let host_addrs = run_in(None, "ip", &["-4", "addr", "show", "dev", &host_veth]);
    assert!(host_addrs.contains("10.66.0.1/32"), "{host_addrs}");
    let host_routes = run_in(None, "ip", &["-4", "route"]);
    assert!(
        host_routes.contains(&format!("10.66.0.2 dev {host_veth} scope host")),
        "{host_routes}"
    );
    assert!(
        pings(Some(&ns), "10.66.0.1"),
        "container reaches its host side"
    );
    assert!(pings(None, "10.66.0.2"), "host reaches the container");

    let mut checked = c.clone();
    checked["prevResult"] = out.clone();
    call("CHECK", &ns, "ctr-p", &checked, &bin).run().ok();
    ns.sh("ip", &["route", "del", "default"]);
    call("CHECK", &ns, "ctr-p", &checked, &bin).run().err(999);

    call("DEL", &ns, "ctr-p", &c, &bin).run().ok();
    assert!(!run_in(None, "ip", &["-o", "link"]).contains(&host_veth));
    assert!(!run_in(None, "ip", &["-4", "route"]).contains("10.66.0.2"));
    assert!(!store.0.join("ptp-net").join("10.66.0.2").exists());
    call("DEL", &ns, "ctr-p", &c, &bin).run().ok();
}

#[test]
fn two_ptp_containers_share_the_gateway_address_and_reach_each_other() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("ptp2"));
    let c = conf(&store);
    let (a, b) = (Netns::new(), Netns::new());
    call("ADD", &a, "ctr-a", &c, &bin).run().ok();
    call("ADD", &b, "ctr-b", &c, &bin).run().ok();
    assert!(pings(Some(&a), "10.66.0.3"), "a reaches b through the host");
    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    assert!(pings(Some(&b), "10.66.0.1"), "b still reaches its gateway");
    let gone = b.path().to_string();
    b.destroy();
    Call::new("ptp", "DEL", &gone, &c.to_string())
        .set("CNI_CONTAINERID", "ctr-b")
        .path(&bin)
        .run()
        .ok();
    assert!(!store.0.join("ptp-net").join("10.66.0.3").exists());
}

#[test]
fn ptp_needs_ipam() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = json!({"cniVersion": "1.0.0", "name": "ptp-net", "type": "ptp"});
    call("ADD", &ns, "ctr-x", &c, &bin).run().err(7);
    let missing =
        json!({"cniVersion": "1.0.0", "name": "ptp-net", "type": "ptp", "ipam": {"type": "nope"}});
    let e = call("ADD", &ns, "ctr-x", &missing, &bin).run().err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("failed to find plugin \"nope\"")),
        "{e}"
    );
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
}
