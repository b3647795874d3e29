//! The acceptance test of `cnitool doctor`: attachments leak on purpose
//! through the chain a runtime writes (bridge with ipMasq and host-local,
//! tuning, portmap with TCP and UDP hostPorts, firewall, bandwidth; a multus
//! pod with two extra networks), made by our plugins and by the reference's
//! (/usr/lib/cni). Leaks: the pod's pinned namespace deleted without DEL; the
//! cache file removed, then the namespace deleted; ADD killed by SIGKILL at
//! each point, then the namespace deleted. After each, `doctor` must name
//! every difference of the node's state from before the ADD (iptables nat,
//! filter and mangle; nftables; links; the files of the cache, the host-local
//! store, the plugins' dataDirs and multus's cniDir), `--fix` must bring the
//! node back to that state exactly, and a second run must find nothing; live
//! pods on the same networks keep their state and their hostPorts. The
//! scenario runner is tests/it/harness/doctor.rs's (`Scenario` without rows).

use crate::harness;
use crate::harness::doctor;

use doctor::Fate::{Dead, Deleted, Killed, Ownerless};
use doctor::{Maker, Node, REFERENCE, Scenario, under};
use harness::{PinnedNetns, TempDir, enter_test_host};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// bridge (ipMasq, host-local) + tuning + portmap + firewall + bandwidth, named `net`.
fn chain(net: &str, bridge: &str, subnet: &str) -> Value {
    json!({"cniVersion": "1.0.0", "name": net, "plugins": [
        {"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": true,
         "hairpinMode": true,
         "ipam": {"type": "host-local", "subnet": subnet, "dataDir": "@STORE@",
                  "routes": [{"dst": "0.0.0.0/0"}]}},
        {"type": "tuning", "mtu": 1400, "dataDir": "@DATA@/tuning"},
        {"type": "portmap", "capabilities": {"portMappings": true}, "dataDir": "@DATA@/portmap"},
        {"type": "firewall", "backend": "iptables", "dataDir": "@DATA@/firewall"},
        {"type": "bandwidth", "ingressRate": 8_000_000, "ingressBurst": 80_000,
         "egressRate": 8_000_000, "egressBurst": 80_000, "dataDir": "@DATA@/bandwidth"}]})
}

/// A node of `chain` with `live` live pods of ours answering on their
/// hostPorts from a client namespace.
fn host(tag: &str, subnet: &str, live: u16) -> Node<'static> {
    enter_test_host();
    let list = chain(&format!("{tag}-net"), &format!("cni-{tag}0"), subnet);
    let mut node = Node::new(tag, &[list]).with_client();
    node.ports = Some(18000);
    node.add_live(live);
    assert!(node.reachable(), "the live pods answer on their hostPorts");
    node
}

/// The control (a pod ADDed and DELed as it should be leaves no difference
/// and no finding: the snapshot itself is free of noise) and leaks (a) and
/// (b), made by `maker`, on a node with ten live pods of ours.
fn leaks_of(tag: &str, subnet: &str, maker: Maker) {
    let node = host(tag, subnet, 10);
    let control = Scenario::new("control: ADD then DEL", &[Deleted]);
    node.run(&control.rows(&[], |_, _| vec![]).by(maker.clone()));
    node.run(&Scenario::new("netns deleted without DEL", &[Dead]).by(maker.clone()));
    let forgotten = Scenario::new("cache file removed, then netns deleted", &[Ownerless]);
    node.run(&forgotten.by(maker));
    node.finish();
}

#[test]
fn leaks_of_our_plugins_are_found_and_fixed() {
    leaks_of("lko", "10.181.0.0/24", Maker::Ours);
}

#[test]
fn leaks_of_the_reference_plugins_are_found_and_fixed_on_a_mixed_node() {
    if !std::path::Path::new(REFERENCE).join("bridge").exists() {
        harness::skip("reference", "no reference plugins in /usr/lib/cni");
        return;
    }
    leaks_of("lkr", "10.182.0.0/24", Maker::Reference);
}

/// The syscalls that change something: files written, renamed, removed or
/// created (write, rename*, unlinkat, mkdirat, openat with O_CREAT), netlink
/// and nf_tables requests (sendmsg, sendto), a plugin or iptables-restore
/// started (execve), a namespace entered (setns). An ADD killed at any of
/// them may leave half its work; those a full ADD never makes are skipped.
const MUTATING: &str =
    "sendmsg,sendto,write,rename,renameat,renameat2,openat,execve,setns,unlinkat,mkdirat";

/// For each of the MUTATING syscalls a full ADD makes, its largest count in
/// one process of the ADD (cnitool, a plugin, iptables-restore).
fn count_mutating(node: &Node) -> BTreeMap<String, usize> {
    let trace = TempDir::new("lks-trace");
    let file = trace.0.join("trace").display().to_string();
    let ns = PinnedNetns::new();
    let add = node.cni("add", 99, ns.path(), &node.nets[0], &Maker::Ours);
    let strace = [
        "strace",
        "-f",
        "-qq",
        "-e",
        &format!("trace={MUTATING}"),
        "-o",
        &file,
    ];
    let out = under(&strace, &add)
        .stdin(Stdio::null())
        .output()
        .expect("strace");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&file).expect("trace");
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let (pid, call) = line.split_once(' ').unwrap_or_default();
        let call = call.trim_start();
        if call.starts_with('<') || call.starts_with("+++") || call.starts_with("---") {
            continue;
        }
        let name = call.split('(').next().unwrap_or_default().to_string();
        *counts.entry((pid.to_string(), name)).or_insert(0usize) += 1;
    }
    let mut del = node.cni("del", 99, ns.path(), &node.nets[0], &Maker::Ours);
    assert!(del.output().expect("DEL").status.success());
    // strace counts `when=N` per process and per syscall: N runs up to the
    // largest count of each syscall in one process.
    let mut max = BTreeMap::new();
    for ((_, name), n) in counts {
        let m = max.entry(name).or_insert(0);
        *m = n.max(*m);
    }
    max
}

#[test]
fn adds_killed_at_every_mutating_syscall_are_found_and_fixed() {
    if Command::new("strace").arg("-V").output().is_err() {
        harness::skip("adds_killed", "no strace");
        return;
    }
    let node = host("lks", "10.183.0.0/24", 1);
    let counts = count_mutating(&node);
    eprintln!("strace counts of a full ADD (largest per process): {counts:?}");
    // Netlink requests and nf_tables batches go out with sendto (with
    // iptables-nft no iptables-restore runs, whose batches used sendmsg).
    assert!(counts.contains_key("execve") && counts.contains_key("sendto"));
    // Every syscall of the set at every N of its count, no sampling: 121 ADDs
    // here (execve 1, openat 39, rename 4, sendto 56, setns 10, write 11),
    // about 20 seconds; should a count grow past 60, its N are sampled
    // evenly to 60.
    for (call, max) in counts {
        let call: &'static str = Box::leak(call.into_boxed_str());
        for n in (1..=max).step_by(max.div_ceil(60)) {
            let name = format!("ADD killed at {call} {n} of {max}");
            node.run(&Scenario::new(&name, &[Killed(call, n)]));
        }
    }
    node.finish();
}

/// multus as a Kubernetes node runs it, from files: the cluster network
/// (bridge with ipMasq) and two NADs (macvlan on eth0, a second bridge).
#[test]
fn multus_leaks_are_found_and_fixed() {
    enter_test_host();
    harness::make_eth0();
    let mut node = Node::new(
        "lkm",
        &[
            json!({"cniVersion": "1.0.0", "name": "lkm-multus", "plugins": [{
            "type": "multus",
            "capabilities": {"io.kubernetes.cri.pod-annotations": true, "portMappings": true},
            "clusterNetwork": "lkm-cluster", "confDir": "@DATA@/netd",
            "netAttachDefDir": "@DATA@/nads", "podDir": "@DATA@/pods",
            "cniDir": "@DATA@/cni", "binDir": "@BIN@"}]}),
        ],
    );
    let data = node.data.0.clone();
    let cluster = json!({"cniVersion": "1.0.0", "name": "lkm-cluster", "plugins": [
        {"type": "bridge", "bridge": "cni-lkm0", "isGateway": true, "ipMasq": true,
         "ipam": {"type": "host-local", "subnet": "10.184.0.0/24", "dataDir": "@STORE@",
                  "routes": [{"dst": "0.0.0.0/0"}]}}]});
    node.write(&data.join("netd"), "10-cluster.conflist", &cluster);
    std::fs::create_dir_all(data.join("pods")).expect("podDir");
    let nads = [
        (
            "lkm-macvlan",
            json!({"cniVersion": "1.0.0", "type": "macvlan", "master": "eth0",
            "mode": "bridge", "ipam": {"type": "host-local", "subnet": "10.185.0.0/24",
            "dataDir": "@STORE@"}}),
        ),
        (
            "lkm-data",
            json!({"cniVersion": "1.0.0", "name": "lkm-data", "plugins": [
            {"type": "bridge", "bridge": "cni-lkm1",
             "ipam": {"type": "host-local", "subnet": "10.186.0.0/24", "dataDir": "@STORE@"}}]}),
        ),
    ];
    for (name, config) in nads {
        let config = config
            .to_string()
            .replace("@STORE@", &node.rt.store.0.to_string_lossy());
        let nad = json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"config": config}});
        node.write(&data.join("nads"), &format!("default-{name}.json"), &nad);
    }
    node.caps = json!({"io.kubernetes.cri.pod-annotations": {
        "k8s.v1.cni.cncf.io/networks": "lkm-macvlan,lkm-data"}});
    node.k8s = true;
    // Two live multus pods, each with three interfaces.
    node.add_live(2);
    for pod in &node.live {
        let links = pod.sh("ip", &["-o", "link"]);
        assert!(links.contains("net1") && links.contains("net2"), "{links}");
    }
    node.run(&Scenario::new("multus: netns deleted without DEL", &[Dead]));
    node.run(&Scenario::new(
        "multus: cache file removed, then netns deleted",
        &[Ownerless],
    ));
    node.finish();
}
