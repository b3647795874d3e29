//! Pure parsing, and the client against in-process fake servers on the
//! loopback (ephemeral ports): broken, hostile and slow replies.

use super::http::{self, Body, Chunk, Framing, MAX_MESSAGE, parse_head};
use super::transport::Endpoint;
use super::websocket::{parse_frame, ws_frame};
use super::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::{self, JoinHandle};

#[test]
fn prefix_end_raises_the_last_byte_below_0xff() {
    assert_eq!(
        prefix_end(b"/coreos.com/network/subnets/"),
        b"/coreos.com/network/subnets0"
    );
    assert_eq!(prefix_end(b"a\xff"), b"b");
    assert_eq!(prefix_end(b"a\xfe\xff\xff"), b"a\xff");
    assert_eq!(prefix_end(b"\xff\xff"), b"\0");
    assert_eq!(prefix_end(b""), b"\0");
    assert_eq!(wire::prefix_bounds(b""), (vec![0], vec![0]));
    let body = wire::range_prefix(b"a\xff");
    assert_eq!(body["key"], "Yf8=");
    assert_eq!(body["range_end"], "Yg==");
}

#[test]
fn int64_comes_as_strings_or_numbers_and_zero_fields_are_left_out() {
    let r: wire::Reply = serde_json::from_str(
        r#"{"header":{"cluster_id":"1","revision":"9"},"kvs":[{"key":"L2E=","create_revision":"2",
        "mod_revision":9,"version":"3","value":"MQ==","lease":"7587869361394573326"},
        {"key":"L2I="}],"count":"2"}"#,
    )
    .expect("range reply");
    assert_eq!(r.header.revision, 9);
    let kvs: Vec<KeyValue> = r.kvs.into_iter().map(KeyValue::from).collect();
    assert_eq!(
        kvs[0],
        KeyValue {
            key: b"/a".to_vec(),
            value: b"1".to_vec(),
            create_revision: 2,
            mod_revision: 9,
            version: 3,
            // Above 2^53: an f64 would have rounded it.
            lease: 7587869361394573326,
        }
    );
    assert_eq!(kvs[1].value, b"");
    assert_eq!((kvs[1].version, kvs[1].lease), (0, 0));

    let none: wire::Reply = serde_json::from_str(r#"{"header":{"revision":"4"}}"#).expect("empty");
    assert!(none.kvs.is_empty());
    let txn: wire::Reply = serde_json::from_str(r#"{"header":{}}"#).expect("failed txn");
    assert!(!txn.succeeded);
    let gone: wire::Reply =
        parse_stream("e", br#"{"result":{"header":{},"ID":"5"}}"#).expect("keepalive");
    assert_eq!(gone.ttl, 0);

    for bad in [
        r#"{"header":{"revision":"99999999999999999999"}}"#,
        r#"{"header":{"revision":1.5}}"#,
    ] {
        assert!(serde_json::from_str::<wire::Reply>(bad).is_err(), "{bad}");
    }
    let bad_base64 = r#"{"kvs":[{"key":"L2E"}]}"#;
    assert!(serde_json::from_str::<wire::Reply>(bad_base64).is_err());
}

#[test]
fn requests_write_bytes_as_base64_and_int64_as_strings() {
    let txn = wire::put_if(b"/k", b"v", 7587869361394573326, "VERSION", 0);
    assert_eq!(txn["compare"][0]["version"], "0");
    assert_eq!(txn["compare"][0]["target"], "VERSION");
    assert_eq!(
        txn["success"][0]["request_put"]["lease"],
        "7587869361394573326"
    );
    assert_eq!(txn["success"][0]["request_put"]["value"], "dg==");
    let mod_txn = wire::put_if(b"/k", b"v", 0, "MOD", 12);
    assert_eq!(mod_txn["compare"][0]["mod_revision"], "12");
    assert!(mod_txn["success"][0]["request_put"].get("lease").is_none());
}

fn watch_msg(text: &str) -> Result<WatchMsg> {
    let (conn, _server) = loopback_conn();
    watch::decode(&conn, text.as_bytes())
}

#[test]
fn watch_messages_as_etcd_3_4_writes_them() {
    let h = r#""header":{"revision":"12"}"#;
    assert_eq!(
        watch_msg(&format!(r#"{{"result":{{{h},"created":true}}}}"#)).ok(),
        Some(WatchMsg::Created)
    );
    let events = watch_msg(&format!(
        r#"{{"result":{{{h},"events":[{{"kv":{{"key":"L2E=","mod_revision":"11","value":"eA=="}}}},
        {{"type":"DELETE","kv":{{"key":"L2E=","mod_revision":"12"}}}}]}}}}"#
    ))
    .expect("events");
    let WatchMsg::Events {
        revision: 12,
        events,
    } = events
    else {
        panic!("{events:?}")
    };
    assert_eq!(events[0].kind, EventKind::Put);
    assert_eq!(events[0].kv.value, b"x");
    assert_eq!(events[1].kind, EventKind::Delete);
    assert_eq!(events[1].kv.mod_revision, 12);
    let progress = format!(r#"{{"result":{{{h},"watch_id":"-1"}}}}"#);
    assert_eq!(
        watch_msg(&progress).ok(),
        Some(WatchMsg::Progress { revision: 12 })
    );
    let compacted = format!(r#"{{"result":{{{h},"canceled":true,"compact_revision":"7"}}}}"#);
    assert_eq!(
        watch_msg(&compacted).ok(),
        Some(WatchMsg::Compacted {
            compact_revision: 7
        })
    );
    let denied =
        format!(r#"{{"result":{{{h},"created":true,"canceled":true,"cancel_reason":"no"}}}}"#);
    assert_eq!(
        watch_msg(&denied).ok(),
        Some(WatchMsg::Canceled {
            reason: "no".into()
        })
    );
    let err = watch_msg(r#"{"error":{"grpc_code":14,"http_code":503,"message":"no leader"}}"#);
    assert!(err.is_err_and(|e| e.is_unavailable()));
    for bad in [
        "{}",
        "[1]",
        r#"{"result":{"events":[{"type":"MOVE"}]}}"#,
        "\u{0}",
    ] {
        assert!(watch_msg(bad).is_err(), "{bad}");
    }
}

/// Feeds `wire` to a body decoder in pieces of `step` bytes.
fn decode(wire: &[u8], step: usize) -> std::result::Result<Vec<u8>, String> {
    let mut body = Body::new(Framing::Chunked(Chunk::Size));
    let mut raw = Vec::new();
    for piece in wire.chunks(step) {
        raw.extend_from_slice(piece);
        body.advance(&mut raw).map_err(|e| e.0)?;
    }
    if !body.done || !raw.is_empty() {
        return Err(format!("done {} with {} bytes left", body.done, raw.len()));
    }
    Ok(body.data)
}

#[test]
fn chunked_bodies_decode_whatever_the_pieces_they_arrive_in() {
    let wire = b"5;name=v\r\nhello\r\n7\r\n, world\r\n0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n";
    for step in 1..wire.len() {
        assert_eq!(
            decode(wire, step).as_deref(),
            Ok(&b"hello, world"[..]),
            "step {step}"
        );
    }
    for bad in [
        &b"x\r\n"[..],
        b"5\r\nhelloXX",
        b"\r\n",
        b"100000000\r\n",
        b"1000001\r\n",
    ] {
        assert!(
            decode(bad, 1).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let endless_size = vec![b'0'; 70 << 10];
    assert!(decode(&endless_size, 4096).is_err());
}

#[test]
fn reply_heads_and_their_bounds() {
    let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX: y").expect("head");
    assert_eq!((h.status, h.framing), (200, Framing::Length(12)));
    let h = parse_head(b"HTTP/1.1 400 Bad Request\r\ntransfer-encoding: Chunked").expect("head");
    assert_eq!(h.framing, Framing::Chunked(Chunk::Size));
    assert_eq!(
        parse_head(b"HTTP/1.1 101 Switching").expect("101").framing,
        Framing::None
    );
    assert_eq!(
        parse_head(b"HTTP/1.0 200 OK").expect("close").framing,
        Framing::Close
    );
    let too_big = format!("HTTP/1.1 200 OK\r\nContent-Length: {}", MAX_MESSAGE + 1);
    for bad in [
        too_big.as_str(),
        "SSH-2.0-OpenSSH",
        "HTTP/1.1 2000 OK",
        "HTTP/1.1 200 OK\r\nno colon",
    ] {
        assert!(parse_head(bad.as_bytes()).is_err(), "{bad}");
    }
}

#[test]
fn websocket_frames_round_trip_and_bounds() {
    let payload = vec![b'x'; 300];
    let frame = ws_frame(1, &payload);
    for cut in 0..frame.len() {
        assert!(parse_frame(&frame[..cut]).expect("partial").is_none());
    }
    let (got, used) = parse_frame(&frame).expect("frame").expect("whole");
    assert_eq!((got.fin, got.opcode, used), (true, 1, frame.len()));
    assert_eq!(got.payload, payload);

    let mut huge = vec![0x82, 127];
    huge.extend_from_slice(&(u64::MAX).to_be_bytes());
    assert!(parse_frame(&huge).is_err());
    let long_ping = [&[0x89, 126, 0, 200][..], &[0; 200]].concat();
    assert!(parse_frame(&long_ping).is_err());
    assert!(parse_frame(&[0xc1, 0]).is_err(), "a reserved bit");
    assert!(parse_frame(&[0x83, 0]).is_err(), "opcode 3");
}

#[test]
fn endpoints_parse_and_bad_configs_are_refused() {
    let ep = Endpoint::parse("https://[fd00::1]:2380/").expect("v6");
    assert_eq!((ep.host.as_str(), ep.port, ep.tls), ("fd00::1", 2380, true));
    let ep = Endpoint::parse("http://etcd").expect("default port");
    assert_eq!((ep.port, ep.tls), (2379, false));
    for bad in [
        "127.0.0.1:2379",
        "ftp://x",
        "http://",
        "http://a:99999",
        "http://u@h:1",
    ] {
        assert!(Endpoint::parse(bad).is_err(), "{bad}");
    }
    let config = |f: fn(&mut Config)| {
        let mut c = Config::default();
        f(&mut c);
        Client::new(&c).err().map(|e| e.to_string())
    };
    assert!(config(|c| c.endpoints.clear()).is_some());
    assert!(config(|c| c.timeout = Duration::ZERO).is_some());
    let half = config(|c| {
        c.endpoints = vec!["https://127.0.0.1:2379".into()];
        c.cert_file = Some("/nonexistent".into());
    });
    assert!(half.is_some_and(|e| e.contains("key file")));
    let missing_ca = config(|c| {
        c.endpoints = vec!["https://127.0.0.1:2379".into()];
        c.ca_file = Some("/nonexistent/ca.pem".into());
    });
    assert!(missing_ca.is_some_and(|e| e.contains("/nonexistent/ca.pem")));
    // A CA file alone with http:// endpoints: plain HTTP, the file unread.
    assert!(config(|c| c.ca_file = Some("/nonexistent/ca.pem".into())).is_none());
}

// ---- fake servers ----

/// A connection to a loopback listener, and the accepted end.
fn loopback_conn() -> (http::Conn, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let ep = Endpoint::parse(&url).expect("endpoint");
    let conn = http::Conn::open(&ep, None, Duration::from_secs(2)).expect("connect");
    (conn, listener.accept().expect("accept").0)
}

/// Reads one request (head, and the body Content-Length announces).
fn read_request(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return String::from_utf8_lossy(&buf).into_owned();
            }
        }
        match s.read(&mut b) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).into_owned(),
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    }
}

type Script = Box<dyn FnOnce(&mut TcpStream) + Send>;

/// A server that runs one script per connection, in order; the requests it saw.
fn fake(scripts: Vec<Script>) -> (String, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let server = thread::spawn(move || {
        let mut seen = Vec::new();
        for script in scripts {
            let Ok((mut s, _)) = listener.accept() else {
                break;
            };
            seen.push(read_request(&mut s));
            script(&mut s);
        }
        seen
    });
    (url, server)
}

fn reply(text: impl Into<String>) -> Script {
    let text = text.into();
    Box::new(move |s| {
        let _ = s.write_all(text.as_bytes());
    })
}

fn http_reply(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn client(endpoints: &[&str], timeout_ms: u64) -> Client {
    Client::new(&Config {
        endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
        timeout: Duration::from_millis(timeout_ms),
        username: None,
        ..Config::default()
    })
    .expect("client")
}

const RANGE_OK: &str = r#"{"header":{"revision":"3"},"kvs":[{"key":"L2E=","value":"MQ=="}]}"#;

/// A port nothing listens on.
fn dead_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}", l.local_addr().expect("addr"))
}

#[test]
fn fails_over_past_a_dead_endpoint_and_a_503_and_sticks_to_the_one_that_answers() {
    let unavailable = r#"{"error":"etcdserver: no leader","code":14}"#;
    let (busy, _s1) = fake(vec![reply(http_reply(
        "503 Service Unavailable",
        unavailable,
    ))]);
    let ok = || reply(http_reply("200 OK", RANGE_OK));
    let (good, seen) = fake(vec![ok(), ok()]);
    let dead = dead_port();
    let c = client(&[&dead, &busy, &good], 2000);
    let (kv, rev) = c.range("/a").expect("range");
    assert_eq!((kv.map(|k| k.value), rev), (Some(b"1".to_vec()), 3));
    assert_eq!(c.endpoint(), good);
    c.range("/a")
        .expect("second range, straight to the good one");
    let seen = seen.join().expect("server");
    assert!(
        seen[0].starts_with("POST /v3/kv/range HTTP/1.1\r\n"),
        "{}",
        seen[0]
    );
    assert!(seen[0].ends_with(r#"{"key":"L2E="}"#), "{}", seen[0]);

    let all_dead = client(&[&dead_port(), &dead_port()], 500).range("/a");
    let e = all_dead.expect_err("nothing listens");
    assert!(e.is_unavailable(), "{e}");
    assert!(matches!(&e, Error::Unavailable(v) if v.len() == 2), "{e}");
}

#[test]
fn an_error_reply_keeps_etcds_code_and_message() {
    let body = r#"{"error":"etcdserver: mvcc: required revision has been compacted","code":11}"#;
    let compacted = format!(
        "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n\
         0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n",
        body.len()
    );
    let (url, _s) = fake(vec![reply(compacted)]);
    let e = client(&[&url], 2000).range("/a").expect_err("400");
    assert!(
        matches!(
            &e,
            Error::Status {
                status: 400,
                code: 11,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.is_compacted() && !e.is_unavailable());
    assert!(e.to_string().contains(&url), "{e}");
}

#[test]
fn oversized_endless_and_garbage_replies_end_in_errors() {
    let endless: Script = Box::new(|s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let chunk = [&b"100000\r\n"[..], &[b'x'; 1 << 20], b"\r\n"].concat();
        for _ in 0..20 {
            if s.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let (url, _s) = fake(vec![
        endless,
        reply("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n"),
        reply("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"kvs\":"),
        reply("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}"),
        reply("\u{0}\u{ff}garbage\r\n\r\n"),
    ]);
    // Streaming 16 MiB takes seconds under TCG: the limit, not the timeout,
    // must end the first call.
    let c = client(&[&url], 60_000);
    for what in ["16 MiB", "Content-Length", "JSON", "truncated", "garbage"] {
        let e = c.range("/a").expect_err(what);
        assert!(matches!(e, Error::Protocol { .. }), "{what}: {e:?}");
    }
}

#[test]
fn a_silent_or_dribbling_server_cannot_stretch_a_call_past_its_timeout() {
    let silent: Script = Box::new(|_| thread::sleep(Duration::from_secs(3)));
    let dribble: Script = Box::new(|s| {
        for b in b"HTTP/1.1 200 OK\r\nContent-Length: 9999\r\n\r\n"
            .iter()
            .cycle()
            .take(60)
        {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
    });
    for (what, script) in [("silent", silent), ("dribbling", dribble)] {
        let (url, _s) = fake(vec![script]);
        let start = Instant::now();
        let e = client(&[&url], 400).range("/a").expect_err(what);
        assert!(
            start.elapsed() < Duration::from_millis(1500),
            "{what}: {:?}",
            start.elapsed()
        );
        assert!(
            matches!(&e, Error::Io { .. } | Error::Protocol { .. }),
            "{what}: {e:?}"
        );
    }
}

#[test]
fn a_token_that_would_inject_a_header_is_refused_unsent() {
    let token = r#"{"token":"t\r\nX-Injected: yes"}"#;
    let (url, seen) = fake(vec![reply(http_reply("200 OK", token))]);
    let c = Client::new(&Config {
        endpoints: vec![url],
        username: Some("root".into()),
        password: Some("pw".into()),
        timeout: Duration::from_secs(2),
        ..Config::default()
    })
    .expect("client");
    let e = c.range("/a").expect_err("bad token");
    assert!(
        matches!(&e, Error::Protocol { what, .. } if what.contains("token")),
        "{e:?}"
    );
    let seen = seen.join().expect("server");
    assert_eq!(seen.len(), 1, "only the authentication was sent");
    assert!(
        seen[0].contains(r#"{"name":"root","password":"pw"}"#),
        "{}",
        seen[0]
    );
}

#[test]
fn a_websocket_watch_keeps_a_message_cut_by_a_timeout_and_answers_pings() {
    let created = r#"{"result":{"header":{"revision":"5"},"created":true}}"#;
    let events = r#"{"result":{"header":{"revision":"6"},"events":[{"kv":{"key":"L2E=","mod_revision":"6"}}]}}"#;
    let (url, seen) = fake(vec![Box::new(move |s| {
        let _ = s.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
        let mut b = [0u8; 4096];
        let n = s.read(&mut b).unwrap_or(0);
        let create = parse_frame(&b[..n]).ok().flatten().map(|(f, _)| f.payload);
        let unmasked =
            |op: u8, fin: bool, p: &[u8]| [&[(fin as u8) << 7 | op, p.len() as u8][..], p].concat();
        let (a, z) = events.as_bytes().split_at(40);
        let _ = s.write_all(
            &[
                unmasked(1, true, created.as_bytes()),
                unmasked(9, true, b"hi"),
            ]
            .concat(),
        );
        let _ = s.write_all(&unmasked(1, false, a)[..30]);
        thread::sleep(Duration::from_millis(400));
        let _ = s.write_all(&[&unmasked(1, false, a)[30..], &unmasked(0, true, z)].concat());
        let n = s.read(&mut b).unwrap_or(0);
        let pong = parse_frame(&b[..n])
            .ok()
            .flatten()
            .map(|(f, _)| (f.opcode, f.payload));
        assert_eq!(pong, Some((10, b"hi".to_vec())));
        let _ = s.write_all(&[0x88, 0]);
        assert!(create.is_some_and(|c| c.starts_with(br#"{"create_request":{"#)));
    })]);
    let c = client(&[&url], 2000);
    let mut w = c.watch("/a", 5).expect("watch");
    assert_eq!(w.next(Duration::from_secs(1)).ok(), Some(WatchMsg::Created));
    assert_eq!(
        w.next(Duration::from_millis(100)).ok(),
        Some(WatchMsg::Timeout)
    );
    let WatchMsg::Events {
        revision: 6,
        events,
    } = w.next(Duration::from_secs(2)).expect("events")
    else {
        panic!("no events")
    };
    assert_eq!(events[0].kv.key, b"/a");
    assert!(
        w.next(Duration::from_secs(2)).is_err(),
        "a close frame ends the watch"
    );
    let seen = seen.join().expect("server");
    assert!(
        seen[0].starts_with("GET /v3/watch HTTP/1.1\r\n") && seen[0].contains("Upgrade: websocket")
    );
}
