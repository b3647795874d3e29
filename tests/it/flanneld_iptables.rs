//! flanneld's iptables rules applied for real (in the test's own network
//! namespace): flannel's chains as iptables-save shows them, one jump each
//! however often they are ensured, other rules untouched, and all of it gone
//! again.

use crate::harness;

use cni_multi::netfilter::Family;
use cni_multi::netfilter::flannel::{Plan, ensure, has_random_fully, remove};
use harness::{TempDir, enter_test_host, iptables_table, run_in};

fn plan(network: &str, subnet: &str, masq: bool) -> Plan {
    Plan {
        network: network.parse().expect("net"),
        subnet: subnet.parse().expect("net"),
        masq,
        forward: true,
        random_fully: has_random_fully(Family::V4),
    }
}

fn lines(table: &str, needle: &str) -> Vec<String> {
    iptables_table(table)
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

#[test]
fn flannel_rules_are_ensured_once_and_removed() {
    enter_test_host();
    // Someone else's rules in the same built-in chains.
    let dir = TempDir::new("flanneld-rules");
    let file = dir.0.join("rules");
    std::fs::write(
        &file,
        "*nat\n-A POSTROUTING -s 10.88.0.5/32 -j MASQUERADE\nCOMMIT\n\
         *filter\n-A FORWARD -i cni0 -j ACCEPT\nCOMMIT\n",
    )
    .expect("write rules");
    run_in(
        None,
        "iptables-restore",
        &["--noflush", file.to_str().expect("utf-8")],
    );

    let v4 = plan("10.5.0.0/16", "10.5.72.0/24", true);
    ensure(std::slice::from_ref(&v4)).expect("ensure");
    // A rule appended after ours: ours is recognised as iptables-save prints
    // it and stays where it is, ahead of it.
    let other = ["-s", "10.99.0.1", "-j", "MASQUERADE"];
    run_in(
        None,
        "iptables",
        &[&["-t", "nat", "-A", "POSTROUTING"][..], &other].concat(),
    );
    for _ in 0..2 {
        ensure(std::slice::from_ref(&v4)).expect("ensure");
    }
    let jump = "-A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG";
    assert_eq!(
        lines("nat", "-A POSTROUTING"),
        vec![
            "-A POSTROUTING -s 10.88.0.5/32 -j MASQUERADE",
            jump,
            "-A POSTROUTING -s 10.99.0.1/32 -j MASQUERADE",
        ]
    );
    let chain = lines("nat", "-A FLANNEL-POSTRTG");
    assert_eq!(chain.len(), 6, "{chain:#?}");
    assert!(chain[0].contains("--mark 0x4000/0x4000") && chain[0].ends_with("-j RETURN"));
    assert!(
        chain[4].contains("-s 10.5.0.0/16 ! -d 224.0.0.0/4"),
        "{}",
        chain[4]
    );
    if v4.random_fully {
        assert!(
            chain[4].ends_with("-j MASQUERADE --random-fully"),
            "{}",
            chain[4]
        );
    }
    assert_eq!(
        lines("filter", "FLANNEL-FWD"),
        vec![
            ":FLANNEL-FWD - [0:0]".to_string(),
            "-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD".to_string(),
            "-A FLANNEL-FWD -s 10.5.0.0/16 -m comment --comment \"flanneld forward\" -j ACCEPT"
                .to_string(),
            "-A FLANNEL-FWD -d 10.5.0.0/16 -m comment --comment \"flanneld forward\" -j ACCEPT"
                .to_string(),
        ]
    );

    // Another subnet: the chain refilled, not added to.
    ensure(&[plan("10.5.0.0/16", "10.5.9.0/24", true)]).expect("ensure");
    let chain = lines("nat", "-A FLANNEL-POSTRTG");
    assert_eq!(chain.len(), 6);
    assert!(chain.iter().all(|r| !r.contains("10.5.72.0")), "{chain:#?}");

    // Without --ip-masq the nat part goes, the forward part stays.
    ensure(&[plan("10.5.0.0/16", "10.5.9.0/24", false)]).expect("ensure");
    assert!(lines("nat", "FLANNEL").is_empty());
    assert_eq!(lines("filter", "-A FLANNEL-FWD").len(), 2);

    remove(&[Family::V4, Family::V6]).expect("remove");
    remove(&[Family::V4]).expect("remove again");
    assert!(lines("nat", "FLANNEL").is_empty());
    assert!(lines("filter", "FLANNEL").is_empty());
    assert_eq!(
        lines("nat", "-A POSTROUTING"),
        vec![
            "-A POSTROUTING -s 10.88.0.5/32 -j MASQUERADE",
            "-A POSTROUTING -s 10.99.0.1/32 -j MASQUERADE",
        ]
    );
    assert_eq!(
        lines("filter", "-A FORWARD"),
        vec!["-A FORWARD -i cni0 -j ACCEPT"]
    );
}
