//! `cni-multi flanneld` on a real etcd cluster (`make test-flanneld`): three
//! etcd members in namespaces of their own and several nodes as network
//! namespaces on one underlay segment, each running the daemon, with pods
//! added through our `flannel` plugin. Ignored by a plain `cargo test` (they
//! need etcd-server); the lane runs them with `--include-ignored`.

use crate::harness;
use crate::harness::etcd_cluster;
use crate::harness::underlay;

use etcd_cluster::EtcdCluster;
use harness::enter_test_host;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;
use underlay::{Node, Proc, Underlay, wait_for};

const PREFIX: &str = "/coreos.com/network/subnets/";
const VXLAN: &str = r#"{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}"#;
const WAIT: Duration = Duration::from_secs(30);

struct Cluster {
    underlay: Underlay,
    etcd: EtcdCluster,
}

impl Cluster {
    fn new(config: &str) -> Cluster {
        Cluster::on(Underlay::new("10.250.0.0/24"), config)
    }

    /// On a dual-stack underlay (IPv4 and IPv6 between the nodes).
    fn dual(config: &str) -> Cluster {
        Cluster::on(Underlay::dual("10.250.0.0/24", "fd25::/64"), config)
    }

    fn on(underlay: Underlay, config: &str) -> Cluster {
        enter_test_host();
        let etcd = EtcdCluster::start(&underlay, 3);
        etcd.put("/coreos.com/network/config", config);
        Cluster { underlay, etcd }
    }

    /// A node running flanneld, once it has written its subnet file.
    fn node(&self, name: &str, extra: &[&str]) -> (Node, Proc) {
        let node = Node::new(&self.underlay, name);
        // --ip-masq as deployments run it: flanneld masquerades only traffic
        // leaving the cluster network, so pods see each other's addresses
        // (without it the bridge delegate masquerades all of it).
        let mut args = vec!["--ip-masq"];
        args.extend_from_slice(extra);
        let mut d = node.flanneld(&self.etcd.endpoints(), &args);
        wait_subnet(&node, &mut d);
        (node, d)
    }

    /// Lease key -> parsed value.
    fn leases(&self) -> Vec<(String, Value)> {
        self.etcd
            .get_prefix(PREFIX)
            .into_iter()
            .map(|(k, v)| {
                let v = serde_json::from_str(&v).unwrap_or_else(|e| panic!("{k}: {v}: {e}"));
                (k, v)
            })
            .collect()
    }
}

fn wait_subnet(node: &Node, d: &mut Proc) {
    wait_for(&format!("{}'s subnet.env", node.name), WAIT, || {
        assert!(d.running(), "flanneld on {} ended:\n{}", node.name, d.log());
        node.subnet_env_value("FLANNEL_SUBNET").is_some()
    });
}

fn subnet(node: &Node) -> String {
    node.subnet_env_value("FLANNEL_SUBNET")
        .expect("FLANNEL_SUBNET")
}

/// The lease key of a node's subnet (`10.244.7.1/24` -> `.../10.244.7.0-24`).
fn key_of(node: &Node) -> String {
    let net: ipnet::Ipv4Net = subnet(node).parse().expect("subnet");
    format!("{PREFIX}{}-{}", net.network(), net.prefix_len())
}

/// The MAC of a node's flannel.1.
fn vtep_mac(node: &Node) -> String {
    let link = node.sh("ip", &["-o", "link", "show", "flannel.1"]);
    link.split_whitespace()
        .skip_while(|w| *w != "link/ether")
        .nth(1)
        .unwrap_or_else(|| panic!("no MAC in {link}"))
        .to_string()
}

/// Routes, permanent neighbours and FDB entries (with a dst) on flannel.1.
fn data_path(node: &Node) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let lines = |out: String| -> BTreeSet<String> {
        out.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    let routes = lines(node.sh("ip", &["route", "show", "dev", "flannel.1"]));
    let neigh = lines(node.sh(
        "ip",
        &["neigh", "show", "dev", "flannel.1", "nud", "permanent"],
    ));
    let fdb = lines(node.sh("bridge", &["fdb", "show", "dev", "flannel.1"]))
        .into_iter()
        .filter(|l| l.contains(" dst "))
        .collect();
    (routes, neigh, fdb)
}

/// Waits until `node` has exactly one route, neighbour and FDB entry per
/// node in `others`, each to that node (by its subnet, VtepMAC, address).
fn wait_peers(node: &Node, others: &[&Node]) {
    wait_for(
        &format!("{}'s data path to {} peers", node.name, others.len()),
        WAIT,
        || {
            let (routes, neigh, fdb) = data_path(node);
            routes.len() == others.len()
                && neigh.len() == others.len()
                && fdb.len() == others.len()
                && others.iter().all(|o| {
                    let net: ipnet::Ipv4Net = subnet(o).parse().expect("subnet");
                    let gw = net.network().to_string();
                    let mac = vtep_mac(o);
                    routes.iter().any(|r| {
                        r.starts_with(&format!("{}/{} via {gw} ", gw, net.prefix_len()))
                            && r.contains("onlink")
                    }) && neigh
                        .iter()
                        .any(|n| n.starts_with(&format!("{gw} lladdr {mac} ")))
                        && fdb.iter().any(|f| {
                            f.starts_with(&mac)
                                && f.contains(&format!("dst {} ", o.ip))
                                && f.contains("permanent")
                        })
                })
        },
    );
}

fn assert_talk(from: &underlay::Pod, to: &underlay::Pod, port: u16) {
    wait_for(&format!("{} to ping {}", from.name, to.name), WAIT, || {
        from.ping(to.ip)
    });
    assert_eq!(
        from.tcp_connect(to.ip, port).as_deref(),
        Some(from.ip.to_string().as_str()),
        "{} -> {}: the server sees the client pod's own address",
        from.name,
        to.name
    );
}

/// Pods on three nodes reach each other by ping and TCP with their own
/// source address; etcd holds one lease per node in flannel's format; each
/// node has exactly one route, neighbour and FDB entry per other node; a
/// joining node appears everywhere; a deleted lease disappears from every
/// node (and its daemon stops, as flannel's does); a daemon killed with -9
/// gets its subnet back without touching the running pods.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn vxlan_pods_talk_across_nodes_and_leases_follow_etcd() {
    let c = Cluster::new(VXLAN);
    let (a, mut da) = c.node("a", &[]);
    let (b, _db) = c.node("b", &[]);
    let (n3, mut d3) = c.node("c", &[]);

    // One lease per node, in flannel's format.
    let leases = c.leases();
    assert_eq!(leases.len(), 3, "{leases:?}");
    for node in [&a, &b, &n3] {
        let (_, v) = leases
            .iter()
            .find(|(k, _)| *k == key_of(node))
            .expect("lease of node");
        let mac = vtep_mac(node);
        assert_eq!(
            v,
            &serde_json::json!({"PublicIP": node.ip.to_string(), "PublicIPv6": null, "BackendType": "vxlan",
                                "BackendData": {"VNI": 1, "VtepMAC": mac}}),
        );
        assert_eq!(
            node.subnet_env_value("FLANNEL_NETWORK").as_deref(),
            Some("10.244.0.0/16")
        );
        assert_eq!(
            node.subnet_env_value("FLANNEL_MTU").as_deref(),
            Some("1450")
        );
        let link = node.sh("ip", &["-d", "link", "show", "flannel.1"]);
        assert!(
            link.contains("vxlan id 1 ")
                && link.contains(&format!("local {} ", node.ip))
                && link.contains("dstport 8472")
                && link.contains("nolearning"),
            "{link}"
        );
    }
    let keys: BTreeSet<String> = leases.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(keys.len(), 3, "three distinct subnets");
    wait_peers(&a, &[&b, &n3]);
    wait_peers(&b, &[&a, &n3]);
    wait_peers(&n3, &[&a, &b]);

    let (pa, pb, pc) = (a.add_pod("pa"), b.add_pod("pb"), n3.add_pod("pc"));
    for p in [&pa, &pb, &pc] {
        p.tcp_echo_server(8080);
    }
    for (x, y) in [(&pa, &pb), (&pb, &pa), (&pa, &pc), (&pc, &pb)] {
        assert_talk(x, y, 8080);
    }

    // kill -9 and start again: the same subnet, the same lease key, and the
    // pods talk throughout.
    let before = subnet(&a);
    da.kill9();
    assert!(pa.ping(pb.ip), "the data path outlives the daemon");
    da.restart();
    wait_for("a's daemon back", WAIT, || {
        da.log().matches("wrote").count() >= 2
    });
    assert_eq!(subnet(&a), before);
    assert_eq!(c.leases().len(), 3);
    assert!(pa.ping(pb.ip) && pb.ping(pa.ip));

    // A joining node appears everywhere.
    let (d, _dd) = c.node("d", &[]);
    for (node, others) in [
        (&a, vec![&b, &n3, &d]),
        (&b, vec![&a, &n3, &d]),
        (&d, vec![&a, &b, &n3]),
    ] {
        wait_peers(node, &others);
    }
    let pd = d.add_pod("pd");
    pd.tcp_echo_server(8080);
    assert_talk(&pd, &pa, 8080);
    assert_talk(&pb, &pd, 8080);

    // An operator deletes c's lease: it goes from every node; c's daemon
    // stops as flannel's does ("Lease has been revoked"), status 0.
    assert_eq!(c.etcd.del(&key_of(&n3)), 1);
    for (node, others) in [(&a, vec![&b, &d]), (&b, vec![&a, &d]), (&d, vec![&a, &b])] {
        wait_peers(node, &others);
    }
    wait_for("c's daemon to stop", WAIT, || !d3.running());
    assert!(d3.log().contains("Lease has been revoked"), "{}", d3.log());
    assert!(!pa.ping(pc.ip), "no route to a deleted lease's subnet");
}

const DUAL: &str = r#"{"Network":"10.244.0.0/16","EnableIPv6":true,"IPv6Network":"fd44::/56","Backend":{"Type":"vxlan"}}"#;

/// `FLANNEL_IPV6_SUBNET` of a node (`fd44:0:0:7::1/64` -> `fd44:0:0:7::/64`).
fn subnet6(node: &Node) -> ipnet::Ipv6Net {
    let s: ipnet::Ipv6Net = node
        .subnet_env_value("FLANNEL_IPV6_SUBNET")
        .expect("FLANNEL_IPV6_SUBNET")
        .parse()
        .expect("IPv6 subnet");
    s.trunc()
}

/// Dual-stack vxlan over an IPv6 underlay: each lease carries both subnets
/// in its key, `PublicIPv6` and `BackendV6Data`; `flannel-v6.1` runs over
/// the node's IPv6 address with 70 bytes of overhead (and pods get that MTU
/// for both families); every node has one IPv6 route, permanent neighbour
/// and FDB entry per peer; pods talk over IPv6 and IPv4 with their own
/// addresses; a deleted lease takes its IPv6 data path with it.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn dual_stack_vxlan_pods_talk_over_ipv6() {
    let c = Cluster::dual(DUAL);
    let (a, _da) = c.node("a", &[]);
    let (b, _db) = c.node("b", &[]);
    let (n3, mut d3) = c.node("c", &[]);
    let leases = c.leases();
    assert_eq!(leases.len(), 3, "{leases:?}");
    for node in [&a, &b, &n3] {
        let net: ipnet::Ipv4Net = subnet(node).parse().expect("subnet");
        let sn6 = subnet6(node);
        assert_eq!(sn6.prefix_len(), 64);
        assert!(
            "fd44::/56"
                .parse::<ipnet::Ipv6Net>()
                .unwrap()
                .contains(&sn6)
        );
        let key = format!(
            "{PREFIX}{}-{}&{}-64",
            net.network(),
            net.prefix_len(),
            sn6.network()
        );
        let (_, v) = leases
            .iter()
            .find(|(k, _)| *k == key)
            .unwrap_or_else(|| panic!("no lease {key} in {leases:?}"));
        let ip6 = node.ip6.expect("node's IPv6 address");
        let link6 = node.sh("ip", &["-o", "link", "show", "flannel-v6.1"]);
        let mac6 = link6
            .split_whitespace()
            .skip_while(|w| *w != "link/ether")
            .nth(1)
            .expect("flannel-v6.1's MAC");
        assert_ne!(mac6, vtep_mac(node), "a MAC per device");
        assert_eq!(
            v,
            &serde_json::json!({"PublicIP": node.ip.to_string(), "PublicIPv6": ip6.to_string(),
                "BackendType": "vxlan", "BackendData": {"VNI": 1, "VtepMAC": vtep_mac(node)},
                "BackendV6Data": {"VNI": 1, "VtepMAC": mac6}}),
        );
        let d = node.sh("ip", &["-d", "link", "show", "flannel-v6.1"]);
        assert!(
            d.contains("vxlan id 1 ")
                && d.contains(&format!("local {ip6} "))
                && d.contains("mtu 1430"),
            "{d}"
        );
        assert!(
            node.sh("ip", &["-d", "link", "show", "flannel.1"])
                .contains("mtu 1450")
        );
        let own = node.sh(
            "ip",
            &[
                "-6",
                "-o",
                "addr",
                "show",
                "dev",
                "flannel-v6.1",
                "scope",
                "global",
            ],
        );
        assert!(own.contains(&format!("{}/128", sn6.network())), "{own}");
        assert_eq!(
            node.subnet_env_value("FLANNEL_MTU").as_deref(),
            Some("1430")
        );
        assert_eq!(
            node.subnet_env_value("FLANNEL_IPV6_NETWORK").as_deref(),
            Some("fd44::/56")
        );
    }
    let data6 = |node: &Node| {
        let set = |out: String| -> BTreeSet<String> {
            out.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        };
        let routes = set(node.sh("ip", &["-6", "route", "show", "dev", "flannel-v6.1"]))
            .into_iter()
            .filter(|r| r.contains(" via "))
            .collect::<BTreeSet<_>>();
        let neigh = set(node.sh(
            "ip",
            &[
                "-6",
                "neigh",
                "show",
                "dev",
                "flannel-v6.1",
                "nud",
                "permanent",
            ],
        ));
        let fdb = set(node.sh("bridge", &["fdb", "show", "dev", "flannel-v6.1"]))
            .into_iter()
            .filter(|l| l.contains(" dst "))
            .collect::<BTreeSet<_>>();
        (routes, neigh, fdb)
    };
    let wait_peers6 = |node: &Node, others: &[&Node]| {
        wait_for(&format!("{}'s IPv6 data path", node.name), WAIT, || {
            let (routes, neigh, fdb) = data6(node);
            routes.len() == others.len()
                && neigh.len() == others.len()
                && fdb.len() == others.len()
                && others.iter().all(|o| {
                    let sn6 = subnet6(o);
                    let gw = sn6.network();
                    routes
                        .iter()
                        .any(|r| r.starts_with(&format!("{sn6} via {gw} ")) && r.contains("onlink"))
                        && neigh
                            .iter()
                            .any(|n| n.starts_with(&format!("{gw} lladdr ")))
                        && fdb
                            .iter()
                            .any(|f| f.contains(&format!("dst {} ", o.ip6.expect("ip6"))))
                })
        });
    };
    wait_peers6(&a, &[&b, &n3]);
    wait_peers6(&b, &[&a, &n3]);
    wait_peers(&a, &[&b, &n3]);

    let (pa, pb) = (a.add_pod("pa"), b.add_pod("pb"));
    let (pa6, pb6) = (pa.ip6.expect("pa's IPv6"), pb.ip6.expect("pb's IPv6"));
    assert!(
        ipnet::IpNet::V6(subnet6(&a)).contains(&pa6)
            && ipnet::IpNet::V6(subnet6(&b)).contains(&pb6)
    );
    pa.tcp_echo_server(8080);
    pb.tcp_echo_server(8080);
    wait_for("pa to ping pb over IPv6", WAIT, || pa.ping(pb6));
    assert_eq!(
        pa.tcp_connect(pb6, 8080),
        Some(pa6.to_string()),
        "IPv6, pod's own address"
    );
    assert_eq!(pb.tcp_connect(pa6, 8080), Some(pb6.to_string()));
    assert_talk(&pa, &pb, 8080);

    // c's lease deleted: its IPv6 route, neighbour and FDB entry go too.
    let net: ipnet::Ipv4Net = subnet(&n3).parse().expect("subnet");
    let key = format!(
        "{PREFIX}{}-{}&{}-64",
        net.network(),
        net.prefix_len(),
        subnet6(&n3).network()
    );
    assert_eq!(c.etcd.del(&key), 1);
    wait_peers6(&a, &[&b]);
    wait_for("c's daemon to stop", WAIT, || !d3.running());
}

/// host-gw dual-stack: IPv6 routes via each peer's public IPv6 address.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn dual_stack_host_gw_routes_ipv6_via_peers() {
    let c = Cluster::dual(
        r#"{"Network":"10.244.0.0/16","EnableIPv6":true,"IPv6Network":"fd44::/56","Backend":{"Type":"host-gw"}}"#,
    );
    let (a, _da) = c.node("a", &[]);
    let (b, _db) = c.node("b", &[]);
    for (_, v) in c.leases() {
        assert_eq!(v["BackendType"], "host-gw");
        assert!(v["PublicIPv6"].is_string(), "{v}");
    }
    assert_eq!(a.subnet_env_value("FLANNEL_MTU").as_deref(), Some("1500"));
    let want = format!("{} via {} dev eth0", subnet6(&b), b.ip6.expect("ip6"));
    wait_for("a's IPv6 route to b", WAIT, || {
        a.sh("ip", &["-6", "route"]).contains(&want)
    });
    let (pa, pb) = (a.add_pod("pa"), b.add_pod("pb"));
    pb.tcp_echo_server(8080);
    let (pa6, pb6) = (pa.ip6.expect("pa's IPv6"), pb.ip6.expect("pb's IPv6"));
    wait_for("pa to ping pb over IPv6", WAIT, || pa.ping(pb6));
    assert_eq!(pa.tcp_connect(pb6, 8080), Some(pa6.to_string()));
}

/// With one etcd member down nodes still join; with quorum lost pods still
/// talk; after the members return, changes propagate again.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn etcd_member_and_quorum_loss() {
    let mut c = Cluster::new(VXLAN);
    let (a, _da) = c.node("a", &[]);
    let (b, _db) = c.node("b", &[]);
    let (pa, pb) = (a.add_pod("pa"), b.add_pod("pb"));
    pb.tcp_echo_server(8080);
    assert_talk(&pa, &pb, 8080);

    c.etcd.stop_member(0);
    let (n3, _d3) = c.node("c", &[]);
    wait_peers(&a, &[&b, &n3]);
    wait_peers(&n3, &[&a, &b]);

    c.etcd.stop_member(1);
    std::thread::sleep(Duration::from_secs(3));
    assert_talk(&pa, &pb, 8080);
    let pc = n3.add_pod("pc");
    pc.tcp_echo_server(8080);
    assert_talk(&pa, &pc, 8080);

    c.etcd.start_member(0);
    c.etcd.start_member(1);
    c.etcd.wait_healthy();
    let (d, _dd) = c.node("d", &[]);
    wait_peers(&a, &[&b, &n3, &d]);
    wait_peers(&b, &[&a, &n3, &d]);
    let pd = d.add_pod("pd");
    pd.tcp_echo_server(8080);
    assert_talk(&pa, &pd, 8080);
}

/// Eight daemons started at once get eight distinct subnets.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn eight_daemons_at_once_get_distinct_subnets() {
    // A small network: eight nodes in 16 subnets, so choices collide often.
    let c =
        Cluster::new(r#"{"Network":"10.244.0.0/20","SubnetLen":24,"Backend":{"Type":"vxlan"}}"#);
    let nodes: Vec<Node> = (0..8)
        .map(|i| Node::new(&c.underlay, &format!("n{i}")))
        .collect();
    let mut daemons: Vec<Proc> = nodes
        .iter()
        .map(|n| n.flanneld(&c.etcd.endpoints(), &[]))
        .collect();
    for (n, d) in nodes.iter().zip(daemons.iter_mut()) {
        wait_subnet(n, d);
    }
    let subnets: BTreeSet<String> = nodes.iter().map(subnet).collect();
    assert_eq!(subnets.len(), 8, "{subnets:?}");
    let leases = c.leases();
    assert_eq!(leases.len(), 8);
    let ips: BTreeSet<String> = leases
        .iter()
        .map(|(_, v)| v["PublicIP"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(ips.len(), 8, "one lease per node: {leases:?}");
    let refs: Vec<&Node> = nodes.iter().collect();
    for (i, n) in nodes.iter().enumerate() {
        let others: Vec<&Node> = refs
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, n)| *n)
            .collect();
        wait_peers(n, &others);
    }
}

/// host-gw: each node routes other subnets via their node's address, and
/// pods talk; a deleted lease's route goes.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn host_gw_pods_talk_across_nodes() {
    let c = Cluster::new(r#"{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}"#);
    let (a, _da) = c.node("a", &[]);
    let (b, _db) = c.node("b", &[]);
    let (n3, _d3) = c.node("c", &[]);
    assert_eq!(a.subnet_env_value("FLANNEL_MTU").as_deref(), Some("1500"));
    for (_, v) in c.leases() {
        assert_eq!(v["BackendType"], "host-gw");
        assert!(v.get("BackendData").is_none(), "{v}");
    }
    let route_to = |_from: &Node, to: &Node| {
        let net: ipnet::Ipv4Net = subnet(to).parse().expect("subnet");
        format!(
            "{}/{} via {} dev eth0",
            net.network(),
            net.prefix_len(),
            to.ip
        )
    };
    wait_for("host-gw routes", WAIT, || {
        let routes = a.sh("ip", &["route"]);
        routes.contains(&route_to(&a, &b)) && routes.contains(&route_to(&a, &n3))
    });
    let (pa, pb) = (a.add_pod("pa"), b.add_pod("pb"));
    pb.tcp_echo_server(8080);
    assert_talk(&pa, &pb, 8080);
    assert!(
        a.exec("ip", &["link", "show", "flannel.1"])
            .stdout
            .is_empty()
    );

    c.etcd.del(&key_of(&n3));
    wait_for("c's route gone from a", WAIT, || {
        !a.sh("ip", &["route"]).contains(&route_to(&a, &n3))
    });
}

/// A daemon whose one etcd member goes away while the cluster moves on
/// (a node joins, the history is compacted) catches up by a fresh list when
/// the member returns; the periodic reconcile puts back what `ip route
/// flush` took and removes a stray route on the device.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn watch_resumes_after_disconnect_and_compaction_and_reconcile_repairs() {
    let mut c = Cluster::new(VXLAN);
    let a = Node::new(&c.underlay, "a");
    let mut da = a.flanneld(&c.etcd.endpoint(0), &["--resync", "1"]);
    wait_subnet(&a, &mut da);
    let (b, _db) = c.node("b", &[]);
    wait_peers(&a, &[&b]);

    c.etcd.stop_member(0);
    let rest = format!("{},{}", c.etcd.endpoint(1), c.etcd.endpoint(2));
    let n3 = Node::new(&c.underlay, "c");
    let mut d3 = n3.flanneld(&rest, &[]);
    wait_subnet(&n3, &mut d3);
    for i in 0..20 {
        c.etcd.etcdctl_at(
            &rest,
            &["put", &format!("/coreos.com/network/churn{i}"), "x"],
        );
    }
    assert!(c.etcd.compact_now() > 1);
    c.etcd.start_member(0);
    wait_peers(&a, &[&b, &n3]);
    assert!(
        da.log().contains("etcd"),
        "a said etcd was unreachable:\n{}",
        da.log()
    );

    a.sh("ip", &["route", "flush", "dev", "flannel.1"]);
    a.sh(
        "ip",
        &["neigh", "flush", "dev", "flannel.1", "nud", "permanent"],
    );
    wait_peers(&a, &[&b, &n3]);
    a.sh(
        "ip",
        &[
            "route",
            "add",
            "10.244.250.0/24",
            "via",
            "10.244.250.0",
            "dev",
            "flannel.1",
            "onlink",
        ],
    );
    wait_for("the stray route removed", WAIT, || {
        !a.sh("ip", &["route"]).contains("10.244.250.0/24")
    });
}

/// A node that finds no free subnet says why and exits 1, taking nobody
/// else's; the probes answer; SIGTERM ends the daemon with 0 and leaves the
/// lease and the data path (pods keep talking while it is stopped).
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn out_of_subnets_probes_and_sigterm() {
    // A /22 in /24s: SubnetMin skips the first, so three nodes fit.
    let c = Cluster::new(r#"{"Network":"10.244.0.0/22","Backend":{"Type":"vxlan"}}"#);
    let (a, mut da) = c.node(
        "a",
        &["--healthz-ip", "127.0.0.1", "--healthz-port", "10256"],
    );
    let (b, _db) = c.node("b", &[]);
    let (_c3, _d3) = c.node("c", &[]);
    let before = c.leases();
    let full = Node::new(&c.underlay, "full");
    let mut df = full.flanneld(&c.etcd.endpoints(), &[]);
    wait_for("the fourth node to give up", WAIT, || !df.running());
    assert!(df.log().contains("out of subnets"), "{}", df.log());
    assert!(full.subnet_env_value("FLANNEL_SUBNET").is_none());
    assert_eq!(c.leases(), before, "nobody's lease was touched");

    let probe = |path: &str| {
        a.sh(
            "curl",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &format!("http://127.0.0.1:10256{path}"),
            ],
        )
    };
    assert_eq!(probe("/healthz"), "200");
    assert_eq!(probe("/readyz"), "200");

    let (pa, pb) = (a.add_pod("pa"), b.add_pod("pb"));
    pb.tcp_echo_server(8080);
    assert_talk(&pa, &pb, 8080);
    let status = da.signal(nix::sys::signal::Signal::SIGTERM, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{}", da.log());
    assert_eq!(c.leases(), before, "the lease stays after SIGTERM");
    assert_talk(&pa, &pb, 8080);
}

/// `--iface-can-reach`: with no `--iface` usable, flanneld takes the
/// interface the kernel routes that address on (not the default route's) and
/// advertises the route's source address in its lease.
#[test]
#[ignore = "flanneld lane: make test-flanneld"]
fn iface_can_reach_picks_the_interface_of_the_route_to_it() {
    let c = Cluster::new(VXLAN);
    let a = Node::new(&c.underlay, "a");
    let peer = harness::Netns::new();
    let veth = [
        "link", "add", "reach0", "type", "veth", "peer", "name", "p0",
    ];
    a.sh("ip", &[&veth[..], &["netns", peer.path()]].concat());
    a.sh("ip", &["addr", "add", "10.251.7.1/24", "dev", "reach0"]);
    a.sh("ip", &["link", "set", "reach0", "up"]);
    peer.sh("ip", &["addr", "add", "10.251.7.2/24", "dev", "p0"]);
    peer.sh("ip", &["link", "set", "p0", "up"]);
    let args = ["--iface", "nosuch0", "--iface-can-reach", "10.251.7.2"];
    let mut d = a.flanneld(&c.etcd.endpoints(), &args);
    wait_subnet(&a, &mut d);
    let log = d.log();
    assert!(
        log.contains("using interface reach0 (address 10.251.7.1")
            && log.contains("the route to --iface-can-reach 10.251.7.2"),
        "{log}"
    );
    let leases = c.leases();
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert_eq!(leases[0].1["PublicIP"], "10.251.7.1", "{leases:?}");
}
