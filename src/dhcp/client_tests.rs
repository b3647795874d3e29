use super::*;

#[test]
fn backoff_as_the_reference() {
    let mut b = Backoff::new(Duration::from_secs(62));
    let bases: Vec<u64> = (0..10).map(|_| b.base().as_secs()).collect();
    assert_eq!(bases, [2, 2, 2, 2, 4, 8, 16, 32, 62, 62]);
    let mut b = Backoff::new(Duration::from_secs(5));
    let bases: Vec<u64> = (0..7).map(|_| b.base().as_secs()).collect();
    assert_eq!(bases, [2, 2, 2, 2, 4, 5, 5]);
    let mut b = Backoff::new(Duration::from_secs(62));
    for _ in 0..100 {
        let d = b.delay();
        assert!(
            d >= Duration::from_millis(100) && d < Duration::from_secs(64),
            "{d:?}"
        );
    }
    let mut b = Backoff::new(Duration::from_secs(62));
    for _ in 0..4 {
        let d = b.delay();
        assert!(
            d >= Duration::from_secs(1) && d < Duration::from_secs(3),
            "{d:?}"
        );
    }
}

#[test]
fn ready_needs_oper_up_or_carrier_without_state() {
    let up = libc::IFF_UP as u32;
    let carrier = libc::IFF_LOWER_UP as u32;
    let link = |flags, oper_state| Link {
        flags,
        oper_state,
        ..Link::default()
    };
    assert!(ready(&link(up | carrier, OPER_UP)));
    assert!(ready(&link(up | carrier, IF_OPER_UNKNOWN)));
    assert!(!ready(&link(up, IF_OPER_UNKNOWN)));
    // LOWERLAYERDOWN (a veth whose peer is down), DOWN.
    assert!(!ready(&link(up, 7)));
    assert!(!ready(&link(up | carrier, 2)));
    assert!(!ready(&link(carrier, OPER_UP)));
}

#[test]
fn a_renewal_keeps_options_the_ack_leaves_out() {
    let mac = [2, 0, 0, 0, 0, 1];
    let mut ack = Message::request(1, mac);
    ack.op = wire::BOOTREPLY;
    ack.yiaddr = Ipv4Addr::new(10, 0, 0, 5);
    ack.options = vec![
        (wire::code::MESSAGE_TYPE, vec![5]),
        (wire::code::SUBNET_MASK, vec![255, 255, 255, 0]),
        (wire::code::LEASE_TIME, vec![0, 0, 0, 100]),
        (wire::code::RENEWAL_TIME, vec![0, 0, 0, 10]),
        (wire::code::CLASSLESS_ROUTES, vec![0, 10, 0, 0, 1]),
    ];
    let old = Lease::from_ack(&ack, Ipv4Addr::new(10, 0, 0, 1), 0);
    ack.options = vec![
        (wire::code::MESSAGE_TYPE, vec![5]),
        (wire::code::LEASE_TIME, vec![0, 0, 0, 200]),
    ];
    let new = renewed(&old, &ack, Ipv4Addr::new(10, 0, 0, 1));
    assert_eq!(new.lease_secs, 200);
    assert_eq!(new.renew_secs, 100, "58 is not carried over");
    assert_eq!(
        new.options.get(&wire::code::SUBNET_MASK),
        Some(&vec![255, 255, 255, 0])
    );
    assert!(new.options.contains_key(&wire::code::CLASSLESS_ROUTES));
    assert!(!new.options.contains_key(&wire::code::RENEWAL_TIME));
}
