//! bandwidth end to end: measured throughput across the shaped veth within 20%
//! of the configured 8 Mbit/s in both directions, far above it unshaped; the
//! reference's IFB and qdiscs; CHECK; DEL leaves no IFB and clears only what
//! its ADD made; GC.

use crate::harness;

use harness::{
    Netns, Runtime, bridge_host_local, enter_test_host, first_ip, peer_netns, run_in,
    sha512_prefix, with_default_route,
};
use serde_json::json;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

const RATE: u64 = 8_000_000;

/// bridge + bandwidth (capability) as `bw-net`; bandwidth's state under `@STORE@/bw`.
fn setup() -> Runtime {
    let rt = Runtime::new("bw");
    let list = json!({"cniVersion": "1.0.0", "name": "bw-net", "plugins": [
        bridge_host_local("cni-bw0", "10.90.0.0/24", "@STORE@"),
        {"type": "bandwidth", "capabilities": {"bandwidth": true}, "dataDir": "@STORE@/bw"}]});
    rt.write_list("bw.conflist", &list);
    rt
}

fn enter(netns: Option<&str>) {
    if let Some(p) = netns {
        let f = std::fs::File::open(p).expect("netns");
        nix::sched::setns(f.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
    }
}

/// Bits per second of a 3 s TCP stream from `from` to `to_addr`, served in `server_ns`.
fn throughput(from: Option<&str>, server_ns: Option<&str>, to_addr: &str, port: u16) -> f64 {
    let server_ns = server_ns.map(String::from);
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        enter(server_ns.as_deref());
        let listener = std::net::TcpListener::bind(("0.0.0.0", port)).expect("bind");
        tx.send(()).expect("ready");
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        let mut first = None;
        let mut last = Instant::now();
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 {
                break;
            }
            // Time from the end of the first read: the initial burst is not rate limited.
            if first.is_none() {
                first = Some(Instant::now());
            } else {
                total += n as u64;
            }
            last = Instant::now();
        }
        let secs = last
            .duration_since(first.unwrap_or(last))
            .as_secs_f64()
            .max(1e-3);
        total as f64 * 8.0 / secs
    });
    rx.recv().expect("server ready");
    let from = from.map(String::from);
    let addr: std::net::SocketAddr = format!("{to_addr}:{port}").parse().expect("addr");
    std::thread::spawn(move || {
        enter(from.as_deref());
        let mut s =
            std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3)).expect("connect");
        let chunk = vec![7u8; 1 << 16];
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            if s.write_all(&chunk).is_err() {
                break;
            }
        }
    })
    .join()
    .expect("client");
    server.join().expect("server")
}

fn within(measured: f64, rate: f64) -> bool {
    (measured - rate).abs() <= 0.2 * rate
}

#[test]
fn shaped_rates_are_met_in_both_directions_and_del_removes_the_ifb() {
    enter_test_host();
    let s = setup();
    let caps = json!({"bandwidth": {"ingressRate": RATE, "ingressBurst": 524288, "egressRate": RATE, "egressBurst": 524288}});
    let ns = Netns::new();
    let out = s.run(&["add", "bw-net", ns.path()], &caps).ok();
    let container_ip = first_ip(&out);
    let ifs = out["interfaces"].as_array().expect("interfaces");
    let ifb = ifs.last().expect("ifb")["name"]
        .as_str()
        .expect("name")
        .to_string();
    let id = format!("cnitool-{}", sha512_prefix(ns.path(), 20));
    assert_eq!(
        ifb,
        format!("bwp{}", sha512_prefix(&format!("bw-net{id}"), 12))
    );
    let host_veth = ifs[1]["name"].as_str().expect("veth").to_string();
    let qdiscs = run_in(None, "tc", &["qdisc", "show", "dev", &host_veth]);
    assert!(
        qdiscs.contains("qdisc tbf 1: root") && qdiscs.contains("rate 8Mbit"),
        "{qdiscs}"
    );
    assert!(qdiscs.contains("qdisc ingress ffff:"), "{qdiscs}");
    let filters = run_in(
        None,
        "tc",
        &["filter", "show", "dev", &host_veth, "parent", "ffff:"],
    );
    assert!(
        filters.contains(&format!("Egress Redirect to device {ifb}")),
        "{filters}"
    );
    assert!(run_in(None, "tc", &["qdisc", "show", "dev", &ifb]).contains("rate 8Mbit"));

    let ingress = throughput(None, Some(ns.path()), &container_ip, 5001);
    let egress = throughput(Some(ns.path()), None, "10.90.0.1", 5002);
    eprintln!(
        "bandwidth: shaped ingress {:.2} Mbit/s, egress {:.2} Mbit/s",
        ingress / 1e6,
        egress / 1e6
    );
    assert!(within(ingress, RATE as f64), "ingress {ingress}");
    assert!(within(egress, RATE as f64), "egress {egress}");

    s.run(&["check", "bw-net", ns.path()], &caps).ok();
    s.run(&["del", "bw-net", ns.path()], &caps).ok();
    assert!(
        !run_in(None, "ip", &["-o", "link"]).contains("bwp"),
        "no IFB left"
    );

    // Unshaped: the same path without the limits is far faster.
    let free = Netns::new();
    let out = s.run(&["add", "bw-net", free.path()], &json!({})).ok();
    let free_ip = first_ip(&out);
    let unshaped = throughput(None, Some(free.path()), &free_ip, 5003);
    eprintln!("bandwidth: unshaped {:.0} Mbit/s", unshaped / 1e6);
    assert!(unshaped > 10.0 * RATE as f64, "unshaped {unshaped}");
}

#[test]
fn gc_removes_ifbs_of_attachments_not_valid_and_bad_limits_fail() {
    enter_test_host();
    let s = setup();
    let caps = json!({"bandwidth": {"egressRate": RATE, "egressBurst": 524288}});
    let (a, b) = (Netns::new(), Netns::new());
    s.run(&["add", "bw-net", a.path()], &caps).ok();
    s.run(&["add", "bw-net", b.path()], &caps).ok();
    let keep = format!("cnitool-{}", sha512_prefix(a.path(), 20));
    let list = json!({"cniVersion": "1.1.0", "name": "bw-net", "type": "bandwidth",
                      "dataDir": s.store.0.join("bw"),
                      "cni.dev/valid-attachments": [{"containerID": keep, "ifname": "eth0"}]});
    harness::Call::new("bandwidth", "GC", "", &list.to_string())
        .unset("CNI_CONTAINERID")
        .unset("CNI_IFNAME")
        .unset("CNI_NETNS")
        .path(&s.bin)
        .run()
        .ok();
    let links = run_in(None, "ip", &["-o", "link"]);
    assert_eq!(links.matches("bwp").count(), 1, "{links}");
    assert!(state_file(&s, &a).exists() && !state_file(&s, &b).exists());
    assert!(links.contains(&format!(
        "bwp{}",
        sha512_prefix(&format!("bw-net{keep}"), 12)
    )));

    for bad in [
        json!({"ingressRate": 1000}),
        json!({"egressBurst": 1000}),
        json!({"ingressRate": 1, "ingressBurst": 40_000_000_000u64}),
        // Each fits alone; rate x 25 ms + burst overflows the u32 queue limit.
        json!({"ingressRate": 1_000_000_000_000u64, "ingressBurst": 30_000_000_000u64}),
    ] {
        let c = json!({"cniVersion": "1.0.0", "name": "bw-net", "type": "bandwidth",
                       "runtimeConfig": {"bandwidth": bad}, "prevResult": {"cniVersion": "1.0.0"}});
        harness::Call::new("bandwidth", "ADD", a.path(), &c.to_string())
            .path(&s.bin)
            .run()
            .err(7);
    }
}

#[test]
fn unshaped_subnets_bypass_the_limit_and_others_are_shaped() {
    enter_test_host();
    let s = setup();
    // The same network, but traffic with the bridge's own subnet is not shaped.
    let list = json!({"cniVersion": "1.0.0", "name": "bw-net", "plugins": [
        with_default_route(bridge_host_local("cni-bw0", "10.90.0.0/24", "@STORE@")),
        {"type": "bandwidth", "capabilities": {"bandwidth": true}, "unshapedSubnets": ["10.90.0.0/24"]}]});
    s.write_list("bw.conflist", &list);
    // A remote client at 192.0.2.2, outside the unshaped subnet.
    let client = peer_netns("to-cl");
    let caps = json!({"bandwidth": {"ingressRate": RATE, "ingressBurst": 524288, "egressRate": RATE, "egressBurst": 524288}});
    let ns = Netns::new();
    let out = s.run(&["add", "bw-net", ns.path()], &caps).ok();
    let ip = first_ip(&out);

    let remote_in = throughput(Some(client.path()), Some(ns.path()), &ip, 5101);
    let remote_out = throughput(Some(ns.path()), Some(client.path()), "192.0.2.2", 5102);
    let local_in = throughput(None, Some(ns.path()), &ip, 5103);
    let local_out = throughput(Some(ns.path()), None, "10.90.0.1", 5104);
    eprintln!(
        "bandwidth subnets: remote in {:.2} out {:.2} Mbit/s; unshaped subnet in {:.0} out {:.0} Mbit/s",
        remote_in / 1e6,
        remote_out / 1e6,
        local_in / 1e6,
        local_out / 1e6
    );
    assert!(within(remote_in, RATE as f64), "remote ingress {remote_in}");
    assert!(
        within(remote_out, RATE as f64),
        "remote egress {remote_out}"
    );
    assert!(local_in > 10.0 * RATE as f64, "unshaped ingress {local_in}");
    assert!(
        local_out > 10.0 * RATE as f64,
        "unshaped egress {local_out}"
    );
    s.run(&["check", "bw-net", ns.path()], &caps).ok();
    s.run(&["del", "bw-net", ns.path()], &caps).ok();
    assert!(!run_in(None, "ip", &["-o", "link"]).contains("bwp"));
}

/// containerd (go-cni) sends its BandWidth struct without JSON tags, burst
/// always 2^32-1: the capitalised keys are read as Go reads them.
#[test]
fn go_cased_limits_as_containerd_sends_them_are_applied() {
    enter_test_host();
    let s = setup();
    let caps = json!({"bandwidth": {"IngressRate": RATE, "IngressBurst": 4294967295u64,
                                    "EgressRate": RATE, "EgressBurst": 4294967295u64}});
    let ns = Netns::new();
    let out = s.run(&["add", "bw-net", ns.path()], &caps).ok();
    let ifs = out["interfaces"].as_array().expect("interfaces");
    let host_veth = ifs[1]["name"].as_str().expect("veth").to_string();
    let ifb = ifs.last().expect("ifb")["name"]
        .as_str()
        .expect("name")
        .to_string();
    assert!(ifb.starts_with("bwp"), "{out}");
    let qdiscs = run_in(None, "tc", &["qdisc", "show", "dev", &host_veth]);
    assert!(
        qdiscs.contains("qdisc tbf 1: root") && qdiscs.contains("rate 8Mbit"),
        "{qdiscs}"
    );
    assert!(run_in(None, "tc", &["qdisc", "show", "dev", &ifb]).contains("rate 8Mbit"));
    s.run(&["check", "bw-net", ns.path()], &caps).ok();
    s.run(&["del", "bw-net", ns.path()], &caps).ok();
    assert!(!run_in(None, "ip", &["-o", "link"]).contains("bwp"));
}

/// A bandwidth capability that sets no rate (keys nobody reads) fails ADD with
/// code 7 naming it, never passes for limits applied; DEL still succeeds.
#[test]
fn a_bandwidth_capability_without_rates_fails_add_and_del_still_succeeds() {
    enter_test_host();
    let s = setup();
    let limits = json!({"ingress_rate": RATE, "ingress_burst": 524288});
    let ns = Netns::new();
    let c = json!({"cniVersion": "1.0.0", "name": "bw-net", "type": "bandwidth",
                   "runtimeConfig": {"bandwidth": limits}, "prevResult": {"cniVersion": "1.0.0"}});
    let err = harness::Call::new("bandwidth", "ADD", ns.path(), &c.to_string())
        .path(&s.bin)
        .run()
        .err(7);
    let msg = err["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("runtimeConfig.bandwidth"), "{err}");
    // The same through a runtime: the chain's ADD fails, its DEL cleans up.
    let caps = json!({"bandwidth": limits});
    let add = s.run(&["add", "bw-net", ns.path()], &caps);
    assert!(
        add.status == 1 && add.stderr.contains("runtimeConfig.bandwidth"),
        "{add:?}"
    );
    s.run(&["del", "bw-net", ns.path()], &caps).ok();
    let links = run_in(None, "ip", &["-o", "link"]);
    assert!(!links.contains("bwp") && !links.contains("veth"), "{links}");
}

fn both() -> serde_json::Value {
    json!({"bandwidth": {"ingressRate": RATE, "ingressBurst": 524288, "egressRate": RATE, "egressBurst": 524288}})
}

/// cnitool's container ID for a namespace.
fn cnitool_id(ns: &Netns) -> String {
    format!("cnitool-{}", sha512_prefix(ns.path(), 20))
}

/// bandwidth's state file of the `eth0` attachment of `ns`.
fn state_file(s: &Runtime, ns: &Netns) -> std::path::PathBuf {
    s.store
        .0
        .join("bw")
        .join(format!("{}@eth0.json", cnitool_id(ns)))
}

/// bandwidth alone, as the runtime would call it with `prev` as prevResult.
fn bandwidth_alone(
    s: &Runtime,
    ns: &Netns,
    command: &str,
    prev: &serde_json::Value,
) -> harness::Outcome {
    let c = json!({"cniVersion": "1.0.0", "name": "bw-net", "type": "bandwidth",
                   "dataDir": s.store.0.join("bw"), "runtimeConfig": both(), "prevResult": prev});
    harness::Call::new("bandwidth", command, ns.path(), &c.to_string())
        .set("CNI_CONTAINERID", &cnitool_id(ns))
        .path(&s.bin)
        .run()
}

fn del_bandwidth_alone(s: &Runtime, ns: &Netns, prev: &serde_json::Value) {
    bandwidth_alone(s, ns, "DEL", prev).ok();
}

fn ifindex(name: &str) -> String {
    let line = run_in(None, "ip", &["-o", "link", "show", name]);
    line.split(':').next().expect("index").trim().to_string()
}

/// The attack: the container deletes its eth0 and makes a veth pair of its
/// own whose peer has the host bridge's ifindex, so eth0's IFLA_LINK names the
/// bridge, which is also in prevResult's host interfaces. DEL must not take
/// the bridge for the host veth and clear the admin's qdiscs on it.
#[test]
fn a_container_recreating_eth0_cannot_make_del_clear_the_bridges_qdiscs() {
    enter_test_host();
    let s = setup();
    run_in(None, "ip", &["link", "add", "cni-bw0", "type", "bridge"]);
    run_in(None, "ip", &["link", "set", "cni-bw0", "up"]);
    // The admin's shaping of the bridge.
    run_in(
        None,
        "tc",
        &[
            "qdisc", "add", "dev", "cni-bw0", "root", "tbf", "rate", "100mbit", "burst", "64kb",
            "latency", "50ms",
        ],
    );
    run_in(None, "tc", &["qdisc", "add", "dev", "cni-bw0", "ingress"]);
    let admin = |when: &str| {
        let q = run_in(None, "tc", &["qdisc", "show", "dev", "cni-bw0"]);
        assert!(
            q.contains("qdisc tbf") && q.contains("rate 100Mbit"),
            "{when}: {q}"
        );
        assert!(q.contains("qdisc ingress ffff:"), "{when}: {q}");
    };
    admin("before ADD");
    let ns = Netns::new();
    let out = s.run(&["add", "bw-net", ns.path()], &both()).ok();
    assert_eq!(out["interfaces"][0]["name"], "cni-bw0", "{out}");
    assert!(state_file(&s, &ns).exists());
    admin("after ADD");

    let bridge = ifindex("cni-bw0");
    ns.sh("ip", &["link", "del", "eth0"]);
    // The end given the bridge's index is x (iproute2 6.1 ignores `index`
    // after `peer`); eth0 is its peer, so eth0's IFLA_LINK is the bridge's index.
    ns.sh(
        "ip",
        &[
            "link", "add", "x", "index", &bridge, "type", "veth", "peer", "name", "eth0",
        ],
    );
    let forged = ns.sh("ip", &["-o", "link", "show", "x"]);
    assert!(forged.starts_with(&format!("{bridge}: x@eth0")), "{forged}");

    // Neither a repeated ADD nor CHECK takes the bridge for the host veth.
    let add = bandwidth_alone(&s, &ns, "ADD", &out);
    assert_ne!(add.status, 0, "{add:?}");
    admin("after a repeated ADD");
    let check = bandwidth_alone(&s, &ns, "CHECK", &out);
    assert_ne!(check.status, 0, "{check:?}");

    s.run(&["del", "bw-net", ns.path()], &both()).ok();
    admin("after DEL");
    assert!(
        !run_in(None, "ip", &["-o", "link"]).contains("bwp"),
        "IFB removed"
    );
    assert!(!state_file(&s, &ns).exists(), "state removed");
}

/// With no state (ADD by the reference or an older cni-multi), DEL does what
/// the reference's does: it removes the IFB; the host veth's qdiscs go with
/// the veth when the main plugin deletes it.
#[test]
fn del_without_state_removes_only_the_ifb() {
    enter_test_host();
    let s = setup();
    let ns = Netns::new();
    let out = s.run(&["add", "bw-net", ns.path()], &both()).ok();
    let host_veth = out["interfaces"][1]["name"]
        .as_str()
        .expect("veth")
        .to_string();
    std::fs::remove_file(state_file(&s, &ns)).expect("state written by ADD");

    del_bandwidth_alone(&s, &ns, &out);
    assert!(
        !run_in(None, "ip", &["-o", "link"]).contains("bwp"),
        "IFB removed"
    );
    let q = run_in(None, "tc", &["qdisc", "show", "dev", &host_veth]);
    assert!(
        q.contains("qdisc tbf 1: root") && q.contains("qdisc ingress ffff:"),
        "without state the host veth is not touched: {q}"
    );
    // Idempotent, and the chain's DEL takes the veth with its qdiscs.
    del_bandwidth_alone(&s, &ns, &out);
    s.run(&["del", "bw-net", ns.path()], &both()).ok();
    assert!(!run_in(None, "ip", &["-o", "link"]).contains(&host_veth));
}

/// With its state, DEL clears the qdiscs its ADD put on the host veth it can
/// prove is still the container's, and removes the state file.
#[test]
fn del_with_state_clears_the_proven_host_veths_qdiscs_and_the_state() {
    enter_test_host();
    let s = setup();
    let ns = Netns::new();
    let out = s.run(&["add", "bw-net", ns.path()], &both()).ok();
    let host_veth = out["interfaces"][1]["name"]
        .as_str()
        .expect("veth")
        .to_string();
    let state = state_file(&s, &ns);
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&state), 0o600);
    assert_eq!(mode(state.parent().expect("dir")), 0o700);

    del_bandwidth_alone(&s, &ns, &out);
    assert!(!state.exists(), "state removed");
    assert!(
        !run_in(None, "ip", &["-o", "link"]).contains("bwp"),
        "IFB removed"
    );
    let q = run_in(None, "tc", &["qdisc", "show", "dev", &host_veth]);
    assert!(
        !q.contains("tbf") && !q.contains("ingress"),
        "the proven host veth's qdiscs cleared: {q}"
    );
    s.run(&["del", "bw-net", ns.path()], &both()).ok();
}
