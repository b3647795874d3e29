use super::*;

fn plan(network: &str, subnet: &str) -> Plan {
    Plan {
        network: network.parse().expect("net"),
        subnet: subnet.parse().expect("net"),
        masq: true,
        forward: true,
        random_fully: true,
    }
}

/// Rules a previous run (or Go flanneld) left, as iptables-save prints them.
fn saved_nat(extra_jump: bool) -> Saved {
    let mut text = String::from(
        "*nat\n:POSTROUTING ACCEPT [0:0]\n:FLANNEL-POSTRTG - [0:0]\n\
             -A POSTROUTING -s 10.88.0.5/32 -j CNI-abc\n\
             -A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG\n\
             -A FLANNEL-POSTRTG -s 10.9.0.0/16 -j RETURN\n",
    );
    if extra_jump {
        text.push_str("-A POSTROUTING -j FLANNEL-POSTRTG\n");
    }
    text.push_str("COMMIT\n");
    Saved::parse(&text)
}

/// A second ensure over what the first left keeps the one jump and adds
/// none; a stray second jump (another form) is deleted.
#[test]
fn the_jump_stays_unique() {
    let p = plan("10.5.0.0/16", "10.5.72.0/24");
    let [nat, _] = ensure_batches(&p, &saved_nat(true), &Saved::default()).expect("batches");
    let text = nat.render().expect("render");
    assert!(!text.contains("-A POSTROUTING"), "{text}");
    assert!(
        text.contains("-D POSTROUTING -j FLANNEL-POSTRTG\n"),
        "{text}"
    );
    assert_eq!(text.matches("POSTROUTING").count(), 1, "{text}");
    assert!(!text.contains("CNI-abc"), "{text}");
}

#[test]
fn mixed_families_are_refused() {
    let p = plan("10.5.0.0/16", "fd00::/64");
    assert!(matches!(
        ensure_batches(&p, &Saved::default(), &Saved::default()),
        Err(Error::InvalidConfig(_))
    ));
}

#[test]
fn random_fully_follows_the_iptables_version() {
    assert!(random_fully_supported("iptables v1.8.9 (nf_tables)\n"));
    assert!(random_fully_supported("iptables v1.6.2"));
    assert!(!random_fully_supported("iptables v1.6.1"));
    assert!(!random_fully_supported("iptables v1.4.21"));
    assert!(!random_fully_supported("nonsense"));
}
