use super::*;
use crate::netlink::nfnl::{NLM_F_APPEND, NLM_F_CREATE};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn checked_reads_jumps_and_orphan_pairs() {
    let rule = |comment: &str, iif: &str, jump: &str| nft::DumpedRule {
        handle: 1,
        comment: comment.into(),
        jumps: vec![jump.into()],
        iifname: Some(iif.into()),
        saddr: None,
    };
    let rules = [
        rule("macspoofchk-a-eth0", "veth1", "cni-br-iface-a-eth0"),
        rule("other", "veth2", "elsewhere"),
    ];
    let chains: Vec<String> = [
        "cni-br-iface-a-eth0",
        "cni-br-iface-a-eth0-mac",
        "cni-br-iface-b-net1",
        "cni-br-iface-b-net1-mac",
        "cni-br-iface-c-eth0",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    let got = checked(&rules, &chains);
    let want = |id: &str, iif: Option<&str>| Checked {
        id: id.into(),
        chain: format!("cni-br-iface-{id}"),
        iifname: iif.map(String::from),
    };
    assert_eq!(
        got,
        vec![want("a-eth0", Some("veth1")), want("b-net1", None)]
    );
}

#[test]
fn names_follow_the_reference() {
    let n = Names::of("abc", "eth0").expect("names");
    assert_eq!(n.iface_chain, "cni-br-iface-abc-eth0");
    assert_eq!(n.mac_chain, "cni-br-iface-abc-eth0-mac");
    assert_eq!(n.comment, "macspoofchk-abc-eth0");
    // A 64-hex container ID fits; a kilobyte one cannot be a chain name.
    assert!(Names::of(&"f".repeat(64), "eth0").is_some());
    assert!(Names::of(&"f".repeat(1024), "eth0").is_none());
    let longest = MAX_NAME - "cni-br-iface-".len() - "-mac".len() - "-eth0".len();
    assert!(Names::of(&"f".repeat(longest), "eth0").is_some());
    assert!(Names::of(&"f".repeat(longest + 1), "eth0").is_none());
}

/// The attributes of each message are byte for byte what nft 1.0.6 sends
/// (`nft --debug=mnl -f`, NLM_F flags aside) for the reference's ADD of
/// container `abc`, ifname `eth0`, host veth `veth1234`, MAC 0a:58:0a:01:02:03.
#[test]
fn setup_sends_what_nft_sends() {
    let names = Names::of("abc", "eth0").expect("names");
    // As the reference, which declares everything on every ADD.
    let declared = Found {
        prerouting: false,
        chains: true,
    };
    let tx = setup_tx(
        &names,
        "veth1234",
        [0x0a, 0x58, 0x0a, 0x01, 0x02, 0x03],
        declared,
    );
    let expected: [(u16, u16, &str); 10] = [
        // add table bridge nat
        (0, NLM_F_CREATE, "080001006e6174000800020000000000"),
        // add chain bridge nat PREROUTING { type filter hook prerouting priority -300; policy accept; }
        (
            3,
            NLM_F_CREATE,
            "080001006e6174000f000300505245524f5554494e4700000b00070066696c74657200000800050000000001\
             14000480080001000000000008000200fffffed4",
        ),
        // add chain bridge nat cni-br-iface-abc-eth0
        (
            3,
            NLM_F_CREATE,
            "080001006e6174001a000300636e692d62722d69666163652d6162632d65746830000000",
        ),
        // add chain bridge nat cni-br-iface-abc-eth0-mac
        (
            3,
            NLM_F_CREATE,
            "080001006e6174001e000300636e692d62722d69666163652d6162632d657468302d6d6163000000",
        ),
        // flush chain bridge nat cni-br-iface-abc-eth0
        (
            8,
            0,
            "080001006e6174001a000200636e692d62722d69666163652d6162632d65746830000000",
        ),
        // flush chain bridge nat cni-br-iface-abc-eth0-mac
        (
            8,
            0,
            "080001006e6174001e000200636e692d62722d69666163652d6162632d657468302d6d6163000000",
        ),
        // add rule bridge nat PREROUTING iifname "veth1234" jump cni-br-iface-abc-eth0 comment …
        (
            6,
            NLM_F_CREATE | NLM_F_APPEND,
            "080001006e6174000f000200505245524f5554494e470000ac00048024000180090001006d65746100000000\
             14000280080002000000000608000100000000013800018008000100636d70002c0002800800010000000001\
             08000200000000001800038014000100766574683132333400000000000000004c0001800e000100696d6d65\
             64696174650000003800028008000100000000002c0002802800028008000100fffffffd1a000200636e692d\
             62722d69666163652d6162632d657468300000001b00070000156d616373706f6f6663686b2d6162632d6574\
             68300000",
        ),
        // add rule bridge nat cni-br-iface-abc-eth0 jump cni-br-iface-abc-eth0-mac comment …
        (
            6,
            NLM_F_CREATE | NLM_F_APPEND,
            "080001006e6174001a000200636e692d62722d69666163652d6162632d657468300000005400048050000180\
             0e000100696d6d6564696174650000003c0002800800010000000000300002802c00028008000100fffffffd\
             1e000200636e692d62722d69666163652d6162632d657468302d6d61630000001b00070000156d616373706f\
             6f6663686b2d6162632d657468300000",
        ),
        // add rule bridge nat cni-br-iface-abc-eth0-mac ether saddr 0a:58:0a:01:02:03 return comment …
        (
            6,
            NLM_F_CREATE | NLM_F_APPEND,
            "080001006e6174001e000200636e692d62722d69666163652d6162632d657468302d6d616300000098000480\
             340001800c0001007061796c6f61640024000280080001000000000108000200000000000800030000000006\
             08000400000000063000018008000100636d7000240002800800010000000001080002000000000010000380\
             0a0001000a580a0102030000300001800e000100696d6d6564696174650000001c0002800800010000000000\
             100002800c00028008000100fffffffb1b00070000156d616373706f6f6663686b2d6162632d657468300000",
        ),
        // add rule bridge nat cni-br-iface-abc-eth0-mac drop comment …
        (
            6,
            NLM_F_CREATE | NLM_F_APPEND,
            "080001006e6174001e000200636e692d62722d69666163652d6162632d657468302d6d616300000034000480\
             300001800e000100696d6d6564696174650000001c0002800800010000000000100002800c00028008000100\
             000000001b00070000156d616373706f6f6663686b2d6162632d657468300000",
        ),
    ];
    let got: Vec<(u16, u16, String)> = tx
        .messages()
        .iter()
        .map(|m| {
            assert_eq!(m.family, NFPROTO_BRIDGE);
            (m.kind, m.flags, hex(&m.attrs))
        })
        .collect();
    let got_declared = got.clone();
    assert_eq!(got.len(), expected.len());
    for (i, (g, (kind, flags, attrs))) in got.iter().zip(expected).enumerate() {
        assert_eq!(g, &(kind, flags, attrs.to_string()), "message {i}");
    }
    // A new attachment on a node that has the base chain: its chains are
    // made (exclusively), nothing is declared again or flushed, and the
    // rules are the same.
    let fresh = Found {
        prerouting: true,
        chains: false,
    };
    let tx = setup_tx(
        &names,
        "veth1234",
        [0x0a, 0x58, 0x0a, 0x01, 0x02, 0x03],
        fresh,
    );
    let got: Vec<(u16, u16, String)> = tx
        .messages()
        .iter()
        .map(|m| (m.kind, m.flags, hex(&m.attrs)))
        .collect();
    let exclusive = NLM_F_CREATE | crate::netlink::nfnl::NLM_F_EXCL;
    let kinds: Vec<(u16, u16)> = got.iter().map(|(k, f, _)| (*k, *f)).collect();
    assert_eq!(kinds[..2], [(3, exclusive), (3, exclusive)]);
    assert_eq!(got[2..], got_declared[6..]);
}

fn rule(handle: u64, comment: &str, jump: &str, iifname: &str) -> nft::DumpedRule {
    nft::DumpedRule {
        handle,
        comment: comment.into(),
        jumps: vec![jump.into()],
        iifname: Some(iifname.into()),
        saddr: None,
    }
}

#[test]
fn teardown_takes_rules_by_comment_or_jump_then_both_chains() {
    let mine = Names::of("abc", "eth0").expect("names");
    let rules = [
        rule(4, "macspoofchk-abc-eth0", "cni-br-iface-abc-eth0", "veth1"),
        rule(
            5,
            "macspoofchk-other-eth0",
            "cni-br-iface-other-eth0",
            "veth2",
        ),
        rule(6, "", "cni-br-iface-abc-eth0", "veth1"),
    ];
    let chains: Vec<String> = [
        "PREROUTING",
        "cni-br-iface-abc-eth0",
        "cni-br-iface-abc-eth0-mac",
        "cni-br-iface-other-eth0",
    ]
    .map(String::from)
    .to_vec();
    let mut tx = Tx::new();
    removal(&mut tx, &[mine], &rules, &chains);
    let what: Vec<&str> = tx.messages().iter().map(|m| m.what.as_str()).collect();
    assert_eq!(
        what,
        [
            "delete rule 4 of nat PREROUTING",
            "delete rule 6 of nat PREROUTING",
            "flush chain nat cni-br-iface-abc-eth0",
            "flush chain nat cni-br-iface-abc-eth0-mac",
            "delete chain nat cni-br-iface-abc-eth0",
            "delete chain nat cni-br-iface-abc-eth0-mac",
        ]
    );
    // Already gone: nothing to send.
    let mut tx = Tx::new();
    let gone = Names::of("abc", "eth0").expect("names");
    removal(&mut tx, &[gone], &[], &["PREROUTING".to_string()]);
    assert!(tx.is_empty());
}
