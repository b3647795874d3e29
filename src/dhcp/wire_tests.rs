use super::*;

/// Bytes from space-separated hex, `*N` repeating the byte before it N times.
fn hex(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        if let Some(n) = word.strip_prefix('*') {
            let last = *out.last().expect("a byte to repeat");
            let n: usize = n.parse().expect("count");
            out.extend(std::iter::repeat_n(last, n - 1));
        } else {
            out.push(u8::from_str_radix(word, 16).expect("hex byte"));
        }
    }
    out
}

const MAC: [u8; 6] = [0x02, 0x42, 0xac, 0x11, 0x00, 0x02];

fn identity() -> Identity {
    Identity {
        mac: MAC,
        client_id: b"\0c1/net/eth0".to_vec(),
        request: vec![121, 3, 1],
        provide: vec![(code::HOST_NAME, b"pod".to_vec())],
        max_size: 1500,
    }
}

/// The fixed part of a request from MAC: op .. file.
fn header(xid: &str, secs_flags: &str, ciaddr: &str) -> String {
    format!(
        "01 01 06 00 {xid} {secs_flags} {ciaddr} 00 00 00 00 00 00 00 00 00 00 00 00 \
         02 42 ac 11 00 02 00 *10 00 *192"
    )
}

#[test]
fn discover_golden_bytes() {
    let m = identity().discover(0x12345678, 3, true);
    let options = "63 82 53 63 \
        35 01 01 \
        3d 0c 00 63 31 2f 6e 65 74 2f 65 74 68 30 \
        39 02 05 dc \
        0c 03 70 6f 64 \
        37 03 79 03 01 \
        ff";
    let mut want = hex(&format!(
        "{} {options}",
        header("12 34 56 78", "00 03 80 00", "00 00 00 00")
    ));
    assert_eq!(want.len(), 236 + 4 + 32);
    want.resize(300, 0);
    assert_eq!(m.encode(), want);
    assert_eq!(Message::decode(&want), Ok(m));
}

#[test]
fn request_golden_bytes() {
    let id = identity();
    let m = id.request_selecting(
        0xdeadbeef,
        0,
        false,
        Ipv4Addr::new(10, 77, 0, 60),
        Ipv4Addr::new(10, 77, 0, 1),
    );
    let options = "63 82 53 63 \
        35 01 03 \
        3d 0c 00 63 31 2f 6e 65 74 2f 65 74 68 30 \
        32 04 0a 4d 00 3c \
        36 04 0a 4d 00 01 \
        39 02 05 dc \
        0c 03 70 6f 64 \
        37 03 79 03 01 \
        ff";
    let mut want = hex(&format!(
        "{} {options}",
        header("de ad be ef", "00 00 00 00", "00 00 00 00")
    ));
    want.resize(300, 0);
    assert_eq!(m.encode(), want);

    // RENEWING: ciaddr, no 50 and no 54, no broadcast flag.
    let m = id.request_bound(0xdeadbeef, 1, Ipv4Addr::new(10, 77, 0, 60));
    let options = "63 82 53 63 \
        35 01 03 \
        3d 0c 00 63 31 2f 6e 65 74 2f 65 74 68 30 \
        39 02 05 dc \
        0c 03 70 6f 64 \
        37 03 79 03 01 \
        ff";
    let mut want = hex(&format!(
        "{} {options}",
        header("de ad be ef", "00 01 00 00", "0a 4d 00 3c")
    ));
    want.resize(300, 0);
    assert_eq!(m.encode(), want);

    // RELEASE: ciaddr, 54 and the client id only.
    let m = id.release(1, Ipv4Addr::new(10, 77, 0, 60), Ipv4Addr::new(10, 77, 0, 1));
    let options = "63 82 53 63 \
        35 01 07 \
        3d 0c 00 63 31 2f 6e 65 74 2f 65 74 68 30 \
        36 04 0a 4d 00 01 \
        ff";
    let mut want = hex(&format!(
        "{} {options}",
        header("00 00 00 01", "00 00 00 00", "0a 4d 00 3c")
    ));
    want.resize(300, 0);
    assert_eq!(m.encode(), want);
}

#[test]
fn provided_options_replace_ours_but_not_the_type_or_the_request_list() {
    let mut id = identity();
    id.provide = vec![
        (code::CLIENT_ID, b"\x01mine".to_vec()),
        (code::MESSAGE_TYPE, vec![8]),
        (code::PARAMETER_REQUEST_LIST, vec![6]),
    ];
    let m = id.discover(1, 0, false);
    assert_eq!(m.message_type(), Some(MessageType::Discover));
    assert_eq!(m.option(code::CLIENT_ID), Some(b"\x01mine".to_vec()));
    assert_eq!(
        m.option(code::PARAMETER_REQUEST_LIST),
        Some(vec![121, 3, 1])
    );
    id.request.clear();
    let m = id.discover(1, 0, false);
    assert_eq!(m.option(code::PARAMETER_REQUEST_LIST), Some(vec![6]));
    // No request list at all when neither asks for one.
    id.provide.clear();
    assert_eq!(
        id.discover(1, 0, false)
            .option(code::PARAMETER_REQUEST_LIST),
        None
    );
}

/// An OFFER as dnsmasq sends it, written out field by field.
fn offer_bytes() -> Vec<u8> {
    let mut b = hex("02 01 06 00 \
         12 34 56 78 00 00 00 00 \
         00 00 00 00 \
         0a 4d 00 3c \
         0a 4d 00 01 \
         00 00 00 00 \
         02 42 ac 11 00 02 00 *10");
    // sname "srv", file empty.
    b.extend_from_slice(b"srv");
    b.resize(236, 0);
    b.extend(hex("63 82 53 63 \
         35 01 02 \
         36 04 0a 4d 00 01 \
         33 04 00 00 00 78 \
         3a 04 00 00 00 1e \
         3b 04 00 00 00 69 \
         01 04 ff ff ff 00 \
         1c 04 0a 4d 00 ff \
         00 00 \
         03 04 0a 4d 00 01 \
         79 05 00 0a 4d 00 01 \
         63 00 \
         ff 00 00 00"));
    b
}

#[test]
fn decode_an_offer() {
    let m = Message::decode(&offer_bytes()).expect("offer");
    assert_eq!(m.op, BOOTREPLY);
    assert_eq!((m.htype, m.hlen, m.hops), (1, 6, 0));
    assert_eq!(m.xid, 0x12345678);
    assert!(m.is_reply_to(0x12345678, &MAC));
    assert!(!m.is_reply_to(0x12345679, &MAC));
    assert!(!m.is_reply_to(0x12345678, &[2, 0, 0, 0, 0, 1]));
    assert_eq!(m.yiaddr, Ipv4Addr::new(10, 77, 0, 60));
    assert_eq!(m.siaddr, Ipv4Addr::new(10, 77, 0, 1));
    assert_eq!(&m.sname[..4], b"srv\0");
    assert_eq!(m.message_type(), Some(MessageType::Offer));
    assert_eq!(m.server_id(), Some(Ipv4Addr::new(10, 77, 0, 1)));
    assert_eq!(m.option(code::LEASE_TIME), Some(vec![0, 0, 0, 120]));
    assert_eq!(m.option(99), Some(vec![]), "unknown options kept raw");
    let codes: Vec<u8> = m.options.iter().map(|o| o.0).collect();
    assert_eq!(codes, [53, 54, 51, 58, 59, 1, 28, 3, 121, 99]);
    // Encoding gives the same message back (padding aside).
    assert_eq!(Message::decode(&m.encode()), Ok(m));
}

#[test]
fn decode_refuses_malformed_messages() {
    let good = offer_bytes();
    let at_options = 240;
    assert!(Message::decode(&good[..239]).is_err(), "short");
    let mut bad = good.clone();
    bad[236] = 0;
    assert_eq!(
        Message::decode(&bad),
        Err(Malformed("no DHCP magic cookie"))
    );
    // An option whose length runs past the end.
    let mut bad = good[..at_options].to_vec();
    bad.extend_from_slice(&[53, 1, 2, 54, 4, 10, 77]);
    assert_eq!(
        Message::decode(&bad),
        Err(Malformed("option runs past the end"))
    );
    // A code without its length.
    let mut bad = good[..at_options].to_vec();
    bad.extend_from_slice(&[53, 1, 2, 54]);
    assert_eq!(
        Message::decode(&bad),
        Err(Malformed("option without its length"))
    );
    // No END.
    let mut bad = good[..at_options].to_vec();
    bad.extend_from_slice(&[53, 1, 2, 0, 0]);
    assert_eq!(
        Message::decode(&bad),
        Err(Malformed("options end without END"))
    );
    // Only END: no options at all is fine.
    let mut ok = good[..at_options].to_vec();
    ok.push(255);
    assert_eq!(Message::decode(&ok).map(|m| m.options.len()), Ok(0));
}

#[test]
fn long_options_are_split_and_joined() {
    let mut m = Message::request(1, MAC);
    m.options.push((code::MESSAGE_TYPE, vec![1]));
    m.options.push((code::DOMAIN_SEARCH, vec![7; 300]));
    m.options.push((code::HOST_NAME, vec![]));
    let b = m.encode();
    let back = Message::decode(&b).expect("decode");
    assert_eq!(back.options.len(), 4);
    assert_eq!(back.options[1].1.len(), 255);
    assert_eq!(back.options[2].1.len(), 45);
    assert_eq!(back.option(code::DOMAIN_SEARCH), Some(vec![7; 300]));
    assert_eq!(back.option(code::HOST_NAME), Some(vec![]));
}

#[test]
fn set_option_replaces_every_instance() {
    let mut m = Message::request(1, MAC);
    m.options = vec![(3, vec![1]), (4, vec![2]), (3, vec![3])];
    m.set_option(3, vec![9]);
    assert_eq!(m.options, vec![(3, vec![9]), (4, vec![2])]);
    m.set_option(5, vec![]);
    assert_eq!(m.options.len(), 3);
}

#[test]
fn ipv4_udp_framing_round_trip_and_checksums() {
    let payload = identity().discover(7, 0, false).encode();
    let p = ipv4_udp(
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::BROADCAST,
        CLIENT_PORT,
        SERVER_PORT,
        &payload,
    );
    assert_eq!(p.len(), 20 + 8 + 300);
    assert_eq!(
        &p[..20],
        &hex("45 00 01 48 00 00 00 00 40 11 79 a6 00 00 00 00 ff ff ff ff")[..]
    );
    // The UDP checksum over the pseudo header verifies to zero.
    let pseudo = hex("00 00 00 00 ff ff ff ff 00 11 01 34");
    assert_eq!(checksum(&[&pseudo, &p[20..]]), 0);
    let d = parse_ipv4_udp(&p).expect("parse");
    assert_eq!(
        (d.src, d.dst, d.src_port, d.dst_port),
        (Ipv4Addr::UNSPECIFIED, Ipv4Addr::BROADCAST, 68, 67)
    );
    assert_eq!(d.payload, &payload[..]);
    // Link padding after the packet is cut by the IP total length.
    let mut padded = p.clone();
    padded.extend_from_slice(&[0; 20]);
    assert_eq!(parse_ipv4_udp(&padded).map(|d| d.payload.len()), Ok(300));
}

#[test]
fn a_reply_is_found_in_its_packet_only() {
    let offer = offer_bytes();
    let from = Ipv4Addr::new(10, 77, 0, 1);
    let to = Ipv4Addr::new(10, 77, 0, 60);
    let p = ipv4_udp(from, to, SERVER_PORT, CLIENT_PORT, &offer);
    let (src, m) = reply_in_packet(&p, 0x12345678, &MAC).expect("reply");
    assert_eq!(src, from);
    assert_eq!(m.message_type(), Some(MessageType::Offer));
    assert!(reply_in_packet(&p, 1, &MAC).is_none(), "another xid");
    let wrong_port = ipv4_udp(from, to, SERVER_PORT, 69, &offer);
    assert!(reply_in_packet(&wrong_port, 0x12345678, &MAC).is_none());
    let mut bad_sum = p.clone();
    bad_sum[10] ^= 1;
    assert_eq!(
        parse_ipv4_udp(&bad_sum),
        Err(Malformed("IPv4 header checksum"))
    );
    // Any UDP checksum is accepted (offloads leave it partial).
    let mut udp_sum = p.clone();
    udp_sum[26] ^= 0xff;
    assert!(reply_in_packet(&udp_sum, 0x12345678, &MAC).is_some());
    assert!(parse_ipv4_udp(&p[..27]).is_err(), "truncated");
    let mut v6 = p.clone();
    v6[0] = 0x65;
    assert_eq!(parse_ipv4_udp(&v6), Err(Malformed("not IPv4")));
    let mut long_udp = p.clone();
    long_udp[24..26].copy_from_slice(&2000u16.to_be_bytes());
    assert_eq!(parse_ipv4_udp(&long_udp), Err(Malformed("UDP length")));
}
