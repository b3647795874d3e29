use super::*;
use crate::netfilter::portmap::Mapping;

fn plan() -> Plan {
    Plan {
        network: "net".into(),
        container_id: "ctr".into(),
        mappings: vec![
            Mapping {
                host_port: 8080,
                container_port: 80,
                protocol: "tcp".into(),
                host_ip: None,
            },
            Mapping {
                host_port: 53,
                container_port: 53,
                protocol: "udp".into(),
                host_ip: None,
            },
            Mapping {
                host_port: 9090,
                container_port: 90,
                protocol: "tcp".into(),
                host_ip: Some("192.0.2.1".parse().expect("ip")),
            },
            Mapping {
                host_port: 7070,
                container_port: 70,
                protocol: "tcp".into(),
                host_ip: Some("fd00::1".parse().expect("ip")),
            },
        ],
        snat: true,
        masq_all: false,
        mark_bit: 13,
        external_mark_chain: None,
        conditions_v4: vec!["-s".into(), "10.0.0.0/8".into()],
        conditions_v6: vec![],
        targets: vec![],
    }
}

#[test]
fn rules_follow_the_reference() {
    let p = plan();
    let target = Target {
        address: "10.22.0.5/16".parse().expect("net"),
    };
    let rules: Vec<String> = dnat_rules(&p, Family::V4, &target)
        .iter()
        .map(|r| r.join(" "))
        .collect();
    assert_eq!(
        rules,
        [
            "-p tcp --dport 8080 -s 10.22.0.5/16 -j CNI-HOSTPORT-SETMARK",
            "-p tcp --dport 8080 -s 127.0.0.1 -j CNI-HOSTPORT-SETMARK",
            "-p tcp --dport 8080 -j DNAT --to-destination 10.22.0.5:80",
            "-p udp --dport 53 -s 10.22.0.5/16 -j CNI-HOSTPORT-SETMARK",
            "-p udp --dport 53 -s 127.0.0.1 -j CNI-HOSTPORT-SETMARK",
            "-p udp --dport 53 -j DNAT --to-destination 10.22.0.5:53",
            "-p tcp --dport 9090 -d 192.0.2.1 -s 10.22.0.5/16 -j CNI-HOSTPORT-SETMARK",
            "-p tcp --dport 9090 -d 192.0.2.1 -s 127.0.0.1 -j CNI-HOSTPORT-SETMARK",
            "-p tcp --dport 9090 -d 192.0.2.1 -j DNAT --to-destination 10.22.0.5:90",
        ]
    );
    let chain = p.dnat_chain();
    let entries: Vec<String> = entry_rules(&p, Family::V4)
        .iter()
        .map(|r| r.join(" "))
        .collect();
    assert_eq!(
        entries,
        [
            // 7070 (host IP fd00::1) too: the reference groups every mapping.
            format!(
                "-m comment --comment dnat name: \"net\" id: \"ctr\" -m multiport -p tcp --destination-ports 8080,9090,7070 -s 10.0.0.0/8 -j {chain}"
            ),
            format!(
                "-m comment --comment dnat name: \"net\" id: \"ctr\" -m multiport -p udp --destination-ports 53 -s 10.0.0.0/8 -j {chain}"
            ),
        ]
    );
    let v6 = Target {
        address: "fd00::5/64".parse().expect("net"),
    };
    let rules: Vec<String> = dnat_rules(&p, Family::V6, &v6)
        .iter()
        .map(|r| r.join(" "))
        .collect();
    assert!(
        rules.contains(
            &"-p tcp --dport 7070 -d fd00::1 -j DNAT --to-destination [fd00::5]:70".to_string()
        ),
        "{rules:?}"
    );
    assert!(
        !rules
            .iter()
            .any(|r| r.contains("127.0.0.1") || r.contains("9090"))
    );
    // The v6 table's entry rules name the same ports, 9090 (host IP
    // 192.0.2.1) included, without the v4 conditions.
    let entries: Vec<String> = entry_rules(&p, Family::V6)
        .iter()
        .map(|r| r.join(" "))
        .collect();
    assert_eq!(
        entries,
        [
            format!(
                "-m comment --comment dnat name: \"net\" id: \"ctr\" -m multiport -p tcp --destination-ports 8080,9090,7070 -j {chain}"
            ),
            format!(
                "-m comment --comment dnat name: \"net\" id: \"ctr\" -m multiport -p udp --destination-ports 53 -j {chain}"
            ),
        ]
    );
    assert_eq!(p.mark(), "0x2000/0x2000");
}

#[test]
fn long_ports_lists_and_comments_are_split_and_cut() {
    let mut p = plan();
    p.mappings = (1..=20)
        .map(|i| Mapping {
            host_port: 1000 + i,
            container_port: 80,
            protocol: "tcp".into(),
            host_ip: None,
        })
        .collect();
    assert_eq!(entry_rules(&p, Family::V4).len(), 2);
    p.container_id = "x".repeat(300);
    assert_eq!(p.dnat_comment().len(), 256);
    assert!(p.dnat_comment().ends_with("..."));
}

#[test]
fn container_ids_are_read_back_from_saved_comments() {
    let spec = "-p tcp -m comment --comment \"dnat name: \\\"net\\\" id: \\\"abc\\\"\" -m multiport --dports 80 -j CNI-DN-x";
    assert_eq!(
        comment_container(spec, "dnat name: \"net\" id: "),
        Some("abc".into())
    );
    assert_eq!(comment_container(spec, "dnat name: \"other\" id: "), None);
}

/// GC finds the chains of long IDs, whose comments are cut, by the chain
/// their entry rules jump to: a kept container's stays, the others go.
#[test]
fn gc_takes_the_chains_of_long_ids_whose_comments_are_cut() {
    let mut text = String::from("*nat\n");
    let (kept, gone) = ("k".repeat(300), format!("{}x", "k".repeat(299)));
    for (id, ip) in [(&kept, "10.22.0.5/16"), (&gone, "10.22.0.6/16")] {
        let mut p = plan();
        p.container_id = id.clone();
        let target = Target {
            address: ip.parse().expect("net"),
        };
        let b = add_batch(&p, Family::V4, &target, &Saved::default())
            .render()
            .expect("render");
        text.extend(
            b.lines()
                .filter(|l| l.starts_with("-A") || l.starts_with(':'))
                .map(|l| format!("{l}\n")),
        );
    }
    let (dn_kept, dn_gone) = (
        chain_name("DN-", "net", &kept),
        chain_name("DN-", "net", &gone),
    );
    // As we cut them, and as iptables-nft prints them (cut again, to 255 bytes).
    for text in [text.clone(), text.replace("...\"", "..\"")] {
        let saved = Saved::parse(&text);
        let batch = gc_batch("net", std::slice::from_ref(&kept), Family::V4, &saved)
            .render()
            .expect("render");
        assert!(batch.contains(&format!("-X {dn_gone}")), "{batch}");
        assert!(!batch.contains(&dn_kept), "{batch}");
    }
    let saved = Saved::parse(&text);
    // Another network's cut comments are not this GC's.
    let other = gc_batch("other", &[], Family::V4, &saved)
        .render()
        .expect("render");
    assert!(!other.contains("CNI-DN-"), "{other}");
}

/// The reader names each attachment's chain with its owner and targets.
#[test]
fn mapped_reads_owners_and_targets() {
    let mut text = String::from("*nat\n");
    let mut other = plan();
    other.network = "other".into();
    other.container_id = "old".into();
    for (p, ip) in [(plan(), "10.22.0.5/16"), (other, "10.23.0.6/16")] {
        let target = Target {
            address: ip.parse().expect("net"),
        };
        let b = add_batch(&p, Family::V4, &target, &Saved::default())
            .render()
            .expect("render");
        text.extend(
            b.lines()
                .filter(|l| l.starts_with("-A") || l.starts_with(':'))
                .map(|l| format!("{l}\n")),
        );
    }
    let got = mapped(&Saved::parse(&text));
    assert_eq!(got.len(), 2, "{got:?}\n{text}");
    assert_eq!(
        got[0],
        Mapped {
            network: "net".into(),
            container_id: "ctr".into(),
            chain: chain_name("DN-", "net", "ctr"),
            targets: vec!["10.22.0.5".parse().expect("ip")],
        }
    );
    assert_eq!(got[1].container_id, "old");
    assert_eq!(got[1].chain, chain_name("DN-", "other", "old"));
    assert_eq!(
        got[1].targets,
        vec!["10.23.0.6".parse::<IpAddr>().expect("ip")]
    );
    assert_eq!(
        destination_ip("-p tcp -j DNAT --to-destination [fd00::5]:70"),
        Some("fd00::5".parse().expect("ip"))
    );
}
