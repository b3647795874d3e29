//! The flanneld lane's own ground (`make test-flanneld`): a real etcd cluster
//! of three members in namespaces of their own on one underlay segment, and
//! nodes on that segment whose pods the `flannel` plugin adds. Ignored by a
//! plain `cargo test` (they need etcd-server and take seconds each); the lane
//! runs them with `--include-ignored`.

use crate::harness;
use crate::harness::etcd_cluster;
use crate::harness::underlay;

use etcd_cluster::EtcdCluster;
use harness::enter_test_host;
use std::time::Duration;
use underlay::{Node, Underlay, wait_for};

/// The network namespace of a process, as the kernel names it.
fn netns_of(pid: i32) -> String {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|e| panic!("netns of {pid}: {e}"))
}

#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn etcd_cluster_of_three_in_own_namespaces() {
    enter_test_host();
    let underlay = Underlay::new("10.250.0.0/24");
    let mut etcd = EtcdCluster::start(&underlay, 3);

    let mut seen: Vec<String> = (0..3)
        .map(|i| netns_of(etcd.member_pid(i).expect("member runs")))
        .collect();
    seen.push(netns_of(std::process::id() as i32));
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 4, "a namespace per member, none the test's");

    // Written through each member, read through the next.
    for i in 0..3 {
        let key = format!("/lane/k{i}");
        let put = etcd.etcdctl_at(&etcd.endpoint(i), &["put", &key, &format!("v{i}")]);
        assert!(put.status.success(), "{put:?}");
        let got = etcd.etcdctl_at(
            &etcd.endpoint((i + 1) % 3),
            &["get", "--print-value-only", &key],
        );
        assert_eq!(String::from_utf8_lossy(&got.stdout), format!("v{i}\n"));
    }

    // One member down: the other two still make a quorum.
    etcd.stop_member(0);
    etcd.wait_healthy();
    etcd.put("/lane/one-down", "yes");

    // Two down: no quorum, so no write commits (a timed-out one may still
    // commit once the quorum is back: the leader keeps it in its log, so it
    // is under a prefix of its own).
    etcd.stop_member(1);
    let put = etcd.etcdctl(&["--command-timeout=2s", "put", "/lost/two-down", "no"]);
    assert!(!put.status.success(), "a write without quorum: {put:?}");
    let local = etcd.etcdctl_at(
        &etcd.endpoint(2),
        &["get", "--consistency=s", "--prefix", "/lost/"],
    );
    assert!(
        local.status.success() && local.stdout.is_empty(),
        "{local:?}"
    );

    // Back: writes commit again and the returning members caught up.
    etcd.start_member(0);
    etcd.start_member(1);
    etcd.put("/lane/back", "yes");
    let got = etcd.etcdctl_at(
        &etcd.endpoint(0),
        &["get", "--print-value-only", "/lane/one-down"],
    );
    assert_eq!(String::from_utf8_lossy(&got.stdout), "yes\n");
    let keys: Vec<String> = etcd
        .get_prefix("/lane/")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        keys,
        [
            "/lane/back",
            "/lane/k0",
            "/lane/k1",
            "/lane/k2",
            "/lane/one-down"
        ]
    );
    assert_eq!(etcd.get("/lane/k1").as_deref(), Some("v1"));
    assert_eq!(etcd.del("/lane/k1"), 1);
    assert_eq!(etcd.get("/lane/k1"), None);

    // After a compaction, an older revision is gone.
    let rev = etcd.compact_now();
    assert!(rev > 1);
    let old = etcd.etcdctl(&["get", "--rev=1", "/lane/k0"]);
    assert!(
        String::from_utf8_lossy(&old.stderr).contains("compacted"),
        "{old:?}"
    );
}

/// The pod helpers before any daemon: two nodes with a subnet.env written by
/// hand and host-gw routes added by hand; pods reach each other across nodes
/// by ping and TCP, and the server sees the client pod's own address.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn pods_on_two_nodes_talk_via_manual_routes() {
    enter_test_host();
    let underlay = Underlay::new("10.250.0.0/24");
    let (a, b) = (Node::new(&underlay, "a"), Node::new(&underlay, "b"));
    for (node, subnet) in [(&a, "10.244.1.1/24"), (&b, "10.244.2.1/24")] {
        // FLANNEL_IPMASQ=true: the bridge delegate masquerades nothing.
        let env = format!(
            "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET={subnet}\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
        );
        std::fs::write(node.subnet_env(), env).expect("write subnet.env");
    }
    let (pa, pb) = (a.add_pod("pod-a"), b.add_pod("pod-b"));
    assert_eq!(pa.ip.to_string(), "10.244.1.2");
    assert_eq!(pb.ip.to_string(), "10.244.2.2");
    assert!(a.sh("ip", &["-o", "link", "show", "cni0"]).contains("cni0"));
    pb.tcp_echo_server(8080);
    assert!(!pa.ping(pb.ip), "no route between the nodes yet");

    let (a_ip, b_ip) = (a.ip.to_string(), b.ip.to_string());
    a.sh("ip", &["route", "add", "10.244.2.0/24", "via", &b_ip]);
    b.sh("ip", &["route", "add", "10.244.1.0/24", "via", &a_ip]);
    wait_for("pod-a to ping pod-b", Duration::from_secs(10), || {
        pa.ping(pb.ip)
    });
    assert!(pb.ping(pa.ip));
    assert_eq!(
        pa.tcp_connect(pb.ip, 8080).as_deref(),
        Some("10.244.1.2"),
        "the server sees the client pod's own address"
    );

    // A daemon in a node sees the node's links in /sys, as under `ip netns exec`.
    let mut lister = a.spawn(
        "lister",
        "sh",
        &["-c", "ls /sys/class/net; echo done; exec sleep 60"],
    );
    lister.wait_log("done", Duration::from_secs(10));
    let mut listed: Vec<String> = lister.log().lines().map(str::to_string).collect();
    listed.retain(|l| l != "done");
    let mut links: Vec<String> = a
        .sh("ip", &["-o", "link"])
        .lines()
        .filter_map(|l| l.split(": ").nth(1)?.split('@').next().map(str::to_string))
        .collect();
    listed.sort();
    links.sort();
    assert_eq!(listed, links);
    assert!(links.contains(&"cni0".to_string()), "{links:?}");
    drop(lister);

    pa.del();
    assert!(!a.sh("ip", &["-o", "link"]).contains("veth"), "veth gone");
    pb.del();
}
