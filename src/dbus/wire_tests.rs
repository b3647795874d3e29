//! Golden bytes, laid out by hand from the specification (offsets in the
//! comments count from the message's first byte).

use super::*;

/// A message as a bus sends one to us: `kind`, a reply serial, an error
/// name, and a body of one string or boolean (for the connection's tests).
pub(crate) fn message(
    kind: u8,
    serial: u32,
    reply_serial: Option<u32>,
    error_name: Option<&str>,
    body: Option<&Value>,
) -> Vec<u8> {
    let mut b = Writer { buf: Vec::new() };
    let sig = match body {
        Some(Value::Str(s)) => {
            b.string(s);
            "s"
        }
        Some(Value::Bool(v)) => {
            b.u32(*v as u32);
            "b"
        }
        _ => "",
    };
    let mut w = Writer { buf: Vec::new() };
    w.buf.extend_from_slice(&[b'l', kind, 0, 1]);
    w.u32(b.buf.len() as u32);
    w.u32(serial);
    w.u32(0);
    if let Some(n) = reply_serial {
        w.align(8);
        w.buf.extend_from_slice(&[FIELD_REPLY_SERIAL, 1, b'u', 0]);
        w.u32(n);
    }
    if let Some(name) = error_name {
        w.field(FIELD_ERROR_NAME, "s", name);
    }
    w.field(FIELD_SENDER, "s", "org.freedesktop.DBus");
    if !sig.is_empty() {
        w.field(FIELD_SIGNATURE, "g", sig);
    }
    let fields = (w.buf.len() - FIXED_HEADER) as u32;
    w.buf[12..16].copy_from_slice(&fields.to_le_bytes());
    w.align(8);
    w.buf.extend_from_slice(&b.buf);
    w.buf
}

/// A signal without a body, as the bus forwards one (little-endian).
pub(crate) fn signal(serial: u32, interface: &str, member: &str) -> Vec<u8> {
    let mut w = Writer { buf: Vec::new() };
    w.buf.extend_from_slice(&[b'l', SIGNAL, 1, 1]);
    w.u32(0);
    w.u32(serial);
    w.u32(0);
    w.field(FIELD_PATH, "o", "/org/fedoraproject/FirewallD1");
    w.field(FIELD_INTERFACE, "s", interface);
    w.field(FIELD_MEMBER, "s", member);
    w.field(FIELD_SENDER, "s", ":1.42");
    let fields = (w.buf.len() - FIXED_HEADER) as u32;
    w.buf[12..16].copy_from_slice(&fields.to_le_bytes());
    w.align(8);
    w.buf
}

fn le(n: u32) -> [u8; 4] {
    n.to_le_bytes()
}

#[test]
fn a_method_call_is_marshalled_with_its_alignment_and_padding() {
    let got = method_call(
        1,
        &Call {
            destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus",
            member: "NameHasOwner",
            args: &["a.b"],
        },
    )
    .expect("marshal");
    let mut want: Vec<u8> = Vec::new();
    // 0: little-endian, method call, no flags, version 1, body 8 bytes,
    // serial 1, 127 bytes of header fields.
    want.extend(b"l\x01\x00\x01");
    want.extend(le(8));
    want.extend(le(1));
    want.extend(le(127));
    // 16: PATH, variant "o", the string at 20, ends at 46; pad to 48.
    want.extend(b"\x01\x01o\x00");
    want.extend(le(21));
    want.extend(b"/org/freedesktop/DBus\0");
    want.extend([0; 2]);
    // 48: INTERFACE "s", string at 52, ends at 77; pad to 80.
    want.extend(b"\x02\x01s\x00");
    want.extend(le(20));
    want.extend(b"org.freedesktop.DBus\0");
    want.extend([0; 3]);
    // 80: MEMBER, string at 84, ends at 101; pad to 104.
    want.extend(b"\x03\x01s\x00");
    want.extend(le(12));
    want.extend(b"NameHasOwner\0");
    want.extend([0; 3]);
    // 104: DESTINATION, string at 108, ends at 133; pad to 136.
    want.extend(b"\x06\x01s\x00");
    want.extend(le(20));
    want.extend(b"org.freedesktop.DBus\0");
    want.extend([0; 3]);
    // 136: SIGNATURE "g": the signature "s" at 140, ends at 143 (= 16 + 127);
    // the header is padded to 144, where the body starts.
    want.extend(b"\x08\x01g\x00");
    want.extend(b"\x01s\x00");
    want.extend([0; 1]);
    // 144: body: the string "a.b".
    want.extend(le(3));
    want.extend(b"a.b\0");
    assert_eq!(got, want);
    assert_eq!(got.len(), 152);
}

#[test]
fn a_call_without_arguments_has_no_signature_field_and_an_empty_body() {
    let got = method_call(
        2,
        &Call {
            destination: "org.freedesktop.DBus",
            path: "/",
            interface: "org.freedesktop.DBus",
            member: "Hello",
            args: &[],
        },
    )
    .expect("marshal");
    assert_eq!(&got[4..12], &[0, 0, 0, 0, 2, 0, 0, 0]);
    assert!(got.len().is_multiple_of(8));
    assert!(!got.windows(4).any(|w| w == b"\x08\x01g\x00"));
    // It reads back as a message (a call has no reply serial).
    let msg = parse(&got).expect("parse our own call");
    assert_eq!(
        (msg.kind, msg.serial, msg.reply_serial),
        (METHOD_CALL, 2, None)
    );
    assert_eq!(msg.member.as_deref(), Some("Hello"));
}

#[test]
fn a_big_endian_signal_gives_its_interface_and_member() {
    let be = |n: u32| n.to_be_bytes();
    let mut bytes: Vec<u8> = Vec::new();
    // 0: big-endian, signal, no reply expected, version 1, no body,
    // serial 9, 118 bytes of header fields.
    bytes.extend(b"B\x04\x01\x01");
    bytes.extend(be(0));
    bytes.extend(be(9));
    bytes.extend(be(118));
    // 16: PATH "o", length at 20, string at 24, ends at 54; pad to 56.
    bytes.extend(b"\x01\x01o\x00");
    bytes.extend(be(29));
    bytes.extend(b"/org/fedoraproject/FirewallD1\0");
    bytes.extend([0; 2]);
    // 56: INTERFACE "s", string at 64, ends at 93; pad to 96.
    bytes.extend(b"\x02\x01s\x00");
    bytes.extend(be(28));
    bytes.extend(b"org.fedoraproject.FirewallD1\0");
    bytes.extend([0; 3]);
    // 96: MEMBER "s", string at 104, ends at 113; pad to 120.
    bytes.extend(b"\x03\x01s\x00");
    bytes.extend(be(8));
    bytes.extend(b"Reloaded\0");
    bytes.extend([0; 7]);
    // 120: SENDER "s", string at 128, ends at 134; the header pads to 136.
    bytes.extend(b"\x07\x01s\x00");
    bytes.extend(be(5));
    bytes.extend(b":1.42\0");
    bytes.extend([0; 2]);
    let fixed: [u8; FIXED_HEADER] = bytes[..FIXED_HEADER].try_into().expect("16");
    assert_eq!(message_len(&fixed).expect("len"), 136);
    let msg = parse(&bytes).expect("parse");
    assert_eq!((msg.kind, msg.serial, msg.reply_serial), (SIGNAL, 9, None));
    assert_eq!(
        msg.interface.as_deref(),
        Some("org.fedoraproject.FirewallD1")
    );
    assert_eq!(msg.member.as_deref(), Some("Reloaded"));
    assert_eq!(msg.sender.as_deref(), Some(":1.42"));
    assert!(msg.is_signal("org.fedoraproject.FirewallD1", "Reloaded"));
    assert!(!msg.is_signal("org.fedoraproject.FirewallD1", "Reload"));
    assert!(!msg.is_signal("org.freedesktop.DBus", "Reloaded"));
    assert_eq!(msg.args().expect("no body"), Vec::<Value>::new());
    // Ours, little-endian, reads the same.
    assert_eq!(
        parse(&signal(9, "org.fedoraproject.FirewallD1", "Reloaded")).expect("parse"),
        Message {
            big_endian: false,
            ..msg
        }
    );
}

#[test]
fn a_method_return_is_no_signal_though_it_names_the_member() {
    let mut msg = parse(&message(METHOD_RETURN, 3, Some(1), None, None)).expect("parse");
    msg.interface = Some("org.fedoraproject.FirewallD1".into());
    msg.member = Some("Reloaded".into());
    assert!(!msg.is_signal("org.fedoraproject.FirewallD1", "Reloaded"));
}

#[test]
fn add_match_is_a_call_with_the_rule_as_its_string() {
    let rule = "type='signal',interface='org.fedoraproject.FirewallD1',member='Reloaded'";
    let bytes = method_call(
        5,
        &Call {
            destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus",
            member: "AddMatch",
            args: &[rule],
        },
    )
    .expect("marshal");
    let msg = parse(&bytes).expect("parse");
    assert_eq!(msg.interface.as_deref(), Some("org.freedesktop.DBus"));
    assert_eq!(msg.member.as_deref(), Some("AddMatch"));
    assert_eq!(msg.args().expect("args"), vec![Value::Str(rule.into())]);
}

#[test]
fn what_cannot_be_sent_is_refused_before_sending() {
    fn call<'a>(path: &'a str, args: &'a [&'a str]) -> Call<'a> {
        Call {
            destination: "d",
            path,
            interface: "i",
            member: "m",
            args,
        }
    }
    assert!(method_call(1, &call("/ok", &["a\0b"])).is_err());
    assert!(method_call(1, &call("/ok", &["ab"])).is_ok());
    for path in ["", "rel", "/a/", "/a//b", "/a-b"] {
        assert!(method_call(1, &call(path, &["x"])).is_err(), "{path:?}");
    }
}

/// A method return as dbus-daemon relays it: reply serial, destination,
/// sender, signature "b", body `true`.
fn bool_reply(big: bool) -> Vec<u8> {
    let n = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut m: Vec<u8> = Vec::new();
    // 0: method return, flags NO_REPLY_EXPECTED, body 4, serial 7, fields 63.
    m.push(if big { b'B' } else { b'l' });
    m.extend([2, 1, 1]);
    m.extend(n(4));
    m.extend(n(7));
    m.extend(n(63));
    // 16: REPLY_SERIAL "u" 2, ends at 24.
    m.extend(b"\x05\x01u\x00");
    m.extend(n(2));
    // 24: DESTINATION ":1.5", string at 28, ends at 37; pad to 40.
    m.extend(b"\x06\x01s\x00");
    m.extend(n(4));
    m.extend(b":1.5\0");
    m.extend([0; 3]);
    // 40: SENDER, string at 44, ends at 69; pad to 72.
    m.extend(b"\x07\x01s\x00");
    m.extend(n(20));
    m.extend(b"org.freedesktop.DBus\0");
    m.extend([0; 3]);
    // 72: SIGNATURE "b", ends at 79 = 16 + 63; pad to 80.
    m.extend(b"\x08\x01g\x00\x01b\x00");
    m.extend([0; 1]);
    // 80: body.
    m.extend(n(1));
    m
}

#[test]
fn a_boolean_reply_is_parsed_in_either_byte_order() {
    for big in [false, true] {
        let bytes = bool_reply(big);
        let fixed: [u8; FIXED_HEADER] = bytes[..16].try_into().expect("16 bytes");
        assert_eq!(message_len(&fixed).expect("length"), bytes.len());
        let msg = parse(&bytes).expect("parse");
        assert_eq!(msg.kind, METHOD_RETURN);
        assert_eq!((msg.serial, msg.reply_serial), (7, Some(2)));
        assert_eq!(msg.sender.as_deref(), Some("org.freedesktop.DBus"));
        assert_eq!(msg.signature, "b");
        assert_eq!(msg.args().expect("body"), [Value::Bool(true)]);
    }
}

#[test]
fn an_error_reply_gives_its_name_and_message() {
    let name = "org.fedoraproject.FirewallD1.Exception";
    let text = "ZONE_ALREADY_SET: '10.1.2.3/32' already bound to 'trusted'";
    let mut m: Vec<u8> = Vec::new();
    let body_len = 4 + text.len() + 1;
    // 0: error, flags 1, serial 9, fields 63.
    m.extend(b"l\x03\x01\x01");
    m.extend(le(body_len as u32));
    m.extend(le(9));
    m.extend(le(63));
    // 16: ERROR_NAME, string (38 bytes) at 20, ends at 63; pad to 64.
    m.extend(b"\x04\x01s\x00");
    m.extend(le(name.len() as u32));
    m.extend(name.as_bytes());
    m.extend([0, 0]);
    // 64: REPLY_SERIAL 3, ends at 72.
    m.extend(b"\x05\x01u\x00");
    m.extend(le(3));
    // 72: SIGNATURE "s", ends at 79; pad to 80.
    m.extend(b"\x08\x01g\x00\x01s\x00\x00");
    // 80: the message.
    m.extend(le(text.len() as u32));
    m.extend(text.as_bytes());
    m.push(0);
    let msg = parse(&m).expect("parse");
    assert_eq!(msg.kind, ERROR);
    assert_eq!(msg.reply_serial, Some(3));
    assert_eq!(msg.error_name.as_deref(), Some(name));
    assert_eq!(msg.args().expect("body"), [Value::Str(text.into())]);
}

#[test]
fn containers_are_decoded_with_their_alignment() {
    // "as" of two strings, then a "a{sv}" with one entry of a u32 variant,
    // written by hand after the fixed header and one SIGNATURE field.
    let sig = b"asa{sv}";
    let mut body: Vec<u8> = Vec::new();
    // 0: array length 15 (its content 4..19): "x" (4..10), pad to 12, "yz" (12..19).
    body.extend(le(15));
    body.extend(le(1));
    body.extend(b"x\0");
    body.extend([0; 2]);
    body.extend(le(2));
    body.extend(b"yz\0");
    // 19: pad to 20, dict array length 16 at 20; entries are 8-aligned: 24.
    body.push(0);
    body.extend(le(16));
    // 24: entry: key "k" (24..30), variant signature "u" (30..33), pad to 36, 5 (36..40).
    body.extend(le(1));
    body.extend(b"k\0");
    body.extend(b"\x01u\x00");
    body.extend([0; 3]);
    body.extend(le(5));
    let mut m: Vec<u8> = b"l\x02\x00\x01".to_vec();
    m.extend(le(body.len() as u32));
    m.extend(le(4));
    m.extend(le(4 + sig.len() as u32 + 2));
    m.extend(b"\x08\x01g\x00");
    m.push(sig.len() as u8);
    m.extend(sig);
    m.push(0);
    while !m.len().is_multiple_of(8) {
        m.push(0);
    }
    m.extend(&body);
    let msg = parse(&m).expect("parse");
    assert_eq!(
        msg.args().expect("body"),
        [
            Value::Array(vec![Value::Str("x".into()), Value::Str("yz".into())]),
            Value::Array(vec![Value::DictEntry(
                Box::new(Value::Str("k".into())),
                Box::new(Value::Variant(Box::new(Value::U32(5))))
            )]),
        ]
    );
}

#[test]
fn broken_messages_are_errors_not_panics() {
    let good = bool_reply(false);
    for cut in 0..good.len() {
        assert!(parse(&good[..cut]).is_err(), "cut at {cut}");
    }
    // Every single-byte corruption parses or fails; none panics.
    for at in 0..good.len() {
        for v in [0x00, 0x01, 0x7f, 0xff] {
            let mut bad = good.clone();
            bad[at] = v;
            if let Ok(msg) = parse(&bad) {
                let _ = msg.args();
            }
        }
    }
    let mut not_bool = good.clone();
    let last = not_bool.len() - 4;
    not_bool[last] = 2;
    let msg = parse(&not_bool).expect("header is fine");
    assert!(msg.args().is_err());
    let mut huge = good;
    huge[4..8].copy_from_slice(&le(u32::MAX));
    let fixed: [u8; FIXED_HEADER] = huge[..16].try_into().expect("16 bytes");
    assert!(message_len(&fixed).is_err());
}
