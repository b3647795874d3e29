use super::*;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;
use std::path::PathBuf;

#[test]
fn bus_addresses_give_their_sockets_in_order() {
    let path = |p: &str| Ok(Endpoint::Path(PathBuf::from(p)));
    assert_eq!(
        endpoints("unix:path=/run/dbus/system_bus_socket"),
        [path("/run/dbus/system_bus_socket")]
    );
    assert_eq!(
        endpoints("unix:guid=abc,path=/tmp/a%20b;unix:abstract=/x%2cy,guid=1;"),
        [path("/tmp/a b"), Ok(Endpoint::Abstract(b"/x,y".to_vec()))]
    );
    assert!(endpoints("").is_empty());
    let unusable = |a: &str| {
        let all = endpoints(a);
        assert_eq!(all.len(), 1, "{a}: {all:?}");
        all.into_iter()
            .next()
            .and_then(|e| e.err())
            .map(|u| u.to_string())
            .unwrap_or_default()
    };
    for (address, says) in [
        ("unix:path=/bad%zz", "bad %-escape in path"),
        ("unix:path=/a,path=/b", "path given twice"),
        ("unix:path=/a,abstract=b", "both path and abstract"),
        ("unix:abstract=", "no path or abstract"),
        ("unix:tmpdir=/tmp", "no path or abstract"),
        ("unix:path", "is not key=value"),
        ("tcp:host=x,port=1", "transport \"tcp\" is not supported"),
        ("/run/dbus/system_bus_socket", "names no transport"),
    ] {
        assert!(
            unusable(address).contains(says),
            "{address}: {}",
            unusable(address)
        );
    }
}

#[test]
fn a_missing_socket_is_unreachable_and_says_where() {
    let e = Conn::open("unix:path=/nonexistent/cni-multi-bus", TIMEOUT)
        .err()
        .expect("no bus there");
    assert!(e.is_unreachable(), "{e:?}");
    assert!(e.to_string().contains("/nonexistent/cni-multi-bus"), "{e}");
    assert!(std::error::Error::source(&e).is_some());
    let name = format!("unix:abstract=cni-multi-nobody-{}", std::process::id());
    let e = Conn::open(&name, TIMEOUT).err().expect("nobody listens");
    assert!(e.is_unreachable(), "{e:?}");
    assert!(e.to_string().contains(&name), "{e}");
}

/// An address this client cannot use might be the bus: not "unreachable",
/// and the error says why, with what the usable entries gave.
#[test]
fn an_unusable_address_is_an_error_not_an_absent_bus() {
    for address in ["tcp:host=localhost,port=1", "", ";", "unix:tmpdir=/tmp"] {
        let e = Conn::open(address, TIMEOUT).err().expect("unusable");
        assert!(
            matches!(e, Error::Address { .. }) && !e.is_unreachable(),
            "{e:?}"
        );
    }
    let e = Conn::open("unix:path=/nonexistent/x;tcp:host=h,port=1", TIMEOUT)
        .err()
        .expect("unusable");
    assert!(!e.is_unreachable(), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("\"tcp\" is not supported") && text.contains("/nonexistent/x"),
        "{text}"
    );
}

/// The list is tried in order: a missing socket first, then an abstract
/// one that answers.
#[test]
fn an_address_list_connects_to_the_first_socket_that_answers() {
    let name = format!("cni-multi-dbus-abstract-{}", std::process::id());
    let server = fake_bus_on(
        std::os::unix::net::UnixListener::bind_addr(
            &SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract name"),
        )
        .expect("bind abstract"),
        Vec::new(),
        |serial| {
            wire::tests::message(
                wire::METHOD_RETURN,
                4,
                Some(serial),
                None,
                Some(&Value::Bool(true)),
            )
        },
    );
    let address = format!("unix:path=/nonexistent/cni-multi-bus;unix:abstract={name},guid=00");
    let mut conn = Conn::open(&address, TIMEOUT).expect("the abstract socket");
    assert!(conn.name_has_owner("org.example.Name").expect("answer"));
    server.join().expect("server");
}

/// A bus of our own in a thread: accepts EXTERNAL, answers Hello, then
/// sends `before` and the answer to the second call.
fn fake_bus(
    before: Vec<Vec<u8>>,
    answer: fn(u32) -> Vec<u8>,
) -> (PathBuf, std::thread::JoinHandle<Vec<u8>>) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "cni-multi-dbus-fake-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("bus");
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let inner = fake_bus_on(listener, before, answer);
    let server = std::thread::spawn(move || {
        let seen = inner.join().expect("fake bus");
        let _ = std::fs::remove_dir_all(&dir);
        seen
    });
    (path, server)
}

/// The fake bus of `fake_bus` on a listener of the caller's.
fn fake_bus_on(
    listener: std::os::unix::net::UnixListener,
    before: Vec<Vec<u8>>,
    answer: fn(u32) -> Vec<u8>,
) -> std::thread::JoinHandle<Vec<u8>> {
    use wire::tests::message;
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !seen.ends_with(b"BEGIN\r\n") {
            s.read_exact(&mut byte).expect("auth bytes");
            seen.push(byte[0]);
            if seen.ends_with(b"\r\n") && !seen.ends_with(b"BEGIN\r\n") {
                s.write_all(b"OK 0123456789abcdef0123456789abcdef\r\n")
                    .expect("ok");
            }
        }
        let read_call = |s: &mut UnixStream| {
            let mut fixed = [0u8; wire::FIXED_HEADER];
            s.read_exact(&mut fixed).expect("header");
            let mut rest = vec![0u8; wire::message_len(&fixed).expect("len") - fixed.len()];
            s.read_exact(&mut rest).expect("rest");
            let mut all = fixed.to_vec();
            all.extend(rest);
            all
        };
        let hello = read_call(&mut s);
        let serial = wire::parse(&hello).expect("hello").serial;
        let name = Value::Str(":1.7".into());
        s.write_all(&message(
            wire::METHOD_RETURN,
            1,
            Some(serial),
            None,
            Some(&name),
        ))
        .expect("hello reply");
        let call = read_call(&mut s);
        for m in before {
            s.write_all(&m).expect("other message");
        }
        s.write_all(&answer(wire::parse(&call).expect("call").serial))
            .expect("answer");
        seen
    })
}

#[test]
fn the_reply_is_found_by_its_serial_past_signals_and_other_replies() {
    use wire::tests::message;
    let signal = message(4, 2, None, None, Some(&Value::Str(":1.7".into())));
    let other = message(
        wire::METHOD_RETURN,
        3,
        Some(99),
        None,
        Some(&Value::Bool(false)),
    );
    let (path, server) = fake_bus(vec![signal, other], |serial| {
        message(
            wire::METHOD_RETURN,
            4,
            Some(serial),
            None,
            Some(&Value::Bool(true)),
        )
    });
    let mut conn = Conn::open_path(&path, TIMEOUT).expect("connect");
    assert!(conn.name_has_owner("org.example.Name").expect("answer"));
    let auth = server.join().expect("server");
    // EXTERNAL with our uid, hex of its decimal digits.
    let uid = nix::unistd::geteuid().as_raw().to_string();
    let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(auth.starts_with(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes()));
}

#[test]
fn an_error_reply_keeps_its_name_and_message() {
    let (path, server) = fake_bus(Vec::new(), |serial| {
        wire::tests::message(
            wire::ERROR,
            4,
            Some(serial),
            Some("org.fedoraproject.FirewallD1.Exception"),
            Some(&Value::Str("INVALID_ZONE: nosuch".into())),
        )
    });
    let mut conn = Conn::open_path(&path, TIMEOUT).expect("connect");
    let e = conn.name_has_owner("x").expect_err("error reply");
    assert!(
        e.is_remote("org.fedoraproject.FirewallD1.Exception"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "INVALID_ZONE: nosuch");
    server.join().expect("server");
}

#[test]
fn a_reply_of_another_type_is_an_error() {
    let (path, server) = fake_bus(Vec::new(), |serial| {
        wire::tests::message(
            wire::METHOD_RETURN,
            4,
            Some(serial),
            None,
            Some(&Value::Str("yes".into())),
        )
    });
    let mut conn = Conn::open_path(&path, TIMEOUT).expect("connect");
    let e = conn.name_has_owner("x").expect_err("a string is no bool");
    assert!(matches!(e, Error::UnexpectedReply { .. }), "{e:?}");
    server.join().expect("server");
}

/// A peer that accepts the connection and never answers: the client gives
/// up at its deadline.
#[test]
fn a_silent_bus_times_out() {
    let dir = std::env::temp_dir().join(format!("cni-multi-dbus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("silent");
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let start = Instant::now();
    let e = Conn::open_path(&path, Duration::from_millis(200))
        .err()
        .expect("no answer");
    assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
    drop(listener);
    let _ = std::fs::remove_dir_all(&dir);
}

/// After AddMatch, the awaited signals come in order past other signals and
/// replies; the bus closing is told apart from a signal.
#[test]
fn signals_are_awaited_past_other_messages_until_the_bus_goes() {
    const FW: &str = "org.fedoraproject.FirewallD1";
    let (path, server) = fake_bus(Vec::new(), |serial| {
        use wire::tests::{message, signal};
        let mut out = message(wire::METHOD_RETURN, 4, Some(serial), None, None);
        out.extend(signal(5, FW, "PanicModeEnabled"));
        out.extend(signal(6, "org.freedesktop.DBus", "Reloaded"));
        out.extend(message(
            wire::METHOD_RETURN,
            7,
            Some(99),
            None,
            Some(&Value::Bool(true)),
        ));
        out.extend(signal(8, FW, "Reloaded"));
        out.extend(signal(9, FW, "Reloaded"));
        out
    });
    let mut conn = Conn::open_path(&path, TIMEOUT).expect("connect");
    conn.add_match(&format!("type='signal',interface='{FW}',member='Reloaded'"))
        .expect("AddMatch");
    let first = conn.next_signal(FW, "Reloaded").expect("read");
    assert_eq!(first.map(|m| m.serial), Some(8));
    let second = conn.next_signal(FW, "Reloaded").expect("read");
    assert_eq!(second.map(|m| m.serial), Some(9));
    server.join().expect("server");
    assert!(
        conn.next_signal(FW, "Reloaded").expect("closed").is_none(),
        "the bus went away"
    );
}

#[test]
fn a_refused_match_rule_is_an_error() {
    let (path, server) = fake_bus(Vec::new(), |serial| {
        wire::tests::message(
            wire::ERROR,
            4,
            Some(serial),
            Some("org.freedesktop.DBus.Error.MatchRuleInvalid"),
            Some(&Value::Str("bad rule".into())),
        )
    });
    let mut conn = Conn::open_path(&path, TIMEOUT).expect("connect");
    let e = conn.add_match("type='nonsense'").expect_err("refused");
    assert!(
        e.is_remote("org.freedesktop.DBus.Error.MatchRuleInvalid"),
        "{e:?}"
    );
    server.join().expect("server");
}
