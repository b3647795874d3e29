//! Golden files of the rules each netfilter module builds, checked without
//! root: the iptables-restore text and the nf_tables transactions of
//! representative plans, built by the pure builders from a given state, in
//! `testdata/netfilter/<case>.txt`. `UPDATE_GOLDEN=1 cargo test --lib golden`
//! rewrites them.

use super::iptables::{Batch, Saved};
use super::nft::{DumpedRule, Tx};
use super::{Family, firewall, masq, portmap};
use ipnet::IpNet;
use std::path::Path;

pub(super) fn golden(case: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/netfilter")
        .join(format!("{case}.txt"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    assert!(
        got == want,
        "{case} differs from {} (UPDATE_GOLDEN=1 rewrites it):\n{got}",
        path.display()
    );
}

fn label(family: Family) -> &'static str {
    match family {
        Family::V4 => "iptables-restore (IPv4)",
        Family::V6 => "ip6tables-restore (IPv6)",
    }
}

/// The restore texts of one operation, a header per family.
fn restores(batches: &[(Family, Batch)]) -> String {
    batches
        .iter()
        .map(|(f, b)| format!("# {}\n{}", label(*f), b.render().expect("render")))
        .collect::<Vec<_>>()
        .join("\n")
}

fn txs(txs: &[Tx]) -> String {
    txs.iter()
        .enumerate()
        .map(|(i, tx)| format!("# transaction {i}\n{}", tx.golden()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn net(s: &str) -> IpNet {
    s.parse().expect("net")
}

fn rule(handle: u64, comment: &str) -> DumpedRule {
    DumpedRule {
        handle,
        comment: comment.into(),
        jumps: Vec::new(),
        iifname: None,
        saddr: None,
    }
}

mod portmap_cases {
    use super::*;
    use portmap::{Mapping, Plan, Target};
    use portmap::{iptables as ipt, nftables as nft};

    fn mapping(host_port: u16, container_port: u16, protocol: &str, host_ip: &str) -> Mapping {
        Mapping {
            host_port,
            container_port,
            protocol: protocol.into(),
            host_ip: (!host_ip.is_empty()).then(|| host_ip.parse().expect("ip")),
        }
    }

    fn plan(mappings: Vec<Mapping>) -> Plan {
        Plan {
            network: "mynet".into(),
            container_id: "ctr1".into(),
            mappings,
            snat: true,
            masq_all: false,
            mark_bit: 13,
            external_mark_chain: None,
            conditions_v4: Vec::new(),
            conditions_v6: Vec::new(),
            targets: vec![
                Target {
                    address: net("10.88.0.5/16"),
                },
                Target {
                    address: net("fd00:88::5/64"),
                },
            ],
        }
    }

    fn tcp_udp() -> Plan {
        plan(vec![
            mapping(8080, 80, "tcp", ""),
            mapping(5353, 53, "udp", ""),
        ])
    }

    /// The iptables ADD of every target from an empty table (the save path),
    /// and the nftables ADD into an empty ruleset.
    fn adds(case: &str, p: &Plan) {
        let mut batches = Vec::new();
        let mut transactions = Vec::new();
        for t in &p.targets {
            let f = Family::of(t.address.addr());
            if p.mappings_for(f).is_empty() {
                continue;
            }
            batches.push((f, ipt::add_batch(p, f, t, &Saved::default())));
            transactions.push(
                nft::add_tx(p, t, &nft::Table::default(), &nft::Mine::default()).expect("tx"),
            );
        }
        golden(&format!("portmap-iptables-add-{case}"), &restores(&batches));
        golden(&format!("portmap-nftables-add-{case}"), &txs(&transactions));
    }

    #[test]
    fn golden_portmap_tcp_udp() {
        adds("tcp-udp", &tcp_udp());
    }

    #[test]
    fn golden_portmap_host_ips() {
        adds(
            "hostip-v4-v6",
            &plan(vec![
                mapping(8080, 80, "tcp", "192.0.2.1"),
                mapping(8443, 443, "tcp", "2001:db8::1"),
                mapping(9000, 90, "tcp", "0.0.0.0"),
            ]),
        );
    }

    #[test]
    fn golden_portmap_snat_off() {
        let mut p = tcp_udp();
        p.snat = false;
        adds("snat-off", &p);
    }

    #[test]
    fn golden_portmap_masq_all() {
        let mut p = tcp_udp();
        p.masq_all = true;
        adds("masq-all", &p);
    }

    #[test]
    fn golden_portmap_conditions() {
        let mut p = tcp_udp();
        p.conditions_v4 = ["-s", "192.168.0.0/16"].map(String::from).to_vec();
        p.conditions_v6 = ["-s", "fd00::/8"].map(String::from).to_vec();
        let mut batches = Vec::new();
        for t in &p.targets {
            let f = Family::of(t.address.addr());
            batches.push((f, ipt::add_batch(&p, f, t, &Saved::default())));
        }
        golden("portmap-iptables-add-conditions", &restores(&batches));
        // nft takes the conditions in its own syntax.
        p.conditions_v4 = vec!["ip saddr 192.168.0.0/16".into()];
        p.conditions_v6 = vec!["ip6 saddr fd00::/8".into()];
        let transactions: Vec<Tx> = p
            .targets
            .iter()
            .map(|t| nft::add_tx(&p, t, &nft::Table::default(), &nft::Mine::default()).expect("tx"))
            .collect();
        golden("portmap-nftables-add-conditions", &txs(&transactions));
    }

    #[test]
    fn golden_portmap_external_mark_chain() {
        let mut p = tcp_udp();
        p.external_mark_chain = Some("KUBE-MARK-MASQ".into());
        let batches: Vec<(Family, Batch)> = p
            .targets
            .iter()
            .map(|t| {
                let f = Family::of(t.address.addr());
                (f, ipt::add_batch(&p, f, t, &Saved::default()))
            })
            .collect();
        golden(
            "portmap-iptables-add-external-mark-chain",
            &restores(&batches),
        );
    }

    /// The fast paths (state read over nf_tables netlink, no save), a
    /// repeated ADD over a saved table, and a repeated nftables ADD.
    #[test]
    fn golden_portmap_known_states_and_repeats() {
        let p = tcp_udp();
        let v4 = &p.targets[0];
        golden(
            "portmap-iptables-add-fresh",
            &restores(&[(Family::V4, ipt::known_add_batch(&p, Family::V4, v4, true))]),
        );
        golden(
            "portmap-iptables-add-ready",
            &restores(&[(Family::V4, ipt::known_add_batch(&p, Family::V4, v4, false))]),
        );
        let chain = p.dnat_chain();
        let old = super::super::chain_name("DN-", "mynet", "old");
        let saved = Saved::parse(&format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n\
             :CNI-HOSTPORT-DNAT - [0:0]\n:CNI-HOSTPORT-SETMARK - [0:0]\n:CNI-HOSTPORT-MASQ - [0:0]\n:{chain} - [0:0]\n:{old} - [0:0]\n\
             -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\n\
             -A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\n\
             -A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ\n\
             -A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"mynet\\\" id: \\\"ctr1\\\"\" -m multiport --dports 8080 -j {chain}\n\
             -A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"mynet\\\" id: \\\"old\\\"\" -m multiport --dports 7070 -j {old}\n\
             -A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000\n\
             -A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE\n\
             COMMIT\n"
        ));
        golden(
            "portmap-iptables-add-repeat",
            &restores(&[(Family::V4, ipt::add_batch(&p, Family::V4, v4, &saved))]),
        );
        golden(
            "portmap-iptables-del",
            &restores(&[
                (Family::V4, ipt::known_del_batch(&p, Family::V4)),
                (Family::V4, ipt::del_batch(&p, Family::V4, &saved)),
            ]),
        );
        golden(
            "portmap-iptables-gc",
            &restores(&[(
                Family::V4,
                ipt::gc_batch("mynet", &["ctr1".into()], Family::V4, &saved),
            )]),
        );
        // Ours, marked, and the container's anchor and rules (a repeat).
        let table = nft::Table {
            made: true,
            skeleton: true,
            masquerading: true,
            marked: true,
            total: 5,
            dumped: None,
        };
        let previous = nft::Mine {
            anchor: Some(crate::netfilter::nft::ChainInfo { handle: 3, uses: 0 }),
            rules: vec![("hostports", 4), ("masquerading", 7)],
        };
        // A table the reference's ADD made: no skeleton of ours, no mark.
        let theirs = nft::Table {
            skeleton: false,
            masquerading: false,
            marked: false,
            ..table.clone()
        };
        golden(
            "portmap-nftables-add-repeat",
            &txs(&[
                nft::add_tx(&p, v4, &table, &previous).expect("tx"),
                nft::add_tx(&p, v4, &theirs, &nft::Mine::default()).expect("tx"),
            ]),
        );
        let anchor = crate::netfilter::nft::anchor_name("ctr1");
        let mine = [(anchor, previous)];
        let some = nft::del_tx(Family::V4, &table, &mine).expect("some");
        let two = nft::Table {
            total: 2,
            ..table.clone()
        };
        let last = nft::del_tx(Family::V6, &two, &mine).expect("last");
        assert!(nft::del_tx(Family::V4, &table, &[]).is_none());
        golden("portmap-nftables-del", &txs(&[some, last]));
    }
}

mod masq_cases {
    use super::super::nft as nft_anchor;
    use super::*;
    use masq::Plan;
    use masq::iptables::{self as ipt, State};
    use masq::nftables as nft;

    fn plan() -> Plan {
        Plan::new(
            "mynet",
            "ctr1",
            "eth0",
            &[net("10.88.0.5/16"), net("fd00:88::5/64")],
        )
    }

    #[test]
    fn golden_masq_iptables() {
        let p = plan();
        let both = |f: &dyn Fn(Family) -> Batch| {
            restores(&[(Family::V4, f(Family::V4)), (Family::V6, f(Family::V6))])
        };
        golden(
            "masq-iptables-add-absent",
            &both(&|f| ipt::known_add_batch(&p, f, &State::Absent).expect("known")),
        );
        golden(
            "masq-iptables-add-saved",
            &both(&|f| ipt::add_batch(&p, f, &Saved::default())),
        );
        golden(
            "masq-iptables-del-known",
            &both(&|f| {
                let host = p
                    .addresses
                    .iter()
                    .find(|a| Family::of(a.addr()) == f)
                    .expect("address")
                    .addr();
                ipt::quick_del(&p, f, &[(host, "name: \"mynet\" id: \"ctr1\"".into())])
            }),
        );
    }

    #[test]
    fn golden_masq_nftables() {
        let p = plan();
        let prefix = nft::instance(&p.network, &p.ifname, &p.container_id);
        let checks = nft_anchor::ChainInfo { handle: 2, uses: 3 };
        let postrouting = |mark: Option<&str>| {
            let mut goto = rule(12, mark.unwrap_or_default());
            goto.jumps = vec!["masq_checks".into()];
            vec![rule(10, ""), rule(11, ""), goto]
        };
        // Ours: marked, with the attachment's anchor and rule (a repeat).
        let marked = nft::Seen {
            checks: Some(checks),
            postrouting: postrouting(Some(nft::MARK)),
            anchor: Some(nft_anchor::ChainInfo {
                handle: 20,
                uses: 0,
            }),
            mine: vec![21],
            total: 2,
        };
        // Written by the reference's ADD: unmarked, its rule found by comment.
        let theirs = nft::Seen {
            postrouting: postrouting(None),
            anchor: None,
            ..marked.clone()
        };
        // Marked, but postrouting is not as ours leaves it: rewritten.
        let touched = nft::Seen {
            postrouting: postrouting(Some(nft::MARK))[1..].to_vec(),
            ..marked.clone()
        };
        golden(
            "masq-nftables-add",
            &txs(&[
                nft::add_tx(&p, &nft::Seen::default()),
                nft::add_tx(&p, &marked),
                nft::add_tx(&p, &theirs),
                nft::add_tx(&p, &touched),
            ]),
        );
        let anchor = nft_anchor::anchor_name(&prefix);
        let some = nft::del_tx(&marked, &anchor).expect("some");
        let last = nft::del_tx(
            &nft::Seen {
                total: 1,
                ..marked.clone()
            },
            &anchor,
        )
        .expect("last");
        let empty = nft::Seen {
            mine: Vec::new(),
            anchor: None,
            ..marked.clone()
        };
        assert!(nft::del_tx(&empty, &anchor).is_none());
        golden("masq-nftables-del", &txs(&[some, last]));
    }

    /// The `nat` table of three attachments as iptables-save prints it: two
    /// of `mynet` (`ctr1` kept, `old` not) and one of `other`.
    fn three_attachments() -> Saved {
        let mut text = String::from("*nat\n:POSTROUTING ACCEPT [0:0]\n");
        let mut rules = String::new();
        for (network, cid, ip) in [
            ("mynet", "ctr1", "10.88.0.5"),
            ("mynet", "old", "10.88.0.6"),
            ("other", "old", "10.99.0.6"),
        ] {
            let chain = super::super::chain_name("", network, cid);
            let comment = format!("--comment \"name: \\\"{network}\\\" id: \\\"{cid}\\\"\"");
            text.push_str(&format!(":{chain} - [0:0]\n"));
            rules.push_str(&format!(
                "-A POSTROUTING -s {ip}/32 -m comment {comment} -j {chain}\n\
                 -A {chain} -d {}/16 -m comment {comment} -j ACCEPT\n\
                 -A {chain} ! -d 224.0.0.0/4 -m comment {comment} -j MASQUERADE\n",
                net(&format!("{ip}/16")).trunc().addr()
            ));
        }
        Saved::parse(&format!("{text}{rules}COMMIT\n"))
    }

    #[test]
    fn golden_masq_gc() {
        let kept = |cid: &str| crate::netfilter::Kept {
            container_id: cid.into(),
            ifname: "eth0".into(),
        };
        let keep = [kept("ctr1")];
        golden(
            "masq-iptables-gc",
            &restores(&[(
                Family::V4,
                ipt::gc_batch("mynet", &["ctr1".into()], Family::V4, &three_attachments()),
            )]),
        );
        let existing = [
            rule(1, &nft::comment("mynet", "eth0", "ctr1")),
            rule(2, &nft::comment("mynet", "eth0", "old")),
            rule(3, &nft::comment("mynet", "eth0", "old")),
            rule(4, &nft::comment("other", "eth0", "old")),
        ];
        let chains = [nft_anchor::anchor_name(&nft::instance(
            "mynet", "eth0", "old",
        ))];
        assert!(nft::gc_tx("mynet", &[kept("ctr1"), kept("old")], &existing, &chains).is_none());
        let some = nft::gc_tx("mynet", &keep, &existing, &chains).expect("some");
        let last = nft::gc_tx("mynet", &keep, &existing[1..3], &chains).expect("last");
        golden("masq-nftables-gc", &txs(&[some, last]));
    }
}

mod firewall_cases {
    use super::*;
    use firewall::{IngressPolicy, Plan};
    use firewall::{iptables as ipt, nftables as nft};

    fn plan(policy: IngressPolicy) -> Plan {
        Plan {
            container_id: "ctr1".into(),
            addresses: vec![net("10.88.0.5/16"), net("fd00:88::5/64")],
            admin_chain: "CNI-ADMIN".into(),
            policy,
            bridge: "cni0".into(),
            zone: "trusted".into(),
        }
    }

    #[test]
    fn golden_firewall_iptables_per_policy() {
        for (name, policy) in [
            ("open", IngressPolicy::Open),
            ("same-bridge", IngressPolicy::SameBridge),
            ("isolated", IngressPolicy::Isolated),
        ] {
            let p = plan(policy);
            let batches: Vec<(Family, Batch)> = super::super::by_family(&p.addresses)
                .into_iter()
                .map(|(f, mine)| (f, ipt::add_batch(&p, f, &mine, &Saved::default())))
                .collect();
            golden(
                &format!("firewall-iptables-add-{name}"),
                &restores(&batches),
            );
            let isolate = ipt::isolate_batch(&p, Family::V4, &Saved::default());
            golden(
                &format!("firewall-iptables-isolate-{name}"),
                &restores(&[(Family::V4, isolate)]),
            );
        }
    }

    #[test]
    fn golden_firewall_iptables_del_and_nftables() {
        let p = plan(IngressPolicy::Open);
        let saved = Saved::parse(
            "*filter\n:FORWARD ACCEPT [0:0]\n:CNI-FORWARD - [0:0]\n:CNI-ADMIN - [0:0]\n\
             -A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD\n\
             -A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN\n\
             -A CNI-FORWARD -d 10.88.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n\
             -A CNI-FORWARD -s 10.88.0.5/32 -j ACCEPT\n\
             -A CNI-FORWARD -s 10.88.0.9/32 -j ACCEPT\nCOMMIT\n",
        );
        let v4: Vec<&IpNet> = p.addresses.iter().take(1).collect();
        golden(
            "firewall-iptables-del",
            &restores(&[(Family::V4, ipt::del_batch(Family::V4, &v4, &saved))]),
        );
        golden(
            "firewall-iptables-add-repeat",
            &restores(&[(Family::V4, ipt::add_batch(&p, Family::V4, &v4, &saved))]),
        );
        let anchor = Some(crate::netfilter::nft::ChainInfo { handle: 4, uses: 0 });
        let fresh = nft::Seen::default();
        // The admin jump, the container's anchor and two rules, another's.
        let repeat = nft::Seen {
            forward: true,
            total: 4,
            anchor,
            mine: vec![5, 6],
        };
        golden(
            "firewall-nftables-add",
            &txs(&[nft::add_tx(&p, &fresh), nft::add_tx(&p, &repeat)]),
        );
        let some = nft::del_tx(&p, &repeat, true).expect("some");
        let only = nft::Seen {
            total: 3,
            ..repeat.clone()
        };
        let last = nft::del_tx(&p, &only, true).expect("last");
        let admin_kept = nft::del_tx(&p, &only, false).expect("admin");
        assert!(nft::del_tx(&p, &fresh, true).is_none());
        golden("firewall-nftables-del", &txs(&[some, last, admin_kept]));
    }
}

/// flanneld's rules: flannel's `pkg/trafficmngr/iptables/iptables.go`
/// (masqRules, masqIP6Rules, forwardRules), every rule with its comment,
/// in its order.
mod flannel_cases {
    use super::*;
    use crate::netfilter::flannel::{Plan, ensure_batches, remove_batches};
    use crate::netfilter::iptables::render_all;

    fn plan(network: &str, subnet: &str, random_fully: bool) -> Plan {
        Plan {
            network: net(network),
            subnet: net(subnet),
            masq: true,
            forward: true,
            random_fully,
        }
    }

    /// One restore per family, both tables in it.
    fn per_family(texts: &[(Family, [Batch; 2])]) -> String {
        texts
            .iter()
            .map(|(f, b)| format!("# {}\n{}", label(*f), render_all(b).expect("render")))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The tables after a first run, as iptables-save prints them.
    fn after_first_run() -> (Saved, Saved) {
        let nat = Saved::parse(
            "*nat\n:POSTROUTING ACCEPT [0:0]\n:FLANNEL-POSTRTG - [0:0]\n\
             -A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG\n\
             -A FLANNEL-POSTRTG -m mark --mark 0x4000/0x4000 -m comment --comment \"flanneld masq\" -j RETURN\nCOMMIT\n",
        );
        let filter = Saved::parse(
            "*filter\n:FORWARD DROP [0:0]\n:FLANNEL-FWD - [0:0]\n\
             -A FORWARD -j DOCKER-USER\n\
             -A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD\n\
             -A FLANNEL-FWD -s 10.5.0.0/16 -m comment --comment \"flanneld forward\" -j ACCEPT\nCOMMIT\n",
        );
        (nat, filter)
    }

    #[test]
    fn golden_flannel_iptables() {
        let v4 = plan("10.5.0.0/16", "10.5.72.0/24", true);
        let v6 = plan("fc00::/48", "fc00:0:0:3::/64", true);
        let empty = Saved::default();
        let fresh = |p: &Plan| ensure_batches(p, &empty, &empty).expect("batches");
        golden(
            "flannel-iptables-ensure-fresh",
            &per_family(&[(Family::V4, fresh(&v4)), (Family::V6, fresh(&v6))]),
        );
        let (nat, filter) = after_first_run();
        let mut plain = v4.clone();
        plain.random_fully = false;
        golden(
            "flannel-iptables-ensure-again",
            &per_family(&[(
                Family::V4,
                ensure_batches(&plain, &nat, &filter).expect("batches"),
            )]),
        );
        let mut forward_only = v4.clone();
        forward_only.masq = false;
        golden(
            "flannel-iptables-ensure-no-masq",
            &per_family(&[(
                Family::V4,
                ensure_batches(&forward_only, &nat, &filter).expect("batches"),
            )]),
        );
        golden(
            "flannel-iptables-remove",
            &per_family(&[
                (Family::V4, remove_batches(Family::V4, &nat, &filter)),
                (Family::V6, remove_batches(Family::V6, &empty, &empty)),
            ]),
        );
    }
}
