//! The dhcp IPAM plugin and its daemon against a real DHCP server: each test
//! has its own "LAN" namespace with dnsmasq on `lan0` (10.77.0.1/24, range
//! .100-.199), reached from the test host through its veth peer `lan-m`, the
//! master of the containers' macvlans (or a port of the bridge `dhcpbr0`), and
//! its own daemon on a socket in a temporary directory.
//!
//! `CNI_MULTI_DHCP_CYCLES` sets the ADD/DEL cycles of the flatness test (2000).

use crate::harness;
use crate::harness::dhcp_lan;

use dhcp_lan::{Daemon, Lan, Reaped, finish, wait_for};

use harness::{BIN, Call, Netns, TempDir, enter_test_host, merged, plugin_dir, run_in, veth_into};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NET: &str = "dhcp-net";

/// The client-id dnsmasq shows: 0x00 + `<cid>/<net>/<ifname>`, colon hex.
fn client_id_hex(cid: &str, ifname: &str) -> String {
    std::iter::once(0u8)
        .chain(format!("{cid}/{NET}/{ifname}").bytes())
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

// ---------------------------------------------------------------- plugin calls

fn macvlan_conf(socket: &Path, ipam: Value) -> Value {
    json!({
        "cniVersion": "1.0.0",
        "name": NET,
        "type": "macvlan",
        "master": "lan-m",
        "ipam": merged(json!({"type": "dhcp", "daemonSocketPath": socket}), ipam),
    })
}

fn call(cmd: &str, ns: &Netns, id: &str, conf: &Value, bin: &TempDir) -> Call {
    let plugin = conf["type"].as_str().unwrap_or("macvlan").to_string();
    Call::new(&plugin, cmd, ns.path(), &conf.to_string())
        .set("CNI_CONTAINERID", id)
        .path(bin)
}

fn address_of(result: &Value) -> String {
    harness::first_ip(result)
}

fn in_range(ip: &str) -> bool {
    ip.strip_prefix("10.77.0.")
        .and_then(|n| n.parse::<u8>().ok())
        .is_some_and(|n| (100..=199).contains(&n))
}

fn eth0_has(ns: &Netns, ip: &str) -> bool {
    ns.sh("ip", &["-4", "-o", "addr", "show", "dev", "eth0"])
        .contains(&format!("inet {ip}/24"))
}

fn state_files(dir: &TempDir) -> usize {
    std::fs::read_dir(dir.0.join("state"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

// ---------------------------------------------------------------- tests

#[test]
fn macvlan_add_leases_from_dnsmasq_with_routes_and_dns_check_holds_and_del_releases() {
    enter_test_host();
    let dir = TempDir::new("dhcp-basic");
    let lan = Lan::new(
        &dir,
        true,
        "1h",
        &[
            "121,10.99.0.0/16,10.77.0.254,10.88.0.0/16,0.0.0.0",
            "6,10.77.0.53",
            "15,lan.example",
            "119,a.example,b.example",
        ],
    );
    let daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let ns = Netns::new();
    let conf = macvlan_conf(
        &daemon.socket,
        json!({
            "provide": [{"option": "host-name", "fromArg": "K8S_POD_NAME"}],
            "request": [{"option": "121"}, {"option": "6"}, {"option": "15"}, {"option": "119"}],
            "priority": 100,
        }),
    );
    let result = call("ADD", &ns, "ctr-1", &conf, &bin)
        .set(
            "CNI_ARGS",
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-1",
        )
        .run()
        .ok();
    let ip = address_of(&result);
    assert!(in_range(&ip), "{result}");
    assert_eq!(result["ips"][0]["address"], format!("{ip}/24"));
    assert_eq!(result["ips"][0]["gateway"], "10.77.0.1");
    // Option 121: routes (one through a router, one on the link), each with the priority.
    let routes = result["routes"].as_array().expect("routes");
    let via = routes
        .iter()
        .find(|r| r["dst"] == "10.99.0.0/16")
        .expect("10.99/16");
    assert_eq!(via["gw"], "10.77.0.254", "{result}");
    assert_eq!(via["priority"], 100, "{result}");
    let link = routes
        .iter()
        .find(|r| r["dst"] == "10.88.0.0/16")
        .expect("10.88/16");
    // Router 0.0.0.0: on the link (the reference writes gw 0.0.0.0 and scope link).
    assert_eq!(link["scope"], 253, "{result}");
    assert!(
        link.get("gw")
            .is_none_or(|gw| gw.is_null() || gw == "0.0.0.0"),
        "{result}"
    );
    let table = ns.sh("ip", &["-4", "route", "show", "dev", "eth0"]);
    assert!(table.contains("10.88.0.0/16 scope link"), "{table}");
    assert!(table.contains("10.99.0.0/16 via 10.77.0.254"), "{table}");
    // With option 121 there is no default route from option 3 (RFC 3442).
    assert!(routes.iter().all(|r| r["dst"] != "0.0.0.0/0"), "{result}");
    // dnsmasq has it, with the provided host name and the reference's client-id.
    let lease = lan.lease_of(&ip).expect("dnsmasq lease");
    assert_eq!(lease.hostname, "web-1");
    assert_eq!(lease.client_id, client_id_hex("ctr-1", "eth0"));
    assert!(eth0_has(&ns, &ip), "macvlan put the address on eth0");
    assert_eq!(state_files(&dir), 1, "the lease is on disk");

    // Options 6, 15 and 119 reach macvlan's result: its config has no `dns`
    // (the reference's macvlan drops IPAM's DNS).
    assert_eq!(
        result["dns"]["nameservers"],
        json!(["10.77.0.53"]),
        "{result}"
    );
    assert_eq!(result["dns"]["domain"], "lan.example");
    assert_eq!(result["dns"]["search"], json!(["a.example", "b.example"]));
    // The IPAM result itself: an ADD of the same attachment gets the held
    // lease, with the same DNS, and starts no second keeper.
    let threads = daemon.threads();
    let mut ipam_conf = conf.clone();
    ipam_conf["type"] = json!("dhcp");
    let direct = Call::new("dhcp", "ADD", ns.path(), &ipam_conf.to_string())
        .set("CNI_CONTAINERID", "ctr-1")
        .set("CNI_ARGS", "K8S_POD_NAME=web-1")
        .run()
        .ok();
    assert_eq!(address_of(&direct), ip, "{direct}");
    assert_eq!(direct["dns"]["nameservers"], json!(["10.77.0.53"]));
    assert_eq!(direct["dns"]["domain"], "lan.example");
    assert_eq!(direct["dns"]["search"], json!(["a.example", "b.example"]));
    assert_eq!(direct["routes"], result["routes"]);
    assert_eq!(lan.leases().len(), 1);
    // CHECK holds: the lease is kept and its address on eth0; no keeper is added.
    let mut checked = conf.clone();
    checked["prevResult"] = result.clone();
    call("CHECK", &ns, "ctr-1", &checked, &bin).run().ok();
    call("CHECK", &ns, "ctr-1", &checked, &bin).run().ok();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        daemon.threads(),
        threads,
        "CHECK starts no thread that stays"
    );

    // DEL releases: dnsmasq's line goes at once, and the state file.
    call("DEL", &ns, "ctr-1", &conf, &bin).run().ok();
    wait_for("the RELEASE at dnsmasq", Duration::from_secs(5), || {
        lan.lease_of(&ip).is_none()
    });
    assert_eq!(state_files(&dir), 0);
    assert!(lan.log().contains("DHCPRELEASE"), "{}", lan.log());
    // A second DEL, and CHECK of a lease not held.
    call("DEL", &ns, "ctr-1", &conf, &bin).run().ok();
    let e = call("CHECK", &ns, "ctr-1", &checked, &bin).run().err(999);
    assert!(
        e["msg"].as_str().is_some_and(|m| m.contains("no lease")),
        "{e}"
    );
}

#[test]
fn a_short_lease_is_renewed_at_t1_and_the_address_stays() {
    enter_test_host();
    let dir = TempDir::new("dhcp-renew");
    // dnsmasq's shortest lease is 2 minutes; T1 (option 58) 3 s, T2 100 s.
    let lan = Lan::new(&dir, true, "2m", &["58,3", "59,100"]);
    let daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let ns = Netns::new();
    let conf = macvlan_conf(&daemon.socket, json!({}));
    let result = call("ADD", &ns, "ctr-r", &conf, &bin).run().ok();
    let ip = address_of(&result);
    let first = lan.lease_of(&ip).expect("dnsmasq lease").expiry;
    // Two renewals: dnsmasq's expiry moves on each time.
    let mut last = first;
    for round in 1..=2 {
        wait_for(
            &format!("renewal {round} at dnsmasq"),
            Duration::from_secs(20),
            || lan.lease_of(&ip).is_some_and(|l| l.expiry >= last + 2),
        );
        last = lan.lease_of(&ip).map_or(last, |l| l.expiry);
    }
    assert!(last > first);
    assert_eq!(lan.leases().len(), 1, "the same lease, renewed");
    assert!(eth0_has(&ns, &ip), "the address stays");
    let log = daemon.log();
    assert!(log.contains("renewed"), "{log}");
    call("DEL", &ns, "ctr-r", &conf, &bin).run().ok();
    wait_for("the RELEASE", Duration::from_secs(5), || {
        lan.lease_of(&ip).is_none()
    });
}

#[test]
fn a_killed_daemon_takes_its_leases_up_again_renews_them_and_del_releases() {
    enter_test_host();
    let dir = TempDir::new("dhcp-restart");
    let lan = Lan::new(&dir, true, "2m", &["58,3", "59,100"]);
    let mut daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let (a, b) = (Netns::new(), Netns::new());
    let conf = macvlan_conf(&daemon.socket, json!({}));
    let ra = call("ADD", &a, "ctr-a", &conf, &bin).run().ok();
    let rb = call("ADD", &b, "ctr-b", &conf, &bin).run().ok();
    let (ipa, ipb) = (address_of(&ra), address_of(&rb));
    daemon.signal(Signal::SIGKILL);
    assert!(daemon.socket.exists(), "kill -9 leaves the socket");
    let killed_at = lan.lease_of(&ipa).expect("lease a").expiry;
    // The stale socket does not block the restart; both leases are taken up.
    daemon.restart();
    // The daemon answers on its socket before it prints its summary line.
    wait_for("the restart's summary", Duration::from_secs(5), || {
        daemon.log().contains("(2 resumed)")
    });
    let log = daemon.log();
    assert!(log.contains("removed the stale socket"), "{log}");
    wait_for(
        "a renewal after the restart",
        Duration::from_secs(20),
        || {
            lan.lease_of(&ipa)
                .is_some_and(|l| l.expiry >= killed_at + 2)
        },
    );
    assert!(lan.lease_of(&ipb).is_some());
    let mut checked = conf.clone();
    checked["prevResult"] = ra.clone();
    call("CHECK", &a, "ctr-a", &checked, &bin).run().ok();
    // DEL after the restart releases.
    call("DEL", &a, "ctr-a", &conf, &bin).run().ok();
    call("DEL", &b, "ctr-b", &conf, &bin).run().ok();
    wait_for("both RELEASEs", Duration::from_secs(5), || {
        lan.leases().is_empty()
    });
    assert_eq!(state_files(&dir), 0);
}

/// With the daemon down, DEL looks for the attachment's lease file through
/// `<socket>.leases`. When that does not lead to the daemon's state directory
/// (a link that dangles here, say the daemon's own view of its `-statedir`,
/// or a directory that is not the one it used), the lease file is out of
/// sight: DEL must not report success while it remains, and a daemon that
/// cannot make that link must not start.
#[test]
fn del_with_the_daemon_down_fails_while_a_lease_file_it_cannot_see_remains() {
    enter_test_host();
    let dir = TempDir::new("dhcp-hidden-state");
    let lan = Lan::new(&dir, true, "1h", &[]);
    let mut daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let ns = Netns::new();
    let conf = macvlan_conf(&daemon.socket, json!({}));
    let ip = address_of(&call("ADD", &ns, "ctr-h", &conf, &bin).run().ok());
    daemon.signal(Signal::SIGKILL);
    let state = dir.0.join("state");
    let link = dir.0.join("dhcp.sock.leases");
    assert_eq!(std::fs::read_link(&link).expect("link"), state);
    assert_eq!(state_files(&dir), 1);
    let moved = dir.0.join("state-elsewhere");
    let del = || call("DEL", &ns, "ctr-h", &conf, &bin).run();
    let held = |e: &Value| {
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains("may still be held"))
    };
    // The link leads nowhere from here.
    std::fs::rename(&state, &moved).expect("move the state away");
    let e = del().err(11);
    assert!(held(&e), "{e}");
    // A directory that is not the daemon's (no lock of a daemon in it).
    std::fs::remove_file(&link).expect("remove link");
    std::fs::create_dir(&link).expect("stale dir");
    let e = del().err(11);
    assert!(held(&e), "{e}");
    // The daemon cannot link `<socket>.leases` to its -statedir: it refuses.
    std::fs::rename(&moved, &state).expect("move the state back");
    let out = finish(
        Command::new(BIN)
            .args(["dhcp", "daemon"])
            .args(&daemon.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn daemon"),
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&link.display().to_string()), "{stderr}");
    assert!(lan.lease_of(&ip).is_some(), "the lease is still held");
    // Out of the way, the daemon links it, takes the lease up, DEL releases.
    std::fs::remove_dir(&link).expect("remove the stale dir");
    daemon.restart();
    call("DEL", &ns, "ctr-h", &conf, &bin).run().ok();
    wait_for("the RELEASE", Duration::from_secs(5), || {
        lan.lease_of(&ip).is_none()
    });
    assert_eq!(state_files(&dir), 0);
}

#[test]
fn twenty_containers_at_once_get_twenty_distinct_leases() {
    enter_test_host();
    let dir = TempDir::new("dhcp-twenty");
    let lan = Lan::new(&dir, true, "1h", &[]);
    let daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let conf = macvlan_conf(&daemon.socket, json!({}));
    let spaces: Vec<Netns> = (0..20).map(|_| Netns::new()).collect();
    let start = Instant::now();
    let children: Vec<_> = spaces
        .iter()
        .enumerate()
        .map(|(i, ns)| call("ADD", ns, &format!("ctr-{i}"), &conf, &bin).spawn())
        .collect();
    let ips: Vec<String> = children
        .into_iter()
        .map(|c| address_of(&harness::Outcome::of(c).ok()))
        .collect();
    eprintln!(
        "dhcp: 20 concurrent ADDs took {} ms",
        start.elapsed().as_millis()
    );
    let distinct: BTreeSet<&String> = ips.iter().collect();
    assert_eq!(distinct.len(), 20, "{ips:?}");
    assert!(ips.iter().all(|ip| in_range(ip)), "{ips:?}");
    let held: BTreeSet<String> = lan.leases().into_iter().map(|l| l.ip).collect();
    assert_eq!(held, ips.iter().cloned().collect::<BTreeSet<_>>());
    let children: Vec<_> = spaces
        .iter()
        .enumerate()
        .map(|(i, ns)| call("DEL", ns, &format!("ctr-{i}"), &conf, &bin).spawn())
        .collect();
    for c in children {
        harness::Outcome::of(c).ok();
    }
    wait_for("20 RELEASEs", Duration::from_secs(5), || {
        lan.leases().is_empty()
    });
}

#[test]
fn the_daemon_stays_flat_over_many_add_del_cycles() {
    enter_test_host();
    let cycles: usize = std::env::var("CNI_MULTI_DHCP_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dir = TempDir::new("dhcp-cycles");
    let lan = Lan::new(&dir, true, "1h", &[]);
    let daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let ns = Netns::new();
    let conf = macvlan_conf(&daemon.socket, json!({}));
    let cycle = |times: &mut Vec<Duration>| {
        let start = Instant::now();
        call("ADD", &ns, "ctr-c", &conf, &bin).run().ok();
        times.push(start.elapsed());
        call("DEL", &ns, "ctr-c", &conf, &bin).run().ok();
    };
    let mut warmup = Vec::new();
    for _ in 0..20 {
        cycle(&mut warmup);
    }
    std::thread::sleep(Duration::from_millis(300));
    let (fds0, rss0, threads0) = (daemon.fds(), daemon.rss_kb(), daemon.threads());
    let mut times = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        cycle(&mut times);
    }
    std::thread::sleep(Duration::from_millis(300));
    let (fds1, rss1, threads1) = (daemon.fds(), daemon.rss_kb(), daemon.threads());
    times.sort();
    let median = times[times.len() / 2];
    let p90 = times[times.len() * 9 / 10];
    eprintln!(
        "dhcp daemon over {cycles} ADD/DEL cycles: fds {fds0} -> {fds1}, RSS {rss0} kB -> {rss1} kB, \
         threads {threads0} -> {threads1}; macvlan+dhcp ADD median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
    );
    assert!(fds1 <= fds0, "fds grew: {fds0} -> {fds1}");
    assert!(
        threads1 <= threads0,
        "threads grew: {threads0} -> {threads1}"
    );
    assert!(rss1 <= rss0 + 2048, "RSS grew: {rss0} kB -> {rss1} kB");
    assert!(lan.leases().is_empty(), "every lease released");
}

#[test]
fn a_server_that_never_answers_is_a_clear_error_after_the_timeout() {
    enter_test_host();
    let dir = TempDir::new("dhcp-silent");
    let _lan = Lan::new(&dir, false, "", &[]);
    let daemon = Daemon::start(&dir, &["-timeout", "3s"]);
    let bin = plugin_dir();
    let ns = Netns::new();
    let conf = macvlan_conf(&daemon.socket, json!({}));
    let e = call("ADD", &ns, "ctr-s", &conf, &bin).run().err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    // The client's NoAnswer, at the daemon's -timeout: behaviour, not wall time.
    assert!(msg.contains("no answer from a DHCP server on eth0"), "{e}");
    eprintln!("dhcp: no server: {msg}");
    // The runtime's DEL after the failed ADD: nothing held, success.
    call("DEL", &ns, "ctr-s", &conf, &bin).run().ok();
    assert_eq!(state_files(&dir), 0);
}

#[test]
fn del_of_an_unknown_lease_succeeds_and_gc_releases_what_is_not_listed() {
    enter_test_host();
    let dir = TempDir::new("dhcp-gc");
    let lan = Lan::new(&dir, true, "1h", &[]);
    let daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let (a, b) = (Netns::new(), Netns::new());
    let mut conf = macvlan_conf(&daemon.socket, json!({}));
    conf["cniVersion"] = json!("1.1.0");
    call("DEL", &a, "never-added", &conf, &bin).run().ok();
    let ipa = address_of(&call("ADD", &a, "ctr-a", &conf, &bin).run().ok());
    let ipb = address_of(&call("ADD", &b, "ctr-b", &conf, &bin).run().ok());
    // GC without the key releases nothing.
    Call::new("macvlan", "GC", "", &conf.to_string())
        .path(&bin)
        .run()
        .ok();
    assert_eq!(lan.leases().len(), 2);
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "ctr-a", "ifname": "eth0"}]);
    Call::new("macvlan", "GC", "", &gc.to_string())
        .path(&bin)
        .run()
        .ok();
    wait_for("GC's RELEASE", Duration::from_secs(5), || {
        lan.lease_of(&ipb).is_none()
    });
    assert!(lan.lease_of(&ipa).is_some(), "the listed lease stays");
    assert_eq!(state_files(&dir), 1);
    // STATUS through macvlan reaches the daemon.
    Call::new("macvlan", "STATUS", "", &conf.to_string())
        .path(&bin)
        .run()
        .ok();
    call("DEL", &a, "ctr-a", &conf, &bin).run().ok();
    call("DEL", &b, "ctr-b", &conf, &bin).run().ok();
    assert!(lan.leases().is_empty());
}

#[test]
fn bridge_releases_the_lease_on_del_while_the_veth_still_exists() {
    enter_test_host();
    let dir = TempDir::new("dhcp-bridge");
    let lan = Lan::new(&dir, true, "1h", &[]);
    run_in(None, "ip", &["link", "add", "dhcpbr0", "type", "bridge"]);
    run_in(None, "ip", &["link", "set", "lan-m", "master", "dhcpbr0"]);
    run_in(None, "ip", &["link", "set", "dhcpbr0", "up"]);
    let daemon = Daemon::start(&dir, &[]);
    let bin = plugin_dir();
    let ns = Netns::new();
    let conf = json!({
        "cniVersion": "1.0.0",
        "name": NET,
        "type": "bridge",
        "bridge": "dhcpbr0",
        "ipam": {"type": "dhcp", "daemonSocketPath": daemon.socket},
    });
    let result = call("ADD", &ns, "ctr-br", &conf, &bin).run().ok();
    let ip = address_of(&result);
    assert!(in_range(&ip), "{result}");
    assert!(lan.lease_of(&ip).is_some());
    assert!(eth0_has(&ns, &ip));
    call("DEL", &ns, "ctr-br", &conf, &bin).run().ok();
    wait_for(
        "the RELEASE through the bridge",
        Duration::from_secs(5),
        || lan.lease_of(&ip).is_none(),
    );
}

#[test]
fn bad_option_names_are_code_7_before_the_daemon_is_asked() {
    enter_test_host();
    let dir = TempDir::new("dhcp-badopt");
    let ns = Netns::new();
    let socket = dir.0.join("absent.sock");
    for ipam in [
        json!({"provide": [{"option": "no-such-option", "value": "x"}]}),
        json!({"request": [{"option": "300"}]}),
        json!({"request": [{"option": "routerz"}]}),
    ] {
        let mut conf = macvlan_conf(&socket, ipam);
        conf["type"] = json!("dhcp");
        let e = Call::new("dhcp", "ADD", ns.path(), &conf.to_string())
            .run()
            .err(7);
        assert!(
            !e["msg"]
                .as_str()
                .unwrap_or_default()
                .contains("not reachable"),
            "{e}"
        );
    }
}

#[test]
fn a_daemon_that_is_not_running_is_code_11_naming_its_socket() {
    enter_test_host();
    let dir = TempDir::new("dhcp-down");
    let ns = Netns::new();
    let socket = dir.0.join("down.sock");
    let mut conf = macvlan_conf(&socket, json!({}));
    conf["type"] = json!("dhcp");
    conf["cniVersion"] = json!("1.1.0");
    let run = |cmd: &str| Call::new("dhcp", cmd, ns.path(), &conf.to_string()).run();
    let named = |e: &Value| {
        e["msg"]
            .as_str()
            .is_some_and(|m| m.contains(&socket.display().to_string()))
    };
    let e = run("ADD").err(11);
    assert!(named(&e), "{e}");
    let e = run("CHECK").err(11);
    assert!(named(&e), "{e}");
    let e = run("STATUS").err(50);
    assert!(named(&e), "{e}");
    // Nothing was ever held through this socket: DEL and GC succeed.
    run("DEL").ok();
    run("GC").ok();
}

#[test]
fn flags_pidfile_one_daemon_per_socket_and_state_and_sigterm_cleans_up() {
    enter_test_host();
    let dir = TempDir::new("dhcp-flags");
    let bin = plugin_dir();
    // Both spellings of the help, the reference's flags listed.
    for argv in [
        vec![
            BIN.to_string(),
            "dhcp".into(),
            "daemon".into(),
            "-help".into(),
        ],
        vec![
            bin.0.join("dhcp").display().to_string(),
            "daemon".into(),
            "--help".into(),
        ],
    ] {
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .expect("help");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{argv:?}: {out:?}");
        for flag in [
            "--socketpath",
            "--pidfile",
            "--hostprefix",
            "--broadcast",
            "--timeout",
            "--resendmax",
            "--resendtimeout",
            "--statedir",
        ] {
            assert!(text.contains(flag), "{flag} missing from:\n{text}");
        }
    }
    let socket = dir.0.join("run").join("dhcp.sock");
    let pidfile = dir.0.join("dhcp.pid");
    let state = dir.0.join("leases");
    let spawn = |args: &[String]| {
        Command::new(BIN)
            .args(["dhcp", "daemon"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn daemon")
    };
    let args = vec![
        format!("--socketpath={}", socket.display()),
        "-pidfile".into(),
        pidfile.display().to_string(),
        "-statedir".into(),
        state.display().to_string(),
        "-broadcast".into(),
        "-timeout=5s".into(),
        "-resendmax".into(),
        "2s".into(),
        "--resendtimeout".into(),
        "1m".into(),
    ];
    let first = Reaped(Some(spawn(&args)));
    wait_for("the socket", Duration::from_secs(10), || {
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).expect("stat").permissions())
            & 0o777
    };
    assert_eq!(mode(&dir.0.join("run")), 0o700, "socket dir 0700");
    assert_eq!(mode(&state), 0o700, "state dir 0700");
    // The pidfile is written once the socket is ours (so a daemon refused for
    // a live socket never overwrites it): just after it starts answering.
    wait_for("the pidfile", Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| !p.trim().is_empty())
    });
    assert_eq!(
        std::fs::read_to_string(&pidfile).expect("pidfile").trim(),
        first.id().to_string()
    );
    // The plugin's STATUS reaches it.
    let conf = json!({"cniVersion": "1.1.0", "name": NET, "type": "dhcp",
                      "ipam": {"type": "dhcp", "daemonSocketPath": socket}});
    Call::new("dhcp", "STATUS", "", &conf.to_string())
        .run()
        .ok();
    // A second daemon on the same socket, or on the same state directory, refuses.
    let out = finish(spawn(&args));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("another dhcp daemon is listening"),
        "{out:?}"
    );
    let other = vec![
        format!("-socketpath={}", dir.0.join("other.sock").display()),
        format!("-statedir={}", state.display()),
    ];
    let out = finish(spawn(&other));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("keeps its leases in"),
        "{out:?}"
    );
    // A relative pidfile is refused, as the reference does.
    let out = finish(spawn(&["-pidfile".into(), "rel.pid".into()]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // SIGTERM: exit 0, socket and pidfile gone, the state directory kept.
    kill(
        Pid::from_raw(i32::try_from(first.id()).expect("pid")),
        Signal::SIGTERM,
    )
    .expect("SIGTERM");
    assert_eq!(first.wait().code(), Some(0));
    assert!(!socket.exists(), "socket removed");
    assert!(!pidfile.exists(), "pidfile removed");
    assert!(state.is_dir());
    // -statedir elsewhere: `<socket>.leases` points there for the plugin.
    let link = dir.0.join("run").join("dhcp.sock.leases");
    assert_eq!(std::fs::read_link(&link).expect("link"), state);
}

#[test]
fn socket_activation_uses_the_inherited_socket_and_leaves_it_in_place() {
    enter_test_host();
    let dir = TempDir::new("dhcp-activation");
    let socket = dir.0.join("act.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    let fd = listener.as_raw_fd();
    let spawn = |fds: &str| {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "export LISTEN_PID=$$ LISTEN_FDS=\"$1\"; exec \"$0\" dhcp daemon -socketpath \"$2\" -statedir \"$3\"",
            BIN,
            fds,
        ])
        .arg(&socket)
        .arg(dir.0.join("state"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        // SAFETY: between fork and exec only dup2(2)/fcntl(2), async-signal-safe
        // syscalls, run; `fd` stays open in the parent during the spawn.
        unsafe {
            cmd.pre_exec(move || {
                let r = if fd == 3 {
                    nix::libc::fcntl(3, nix::libc::F_SETFD, 0)
                } else {
                    nix::libc::dup2(fd, 3)
                };
                if r < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.spawn().expect("spawn activated daemon")
    };
    // More than one socket is refused, as the reference does.
    let out = finish(spawn("2"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Too many (2) FDs"),
        "{out:?}"
    );
    let child = Reaped(Some(spawn("1")));
    let conf = json!({"cniVersion": "1.1.0", "name": NET, "type": "dhcp",
                      "ipam": {"type": "dhcp", "daemonSocketPath": socket}});
    wait_for("the activated daemon", Duration::from_secs(10), || {
        Call::new("dhcp", "STATUS", "", &conf.to_string())
            .run()
            .status
            == 0
    });
    kill(
        Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        Signal::SIGTERM,
    )
    .expect("SIGTERM");
    assert_eq!(child.wait().code(), Some(0));
    assert!(
        socket.exists(),
        "the service manager's socket is left alone"
    );
    drop(listener);
}

#[test]
fn a_provided_literal_value_is_the_host_name_dnsmasq_leases() {
    enter_test_host();
    let dir = TempDir::new("dhcp-provide-value");
    let lan = Lan::new(&dir, true, "1h", &[]);
    let daemon = Daemon::start(&dir, &[]);
    let (bin, ns) = (plugin_dir(), Netns::new());
    let conf = macvlan_conf(
        &daemon.socket,
        json!({"provide": [{"option": "host-name", "value": "literal-host"}]}),
    );
    let result = call("ADD", &ns, "ctr-v", &conf, &bin).run().ok();
    let ip = address_of(&result);
    let lease = lan.lease_of(&ip).expect("dnsmasq lease");
    assert_eq!(lease.hostname, "literal-host", "{}", lan.log());
    call("DEL", &ns, "ctr-v", &conf, &bin).run().ok();
}

#[test]
fn skip_default_leaves_routers_and_subnet_mask_out_of_the_request_list() {
    enter_test_host();
    let dir = TempDir::new("dhcp-skip-default");
    let lan = Lan::new(&dir, true, "1h", &["6,10.77.0.53"]);
    let daemon = Daemon::start(&dir, &[]);
    let (bin, ns) = (plugin_dir(), Netns::new());
    // dnsmasq's --log-dhcp prints each client's parameter request list (option 55).
    let requested = |log: &str| -> Vec<String> {
        log.lines()
            .filter_map(|l| {
                l.split_once("requested options: ")
                    .map(|(_, o)| o.to_string())
            })
            .collect()
    };
    let with_default = macvlan_conf(&daemon.socket, json!({"request": [{"option": "6"}]}));
    call("ADD", &ns, "ctr-d", &with_default, &bin).run().ok();
    call("DEL", &ns, "ctr-d", &with_default, &bin).run().ok();
    let lists = requested(&lan.log());
    let seen = lists.len();
    assert!(seen > 0, "{}", lan.log());
    assert!(
        lists
            .iter()
            .all(|o| o == "6:dns-server, 3:router, 1:netmask"),
        "{lists:?}"
    );

    let skipped = macvlan_conf(
        &daemon.socket,
        json!({"request": [{"option": "6", "skipDefault": true}]}),
    );
    let ns2 = Netns::new();
    call("ADD", &ns2, "ctr-s", &skipped, &bin).run().ok();
    let lists = requested(&lan.log());
    let new = &lists[seen..];
    assert!(
        !new.is_empty() && new.iter().all(|o| o == "6:dns-server"),
        "{lists:?}\n{}",
        lan.log()
    );
    call("DEL", &ns2, "ctr-s", &skipped, &bin).run().ok();
}

// ---------------------------------------------------------------- the socket's guards

/// `eth0` in `ns`, a veth whose peer `host_end` stays in the test host; both down.
/// (With `host_end` up, a daemon that brings `eth0` up gets a carrier and sends.)
fn eth0_down_in(ns: &Netns, host_end: &str) {
    veth_into(ns, host_end, "eth0");
}

fn eth0_is_up(ns: &Netns) -> bool {
    let line = ns.sh("ip", &["-o", "link", "show", "dev", "eth0"]);
    let flags = line
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(flags, _)| flags.to_string())
        .unwrap_or_default();
    flags.split(',').any(|f| f == "UP")
}

fn mode_of(p: &Path) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).expect("stat").permissions())
        & 0o777
}

#[test]
fn the_socket_is_0600_even_when_the_daemon_starts_with_umask_000() {
    enter_test_host();
    let dir = TempDir::new("dhcp-umask");
    let pidfile = dir.0.join("dhcp.pid");
    let pid_arg = pidfile.display().to_string();
    let daemon = Daemon::start_with(&dir, &["-pidfile", &pid_arg], Some(0), None);
    assert_eq!(mode_of(&daemon.socket), 0o600, "{}", daemon.log());
    assert_eq!(mode_of(&dir.0.join("state")), 0o700);
    wait_for("the pidfile", Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| !p.trim().is_empty())
    });
    assert_eq!(
        mode_of(&pidfile),
        0o644,
        "the pidfile is not writable by others"
    );
}

#[test]
fn a_non_root_peer_is_refused() {
    enter_test_host();
    let dir = TempDir::new("dhcp-nobody");
    let daemon = Daemon::start(&dir, &["-timeout", "2s"]);
    // Reachable by anyone: only the peer check stands between `nobody` and root.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
    std::fs::set_permissions(&daemon.socket, std::fs::Permissions::from_mode(0o777))
        .expect("chmod socket");
    let ns = Netns::new();
    eth0_down_in(&ns, "nb-host");
    run_in(None, "ip", &["link", "set", "nb-host", "up"]);
    let conf = json!({"cniVersion": "1.0.0", "name": NET, "type": "dhcp",
                      "ipam": {"type": "dhcp", "daemonSocketPath": daemon.socket}});
    let call = Call::new("dhcp", "ADD", ns.path(), &conf.to_string());
    // A copy nobody can run wherever the checkout lives (CI's may be under a
    // directory only root can enter).
    let bin = dir.0.join("cni-multi");
    // Copied by another process: a write descriptor of ours, inherited by a
    // child another test thread forks meanwhile, would make the exec below
    // fail with "Text file busy".
    let copied = Command::new("cp").arg(BIN).arg(&bin).status().expect("cp");
    assert!(copied.success(), "copy the binary");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod bin");
    let mut child = Command::new(&bin)
        .arg("dhcp")
        .env_clear()
        .envs(&call.env)
        .uid(65534)
        .gid(65534)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the plugin as nobody");
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(call.stdin.as_bytes()).expect("stdin");
    }
    let out = harness::Outcome::of(child);
    let e = out.err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("root"), "{e}\n{}", daemon.log());
    assert!(!eth0_is_up(&ns), "the daemon brought eth0 up for nobody");
    assert!(
        daemon.log().contains("refused") && daemon.log().contains("uid 65534"),
        "{}",
        daemon.log()
    );
    eprintln!("dhcp: nobody's ADD: {msg}");
    // Root is still served.
    let mut status = conf.clone();
    status["cniVersion"] = json!("1.1.0");
    Call::new("dhcp", "STATUS", "", &status.to_string())
        .run()
        .ok();
}

#[test]
fn a_client_dribbling_bytes_is_cut_off_at_the_call_deadline() {
    use std::io::{Read, Write};
    enter_test_host();
    let dir = TempDir::new("dhcp-dribble");
    let daemon = Daemon::start(&dir, &[]);
    let mut stream = std::os::unix::net::UnixStream::connect(&daemon.socket).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    // Only a guard against waiting forever: what is asserted is who ended
    // the call and why, never how long it took.
    let start = Instant::now();
    let guard = Duration::from_secs(60);
    let mut answer = Vec::new();
    let mut sent = 0;
    loop {
        assert!(
            start.elapsed() < guard,
            "a client sending one byte every 2 s still holds its call after {guard:?}"
        );
        if stream.write_all(b" ").is_err() {
            break;
        }
        sent += 1;
        let mut buf = [0u8; 4096];
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                answer.extend_from_slice(format!("(read: {e})").as_bytes());
                break;
            }
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    // Every byte reset no per-read timeout: the call's own deadline ended it.
    // The daemon's log says who ended the call when this fails.
    assert!(
        sent >= 3,
        "cut off after {sent} bytes: {answer:?}\n{}",
        daemon.log()
    );
    assert!(
        answer.contains("\"error\"") && answer.contains("was not sent within 10 s"),
        "{answer:?}\n{}",
        daemon.log()
    );
    assert!(
        daemon.log().contains("cut off a connection"),
        "{}",
        daemon.log()
    );
    eprintln!(
        "dhcp: dribbling client cut off after {sent} bytes: {}",
        answer.trim()
    );
}

#[test]
fn a_netns_path_with_dotdot_is_refused_inside_hostprefix() {
    enter_test_host();
    let dir = TempDir::new("dhcp-hostprefix");
    let prefix = dir.0.join("host");
    std::fs::create_dir(&prefix).expect("prefix dir");
    let daemon = Daemon::start_with(&dir, &["-timeout", "2s"], None, Some(&prefix));
    let ns = Netns::new();
    eth0_down_in(&ns, "hp-host");
    run_in(None, "ip", &["link", "set", "hp-host", "up"]);
    // <prefix>/../../../.. is / whatever the prefix's depth: the real netns.
    let escaping = format!("{}{}", "/..".repeat(32), ns.path());
    let conf = json!({"cniVersion": "1.0.0", "name": NET, "type": "dhcp",
                      "ipam": {"type": "dhcp", "daemonSocketPath": daemon.socket}});
    let e = Call::new("dhcp", "ADD", &escaping, &conf.to_string())
        .run()
        .err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("netns") && msg.contains(".."), "{e}");
    // Trying DHCP there would have brought eth0 up first.
    assert!(
        !eth0_is_up(&ns),
        "the daemon left the host prefix and brought eth0 up"
    );
}
