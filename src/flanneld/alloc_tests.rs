use super::*;
use crate::flanneld::config;
use crate::flanneld::lease::{VxlanData, subnet_key};

fn conf(text: &str) -> NetworkConfig {
    config::parse(text.as_bytes()).expect("config")
}

const NET16: &str = r#"{"Network":"10.5.0.0/16","Backend":{"Type":"vxlan"}}"#;
const DUAL: &str = r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/48"}"#;
const OURS: &str = "192.168.64.3";

fn ip(s: &str) -> Ipv4Addr {
    s.parse().expect("ip")
}

fn v4(s: &str) -> Ipv4Net {
    s.parse().expect("net")
}

fn v6(s: &str) -> Ipv6Net {
    s.parse().expect("net")
}

/// A lease as etcd lists it: its key and flannel's value.
fn held(subnet: &str, ipv6: Option<&str>, public_ip: &str, leased: bool) -> Held {
    let key = format!(
        "/coreos.com/network/subnets/{}",
        subnet_key(v4(subnet), ipv6.map(v6))
    );
    let attrs = LeaseAttrs::vxlan(
        ip(public_ip),
        VxlanData {
            vni: 1,
            vtep_mac: [2, 0, 0, 0, 0, 1],
        },
        None,
    );
    Held::from_kv(&key, attrs.to_json().as_bytes(), leased).expect("a subnet key")
}

fn first(_: usize) -> usize {
    0
}

fn choose_with(
    config: &NetworkConfig,
    leases: &[Held],
    previous: Previous,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Result<Decision, OutOfSubnets> {
    choose(config, leases, ip(OURS), &previous, pick)
}

fn created(d: &Decision) -> (Ipv4Net, Option<Ipv6Net>, bool) {
    match d.choice {
        Choice::Create {
            subnet,
            ipv6_subnet,
            from_previous,
        } => (subnet, ipv6_subnet, from_previous),
        ref other => panic!("not a create: {other:?}"),
    }
}

/// Step 1: our PublicIP's lease is taken again, a reservation stays one.
#[test]
fn a_lease_with_our_public_ip_is_reused() {
    let c = conf(NET16);
    let leases = [
        held("10.5.1.0/24", None, "192.168.64.2", true),
        held("10.5.7.0/24", None, OURS, true),
    ];
    let prev = Previous {
        subnet: Some(v4("10.5.9.0/24")),
        ipv6_subnet: None,
    };
    let d = choose_with(&c, &leases, prev, &mut first).expect("choice");
    assert_eq!(
        d.choice,
        Choice::Reuse {
            index: 1,
            subnet: v4("10.5.7.0/24"),
            ipv6_subnet: None,
            reservation: false
        }
    );
    assert!(
        d.choice
            .to_string()
            .starts_with("reuse: the lease of 10.5.7.0/24"),
        "{}",
        d.choice
    );
    assert!(d.delete.is_empty() && d.duplicates.is_empty());
    let leases = [
        held("10.5.7.0/24", None, OURS, false),
        held("10.5.8.0/24", None, OURS, true),
    ];
    let d = choose_with(&c, &leases, Previous::default(), &mut first).expect("choice");
    assert!(
        matches!(
            d.choice,
            Choice::Reuse {
                index: 0,
                reservation: true,
                ..
            }
        ),
        "{:?}",
        d.choice
    );
    assert_eq!(d.duplicates, vec![1]);
}

/// Our lease that no longer fits (another length, outside SubnetMin..Max,
/// IPv6 while it is off) is deleted, and its subnet is free again.
#[test]
fn our_lease_that_no_longer_fits_is_deleted_and_freed() {
    let c = conf(r#"{"Network":"10.5.0.0/16","SubnetMin":"10.5.1.0","SubnetMax":"10.5.2.0"}"#);
    let leases = [
        held("10.5.1.0/24", None, "192.168.64.2", true),
        held("10.5.2.0/24", Some("fc00:0:0:2::/64"), OURS, true),
        held("10.5.3.0/24", None, OURS, true),
        held("10.5.4.0/25", None, OURS, true),
    ];
    let d = choose_with(&c, &leases, Previous::default(), &mut first).expect("choice");
    assert_eq!(d.delete, vec![1, 2, 3]);
    assert_eq!(created(&d), (v4("10.5.2.0/24"), None, false));
}

/// Step 2: subnet.env's subnet when it fits and no lease overlaps it, in
/// either family; else step 3.
#[test]
fn the_previous_subnet_is_taken_when_free_and_fitting() {
    let c = conf(NET16);
    let prev = |s: &str| Previous {
        subnet: Some(v4(s)),
        ipv6_subnet: None,
    };
    let d = choose_with(&c, &[], prev("10.5.72.0/24"), &mut first).expect("choice");
    assert_eq!(created(&d), (v4("10.5.72.0/24"), None, true));
    assert!(
        d.choice.to_string().starts_with("previous: 10.5.72.0/24"),
        "{}",
        d.choice
    );
    for (leases, previous) in [
        (
            vec![held("10.5.72.0/24", None, "192.168.64.2", true)],
            prev("10.5.72.0/24"),
        ),
        // flannel compares for equality only: a wider lease holds it too.
        (
            vec![held("10.5.64.0/20", None, "192.168.64.2", false)],
            prev("10.5.72.0/24"),
        ),
        (vec![], prev("10.5.0.0/24")),
        (vec![], prev("10.5.72.0/25")),
        (vec![], prev("10.6.72.0/24")),
    ] {
        let d = choose_with(&c, &leases, previous, &mut first).expect("choice");
        let (subnet, _, from_previous) = created(&d);
        assert!(!from_previous, "{previous:?} with {leases:?}");
        assert!(leases.iter().all(|h| !h.subnet.contains(&subnet.network())));
    }
    let c = conf(DUAL);
    let both = Previous {
        subnet: Some(v4("10.5.72.0/24")),
        ipv6_subnet: Some(v6("fc00:0:0:9::/64")),
    };
    let d = choose_with(&c, &[], both, &mut first).expect("choice");
    assert_eq!(
        created(&d),
        (v4("10.5.72.0/24"), Some(v6("fc00:0:0:9::/64")), true)
    );
    // The IPv6 half held by another node: not reused.
    let leases = [held(
        "10.5.3.0/24",
        Some("fc00:0:0:9::/64"),
        "192.168.64.2",
        true,
    )];
    assert!(!created(&choose_with(&c, &leases, both, &mut first).expect("choice")).2);
    // No IPv6 half while IPv6 is on: not reused.
    assert!(!created(&choose_with(&c, &[], prev("10.5.72.0/24"), &mut first).expect("choice")).2);
}

/// Step 3: from SubnetMin, taken ones skipped, at most 100 to pick from.
#[test]
fn a_new_subnet_is_picked_among_the_first_hundred_free() {
    let c = conf(NET16);
    let leases: Vec<Held> = (1..=3)
        .map(|i| held(&format!("10.5.{i}.0/24"), None, "192.168.64.2", true))
        .collect();
    let mut offered = Vec::new();
    let mut last = |n: usize| {
        offered.push(n);
        n - 1
    };
    let d = choose_with(&c, &leases, Previous::default(), &mut last).expect("choice");
    assert_eq!(offered, vec![100]);
    assert_eq!(created(&d), (v4("10.5.103.0/24"), None, false));
    assert!(
        d.choice
            .to_string()
            .starts_with("new: picked 10.5.103.0/24"),
        "{}",
        d.choice
    );
    let d = choose_with(&c, &leases, Previous::default(), &mut first).expect("choice");
    assert_eq!(created(&d).0, v4("10.5.4.0/24"));
    // A pick out of range cannot panic.
    let d = choose_with(&c, &leases, Previous::default(), &mut |n| n + 7).expect("choice");
    assert_eq!(created(&d).0, v4("10.5.11.0/24"));
}

/// Whatever is picked, no lease (in either family, whatever its length,
/// whether its value parses) overlaps it.
#[test]
fn never_a_subnet_another_lease_holds() {
    let c = conf(
        r#"{"Network":"10.5.0.0/22","SubnetLen":26,"EnableIPv6":true,"IPv6Network":"fc00::/60"}"#,
    );
    let mut leases = vec![
        held(
            "10.5.0.64/26",
            Some("fc00:0:0:1::/64"),
            "192.168.64.2",
            true,
        ),
        held(
            "10.5.0.128/25",
            Some("fc00:0:0:2::/63"),
            "192.168.64.4",
            false,
        ),
        // Shorter than a subnet, inside 10.5.2.0/26.
        held(
            "10.5.2.16/28",
            Some("fc00:0:0:5::/64"),
            "192.168.64.5",
            true,
        ),
    ];
    leases.extend(Held::from_kv(
        "/coreos.com/network/subnets/10.5.1.0-24&fc00:0:0:4::-64",
        b"{not json",
        true,
    ));
    assert!(leases[3].attrs.is_err());
    assert_eq!(
        Held::from_kv("/coreos.com/network/config", b"{}", true),
        None
    );
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..20 {
        let d = choose_with(&c, &leases, Previous::default(), &mut |n| i % n).expect("a subnet");
        let (sn, sn6, _) = created(&d);
        let sn6 = sn6.expect("ipv6");
        seen.insert(sn);
        for h in &leases {
            assert!(
                !h.subnet.contains(&sn.network()) && !sn.contains(&h.subnet.network()),
                "{sn} vs {:?}",
                h.subnet
            );
            let h6 = h.ipv6_subnet.expect("v6");
            assert!(
                !h6.contains(&sn6.network()) && !sn6.contains(&h6.network()),
                "{sn6} vs {h6}"
            );
        }
    }
    // 10.5.2.64/26 to 10.5.3.192/26: every free one offered.
    assert_eq!(seen.len(), 7);
    assert_eq!(seen.first(), Some(&v4("10.5.2.64/26")));
}

/// All taken: flannel's "out of subnets", with used/total.
#[test]
fn out_of_subnets_says_how_many() {
    let c = conf(r#"{"Network":"10.5.0.0/28"}"#);
    let leases: Vec<Held> = ["10.5.0.4/30", "10.5.0.8/30", "10.5.0.12/30"]
        .iter()
        .map(|s| held(s, None, "192.168.64.2", true))
        .collect();
    let e = choose_with(&c, &leases, Previous::default(), &mut first).expect_err("full");
    assert_eq!(
        e.to_string(),
        "out of subnets: 3/3 IPv4 subnets (/30, 10.5.0.4 to 10.5.0.12) used, by 3 lease(s)"
    );
    let c = conf(DUAL);
    let leases = [held("10.5.1.0/24", Some("fc00::/48"), "192.168.64.2", true)];
    let e = choose_with(&c, &leases, Previous::default(), &mut first).expect_err("full");
    assert_eq!((e.family, e.total), ("IPv6", 65535));
}

/// A /1 of /30s (half the IPv4 space) and a /1 of IPv6 /126s: counted in
/// u128, a held block jumped over in one step, nothing sized by the network.
#[test]
fn huge_networks_are_cheap_and_counted_right() {
    let c = conf(
        r#"{"Network":"128.0.0.0/1","SubnetLen":30,"EnableIPv6":true,"IPv6Network":"8000::/1","IPv6SubnetLen":126}"#,
    );
    let half = [held("128.0.0.0/2", Some("8000::/2"), "192.168.64.2", false)];
    let d = choose_with(&c, &half, Previous::default(), &mut first).expect("choice");
    assert_eq!(
        created(&d),
        (v4("192.0.0.0/30"), Some(v6("c000::/126")), false)
    );
    let all = [held("128.0.0.0/1", Some("8000::/2"), "192.168.64.2", false)];
    let e = choose_with(&c, &all, Previous::default(), &mut first).expect_err("full");
    assert_eq!((e.family, e.total), ("IPv4", (1 << 29) - 1));
    let all = [held("10.0.0.0/8", Some("8000::/1"), "192.168.64.2", false)];
    let e = choose_with(&c, &all, Previous::default(), &mut first).expect_err("full");
    assert_eq!((e.family, e.total), ("IPv6", (1u128 << 125) - 1));
    assert!(
        e.to_string()
            .contains(&format!("{}/{}", (1u128 << 125) - 1, (1u128 << 125) - 1))
    );
    // The last subnet of the space is reachable, past the top without wrapping.
    let c = conf(r#"{"Network":"128.0.0.0/1","SubnetLen":30,"SubnetMin":"255.255.255.248"}"#);
    let mut last = |n: usize| n - 1;
    let d = choose_with(&c, &[], Previous::default(), &mut last).expect("choice");
    assert_eq!(created(&d).0, v4("255.255.255.252/30"));
}

#[test]
fn fits_checks_length_boundary_range_and_family() {
    let c = conf(NET16);
    assert!(fits(&c, v4("10.5.9.0/24"), None));
    assert!(!fits(&c, "10.5.9.7/24".parse().expect("net"), None));
    assert!(!fits(&c, v4("10.5.0.0/24"), None));
    assert!(!fits(&c, v4("10.5.9.0/24"), Some(v6("fc00:0:0:1::/64"))));
    let c = conf(DUAL);
    assert!(fits(&c, v4("10.5.9.0/24"), Some(v6("fc00:0:0:1::/64"))));
    assert!(!fits(&c, v4("10.5.9.0/24"), Some(v6("fc00::/64"))));
    assert!(!fits(&c, v4("10.5.9.0/24"), None));
}
