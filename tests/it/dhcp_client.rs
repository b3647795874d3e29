//! The DHCP client against a real dnsmasq: each test's host namespace is the
//! "LAN" (dnsmasq on `lan0`), its container namespace holds the other end of a
//! veth, `eth0`, down until the client brings it up. The client API is driven
//! directly, as the daemon drives it.

use crate::harness;

use cni_multi::dhcp::client::{self, Renewal, Request, Settings};
use cni_multi::dhcp::lease::Lease;
use cni_multi::dhcp::wire::{Message, MessageType, code};
use cni_multi::dhcp::{Error, options};
use harness::{Netns, TempDir, enter_test_host, run_in, veth_into};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);

/// dnsmasq serving DHCP on `lan0`; killed when dropped.
struct Dnsmasq {
    child: Child,
    dir: TempDir,
}

impl Dnsmasq {
    /// Starts dnsmasq in the calling thread's namespace (the test host) and
    /// waits until it listens on port 67.
    fn start(tag: &str, extra: &[&str]) -> Dnsmasq {
        let dir = TempDir::new(tag);
        let path = |f: &str| dir.0.join(f).to_string_lossy().into_owned();
        let mut args = vec![
            "--no-daemon".to_string(),
            "--conf-file=/dev/null".into(),
            "--port=0".into(),
            "--no-resolv".into(),
            "--no-hosts".into(),
            "--user=root".into(),
            "--interface=lan0".into(),
            "--bind-interfaces".into(),
            "--dhcp-authoritative".into(),
            "--dhcp-range=10.77.0.50,10.77.0.150,255.255.255.0,2m".into(),
            "--dhcp-option=58,30".into(),
            // Its ping of a new address before offering it costs 3 s.
            "--no-ping".into(),
            format!("--dhcp-leasefile={}", path("leases")),
            format!("--pid-file={}", path("pid")),
            "--log-dhcp".into(),
            format!("--log-facility={}", path("log")),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let child = Command::new("dnsmasq")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn dnsmasq");
        let d = Dnsmasq { child, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !listening_on_67() {
            assert!(
                Instant::now() < deadline,
                "dnsmasq did not start: {}",
                d.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        d
    }

    fn leases(&self) -> String {
        harness::stable_read(&self.dir.0.join("leases"))
    }

    /// The lease file's line for `address`, if any.
    fn lease_line(&self, address: Ipv4Addr) -> Option<String> {
        let needle = format!(" {address} ");
        self.leases()
            .lines()
            .find(|l| l.contains(&needle))
            .map(String::from)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("log")).unwrap_or_default()
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A UDP socket on port 67 in the calling thread's namespace.
fn listening_on_67() -> bool {
    std::fs::read_to_string("/proc/thread-self/net/udp")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|local| local.ends_with(":0043"))
        })
}

/// The test host as the LAN (10.77.0.1/24 on `lan0`) and a container with
/// `eth0`, the veth's other end, left down.
fn lan() -> Netns {
    enter_test_host();
    let ctr = Netns::new();
    veth_into(&ctr, "lan0", "eth0");
    run_in(None, "ip", &["addr", "add", "10.77.0.1/24", "dev", "lan0"]);
    run_in(None, "ip", &["link", "set", "lan0", "up"]);
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    ctr
}

fn request(ctr: &Netns, container_id: &str, provide: &[options::Provide]) -> Request {
    Request {
        netns: PathBuf::from(ctr.path()),
        ifname: "eth0".into(),
        client_id: options::client_id(container_id, "dhcp-net", "eth0"),
        provide: options::provided(provide, &[]).expect("provide"),
        request: options::requested(&[]).expect("request"),
    }
}

fn host_name(name: &str) -> options::Provide {
    options::Provide {
        option: "host-name".into(),
        value: Some(name.into()),
        from_arg: None,
    }
}

/// The client id as dnsmasq writes it in the lease file: colon hex.
fn colon_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn in_range(a: Ipv4Addr) -> bool {
    let o = a.octets();
    o[..3] == [10, 77, 0] && (50..=150).contains(&o[3])
}

/// The lease file's expiry (first field) of `line`.
fn expiry(line: &str) -> u64 {
    line.split_whitespace()
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("lease line {line:?}"))
}

/// What the main plugin does with the result: the address on eth0.
fn configure(ctr: &Netns, lease: &Lease) {
    let net = lease.address_net().expect("mask");
    ctr.sh("ip", &["addr", "add", &net.to_string(), "dev", "eth0"]);
}

fn wait_for(what: &str, d: &Dnsmasq, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "{what}: {}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// ADD, renew, rebind, CHECK, DEL, expiry: what dnsmasq sees at each step.
#[test]
fn acquire_renew_rebind_release_against_dnsmasq() {
    let ctr = lan();
    let d = Dnsmasq::start("dhcp-cycle", &[]);
    let req = request(&ctr, "ctr-cycle", &[host_name("pod-a")]);
    let settings = Settings::default();

    let t = Instant::now();
    let lease =
        client::acquire(&req, &settings).unwrap_or_else(|e| panic!("acquire: {e}\n{}", d.log()));
    eprintln!("acquire (link up to ACK) took {:?}", t.elapsed());
    assert!(in_range(lease.address), "{lease:?}");
    assert_eq!(lease.server, SERVER);
    assert_eq!(lease.lease_secs, 120);
    assert_eq!(lease.renew_secs, 30, "dhcp-option=58,30");
    let line = lease.address;
    let line = d.lease_line(line).expect("dnsmasq has the lease");
    assert!(line.contains(&colon_hex(&req.client_id)), "{line}");
    assert!(line.contains(" pod-a "), "{line}");
    let link = ctr.sh("ip", &["-o", "link", "show", "eth0"]);
    assert!(link.contains(",UP,") || link.contains("<UP,"), "{link}");

    // The result as the reference builds it; dnsmasq sends its own address as router.
    let result = lease.to_result(Some(42)).expect("result");
    assert_eq!(
        result.ips[0].address.to_string(),
        format!("{}/24", lease.address)
    );
    assert_eq!(result.ips[0].gateway, Some(SERVER.into()));
    assert_eq!(result.routes.len(), 1);
    assert_eq!(result.routes[0].dst.to_string(), "0.0.0.0/0");
    assert_eq!(result.routes[0].priority, 42);
    assert!(!lease.options.contains_key(&121), "121 only when requested");

    assert!(!client::address_present(&req, &lease).expect("check"));
    // Nothing to renew from until the plugin has put the address on eth0.
    match client::renew(&req, &settings, &lease) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AddrNotAvailable => {}
        other => panic!("renew without the address: {other:?}"),
    }
    configure(&ctr, &lease);
    assert!(client::address_present(&req, &lease).expect("check"));

    // Renewal moves dnsmasq's expiry (whole seconds: wait past one).
    std::thread::sleep(Duration::from_millis(1100));
    let renewed = match client::renew(&req, &settings, &lease) {
        Ok(Renewal::Ack(l)) => l,
        other => panic!("renew: {other:?}\n{}", d.log()),
    };
    assert_eq!(renewed.address, lease.address);
    assert!(renewed.acquired > lease.acquired);
    let after = d.lease_line(lease.address).expect("lease after renew");
    assert!(expiry(&after) > expiry(&line), "{line} -> {after}");

    std::thread::sleep(Duration::from_millis(1100));
    let rebound = match client::rebind(&req, &settings, &renewed) {
        Ok(Renewal::Ack(l)) => l,
        other => panic!("rebind: {other:?}\n{}", d.log()),
    };
    assert_eq!(rebound.address, lease.address);
    let again = d.lease_line(lease.address).expect("lease after rebind");
    assert!(expiry(&again) > expiry(&after), "{after} -> {again}");

    // DHCPRELEASE removes the line.
    client::release(&req, &rebound).expect("release");
    wait_for("released", &d, || d.lease_line(lease.address).is_none());

    // Expiry takes the link down.
    client::expire(&req).expect("expire");
    let link = ctr.sh("ip", &["-o", "link", "show", "eth0"]);
    assert!(!link.contains(",UP") && !link.contains("<UP"), "{link}");
}

/// Option 121 and DNS (6, 15, 119) come only when requested, and reach the result.
#[test]
fn requested_routes_and_dns_reach_the_result() {
    let ctr = lan();
    let d = Dnsmasq::start(
        "dhcp-options",
        &[
            "--dhcp-option=121,10.99.0.0/16,10.77.0.254,10.98.0.0/16,0.0.0.0",
            "--dhcp-option=6,10.77.0.53,10.77.0.54",
            "--dhcp-option=15,example.test",
            "--dhcp-option=119,example.test,sub.example.test",
        ],
    );
    let settings = Settings::default();

    // Default request list: dnsmasq sends none of them.
    let plain = request(&ctr, "ctr-plain", &[]);
    let lease =
        client::acquire(&plain, &settings).unwrap_or_else(|e| panic!("acquire: {e}\n{}", d.log()));
    for code in [121, 6, 15, 119] {
        assert!(!lease.options.contains_key(&code), "{code}: {lease:?}");
    }
    client::release(&plain, &lease).expect("release");
    wait_for("released", &d, || d.lease_line(lease.address).is_none());

    let mut req = request(&ctr, "ctr-options", &[]);
    let ask = |o: &str| options::RequestOption {
        option: o.into(),
        skip_default: false,
    };
    req.request =
        options::requested(&[ask("121"), ask("6"), ask("15"), ask("119")]).expect("request");
    let lease =
        client::acquire(&req, &settings).unwrap_or_else(|e| panic!("acquire: {e}\n{}", d.log()));
    let result = lease.to_result(None).expect("result");
    let routes: Vec<(String, Option<String>, Option<i64>)> = result
        .routes
        .iter()
        .map(|r| (r.dst.to_string(), r.gw.map(|g| g.to_string()), r.scope))
        .collect();
    assert_eq!(
        routes,
        [
            ("10.99.0.0/16".into(), Some("10.77.0.254".into()), None),
            ("10.98.0.0/16".into(), None, Some(253)),
        ],
        "121 replaces the default route"
    );
    assert_eq!(result.ips[0].gateway, Some(SERVER.into()));
    assert_eq!(result.dns.nameservers, ["10.77.0.53", "10.77.0.54"]);
    assert_eq!(result.dns.domain, "example.test");
    assert_eq!(result.dns.search, ["example.test", "sub.example.test"]);
    client::release(&req, &lease).expect("release");
}

/// No server: the client broadcasts DISCOVERs for one exchange (one xid, its
/// client id), resending on the reference's schedule (2 s, +-1 s) until the
/// configured timeout, then gives up with NoAnswer naming the interface and
/// sends nothing more. A "server" socket on port 67 of the LAN counts what
/// arrives; no wall time is asserted (a slow machine sends fewer, never more).
#[test]
fn no_server_gives_no_answer_after_resending_discovers_until_the_timeout() {
    let ctr = lan();
    let req = request(&ctr, "ctr-silent", &[]);
    let listener = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 67)).expect("bind :67");
    let settings = Settings {
        timeout: Duration::from_secs(3),
        ..Settings::default()
    };
    let e = client::acquire(&req, &settings).expect_err("nobody answers");
    match &e {
        Error::NoAnswer { ifname, after } => {
            assert_eq!(ifname, "eth0");
            // The client's own account: it gave up at its deadline, not before.
            assert!(*after >= settings.timeout, "{after:?}");
        }
        other => panic!("expected NoAnswer, got {other:?}"),
    }
    assert!(e.to_string().contains("eth0"), "{e}");
    // Everything it sent was sent before acquire returned; drain it.
    listener
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut discovers = Vec::new();
    let mut buf = [0u8; 1500];
    while let Ok(n) = listener.recv(&mut buf) {
        let m = Message::decode(&buf[..n]).expect("a DHCP message");
        assert_eq!(m.message_type(), Some(MessageType::Discover), "{m:?}");
        discovers.push(m);
    }
    let first = discovers.first().expect("at least one DISCOVER");
    let client_id = options::client_id("ctr-silent", "dhcp-net", "eth0");
    for m in &discovers {
        assert_eq!(m.xid, first.xid, "one exchange: {discovers:?}");
        assert_eq!(m.option(code::CLIENT_ID).as_deref(), Some(&client_id[..]));
    }
    assert!(
        discovers.windows(2).all(|w| w[0].secs <= w[1].secs),
        "{discovers:?}"
    );
    // Each resend waits at least 1 s, and none goes out at or past the 3 s
    // deadline: three at most.
    assert!(discovers.len() <= 3, "{} DISCOVERs", discovers.len());
}

/// A renewal of an address the server does not give: NAK.
#[test]
fn renewing_a_foreign_address_is_refused() {
    let ctr = lan();
    let d = Dnsmasq::start("dhcp-nak", &[]);
    let req = request(&ctr, "ctr-nak", &[]);
    let settings = Settings::default();
    let lease =
        client::acquire(&req, &settings).unwrap_or_else(|e| panic!("acquire: {e}\n{}", d.log()));
    // Outside dnsmasq's range: it must refuse it.
    let mut foreign = lease.clone();
    foreign.address = Ipv4Addr::new(10, 77, 0, 200);
    configure(&ctr, &foreign);
    match client::renew(&req, &settings, &foreign) {
        Ok(Renewal::Nak) => {}
        other => panic!("expected a NAK: {other:?}\n{}", d.log()),
    }
    // The leased address is not on eth0: the RELEASE still reaches dnsmasq.
    client::release(&req, &lease).expect("release (address not on eth0)");
    wait_for("released", &d, || d.lease_line(lease.address).is_none());
}

/// DEL after the container or its interface is gone: nothing to do, Ok.
#[test]
fn release_and_expire_without_netns_or_link_are_ok() {
    let ctr = lan();
    let req = request(&ctr, "ctr-gone", &[]);
    let lease = Lease {
        address: Ipv4Addr::new(10, 77, 0, 60),
        server: SERVER,
        acquired: 0,
        lease_secs: 120,
        renew_secs: 60,
        rebind_secs: 100,
        options: Default::default(),
    };
    let mut no_link = req.clone();
    no_link.ifname = "eth9".into();
    client::release(&no_link, &lease).expect("no link");
    client::expire(&no_link).expect("no link");
    let mut no_netns = req.clone();
    no_netns.netns = Path::new("/proc/0/ns/net-gone").into();
    client::release(&no_netns, &lease).expect("no netns");
    client::expire(&no_netns).expect("no netns");
    // Acquiring there fails with the netns error.
    let e = client::acquire(&no_netns, &Settings::default()).expect_err("no netns");
    assert!(matches!(e, Error::Netns(_)), "{e:?}");
    let e = client::acquire(&no_link, &Settings::default()).expect_err("no link");
    assert!(matches!(e, Error::Netlink(_)), "{e:?}");
    assert!(e.to_string().contains("eth9"), "{e}");
    drop(ctr);
}
