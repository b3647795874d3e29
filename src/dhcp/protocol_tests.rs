use super::*;
use std::net::Ipv4Addr;

fn attachment() -> Attachment {
    Attachment {
        container_id: "ctr-1".into(),
        network: "lan".into(),
        ifname: "eth0".into(),
    }
}

fn request() -> Request {
    Request {
        netns: "/run/netns/a".into(),
        ifname: "eth0".into(),
        client_id: vec![0, b'c', b'/'],
        provide: vec![(12, b"pod".to_vec())],
        request: vec![3, 1, 121],
    }
}

#[test]
fn calls_round_trip_as_one_versioned_line() {
    let calls = [
        Call::Allocate {
            attachment: attachment(),
            request: request(),
        },
        Call::Release {
            attachment: attachment(),
            request: request(),
        },
        Call::Check {
            attachment: attachment(),
            request: request(),
        },
        Call::Gc {
            network: "lan".into(),
            valid: vec![Keep {
                container_id: "ctr-2".into(),
                ifname: "eth0".into(),
            }],
        },
        Call::Status,
    ];
    for call in calls {
        let line = encode_call(&call);
        assert!(
            line.ends_with('\n') && line.matches('\n').count() == 1,
            "{line}"
        );
        assert!(line.starts_with("{\"version\":1,"), "{line}");
        assert!(
            line.contains(&format!("\"op\":\"{}\"", call.op())),
            "{line}"
        );
        assert_eq!(decode_call(line.trim_end().as_bytes()), Ok(call));
    }
}

#[test]
fn another_version_is_refused_naming_both() {
    let e = decode_call(br#"{"version":2,"op":"status"}"#).expect_err("v2");
    assert_eq!(e.kind, Kind::UnsupportedVersion);
    assert!(
        e.message.contains("version 2") && e.message.contains("version 1"),
        "{e}"
    );
    let e = decode_call(br#"{"op":"status"}"#).expect_err("no version");
    assert_eq!(e.kind, Kind::BadCall);
    let e = decode_call(br#"{"version":1,"op":"explode"}"#).expect_err("unknown op");
    assert_eq!(e.kind, Kind::BadCall);
    let e = decode_reply(br#"{"version":7}"#).expect_err("v7 reply");
    assert_eq!(e.kind, Kind::UnsupportedVersion);
    assert!(decode_call(b"not json").is_err());
}

#[test]
fn replies_round_trip_and_unknown_kinds_are_failures() {
    let lease = Lease {
        address: Ipv4Addr::new(10, 77, 0, 100),
        server: Ipv4Addr::new(10, 77, 0, 1),
        acquired: 1_700_000_000,
        lease_secs: 120,
        renew_secs: 60,
        rebind_secs: 105,
        options: [(1, vec![255, 255, 255, 0]), (3, vec![10, 77, 0, 1])]
            .into_iter()
            .collect(),
    };
    for reply in [
        Reply::Done,
        Reply::Lease(Box::new(lease)),
        Reply::Failed(Failure::new(Kind::NoAnswer, "no answer on eth0")),
    ] {
        let line = encode_reply(&reply);
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        assert_eq!(decode_reply(line.trim_end().as_bytes()), Ok(reply));
    }
    let r = decode_reply(br#"{"version":1,"error":{"kind":"fromTheFuture","message":"m"}}"#);
    assert_eq!(r, Ok(Reply::Failed(Failure::new(Kind::Failed, "m"))));
    for (kind, name) in Kind::NAMES {
        assert_eq!(Kind::parse(name), kind);
        assert_eq!(kind.as_str(), name);
    }
}

#[test]
fn lines_are_bounded() {
    let mut r = io::Cursor::new(b"abc\ndef".to_vec());
    assert_eq!(read_line(&mut r, 10).expect("line"), b"abc");
    assert_eq!(read_line(&mut r, 10).expect("last line"), b"def");
    let e = read_line(&mut r, 10).expect_err("eof");
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    let mut r = io::Cursor::new(vec![b'x'; 100]);
    let e = read_line(&mut r, 10).expect_err("too long");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
}

#[test]
fn state_files_are_digests_beside_the_socket() {
    let a = attachment();
    let name = state_file_name(&a);
    assert_eq!(name.len(), 32 + ".json".len());
    assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'));
    // The parts are kept apart: "a/b" + "c" is not "a" + "b/c".
    let shifted = Attachment {
        container_id: "ctr-1lan".into(),
        network: String::new(),
        ifname: "eth0".into(),
    };
    assert_ne!(state_file_name(&shifted), name);
    assert_eq!(
        default_state_dir(Path::new("/run/cni/dhcp.sock")),
        Path::new("/run/cni/dhcp.sock.leases")
    );
}

#[test]
fn an_absent_socket_is_unreachable_and_names_its_path() {
    let path = std::env::temp_dir().join(format!("cni-multi-nosock-{}", std::process::id()));
    let limits = Deadlines {
        connect: Duration::from_millis(100),
        reply: Duration::from_millis(100),
    };
    let e = exchange(&path, &Call::Status, limits).expect_err("no daemon");
    assert!(matches!(e, ExchangeError::Unreachable { .. }), "{e:?}");
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}

#[test]
fn a_go_daemon_answering_http_is_named() {
    let dir = std::env::temp_dir().join(format!("cni-multi-proto-go-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("go.sock");
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let _ = read_line(&mut io::BufReader::new(&stream), MAX_LINE);
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    });
    let limits = Deadlines {
        connect: Duration::from_secs(1),
        reply: Duration::from_secs(5),
    };
    let e = exchange(&path, &Call::Status, limits).expect_err("Go daemon");
    assert!(
        e.to_string().contains("reference's (Go) dhcp daemon"),
        "{e}"
    );
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    server.join().expect("server");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_exchange_with_a_listener_reads_its_reply() {
    let dir = std::env::temp_dir().join(format!("cni-multi-proto-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("d.sock");
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = io::BufReader::new(&stream);
        let call = decode_call(&read_line(&mut reader, MAX_LINE).expect("line"));
        let mut w = &stream;
        let reply = match call {
            Ok(Call::Status) => Reply::Done,
            _ => Reply::Failed(Failure::new(Kind::BadCall, "?")),
        };
        w.write_all(encode_reply(&reply).as_bytes()).expect("reply");
    });
    let limits = Deadlines {
        connect: Duration::from_secs(1),
        reply: Duration::from_secs(5),
    };
    assert_eq!(
        exchange(&path, &Call::Status, limits).expect("exchange"),
        Reply::Done
    );
    server.join().expect("server");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refusal_sent_before_the_call_is_read_is_the_answer() {
    let dir = std::env::temp_dir().join(format!("cni-multi-proto-refused-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("d.sock");
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let refusal = Failure::new(Kind::Busy, "refused");
    let reply = Reply::Failed(refusal.clone());
    let server = std::thread::spawn(move || {
        // Answers and closes without reading, as the daemon refuses.
        let (mut stream, _) = listener.accept().expect("accept");
        stream
            .write_all(encode_reply(&reply).as_bytes())
            .expect("reply");
    });
    // A call larger than the socket's buffer: its sending fails, always.
    let call = Call::Gc {
        network: "lan".into(),
        valid: vec![
            Keep {
                container_id: "c".repeat(200),
                ifname: String::new(),
            };
            5000
        ],
    };
    let limits = Deadlines {
        connect: Duration::from_secs(1),
        reply: Duration::from_secs(5),
    };
    assert_eq!(
        exchange(&path, &call, limits).expect("the refusal"),
        Reply::Failed(refusal)
    );
    server.join().expect("server");
    let _ = std::fs::remove_dir_all(&dir);
}
