//! firewall's verbs against a [`Fake`] netfilter: what each hands the seam,
//! with no root, no rules and no firewalld.

use super::*;
use crate::cni::env::Command;
use crate::netfilter::apply::Fake;
use crate::netfilter::firewall::{Known, Remembered};
use crate::plugins::test_support::{self, DataDir};

/// Each container's address: `ctr1` has 10.88.0.1, `ctr2` 10.88.0.2.
fn address(id: &str) -> IpNet {
    let n = id.trim_start_matches("ctr");
    format!("10.88.0.{n}/16").parse().expect("net")
}

fn invocation(command: Command, id: &str, dir: &DataDir, keys: serde_json::Value) -> Invocation {
    let conf = serde_json::json!({
        "cniVersion": "1.0.0", "name": "mynet", "type": "firewall",
        "dataDir": dir.0,
        "prevResult": {
            "cniVersion": "1.0.0",
            "interfaces": [{"name": "cni0"}, {"name": "eth0", "sandbox": "/run/netns/x"}],
            "ips": [{"address": address(id).to_string(), "interface": 1}],
        },
    });
    test_support::invocation(command, id, conf, keys)
}

/// The container's plan: ADD names the bridge, DEL, CHECK and GC do not.
fn plan(id: &str, addresses: &[IpNet], bridge: &str) -> Plan {
    Plan {
        container_id: id.into(),
        addresses: addresses.to_vec(),
        admin_chain: "CNI-ADMIN".into(),
        policy: IngressPolicy::Open,
        bridge: bridge.into(),
        zone: firewalld::DEFAULT_ZONE.into(),
    }
}

fn add_op(known: Known) -> Op {
    Op::Add {
        plan: plan("ctr1", &[address("ctr1")], "cni0"),
        known,
    }
}

fn fresh() -> Known {
    Known {
        fresh: true,
        handles: Vec::new(),
    }
}

const IPT: Target = Target::Rules(Backend::IPTABLES);
const NFT: Target = Target::Rules(Backend::Nftables);
const BOTH: [Backend; 2] = [Backend::IPTABLES, Backend::Nftables];

/// ADD hands one Add to the configured target, whatever else is usable;
/// without one, to firewalld where it runs, else to the detected backend.
#[test]
fn add_hands_one_add_to_its_target() {
    for (value, target, firewalld) in [
        ("iptables", IPT, true),
        ("nftables", NFT, true),
        ("firewalld", Target::Firewalld, false),
        ("", Target::Firewalld, true),
        ("", IPT, false),
    ] {
        let dir = DataDir::new("firewall-add");
        let nf = Fake {
            firewalld,
            ..Fake::with(&BOTH)
        };
        let keys = serde_json::json!({"backend": value});
        add(&invocation(Command::Add, "ctr1", &dir, keys), &nf).expect("ADD");
        assert_eq!(
            nf.firewall_applied(),
            [(target, add_op(fresh()))],
            "{value:?}"
        );
        assert_eq!(dir.records(), 1, "recorded for GC");
    }
}

/// The handles an ADD returns are remembered: a repeated ADD, CHECK and DEL
/// hand them back.
#[test]
fn handles_from_add_come_back_to_check_and_del() {
    let dir = DataDir::new("firewall-handles");
    let handles: Vec<Remembered> = vec![(address("ctr1").addr(), [7, 8])];
    let nf = Fake {
        handles: handles.clone(),
        ..Fake::with(&BOTH)
    };
    let ipt = serde_json::json!({"backend": "iptables"});
    for _ in 0..2 {
        add(&invocation(Command::Add, "ctr1", &dir, ipt.clone()), &nf).expect("ADD");
    }
    check(&invocation(Command::Check, "ctr1", &dir, ipt.clone()), &nf).expect("CHECK");
    del(&invocation(Command::Del, "ctr1", &dir, ipt), &nf).expect("DEL");
    let mine = plan("ctr1", &[address("ctr1")], "");
    let again = Known {
        fresh: false,
        handles: handles.clone(),
    };
    assert_eq!(
        nf.firewall_applied(),
        [
            (IPT, add_op(fresh())),
            (IPT, add_op(again)),
            (
                IPT,
                Op::Check {
                    plan: mine.clone(),
                    handles: handles.clone(),
                }
            ),
            (
                IPT,
                Op::Del {
                    plan: mine,
                    handles,
                    recorded: true,
                }
            ),
        ]
    );
    assert_eq!(dir.records(), 0, "DEL removes the record");
}

/// DEL without a configured backend cleans firewalld's sources where it
/// runs and each usable backend, skipping one that is not; nftables is told
/// whether ADD recorded the attachment, and alone it needs no addresses.
#[test]
fn del_cleans_each_usable_target_and_skips_the_others() {
    let dir = DataDir::new("firewall-del");
    let detect = serde_json::json!({});
    let nf = Fake {
        firewalld: true,
        ..Fake::with(&BOTH)
    };
    add(&invocation(Command::Add, "ctr1", &dir, detect.clone()), &nf).expect("ADD");
    del(&invocation(Command::Del, "ctr1", &dir, detect.clone()), &nf).expect("DEL");
    let del_op = |addresses: &[IpNet], recorded| Op::Del {
        plan: plan("ctr1", addresses, ""),
        handles: Vec::new(),
        recorded,
    };
    let mine = [address("ctr1")];
    assert_eq!(
        nf.firewall_applied(),
        [
            (Target::Firewalld, add_op(fresh())),
            (Target::Firewalld, del_op(&mine, true)),
            (IPT, del_op(&mine, true)),
            (NFT, del_op(&mine, true)),
        ]
    );
    assert_eq!(dir.records(), 0);
    // nftables alone, no record left: found by container, without addresses.
    let nf = Fake::with(&BOTH[1..]);
    del(&invocation(Command::Del, "ctr1", &dir, detect), &nf).expect("DEL");
    assert_eq!(nf.firewall_applied(), [(NFT, del_op(&[], false))]);
}

/// A target that fails ADD is a CNI error when it was configured (nothing
/// else tried, nothing rolled back: the record stays for GC); where iptables
/// was only detected, ADD goes to nftables instead.
#[test]
fn a_failing_add_is_a_cni_error_or_goes_to_nftables() {
    let dir = DataDir::new("firewall-fail");
    let broken = || Fake {
        broken: Some(Backend::IPTABLES),
        ..Fake::with(&BOTH)
    };
    let nf = broken();
    let ipt = serde_json::json!({"backend": "iptables"});
    let e = add(&invocation(Command::Add, "ctr1", &dir, ipt), &nf).expect_err("fails");
    assert_eq!(e.code, 999);
    assert!(e.msg.contains("iptables-save -t nat"), "{}", e.msg);
    assert_eq!(nf.firewall_applied(), [(IPT, add_op(fresh()))]);
    assert_eq!(dir.records(), 1, "the record stays for GC");
    let dir = DataDir::new("firewall-fail-detect");
    let nf = broken();
    let detect = serde_json::json!({});
    add(&invocation(Command::Add, "ctr1", &dir, detect), &nf).expect("ADD");
    assert_eq!(
        nf.firewall_applied(),
        [(IPT, add_op(fresh())), (NFT, add_op(fresh()))]
    );
}

/// GC hands each target the plans of the recorded attachments not in the
/// valid list, then drops their records.
#[test]
fn gc_hands_the_stale_attachments() {
    let dir = DataDir::new("firewall-gc");
    let detect = serde_json::json!({});
    for id in ["ctr1", "ctr2"] {
        let nf = Fake::with(&BOTH);
        add(&invocation(Command::Add, id, &dir, detect.clone()), &nf).expect("ADD");
    }
    assert_eq!(dir.records(), 2);
    let valid = serde_json::json!({
        "cni.dev/valid-attachments": [{"containerID": "ctr2", "ifname": "eth0"}],
    });
    let nf = Fake::with(&BOTH);
    gc(&invocation(Command::Gc, "ctr9", &dir, valid), &nf).expect("GC");
    let stale = || Op::Gc {
        stale: vec![plan("ctr1", &[address("ctr1")], "")],
    };
    assert_eq!(nf.firewall_applied(), [(IPT, stale()), (NFT, stale())]);
    assert_eq!(dir.records(), 1, "ctr1's record is removed, ctr2's kept");
}
