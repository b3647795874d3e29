//! The encoding without root: expressions of rule shapes as iptables-nft
//! writes them (tests/it/xtnft.rs compares them with iptables-nft itself on a
//! kernel), the batches of each plugin pinned by golden files in
//! `testdata/netfilter/xtnft-*.txt`, and the comparison of rules read back.

use super::*;
use crate::netfilter::golden_tests::golden;
use crate::netfilter::nft::Expr;
use crate::netlink::wire::{self, Body, NESTED};

fn net(s: &str) -> ipnet::IpNet {
    s.parse().expect("net")
}

/// `name` and the attributes of each expression, decoded enough to read.
fn shape(exprs: &[Expr]) -> Vec<String> {
    exprs
        .iter()
        .map(|e| {
            let data = e.data.clone().into_bytes();
            let u = |ty| {
                wire::find(&data, ty)
                    .and_then(|p| p.get(..4))
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            };
            let value = |ty| {
                wire::find(&data, ty)
                    .and_then(|n| wire::find(n, 1))
                    .map(|v| v.iter().map(|b| format!("{b:02x}")).collect::<String>())
                    .unwrap_or_default()
            };
            match e.name {
                "payload" => format!(
                    "payload base {} offset {} len {}",
                    u(2).unwrap_or(9),
                    u(3).unwrap_or(0),
                    u(4).unwrap_or(0)
                ),
                "cmp" => format!(
                    "cmp {} {}",
                    if u(2) == Some(0) { "eq" } else { "neq" },
                    value(3)
                ),
                "bitwise" => format!("bitwise len {} mask {}", u(3).unwrap_or(0), value(4)),
                "meta" => format!("meta {}", u(2).unwrap_or(0)),
                "match" | "target" => format!(
                    "{} {} rev {} info {}",
                    e.name,
                    wire::find(&data, 1).map(wire::as_str).unwrap_or_default(),
                    u(2).unwrap_or(99),
                    wire::find(&data, 3).map_or(0, <[u8]>::len)
                ),
                other => other.to_string(),
            }
        })
        .collect()
}

fn shape_of(rule: &Rule, family: Family) -> Vec<String> {
    shape(&expressions(rule, family).expect("encodes"))
}

/// Whole bytes of a prefix are loaded and compared; a prefix ending inside a
/// byte loads the address and masks it; `/0` compares nothing.
#[test]
fn addresses_are_compared_as_iptables_nft_compares_them() {
    let accept = || Rule::to(Target::Accept);
    assert_eq!(
        shape_of(&accept().dst(net("10.22.0.5/16"), false), Family::V4)[..2],
        ["payload base 1 offset 16 len 2", "cmp eq 0a16"]
    );
    assert_eq!(
        shape_of(&accept().dst(net("224.0.0.0/4"), true), Family::V4)[..3],
        [
            "payload base 1 offset 16 len 4",
            "bitwise len 4 mask f0000000",
            "cmp neq e0000000"
        ]
    );
    assert_eq!(
        shape_of(&accept().src(net("10.22.0.5/32"), false), Family::V4)[..2],
        ["payload base 1 offset 12 len 4", "cmp eq 0a160005"]
    );
    assert_eq!(
        shape_of(&accept().dst(net("ff00::/8"), true), Family::V6)[..2],
        ["payload base 1 offset 24 len 1", "cmp neq ff"]
    );
    assert_eq!(
        shape_of(&accept().src(net("fd00::5/128"), false), Family::V6)[0],
        "payload base 1 offset 8 len 16"
    );
    assert_eq!(
        shape_of(&accept().src(net("0.0.0.0/0"), false), Family::V4),
        ["counter", "immediate"]
    );
    assert!(expressions(&accept().src(net("fd00::1/128"), false), Family::V4).is_err());
}

/// Interfaces with their NUL, a `+` prefix without; tcp's port native,
/// sctp's an xtables match; every rule ends with its counter and target.
#[test]
fn headers_ports_and_extensions_take_iptables_nfts_forms() {
    let r = Rule::to(Target::Drop)
        .in_iface("cni0", false)
        .out_iface("cni0", true)
        .comment("c");
    assert_eq!(
        shape_of(&r, Family::V4),
        [
            "meta 6",
            "cmp eq 636e693000",
            "meta 7",
            "cmp neq 636e693000",
            "match comment rev 0 info 256",
            "counter",
            "immediate"
        ]
    );
    let wild = Rule::to(Target::Drop).in_iface("veth+", false);
    assert_eq!(shape_of(&wild, Family::V4)[1], "cmp eq 76657468");
    let tcp = Rule::to(Target::Dnat {
        addr: "10.0.0.2".parse().expect("ip"),
        port: 80,
    })
    .proto(Proto::Tcp)
    .src(net("10.0.0.2/24"), false)
    .with(Match::Dport(8080));
    assert_eq!(
        shape_of(&tcp, Family::V4),
        [
            "meta 16",
            "cmp eq 06",
            "payload base 1 offset 12 len 3",
            "cmp eq 0a0000",
            "payload base 2 offset 2 len 2",
            "cmp eq 1f90",
            "counter",
            "target DNAT rev 2 info 48"
        ]
    );
    let sctp = Rule::to(Target::Accept)
        .proto(Proto::Sctp)
        .with(Match::Dport(80));
    assert_eq!(shape_of(&sctp, Family::V6)[2], "match sctp rev 0 info 296");
    let mark = Rule::to(Target::Masquerade).with(Match::Mark {
        value: 0x2000,
        mask: 0x2000,
    });
    assert_eq!(
        shape_of(&mark, Family::V6),
        [
            "meta 3",
            "bitwise len 4 mask 00200000",
            "cmp eq 00200000",
            "counter",
            "target MASQUERADE rev 0 info 40"
        ]
    );
    let others = Rule::to(Target::SetXmark { value: 1, mask: 1 })
        .proto(Proto::Udp)
        .with(Match::Multiport(vec![53, 54]))
        .with(Match::RelatedEstablished)
        .with(Match::DstLocal);
    assert_eq!(
        shape_of(&others, Family::V4)[2..5],
        [
            "match multiport rev 1 info 48",
            "match conntrack rev 3 info 168",
            "match addrtype rev 1 info 8"
        ]
    );
    assert_eq!(
        shape_of(&Rule::to(Target::Masquerade), Family::V4)[1],
        "target MASQUERADE rev 0 info 24"
    );
}

/// What iptables refuses is refused before any message is built; a comment
/// past 255 bytes is cut as iptables cuts it.
#[test]
fn what_iptables_refuses_is_refused() {
    let long = Rule::to(Target::Accept).comment(&"x".repeat(300));
    let cut = Rule::to(Target::Accept).comment(&"x".repeat(255));
    let info = |r: &Rule| -> Vec<u8> {
        let exprs = expressions(r, Family::V4).expect("encodes");
        let data = exprs[0].data.clone().into_bytes();
        wire::find(&data, 3).expect("info").to_vec()
    };
    assert_eq!(info(&long), info(&cut));
    assert_eq!(info(&cut).len(), 256);
    let ports = Rule::to(Target::Accept)
        .proto(Proto::Tcp)
        .with(Match::Multiport((1..=16).collect()));
    assert!(expressions(&ports, Family::V4).is_err());
    let no_proto = Rule::to(Target::Accept).with(Match::Dport(80));
    assert!(expressions(&no_proto, Family::V4).is_err());
    let name = Rule::to(Target::Accept).in_iface(&"i".repeat(16), false);
    assert!(expressions(&name, Family::V4).is_err());
    let mut batch = Batch::new(Family::V4, "nat");
    assert!(batch.builtin_chain("FORWARD").is_err(), "no FORWARD in nat");
    assert!(batch.append("X", &ports).is_err());
    assert!(batch.is_empty());
}

/// A rule's attributes as the kernel dumps `rule`: each expression's
/// attributes in reverse order, bitwise's operation added, nests unflagged.
fn as_dumped(rule: &Rule, family: Family, handle: u64, comment_other: bool) -> Dumped {
    let exprs = expressions(rule, family).expect("encodes");
    let list = exprs.into_iter().fold(Body::default(), |list, e| {
        let mut attrs: Vec<(u16, Vec<u8>)> = wire::attrs(&e.data.clone().into_bytes())
            .map(|(t, p)| (t, p.to_vec()))
            .collect();
        if e.name == "bitwise" {
            attrs.push((6, vec![0; 4]));
        }
        if e.name == "match" && comment_other {
            let info = attrs.iter_mut().find(|(t, _)| *t == 3).expect("info");
            if info.1.starts_with(b"c") {
                info.1[0] = b'd';
            }
        }
        attrs.reverse();
        let data = attrs
            .into_iter()
            .fold(Body::default(), |b, (t, p)| b.attr(t, &p));
        list.nest(1, |el| el.str(1, e.name).attr(2, &data.into_bytes()))
    });
    let attrs = Body::default()
        .str(1, "nat")
        .str(2, "X")
        .attr(3, &handle.to_be_bytes())
        .attr(4 | NESTED, &list.into_bytes())
        .into_bytes();
    Dumped { handle, attrs }
}

/// A rule read back is recognised whoever ordered its attributes, counters
/// and the kernel's defaults aside; another rule is not, nor (unless asked)
/// one with another comment.
#[test]
fn rules_read_back_are_recognised_as_the_rule_they_are() {
    let rule = Rule::to(Target::Jump("CNI-X".into()))
        .dst(net("224.0.0.0/4"), true)
        .comment("c");
    let dumped = as_dumped(&rule, Family::V4, 7, false);
    assert!(dumped.is(&rule, Family::V4));
    assert!(dumped.jumps_to("CNI-X") && !dumped.jumps_to("CNI-Y"));
    let other = Rule::to(Target::Jump("CNI-Y".into()))
        .dst(net("224.0.0.0/4"), true)
        .comment("c");
    assert!(!dumped.is(&other, Family::V4));
    let wider = Rule::to(Target::Jump("CNI-X".into()))
        .dst(net("224.0.0.0/3"), true)
        .comment("c");
    assert!(!dumped.is(&wider, Family::V4));
    let renamed = as_dumped(&rule, Family::V4, 7, true);
    assert!(!renamed.is(&rule, Family::V4));
    assert!(renamed.is_but_comment(&rule, Family::V4));
}

mod masq_cases {
    use super::*;
    use crate::netfilter::masq::{Plan, xtnft as masq};

    fn plan(addresses: &[&str]) -> Plan {
        let ips: Vec<ipnet::IpNet> = addresses.iter().map(|a| net(a)).collect();
        Plan::new("mynet", "ctr1", "eth0", &ips)
    }

    #[test]
    fn masq_batches_are_pinned() {
        let dual = plan(&["10.88.0.5/16", "fd88::5/64"]);
        let fresh = masq::Found::default();
        let mut out = String::new();
        for family in [Family::V4, Family::V6] {
            let b = masq::add_batch(&dual, family, &fresh).expect("batch");
            out.push_str(&format!("# {family:?}, nothing there\n{}", b.golden()));
        }
        golden("xtnft-masq-add-fresh", &out);
        let again = masq::Found {
            chain: true,
            postrouting: true,
            jumping: vec!["10.88.0.5".parse().expect("ip")],
        };
        let two = plan(&["10.88.0.5/16", "10.99.0.5/24"]);
        let b = masq::add_batch(&two, Family::V4, &again).expect("batch");
        golden("xtnft-masq-add-repeat", &b.golden());
        golden(
            "xtnft-masq-del",
            &masq::del_batch(&dual, Family::V4, &[12, 13]).golden(),
        );
    }
}

mod portmap_cases {
    use super::*;
    use crate::netfilter::portmap::{Mapping, Plan, Target as Dest, xtnft as pm};

    fn plan(address: &str) -> (Plan, Dest) {
        let mut p = Plan::named("mynet", "ctr1");
        p.mappings = vec![
            Mapping {
                host_port: 8080,
                container_port: 80,
                protocol: "tcp".into(),
                host_ip: None,
            },
            Mapping {
                host_port: 5353,
                container_port: 53,
                protocol: "udp".into(),
                host_ip: Some("192.0.2.1".parse().expect("ip")),
            },
        ];
        let dest = Dest {
            address: net(address),
        };
        p.targets = vec![dest.clone()];
        (p, dest)
    }

    #[test]
    fn portmap_batches_are_pinned() {
        let (v4, d4) = plan("10.88.0.5/16");
        let (v6, d6) = plan("fd88::5/64");
        let fresh = pm::Found::default();
        let mut out = String::new();
        for (p, d, f) in [(&v4, &d4, Family::V4), (&v6, &d6, Family::V6)] {
            let b = pm::add_batch(p, f, d, &fresh).expect("batch");
            out.push_str(&format!("# {f:?}, nothing there\n{}", b.golden()));
        }
        golden("xtnft-portmap-add-fresh", &out);
        let ready = pm::Found {
            builtins: [true; 3],
            dnat_jumps: [true; 2],
            dnat_chain: true,
            setmark_chain: true,
            setmark_rule: true,
            masq_chain: true,
            masq_rule: true,
            masq_jumped: true,
            container: None,
        };
        let b = pm::add_batch(&v4, Family::V4, &d4, &ready).expect("batch");
        golden("xtnft-portmap-add-ready", &b.golden());
        let again = pm::Found {
            container: Some(vec![21, 22]),
            ..ready
        };
        let b = pm::add_batch(&v4, Family::V4, &d4, &again).expect("batch");
        golden("xtnft-portmap-add-repeat", &b.golden());
        golden(
            "xtnft-portmap-del",
            &pm::del_batch(&v4, Family::V4, &[21, 22]).golden(),
        );
    }
}

mod firewall_cases {
    use super::*;
    use crate::netfilter::firewall::xtnft::{self as fw, Found, Read};
    use crate::netfilter::firewall::{IngressPolicy, Plan};

    fn plan(policy: IngressPolicy) -> Plan {
        Plan {
            container_id: "ctr1".into(),
            addresses: vec![net("10.88.0.5/16"), net("fd88::5/64")],
            admin_chain: "CNI-ADMIN".into(),
            policy,
            bridge: "cni0".into(),
            zone: String::new(),
        }
    }

    #[test]
    fn firewall_batches_are_pinned() {
        let p = plan(IngressPolicy::Isolated);
        let mut out = String::new();
        for (family, ip) in [(Family::V4, &p.addresses[0]), (Family::V6, &p.addresses[1])] {
            let b = fw::add_batch(&p, family, &[ip], &Found::default()).expect("batch");
            out.push_str(&format!("# {family:?}, nothing there\n{}", b.golden()));
        }
        golden("xtnft-firewall-add-isolated-fresh", &out);
        // CNI-FORWARD there and jumped to (its admin jump not read back
        // here), the admin chain there: the admin jump and the rules.
        let there = Found {
            forward: true,
            cni_forward: Some(Read {
                rules: Vec::new(),
                jumped: true,
            }),
            admin: true,
            stages: [None, None],
        };
        let open = plan(IngressPolicy::Open);
        let b = fw::add_batch(&open, Family::V4, &[&open.addresses[0]], &there).expect("batch");
        golden("xtnft-firewall-add-open-there", &b.golden());
    }
}
