use super::*;
use crate::netfilter::Family;

#[test]
fn comments_are_userdata_tlvs() {
    assert_eq!(udata_comment("ab"), vec![0, 3, b'a', b'b', 0]);
    let long = "x".repeat(400);
    assert_eq!(udata_comment(&long).len(), 257);
}

/// An expression as `nft --debug=netlink` prints it, decoded from our bytes.
fn render(e: &Expr) -> String {
    let d = e.data.clone().into_bytes();
    let u = |ty| {
        wire::find(&d, ty)
            .and_then(|p| p.get(..4))
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")))
            .expect("attribute")
    };
    let words = |ty| {
        let value = wire::find(&d, ty)
            .and_then(|n| wire::find(n, NFTA_DATA_VALUE))
            .expect("data value");
        value
            .chunks(4)
            .map(|c| {
                let mut w = [0u8; 4];
                w[..c.len()].copy_from_slice(c);
                format!("0x{:08x}", u32::from_ne_bytes(w))
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    match e.name {
        "payload" => format!(
            "[ payload load {}b @ {} header + {} => reg {} ]",
            u(4),
            if u(2) == 1 { "network" } else { "transport" },
            u(3),
            u(1)
        ),
        "cmp" => format!(
            "[ cmp {} reg {} {} ]",
            if u(2) == 0 { "eq" } else { "neq" },
            u(1),
            words(3)
        ),
        "bitwise" => format!(
            "[ bitwise reg {} = ( reg {} & {} ) ^ {} ]",
            u(2),
            u(1),
            words(4),
            words(5)
        ),
        "meta" => {
            let key = match u(2) {
                3 => "mark",
                6 => "iifname",
                7 => "oifname",
                16 => "l4proto",
                k => panic!("meta key {k}"),
            };
            format!("[ meta load {key} => reg {} ]", u(1))
        }
        other => panic!("unexpected expression {other}"),
    }
}

fn encoded(conditions: &[&str], family: Family) -> Vec<String> {
    let conditions: Vec<String> = conditions.iter().map(|c| c.to_string()).collect();
    parse_conditions(&conditions, family)
        .expect("valid conditions")
        .iter()
        .map(render)
        .collect()
}

/// The expected lines are `nft --debug=netlink add rule …` output (nft
/// 1.0.x); where nft narrows a byte-aligned prefix to a shorter load, ours
/// loads the whole address under a mask, which matches the same packets
/// (and `nft list` prints back as the same prefix).
#[test]
fn conditions_encode_as_nft_does() {
    let golden: [(&[&str], Family, &[&str]); 11] = [
        (
            &["ip saddr 10.0.0.0/8"],
            Family::V4,
            &[
                "[ payload load 4b @ network header + 12 => reg 1 ]",
                "[ bitwise reg 1 = ( reg 1 & 0x000000ff ) ^ 0x00000000 ]",
                "[ cmp eq reg 1 0x0000000a ]",
            ],
        ),
        (
            &["ip", "saddr", "!=", "10.16.0.0/12"],
            Family::V4,
            &[
                "[ payload load 4b @ network header + 12 => reg 1 ]",
                "[ bitwise reg 1 = ( reg 1 & 0x0000f0ff ) ^ 0x00000000 ]",
                "[ cmp neq reg 1 0x0000100a ]",
            ],
        ),
        (
            &["ip daddr != 1.2.3.4"],
            Family::V4,
            &[
                "[ payload load 4b @ network header + 16 => reg 1 ]",
                "[ cmp neq reg 1 0x04030201 ]",
            ],
        ),
        (
            &["iifname \"eth0\""],
            Family::V4,
            &[
                "[ meta load iifname => reg 1 ]",
                "[ cmp eq reg 1 0x30687465 0x00000000 0x00000000 0x00000000 ]",
            ],
        ),
        (
            &["oifname != \"br*\""],
            Family::V4,
            &[
                "[ meta load oifname => reg 1 ]",
                "[ cmp neq reg 1 0x00007262 ]",
            ],
        ),
        (
            &["meta iifname eth1"],
            Family::V6,
            &[
                "[ meta load iifname => reg 1 ]",
                "[ cmp eq reg 1 0x31687465 0x00000000 0x00000000 0x00000000 ]",
            ],
        ),
        (
            &["meta l4proto tcp"],
            Family::V4,
            &[
                "[ meta load l4proto => reg 1 ]",
                "[ cmp eq reg 1 0x00000006 ]",
            ],
        ),
        (
            &["meta", "l4proto", "!=", "17"],
            Family::V6,
            &[
                "[ meta load l4proto => reg 1 ]",
                "[ cmp neq reg 1 0x00000011 ]",
            ],
        ),
        (
            &["tcp dport 8080"],
            Family::V4,
            &[
                "[ meta load l4proto => reg 1 ]",
                "[ cmp eq reg 1 0x00000006 ]",
                "[ payload load 2b @ transport header + 2 => reg 1 ]",
                "[ cmp eq reg 1 0x0000901f ]",
            ],
        ),
        (
            &["meta mark 0x10"],
            Family::V4,
            &["[ meta load mark => reg 1 ]", "[ cmp eq reg 1 0x00000010 ]"],
        ),
        (
            &["ip6 daddr != ::1"],
            Family::V6,
            &[
                "[ payload load 16b @ network header + 24 => reg 1 ]",
                "[ cmp neq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ]",
            ],
        ),
    ];
    for (conditions, family, expected) in golden {
        assert_eq!(encoded(conditions, family), expected, "{conditions:?}");
    }
    // Several matches in one list, split or not, are one conjunction.
    let joined = encoded(&["ip saddr 10.0.0.0/8 iifname \"eth0\""], Family::V4);
    let split = encoded(
        &["ip", "saddr", "10.0.0.0/8", "iifname", "\"eth0\""],
        Family::V4,
    );
    assert_eq!(joined, split);
    assert_eq!(joined.len(), 5);
    // The exact bytes of one expression: name, then the nested data.
    let bytes = {
        let e = meta_load(NFT_META_L4PROTO);
        Body::default()
            .str(NFTA_EXPR_NAME, e.name)
            .attr(NFTA_EXPR_DATA | NESTED, &e.data.into_bytes())
            .into_bytes()
    };
    assert_eq!(
        bytes,
        [
            9, 0, 1, 0, b'm', b'e', b't', b'a', 0, 0, 0, 0, // NFTA_EXPR_NAME "meta"
            20, 0, 2, 0x80, // NFTA_EXPR_DATA, nested
            8, 0, 2, 0, 0, 0, 0, 16, // NFTA_META_KEY l4proto (nft sends the key first)
            8, 0, 1, 0, 0, 0, 0, 1, // NFTA_META_DREG reg 1
        ]
    );
}

#[test]
fn conditions_nft_cannot_take_from_us_are_refused_naming_the_token() {
    for (conditions, family, token) in [
        (
            vec!["ip saddr 10.0.0.0/8 counter"],
            Family::V4,
            "\"counter\"",
        ),
        (vec!["ip6 saddr fd00::/8"], Family::V4, "\"ip6\""),
        (vec!["ip saddr 10.0.0.1"], Family::V6, "\"ip\""),
        (vec!["ip saddr fd00::1"], Family::V4, "\"fd00::1\""),
        (vec!["ip", "protocol", "tcp"], Family::V4, "\"protocol\""),
        (vec!["ip saddr { 10.0.0.1, 10.0.0.2 }"], Family::V4, "\"{\""),
        (
            vec!["iifname \"a-very-long-interface\""],
            Family::V4,
            "\"a-very-long-interface\"",
        ),
        (vec!["meta skuid 0"], Family::V4, "\"skuid\""),
        (vec!["meta l4proto bogus"], Family::V4, "\"bogus\""),
        (vec!["tcp dport 70000"], Family::V4, "\"70000\""),
        (vec!["ip saddr"], Family::V4, "end of condition"),
        (vec!["drop"], Family::V4, "\"drop\""),
    ] {
        let conditions: Vec<String> = conditions.iter().map(|c| c.to_string()).collect();
        let err = parse_conditions(&conditions, family)
            .err()
            .unwrap_or_else(|| panic!("{conditions:?} was accepted"));
        assert!(
            matches!(err, crate::netfilter::Error::InvalidConfig(_)),
            "{err:?}"
        );
        assert!(err.to_string().contains(token), "{conditions:?}: {err}");
    }
    let bad = vec!["iifname \"eth0".to_string()];
    assert!(parse_conditions(&bad, Family::V4).is_err());
    let bad = vec!["ip saddr 10.0.0.1\n".to_string()];
    assert!(parse_conditions(&bad, Family::V4).is_err());
}

#[test]
fn a_rules_iifname_reads_back() {
    let mut exprs = match_ether_saddr([2, 0, 0, 0, 0, 1]);
    exprs.extend(match_iifname("veth1234"));
    exprs.push(jump("somewhere"));
    let mut tx = Tx::new();
    tx.rule(NFPROTO_BRIDGE, "nat", "PREROUTING", &exprs, Some("c"));
    let attrs = &tx.messages()[0].attrs;
    assert_eq!(iifname_match(attrs).as_deref(), Some("veth1234"));
    assert_eq!(verdict_chains(attrs), ["somewhere"]);
    tx.rule(NFPROTO_BRIDGE, "nat", "x", &[drop()], None);
    assert_eq!(iifname_match(&tx.messages()[1].attrs), None);
}

#[test]
fn a_rules_host_source_reads_back() {
    let mut tx = Tx::new();
    for (net, v6) in [("10.22.0.5/32", false), ("fd00::5/128", true)] {
        let net: IpNet = net.parse().expect("net");
        let mut exprs = match_addr(Field::Saddr, net, true);
        exprs.push(jump("CNI-x"));
        let family = if v6 { NFPROTO_IPV6 } else { NFPROTO_IPV4 };
        tx.rule(family, "nat", "POSTROUTING", &exprs, Some("c"));
    }
    // Not a host source: a destination, a network, an inequality.
    for (field, net, equal) in [
        (Field::Daddr, "10.22.0.5/32", true),
        (Field::Saddr, "10.22.0.0/16", true),
        (Field::Saddr, "10.22.0.5/32", false),
    ] {
        let exprs = match_addr(field, net.parse().expect("net"), equal);
        tx.rule(NFPROTO_IPV4, "nat", "POSTROUTING", &exprs, None);
    }
    let got: Vec<Option<IpAddr>> = tx
        .messages()
        .iter()
        .map(|m| saddr_match(&m.attrs))
        .collect();
    assert_eq!(
        got,
        [
            Some("10.22.0.5".parse().expect("ip")),
            Some("fd00::5".parse().expect("ip")),
            None,
            None,
            None,
        ]
    );
}

/// iptables-nft's `-m comment`: an xtables match with a 256-byte info.
#[test]
fn an_xt_comment_match_reads_back() {
    let comment = "name: \"p1\" id: \"c1\"";
    let mut info = comment.as_bytes().to_vec();
    info.resize(256, 0);
    let xt = |name: &str| {
        expr(
            "match",
            Body::default()
                .str(1, name)
                .attr(2, &0u32.to_be_bytes())
                .attr(3, &info),
        )
    };
    let mut tx = Tx::new();
    tx.rule(
        NFPROTO_IPV4,
        "nat",
        "POSTROUTING",
        &[xt("comment"), jump("CNI-x")],
        None,
    );
    tx.rule(
        NFPROTO_IPV4,
        "nat",
        "POSTROUTING",
        &[xt("mark"), jump("CNI-x")],
        None,
    );
    let got: Vec<Option<String>> = tx.messages().iter().map(|m| xt_comment(&m.attrs)).collect();
    assert_eq!(got, [Some(comment.to_string()), None]);
}

#[test]
fn network_matches_use_a_mask() {
    let exprs = match_addr(Field::Daddr, "10.1.0.0/16".parse().expect("net"), false);
    let names: Vec<&str> = exprs.iter().map(|e| e.name).collect();
    assert_eq!(names, ["payload", "bitwise", "cmp"]);
    let exprs = match_addr(Field::Saddr, "10.1.2.3/32".parse().expect("net"), true);
    assert_eq!(exprs.len(), 2);
}
