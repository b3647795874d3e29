use super::*;

#[test]
fn endpoint_messages_byte_for_byte() {
    let e = Endpoint {
        id: 0,
        address: "10.1.2.3".parse().expect("ip"),
        flags: MPTCP_PM_ADDR_FLAG_SIGNAL | MPTCP_PM_ADDR_FLAG_BACKUP,
        ifindex: 2,
    };
    #[rustfmt::skip]
    let want: Vec<u8> = vec![
        36, 0, 1, 0x80,             // MPTCP_PM_ATTR_ADDR, nested
        6, 0, 1, 0, 2, 0, 0, 0,     // family AF_INET
        8, 0, 3, 0, 10, 1, 2, 3,    // addr4
        8, 0, 6, 0, 5, 0, 0, 0,     // flags
        8, 0, 7, 0, 2, 0, 0, 0,     // ifindex
    ];
    assert_eq!(endpoint_attrs(&e), want);
    // Read back as the kernel reports it (without the nested flag).
    let mut reply = want.clone();
    reply[3] = 0;
    assert_eq!(parse_endpoint(&reply), Some(e));
    let v6 = Endpoint {
        id: 3,
        address: "fd00::1".parse().expect("ip"),
        flags: MPTCP_PM_ADDR_FLAG_SUBFLOW,
        ifindex: 0,
    };
    let bytes = endpoint_attrs(&v6);
    assert_eq!(&bytes[4..12], &[6, 0, 1, 0, 10, 0, 0, 0]);
    assert_eq!(&bytes[12..20], &[5, 0, 2, 0, 3, 0, 0, 0]);
    assert_eq!(parse_endpoint(&bytes), Some(v6));
}

#[test]
fn limits_message_byte_for_byte() {
    let l = Limits {
        subflows: 2,
        add_addr_accepted: 4,
    };
    assert_eq!(
        limits_attrs(l),
        vec![8, 0, 2, 0, 4, 0, 0, 0, 8, 0, 3, 0, 2, 0, 0, 0]
    );
}

#[test]
fn truncated_replies_are_no_endpoint() {
    assert_eq!(parse_endpoint(&[]), None);
    assert_eq!(parse_endpoint(&[8, 0, 1, 0, 6, 0, 1, 0]), None);
}
