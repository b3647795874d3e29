//! The etcd client against a real single-member etcd (Debian's etcd-server),
//! started by each test in its own network namespace (loopback only, ports
//! 2379/2380 there), its data and certificates in a temporary directory.

use crate::harness;

use cni_multi::etcd::{Client, Config, Error, EventKind, WatchMsg};
use harness::{TempDir, enter_test_host, run_in, skip};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const URL: &str = "http://127.0.0.1:2379";
const TLS_URL: &str = "https://127.0.0.1:2379";

/// A CA, a server certificate for 127.0.0.1 and a client certificate, made
/// with openssl; and a second CA that signed nothing here.
struct Pki {
    dir: TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = TempDir::new("etcd-pki");
        let d = dir.0.display().to_string();
        let script = format!(
            r#"set -e; cd {d}
            key() {{ openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1.key 2>/dev/null; }}
            for ca in ca other-ca; do
                key $ca
                openssl req -x509 -new -key $ca.key -out $ca.pem -days 2 -subj /CN=$ca \
                    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
            done
            printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
            printf 'extendedKeyUsage=clientAuth\n' >client.ext
            for leaf in server client; do
                key $leaf
                openssl req -new -key $leaf.key -out $leaf.csr -subj /CN=$leaf
                openssl x509 -req -in $leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
                    -out $leaf.pem -days 2 -extfile $leaf.ext 2>/dev/null
            done"#
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.0.join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

/// etcd in the test's namespace; killed and its directory removed on drop.
struct Etcd {
    child: Child,
    dir: TempDir,
    url: &'static str,
    ctl_tls: Vec<String>,
}

impl Etcd {
    /// Enters a fresh namespace with `lo` up, starts etcd and waits until
    /// it answers. None (after a SKIP) when etcd is not installed.
    fn start(test: &str, extra: &[&str], pki: Option<&Pki>) -> Option<Etcd> {
        for tool in ["etcd", "etcdctl", "openssl"] {
            if Command::new(tool).arg("--version").output().is_err() {
                skip(
                    test,
                    &format!("{tool} is not installed (tests/install-deps.sh)"),
                );
                return None;
            }
        }
        enter_test_host();
        run_in(None, "ip", &["link", "set", "lo", "up"]);
        let dir = TempDir::new("etcd");
        let url = if pki.is_some() { TLS_URL } else { URL };
        let mut args: Vec<String> = [
            "--name=test",
            "--listen-client-urls",
            url,
            "--advertise-client-urls",
            url,
            "--listen-peer-urls=http://127.0.0.1:2380",
            "--initial-advertise-peer-urls=http://127.0.0.1:2380",
            "--initial-cluster=test=http://127.0.0.1:2380",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--data-dir={}", dir.0.join("data").display()));
        let mut ctl_tls = Vec::new();
        if let Some(p) = pki {
            args.push(format!("--cert-file={}", p.arg("server.pem")));
            args.push(format!("--key-file={}", p.arg("server.key")));
            args.push(format!("--trusted-ca-file={}", p.arg("ca.pem")));
            args.push("--client-cert-auth".into());
            ctl_tls = vec![
                format!("--cacert={}", p.arg("ca.pem")),
                format!("--cert={}", p.arg("client.pem")),
                format!("--key={}", p.arg("client.key")),
            ];
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let log = std::fs::File::create(dir.0.join("log")).expect("etcd log");
        let child = Command::new("etcd")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn etcd");
        let etcd = Etcd {
            child,
            dir,
            url,
            ctl_tls,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !etcd.ctl_ok(&["endpoint", "health"]) {
            assert!(
                Instant::now() < deadline,
                "etcd did not start: {}",
                etcd.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(etcd)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("log")).unwrap_or_default()
    }

    fn ctl_output(&self, args: &[&str]) -> std::process::Output {
        Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.url))
            .args(&self.ctl_tls)
            .args(args)
            .output()
            .expect("run etcdctl")
    }

    fn ctl_ok(&self, args: &[&str]) -> bool {
        self.ctl_output(args).status.success()
    }

    fn ctl(&self, args: &[&str]) {
        let out = self.ctl_output(args);
        assert!(
            out.status.success(),
            "etcdctl {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config(endpoints: &[&str]) -> Config {
    Config {
        endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
        timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

fn client(endpoints: &[&str]) -> Client {
    Client::new(&config(endpoints)).expect("client")
}

/// Messages until one that is not Created/Progress, or `wait` passes.
fn next_events(w: &mut cni_multi::etcd::Watch, wait: Duration) -> WatchMsg {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match w.next(left).expect("watch message") {
            WatchMsg::Created | WatchMsg::Progress { .. } if !left.is_zero() => {}
            msg => return msg,
        }
    }
}

#[test]
fn keys_put_range_prefix_create_if_absent_conditional_put_and_delete() {
    let Some(_etcd) = Etcd::start("etcd keys", &[], None) else {
        return;
    };
    let c = client(&[URL]);
    let r1 = c.put("/net/subnets/10.5.1.0-24", "one", 0).expect("put");
    c.put("/net/subnets/10.5.2.0-24", "two", 0).expect("put");
    c.put("/net/subnetsX", "not under the prefix", 0)
        .expect("put");
    c.put(b"/ff/\xff\xff", "0xff key", 0).expect("put");

    let (kv, rev) = c.range("/net/subnets/10.5.1.0-24").expect("range");
    let kv = kv.expect("the key");
    assert_eq!(
        (kv.value.as_slice(), kv.mod_revision, kv.version),
        (&b"one"[..], r1, 1)
    );
    assert!(rev >= r1 + 3, "header revision {rev}");
    assert_eq!(c.range("/absent").expect("range").0, None);

    let (kvs, _) = c.range_prefix("/net/subnets/").expect("prefix");
    let keys: Vec<&[u8]> = kvs.iter().map(|k| k.key.as_slice()).collect();
    assert_eq!(
        keys,
        [
            &b"/net/subnets/10.5.1.0-24"[..],
            b"/net/subnets/10.5.2.0-24"
        ]
    );
    let (kvs, _) = c.range_prefix(b"/ff/\xff").expect("0xff prefix");
    assert_eq!(kvs.len(), 1, "{kvs:?}");
    assert_eq!(c.range_prefix("").expect("every key").0.len(), 4);

    assert!(c.create("/net/config", "first", 0).expect("create"));
    assert!(!c.create("/net/config", "second", 0).expect("create again"));
    let (kv, _) = c.range("/net/config").expect("range");
    let kv = kv.expect("config");
    assert_eq!(kv.value, b"first");

    assert!(
        !c.put_if_mod_revision("/net/config", "stale", 0, kv.mod_revision - 1)
            .expect("txn")
    );
    assert!(
        c.put_if_mod_revision("/net/config", "fresh", 0, kv.mod_revision)
            .expect("txn")
    );
    assert_eq!(
        c.range("/net/config").expect("range").0.map(|k| k.value),
        Some(b"fresh".to_vec())
    );

    assert_eq!(c.delete("/net/config").expect("delete"), 1);
    assert_eq!(c.delete("/net/config").expect("delete again"), 0);
}

#[test]
fn a_lease_is_granted_kept_alive_and_its_revocation_deletes_its_key() {
    let Some(_etcd) = Etcd::start("etcd leases", &[], None) else {
        return;
    };
    let c = client(&[URL]);
    let (id, ttl) = c.lease_grant(10).expect("grant");
    assert_eq!(ttl, 10);
    // Lease IDs use all 63 bits: they survive only as int64 strings.
    assert!(id > 1 << 53, "lease ID {id}");
    c.put("/net/subnets/10.5.3.0-24", "leased", id)
        .expect("put");
    assert_eq!(
        c.range("/net/subnets/10.5.3.0-24")
            .expect("range")
            .0
            .map(|k| k.lease),
        Some(id)
    );

    std::thread::sleep(Duration::from_millis(2100));
    let left = c.lease_time_to_live(id).expect("ttl");
    assert!((1..=8).contains(&left), "TTL after 2 s: {left}");
    assert_eq!(c.lease_keepalive(id).expect("keepalive"), 10);
    assert!(c.lease_time_to_live(id).expect("ttl") >= 9);

    assert!(c.lease_revoke(id).expect("revoke"));
    assert_eq!(c.range("/net/subnets/10.5.3.0-24").expect("range").0, None);
    assert_eq!(
        c.lease_time_to_live(id).expect("ttl of a revoked lease"),
        -1
    );
    assert_eq!(
        c.lease_keepalive(id).expect("keepalive of a revoked lease"),
        0
    );
    assert!(!c.lease_revoke(id).expect("revoke again"));
}

#[test]
fn a_watch_sees_puts_and_deletes_in_order_from_its_start_revision_and_progress() {
    let Some(_etcd) = Etcd::start("etcd watch", &[], None) else {
        return;
    };
    let c = client(&[URL]);
    let start = c.put("/w/a", "1", 0).expect("put");
    c.put("/w/b", "2", 0).expect("put");
    c.put("/other", "x", 0).expect("put");
    let deleted = c.delete("/w/a").expect("delete");
    assert_eq!(deleted, 1);

    let mut w = c.watch("/w/", start).expect("watch");
    assert_eq!(
        w.next(Duration::from_secs(5)).expect("created"),
        WatchMsg::Created
    );
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match next_events(&mut w, Duration::from_secs(5)) {
            WatchMsg::Events { events, .. } => seen.extend(events),
            other => panic!("{other:?} after {seen:?}"),
        }
    }
    let got: Vec<(EventKind, &[u8])> = seen.iter().map(|e| (e.kind, e.kv.key.as_slice())).collect();
    assert_eq!(
        got,
        [
            (EventKind::Put, &b"/w/a"[..]),
            (EventKind::Put, b"/w/b"),
            (EventKind::Delete, b"/w/a")
        ]
    );
    assert_eq!(seen[1].kv.value, b"2");

    assert_eq!(
        w.next(Duration::from_millis(300)).expect("idle"),
        WatchMsg::Timeout
    );
    let live = c.put("/w/c", "3", 0).expect("put");
    match next_events(&mut w, Duration::from_secs(5)) {
        WatchMsg::Events { revision, events } => {
            assert_eq!(
                (
                    revision,
                    events[0].kv.mod_revision,
                    events[0].kv.key.as_slice()
                ),
                (live, live, &b"/w/c"[..])
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        w.request_progress().expect("progress request"),
        "a WebSocket watch can ask"
    );
    assert_eq!(
        w.next(Duration::from_secs(5)).expect("progress"),
        WatchMsg::Progress { revision: live }
    );

    let mut exact = c.watch_key("/w", live).expect("watch one key");
    assert_eq!(
        exact.next(Duration::from_secs(5)).expect("created"),
        WatchMsg::Created
    );
    c.put("/w/d", "under /w, not /w", 0).expect("put");
    let own = c.put("/w", "exactly", 0).expect("put");
    match next_events(&mut exact, Duration::from_secs(5)) {
        WatchMsg::Events { events, .. } => {
            assert_eq!((events.len(), events[0].kv.mod_revision), (1, own))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_watch_from_below_the_compaction_horizon_says_compacted() {
    let Some(etcd) = Etcd::start("etcd compaction", &[], None) else {
        return;
    };
    let c = client(&[URL]);
    let first = c.put("/c/a", "1", 0).expect("put");
    c.put("/c/a", "2", 0).expect("put");
    let last = c.put("/c/a", "3", 0).expect("put");
    etcd.ctl(&["compaction", &last.to_string()]);

    let mut w = c.watch("/c/", first).expect("watch");
    // etcd creates the watch, then cancels it.
    assert_eq!(
        w.next(Duration::from_secs(5)).expect("created"),
        WatchMsg::Created
    );
    match w.next(Duration::from_secs(5)).expect("second message") {
        WatchMsg::Compacted { compact_revision } => assert_eq!(compact_revision, last),
        other => panic!("not compacted: {other:?}"),
    }
    // From the horizon on, the watch works again.
    let mut w = c.watch("/c/", last).expect("watch");
    assert_eq!(
        w.next(Duration::from_secs(5)).expect("created"),
        WatchMsg::Created
    );
    assert!(matches!(
        next_events(&mut w, Duration::from_secs(5)),
        WatchMsg::Events { .. }
    ));
}

#[test]
fn auth_refuses_a_wrong_password_and_authenticates_again_when_the_token_expires() {
    let Some(etcd) = Etcd::start(
        "etcd auth",
        &["--auth-token=simple", "--auth-token-ttl=2"],
        None,
    ) else {
        return;
    };
    etcd.ctl(&["user", "add", "root:secret"]);
    etcd.ctl(&["role", "add", "root"]);
    etcd.ctl(&["user", "grant-role", "root", "root"]);
    etcd.ctl(&["auth", "enable"]);

    let login = |password: &str| {
        Client::new(&Config {
            username: Some("root".into()),
            password: Some(password.into()),
            ..config(&[URL])
        })
        .expect("client")
    };
    let e = login("wrong")
        .put("/a", "x", 0)
        .expect_err("a wrong password");
    assert!(e.to_string().contains("authentication failed"), "{e}");
    let anonymous = client(&[URL]).range("/a").expect_err("no user");
    assert!(matches!(anonymous, Error::Status { .. }), "{anonymous}");

    let c = login("secret");
    let rev = c.put("/a", "x", 0).expect("put with a token");
    // Past the token's 2 s (simple tokens expire unused): etcd answers 401,
    // the client authenticates again and retries.
    std::thread::sleep(Duration::from_millis(4500));
    assert_eq!(
        c.range("/a")
            .expect("range after expiry")
            .0
            .map(|k| k.mod_revision),
        Some(rev)
    );

    std::thread::sleep(Duration::from_millis(4500));
    let mut w = c.watch("/", rev).expect("watch after expiry");
    assert_eq!(
        w.next(Duration::from_secs(5)).expect("created"),
        WatchMsg::Created
    );
    assert!(matches!(
        next_events(&mut w, Duration::from_secs(5)),
        WatchMsg::Events { .. }
    ));
    assert!(
        !w.request_progress().expect("asked"),
        "etcd's WebSocket proxy carries no token"
    );
    c.put("/b", "y", 0).expect("put");
    match next_events(&mut w, Duration::from_secs(5)) {
        WatchMsg::Events { events, .. } => assert_eq!(events[0].kv.key, b"/b"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tls_with_a_client_certificate_works_and_without_one_or_with_another_ca_fails() {
    let Some(pki) = Command::new("openssl")
        .arg("version")
        .output()
        .ok()
        .map(|_| Pki::new())
    else {
        skip("etcd tls", "openssl is not installed");
        return;
    };
    let Some(_etcd) = Etcd::start("etcd tls", &[], Some(&pki)) else {
        return;
    };
    let tls = |ca: &str, cert: bool| Config {
        ca_file: Some(pki.path(ca)),
        cert_file: cert.then(|| pki.path("client.pem")),
        key_file: cert.then(|| pki.path("client.key")),
        ..config(&[TLS_URL])
    };
    let c = Client::new(&tls("ca.pem", true)).expect("client");
    let rev = c.put("/tls", "yes", 0).expect("put over TLS");
    assert_eq!(
        c.range("/tls").expect("range").0.map(|k| k.value),
        Some(b"yes".to_vec())
    );
    let mut w = c.watch("/tls", rev).expect("watch over TLS");
    assert_eq!(
        w.next(Duration::from_secs(5)).expect("created"),
        WatchMsg::Created
    );
    assert!(matches!(
        next_events(&mut w, Duration::from_secs(5)),
        WatchMsg::Events { .. }
    ));

    let no_cert = Client::new(&tls("ca.pem", false))
        .expect("client")
        .range("/tls");
    let e = no_cert.expect_err("etcd requires a client certificate");
    assert!(matches!(e, Error::Tls { .. } | Error::Io { .. }), "{e:?}");
    let other_ca = Client::new(&tls("other-ca.pem", true))
        .expect("client")
        .range("/tls");
    let e = other_ca.expect_err("the server's certificate is not from other-ca");
    assert!(e.to_string().contains("UnknownIssuer"), "{e}");
    let plain = client(&[URL])
        .range("/tls")
        .expect_err("plain HTTP to a TLS port");
    assert!(!plain.to_string().is_empty());
}

#[test]
fn calls_and_watches_fail_over_from_a_dead_endpoint_and_say_when_none_is_left() {
    let Some(mut etcd) = Etcd::start("etcd failover", &[], None) else {
        return;
    };
    let dead = "http://127.0.0.1:2999";
    let c = client(&[dead, URL]);
    let rev = c.put("/f", "1", 0).expect("put past the dead endpoint");
    assert_eq!(c.endpoint(), URL);
    let mut w = client(&[dead, URL])
        .watch("/f", rev)
        .expect("watch past the dead endpoint");
    assert_eq!(w.endpoint(), URL);
    assert_eq!(
        w.next(Duration::from_secs(5)).expect("created"),
        WatchMsg::Created
    );

    let _ = etcd.child.kill();
    let _ = etcd.child.wait();
    let e = c.range("/f").expect_err("etcd is gone");
    assert!(e.is_unavailable(), "{e}");
    assert!(
        e.to_string().contains(dead) && e.to_string().contains(URL),
        "{e}"
    );
    assert!(
        w.next(Duration::from_secs(5)).is_err(),
        "the watch stream ended"
    );
}
