//! portmap's verbs against a [`Fake`] netfilter: what each hands the seam,
//! with no root and no rules. The mappings are TCP and `snat` is off, so that
//! ADD and DEL touch neither conntrack nor sysctls of the host.

use super::*;
use crate::cni::env::Command;
use crate::netfilter::apply::Fake;
use crate::plugins::test_support::{self, DataDir};

fn invocation(command: Command, id: &str, dir: &DataDir, keys: serde_json::Value) -> Invocation {
    let conf = serde_json::json!({
        "cniVersion": "1.0.0", "name": "mynet", "type": "portmap", "snat": false,
        "dataDir": dir.0,
        "runtimeConfig": {"portMappings": [
            {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        ]},
        "prevResult": {
            "cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "sandbox": "/run/netns/x"}],
            "ips": [{"address": "10.88.0.5/16", "interface": 0}],
        },
    });
    test_support::invocation(command, id, conf, keys)
}

/// The plan the invocation's ADD writes (and its DEL removes).
fn plan(id: &str) -> Plan {
    Plan {
        network: "mynet".into(),
        container_id: id.into(),
        mappings: vec![Mapping {
            host_port: 8080,
            container_port: 80,
            protocol: "tcp".into(),
            host_ip: None,
        }],
        snat: false,
        masq_all: false,
        mark_bit: 13,
        external_mark_chain: None,
        conditions_v4: Vec::new(),
        conditions_v6: Vec::new(),
        targets: vec![Target {
            address: "10.88.0.5/16".parse().expect("net"),
        }],
    }
}

const BOTH: [Backend; 2] = [Backend::IPTABLES, Backend::Nftables];

/// ADD hands one Add of the attachment's plan to the configured backend,
/// whatever else is usable; without one, to the backend detection picks.
/// Only nftables' ADD records the attachment (for GC).
#[test]
fn add_hands_one_add_to_its_backend() {
    for (value, backend, records) in [
        ("iptables", Backend::IPTABLES, 0),
        ("nftables", Backend::Nftables, 1),
    ] {
        let dir = DataDir::new(&format!("add-{value}"));
        let nf = Fake::with(&BOTH);
        let keys = serde_json::json!({"backend": value});
        add(&invocation(Command::Add, "ctr1", &dir, keys), &nf).expect("ADD");
        assert_eq!(
            nf.portmap_applied(),
            [(backend, Op::Add(plan("ctr1")))],
            "{value}"
        );
        assert_eq!(dir.records(), records, "{value}");
    }
    let dir = DataDir::new("portmap-add-detect");
    for (usable, backend) in [
        (&BOTH[..], Backend::IPTABLES),
        (&BOTH[1..], Backend::Nftables),
    ] {
        let nf = Fake::with(usable);
        let inv = invocation(Command::Add, "ctr1", &dir, serde_json::json!({}));
        add(&inv, &nf).expect("ADD");
        assert_eq!(nf.portmap_applied(), [(backend, Op::Add(plan("ctr1")))]);
    }
    // Nothing to map: nothing handed.
    let nf = Fake::with(&BOTH);
    let none = serde_json::json!({"runtimeConfig": {"portMappings": []}});
    add(&invocation(Command::Add, "ctr1", &dir, none), &nf).expect("ADD");
    assert!(nf.portmap_applied().is_empty());
}

/// DEL, without a configured backend, cleans each backend whose rules may
/// exist here (ADD may have detected either) and skips one that is not;
/// nftables is told whether ADD recorded the attachment. Configured, only
/// that backend is cleaned. The record goes.
#[test]
fn del_cleans_each_installed_backend_and_skips_the_others() {
    let dir = DataDir::new("portmap-del");
    let nf = Fake::with(&BOTH);
    let nft = serde_json::json!({"backend": "nftables"});
    add(&invocation(Command::Add, "ctr1", &dir, nft), &nf).expect("ADD");
    assert_eq!(dir.records(), 1);
    let del_op = |recorded| Op::Del {
        plan: plan("ctr1"),
        recorded,
    };
    let nf = Fake::with(&BOTH);
    let detect = serde_json::json!({});
    del(&invocation(Command::Del, "ctr1", &dir, detect.clone()), &nf).expect("DEL");
    assert_eq!(
        nf.portmap_applied(),
        [
            (Backend::IPTABLES, del_op(true)),
            (Backend::Nftables, del_op(true)),
        ]
    );
    assert_eq!(dir.records(), 0, "the record is removed");
    // Again (DEL is idempotent), with only nftables here and no record left.
    let nf = Fake::with(&BOTH[1..]);
    del(&invocation(Command::Del, "ctr1", &dir, detect), &nf).expect("DEL");
    assert_eq!(nf.portmap_applied(), [(Backend::Nftables, del_op(false))]);
    let nf = Fake::with(&BOTH);
    let ipt = serde_json::json!({"backend": "iptables"});
    del(&invocation(Command::Del, "ctr1", &dir, ipt), &nf).expect("DEL");
    assert_eq!(nf.portmap_applied(), [(Backend::IPTABLES, del_op(true))]);
}

/// iptables' tools installed while its `nat` table cannot take our rules
/// (another nftables user's): ADD goes to nftables, yet DEL still cleans
/// iptables too, where the reference or an ADD before may have written.
#[test]
fn del_cleans_iptables_where_installed_though_not_usable() {
    let dir = DataDir::new("portmap-installed");
    let node = || Fake {
        installed: BOTH.to_vec(),
        ..Fake::with(&BOTH[1..])
    };
    let detect = serde_json::json!({});
    let nf = node();
    add(&invocation(Command::Add, "ctr1", &dir, detect.clone()), &nf).expect("ADD");
    assert_eq!(
        nf.portmap_applied(),
        [(Backend::Nftables, Op::Add(plan("ctr1")))]
    );
    let nf = node();
    del(&invocation(Command::Del, "ctr1", &dir, detect), &nf).expect("DEL");
    let del_op = |recorded| Op::Del {
        plan: plan("ctr1"),
        recorded,
    };
    assert_eq!(
        nf.portmap_applied(),
        [
            (Backend::IPTABLES, del_op(true)),
            (Backend::Nftables, del_op(true)),
        ]
    );
}

/// A backend that fails ADD is a CNI error when it was configured (nothing
/// else is tried, nothing rolled back: portmap's ADD writes one batch);
/// where iptables was only detected, ADD goes to nftables instead. CHECK
/// does the same.
#[test]
fn a_failing_add_is_a_cni_error_or_goes_to_nftables() {
    let dir = DataDir::new("portmap-fail");
    let broken = || Fake {
        broken: Some(Backend::IPTABLES),
        ..Fake::with(&BOTH)
    };
    let nf = broken();
    let ipt = serde_json::json!({"backend": "iptables"});
    let e = add(&invocation(Command::Add, "ctr1", &dir, ipt), &nf).expect_err("fails");
    assert_eq!(e.code, 999);
    assert!(e.msg.contains("iptables-save -t nat"), "{}", e.msg);
    assert_eq!(
        nf.portmap_applied(),
        [(Backend::IPTABLES, Op::Add(plan("ctr1")))]
    );
    let nf = broken();
    let detect = serde_json::json!({});
    add(&invocation(Command::Add, "ctr1", &dir, detect.clone()), &nf).expect("ADD");
    check(&invocation(Command::Check, "ctr1", &dir, detect), &nf).expect("CHECK");
    assert_eq!(
        nf.portmap_applied(),
        [
            (Backend::IPTABLES, Op::Add(plan("ctr1"))),
            (Backend::Nftables, Op::Add(plan("ctr1"))),
            (Backend::IPTABLES, Op::Check(plan("ctr1"))),
            (Backend::Nftables, Op::Check(plan("ctr1"))),
        ]
    );
}

/// GC hands iptables the network and the containers to keep (its rules name
/// both), and nftables the containers ADD recorded for this network that are
/// not kept; their records go.
#[test]
fn gc_hands_the_stale_attachments() {
    let dir = DataDir::new("portmap-gc");
    let nft = serde_json::json!({"backend": "nftables"});
    for id in ["ctr1", "ctr2"] {
        let nf = Fake::with(&BOTH);
        add(&invocation(Command::Add, id, &dir, nft.clone()), &nf).expect("ADD");
    }
    assert_eq!(dir.records(), 2);
    let valid = serde_json::json!({
        "cni.dev/valid-attachments": [{"containerID": "ctr2", "ifname": "eth0"}],
    });
    let nf = Fake::with(&BOTH);
    gc(&invocation(Command::Gc, "", &dir, valid), &nf).expect("GC");
    let gc_op = |stale: &[&str]| Op::Gc {
        network: "mynet".into(),
        keep: vec!["ctr2".into()],
        stale: stale.iter().map(|s| s.to_string()).collect(),
    };
    assert_eq!(
        nf.portmap_applied(),
        [
            (Backend::IPTABLES, gc_op(&[])),
            (Backend::Nftables, gc_op(&["ctr1"])),
        ]
    );
    assert_eq!(dir.records(), 1, "ctr1's record is removed, ctr2's kept");
}
