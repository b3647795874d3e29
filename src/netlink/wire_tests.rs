use super::*;

#[test]
fn attributes_round_trip_with_padding_and_nests() {
    let body = Body::new(&[1, 2, 3, 4])
        .str(3, "eth0")
        .u8(7, 9)
        .nest(18, |b| b.str(1, "veth").nest(2 | NESTED, |b| b.u32(1, 42)))
        .into_bytes();
    assert_eq!(body.len() % 4, 0);
    let got: Vec<(u16, Vec<u8>)> = attrs(&body[4..]).map(|(t, p)| (t, p.to_vec())).collect();
    assert_eq!(got[0], (3, b"eth0\0".to_vec()));
    assert_eq!(got[1], (7, vec![9]));
    let info = find(&body[4..], 18).expect("linkinfo");
    assert_eq!(find(info, 1).map(as_str), Some("veth".into()));
    let data = find(info, 2).expect("data (flag masked)");
    assert_eq!(find(data, 1).and_then(as_u32), Some(42));
    // Truncated input ends the iteration instead of panicking.
    assert_eq!(attrs(&body[4..9]).count(), 0);
    assert_eq!(attrs(&[200, 0, 1, 0]).count(), 0);
}

#[test]
fn frames_parse_back_and_errors_decode() {
    let mut out = Vec::new();
    frame(&mut out, 16, 0x5, 7, &[1, 2, 3]);
    frame(&mut out, NLMSG_DONE, 0x10, 8, &[0, 0, 0, 0]);
    assert_eq!(out.len(), 20 + 20);
    let msgs: Vec<_> = messages(&out).collect();
    assert_eq!(msgs.len(), 2);
    assert_eq!((msgs[0].ty, msgs[0].flags, msgs[0].seq), (16, 5, 7));
    assert_eq!(msgs[0].payload, &[1, 2, 3]);
    assert_eq!((msgs[1].ty, msgs[1].flags), (NLMSG_DONE, NLM_F_DUMP_INTR));
    // A header claiming more than was received ends the iteration.
    assert_eq!(messages(&out[..30]).count(), 1);

    // errno -17 with the request echoed (16-byte header) and an extack text.
    let mut err = (-17i32).to_ne_bytes().to_vec();
    let mut echoed = Vec::new();
    frame(&mut echoed, 16, 1, 7, &[]);
    err.extend_from_slice(&echoed);
    err.extend_from_slice(&Body::default().str(1, "File exists").into_bytes());
    let mut framed = Vec::new();
    frame(&mut framed, NLMSG_ERROR, 0, 7, &err);
    let msg = messages(&framed).next().expect("one message");
    assert_eq!(error_of(&msg), (17, Some("File exists".into())));
    let ack = Received {
        ty: NLMSG_ERROR,
        flags: 0,
        seq: 1,
        payload: &[0u8; 20],
    };
    assert_eq!(error_of(&ack), (0, None));
    let empty = Received {
        ty: NLMSG_ERROR,
        flags: 0,
        seq: 1,
        payload: &[],
    };
    assert_eq!(error_of(&empty), (0, None));
}

fn error_message(code: i32) -> Vec<u8> {
    let mut payload = code.to_ne_bytes().to_vec();
    payload.extend_from_slice(&[0u8; HDR_LEN]);
    let mut out = Vec::new();
    frame(&mut out, NLMSG_ERROR, NLM_F_CAPPED, 1, &payload);
    out
}

#[test]
fn malformed_error_codes_still_read_as_failures() {
    for (code, errno) in [(-17, 17), (i32::MIN, i32::MAX), (5, 5), (0, 0)] {
        let bytes = error_message(code);
        let msg = messages(&bytes).next().expect("message");
        assert_eq!(error_of(&msg).0, errno, "code {code}");
    }
}

#[test]
fn an_attribute_too_long_for_its_u16_length_never_wraps() {
    let body = Body::default().attr(1, &vec![7u8; 70_000]).into_bytes();
    let len = u16::from_ne_bytes([body[0], body[1]]);
    assert_eq!(
        len,
        u16::MAX,
        "saturated, not wrapped to {}",
        70_004 % 65_536
    );
}

/// A reply bigger than the receive buffer is an error, not messages lost.
#[test]
fn a_truncated_reply_is_an_error() {
    std::thread::spawn(|| {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).expect("unshare (root)");
        let mut ch =
            super::super::Channel::open(neli::consts::socket::NlFamily::Route, 64).expect("socket");
        let body = Body::new(&super::super::headers::IfInfoMsg::default().bytes()).into_bytes();
        let mut req = Vec::new();
        frame(
            &mut req, 18,    /* RTM_GETLINK */
            0x301, /* REQUEST|DUMP */
            1, &body,
        );
        ch.send(&req).expect("send");
        let e = ch.recv().expect_err("truncated");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
        assert!(e.to_string().contains("truncated"), "{e}");
    })
    .join()
    .expect("test thread");
}
