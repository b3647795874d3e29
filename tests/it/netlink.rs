//! The netlink layer on a real kernel: the detached delete every DEL that
//! removes a link uses; VXLAN links, permanent neighbours, FDB entries and
//! onlink routes (a VXLAN overlay's per-peer state), each checked with iproute2.

use crate::harness;

use cni_multi::netlink::Socket;
use cni_multi::netlink::addr::Family;
use cni_multi::netlink::link::{Kind, LinkKind, NewLink, VxlanInfo, unreaped_detached_deletes};
use cni_multi::netlink::route::{RT_TABLE_MAIN, Route};
use harness::{enter_test_host, kernel_supports, run_in, skip};
use nix::libc;
use std::net::IpAddr;
use std::os::fd::AsRawFd;

/// One test at a time: a child forked for another test's delete (or a
/// command another test runs) holds copies of our descriptors until its first
/// syscalls close them.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn veth(sock: &mut Socket, name: &str, peer: &str) -> u32 {
    let kind = Kind::Veth {
        peer: peer.into(),
        peer_netns: None,
    };
    sock.create_link(&NewLink::new(name, kind))
        .expect("create veth");
    sock.link_by_name(name).expect("new veth").index
}

#[test]
fn detached_delete_returns_with_both_ends_gone() {
    let _serial = serial();
    enter_test_host();
    let mut sock = Socket::open().expect("netlink socket");
    let index = veth(&mut sock, "dt0", "dt1");

    sock.delete_link_detached(index).expect("detached delete");
    for name in ["dt0", "dt1"] {
        let err = sock.link_by_name(name).expect_err("link still listed");
        assert!(err.is_not_found(), "{name}: {err}");
    }
    // Already gone: still Ok (DEL is idempotent).
    sock.delete_link_detached(index).expect("second delete");
    // The name is free again at once.
    veth(&mut sock, "dt0", "dt1");
}

#[test]
fn detached_delete_child_holds_none_of_our_descriptors() {
    let _serial = serial();
    enter_test_host();
    let mut sock = Socket::open().expect("netlink socket");
    let index = veth(&mut sock, "dh0", "dh1");
    // Stands in for a runtime's stdout pipe: if the child kept a copy of the
    // write end, a reader would wait for the child's whole teardown.
    let (read_end, write_end) = nix::unistd::pipe().expect("pipe");

    sock.delete_link_detached(index).expect("detached delete");
    drop(write_end);
    let mut fds = [libc::pollfd {
        fd: read_end.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: one valid pollfd; zero timeout.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) };
    assert_eq!(ready, 1, "write end still open somewhere");
    assert_ne!(
        fds[0].revents & libc::POLLHUP,
        0,
        "no hang-up: write end held"
    );
}

/// Our children that are zombies (ended, not reaped).
fn zombie_children() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        })
        .count()
}

#[test]
fn detached_delete_children_are_reaped() {
    let _serial = serial();
    enter_test_host();
    let mut sock = Socket::open().expect("netlink socket");
    for i in 0..6 {
        let index = veth(&mut sock, &format!("dz{i}"), &format!("dp{i}"));
        sock.delete_link_detached(index).expect("detached delete");
    }
    // Every child ends once the kernel's teardown is done.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while unreaped_detached_deletes() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(unreaped_detached_deletes(), 0);
    assert_eq!(zombie_children(), 0);
}

/// Enters a fresh test host with an underlay veth `ul0` (10.9.0.1/24, up):
/// a socket there and `ul0`'s index. `None` (the test skipped) when the
/// kernel has no VXLAN.
fn vxlan_host(test: &str) -> Option<(Socket, u32)> {
    enter_test_host();
    if let Err(reason) = kernel_supports("vxlan", false, &["id", "1", "dstport", "8472"]) {
        skip(test, &reason);
        return None;
    }
    let mut sock = Socket::open().expect("netlink socket");
    let ul0 = veth(&mut sock, "ul0", "ul1");
    run_in(None, "ip", &["addr", "add", "10.9.0.1/24", "dev", "ul0"]);
    run_in(None, "ip", &["link", "set", "ul0", "up"]);
    Some((sock, ul0))
}

const VTEP_MAC: [u8; 6] = [0x0e, 0x11, 0x22, 0x33, 0x44, 0x55];
const PEER_MAC: [u8; 6] = [0x0e, 0xaa, 0xbb, 0xcc, 0xdd, 0xee];
const FLANNEL_PROTO: u8 = 0x7a;

/// flannel.1 as flanneld makes it: VNI 1 over `ul0`, local 10.9.0.1, port
/// 8472, no learning, its MAC and MTU set at creation; up. Its index.
fn flannel_1(sock: &mut Socket, ul0: u32) -> u32 {
    let info = VxlanInfo::new(1, Some(ul0), Some(ip("10.9.0.1")), 8472);
    let mut spec = NewLink::new("flannel.1", Kind::Vxlan(info));
    spec.mtu = Some(1450);
    spec.mac = Some(VTEP_MAC);
    sock.create_link(&spec).expect("create flannel.1");
    run_in(None, "ip", &["link", "set", "flannel.1", "up"]);
    sock.link_by_name("flannel.1").expect("flannel.1").index
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

/// Non-empty lines of an iproute2 listing.
fn lines(out: &str) -> Vec<String> {
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn a_vxlan_link_reads_back_as_created_and_as_ip_shows_it() {
    let _serial = serial();
    let Some((mut sock, ul0)) = vxlan_host("a_vxlan_link_reads_back_as_created_and_as_ip_shows_it")
    else {
        return;
    };
    let flannel = flannel_1(&mut sock, ul0);

    let link = sock.link_by_index(flannel).expect("flannel.1");
    assert_eq!(link.kind, LinkKind::Vxlan);
    assert_eq!(
        link.vxlan(),
        Some(VxlanInfo::new(1, Some(ul0), Some(ip("10.9.0.1")), 8472))
    );
    assert_eq!((link.mac.as_slice(), link.mtu), (&VTEP_MAC[..], 1450));
    let shown = run_in(None, "ip", &["-d", "link", "show", "flannel.1"]);
    for want in [
        "mtu 1450",
        "link/ether 0e:11:22:33:44:55",
        "vxlan id 1 local 10.9.0.1 dev ul0",
        "dstport 8472",
        "nolearning",
    ] {
        assert!(shown.contains(want), "no {want:?} in {shown}");
    }
    assert!(!shown.contains(" gbp"), "{shown}");

    // IPv6 source, GBP, learning on, another port; no underlay link.
    let v6 = VxlanInfo {
        learning: true,
        gbp: true,
        ..VxlanInfo::new(0xabcde, None, Some(ip("fd00::1")), 4789)
    };
    sock.create_link(&NewLink::new("vx6", Kind::Vxlan(v6)))
        .expect("create vx6");
    assert_eq!(sock.link_by_name("vx6").expect("vx6").vxlan(), Some(v6));
    let shown = run_in(None, "ip", &["-d", "link", "show", "vx6"]);
    for want in ["vxlan id 703710 local fd00::1", "dstport 4789", " gbp"] {
        assert!(shown.contains(want), "no {want:?} in {shown}");
    }
    assert!(!shown.contains("nolearning"), "{shown}");
    // Port 0 leaves the kernel's default; other kinds report no VXLAN.
    sock.create_link(&NewLink::new(
        "vx0",
        Kind::Vxlan(VxlanInfo::new(2, None, None, 0)),
    ))
    .expect("create vx0");
    let vx0 = sock
        .link_by_name("vx0")
        .expect("vx0")
        .vxlan()
        .expect("vxlan");
    assert_ne!(vx0.port, 0);
    assert_eq!((vx0.link, vx0.local), (None, None));
    assert_eq!(sock.link_by_index(ul0).expect("ul0").vxlan(), None);
}

#[test]
fn permanent_neighbours_are_replaced_idempotently_and_deleted() {
    let _serial = serial();
    let Some((mut sock, ul0)) =
        vxlan_host("permanent_neighbours_are_replaced_idempotently_and_deleted")
    else {
        return;
    };
    let flannel = flannel_1(&mut sock, ul0);
    let peer = ip("10.244.1.0");

    for _ in 0..2 {
        sock.replace_neighbour(flannel, peer, PEER_MAC)
            .expect("replace neighbour");
    }
    let shown = lines(&run_in(
        None,
        "ip",
        &["-4", "neigh", "show", "dev", "flannel.1"],
    ));
    assert_eq!(
        shown,
        ["10.244.1.0 lladdr 0e:aa:bb:cc:dd:ee PERMANENT"],
        "exactly one, permanent"
    );
    let ours = sock.neighbours(flannel, Family::V4).expect("neighbours");
    assert_eq!(ours.len(), 1, "{ours:?}");
    assert_eq!((ours[0].ip, ours[0].mac), (peer, Some(PEER_MAC)));
    assert!(ours[0].is_permanent());
    // Another link's entries are not this link's.
    sock.replace_neighbour(ul0, ip("10.9.0.7"), PEER_MAC)
        .expect("neighbour on ul0");
    assert_eq!(sock.neighbours(flannel, Family::V4).expect("dump").len(), 1);

    // A new MAC replaces the entry (a peer's VTEP after its reboot).
    let new_mac = [0x0e, 1, 2, 3, 4, 5];
    sock.replace_neighbour(flannel, peer, new_mac)
        .expect("replace neighbour");
    let ours = sock.neighbours(flannel, Family::V4).expect("neighbours");
    assert_eq!(
        ours.iter().map(|n| n.mac).collect::<Vec<_>>(),
        [Some(new_mac)]
    );

    // IPv6 alike.
    sock.replace_neighbour(flannel, ip("fd10::1"), PEER_MAC)
        .expect("replace v6 neighbour");
    let shown = lines(&run_in(
        None,
        "ip",
        &["-6", "neigh", "show", "dev", "flannel.1"],
    ));
    assert_eq!(shown, ["fd10::1 lladdr 0e:aa:bb:cc:dd:ee PERMANENT"]);
    // The kernel may hold NOARP entries of its own (IPv6 multicast), which
    // `ip neigh` hides and a dump returns: ours are the permanent ones.
    let v6 = sock.neighbours(flannel, Family::V6).expect("v6");
    let permanent: Vec<_> = v6.iter().filter(|n| n.is_permanent()).collect();
    assert_eq!(permanent.len(), 1, "{v6:?}");
    assert_eq!(permanent[0].ip, ip("fd10::1"));

    sock.del_neighbour(flannel, peer).expect("delete neighbour");
    assert_eq!(
        run_in(None, "ip", &["-4", "neigh", "show", "dev", "flannel.1"]),
        ""
    );
    assert!(
        sock.neighbours(flannel, Family::V4)
            .expect("dump")
            .is_empty()
    );
    let again = sock.del_neighbour(flannel, peer).expect_err("gone");
    assert!(again.is_not_found(), "{again}");
    sock.del_neighbour_if_present(flannel, peer)
        .expect("gone is fine");
}

#[test]
fn fdb_entries_are_replaced_idempotently_and_deleted() {
    let _serial = serial();
    let Some((mut sock, ul0)) = vxlan_host("fdb_entries_are_replaced_idempotently_and_deleted")
    else {
        return;
    };
    let flannel = flannel_1(&mut sock, ul0);
    let remote = ip("10.9.0.2");

    for _ in 0..2 {
        sock.replace_fdb(flannel, PEER_MAC, remote)
            .expect("replace fdb");
    }
    let shown = lines(&run_in(
        None,
        "bridge",
        &["fdb", "show", "dev", "flannel.1"],
    ));
    assert_eq!(
        shown,
        ["0e:aa:bb:cc:dd:ee dst 10.9.0.2 self permanent"],
        "exactly one, permanent"
    );
    let ours = sock.fdb_entries(flannel).expect("fdb");
    assert_eq!(ours.len(), 1, "{ours:?}");
    assert_eq!((ours[0].mac, ours[0].dst), (PEER_MAC, Some(remote)));
    assert!(ours[0].is_permanent());
    // The underlay veth lists its own and multicast MACs, without a remote:
    // none of them is an entry.
    assert!(sock.fdb_entries(ul0).expect("ul0's fdb").is_empty());

    // Replace moves the MAC to a new remote rather than adding one.
    let moved = ip("10.9.0.3");
    sock.replace_fdb(flannel, PEER_MAC, moved)
        .expect("replace fdb");
    let ours = sock.fdb_entries(flannel).expect("fdb");
    assert_eq!(
        ours.iter().map(|f| f.dst).collect::<Vec<_>>(),
        [Some(moved)]
    );

    sock.del_fdb(flannel, PEER_MAC, moved).expect("delete fdb");
    assert_eq!(
        run_in(None, "bridge", &["fdb", "show", "dev", "flannel.1"]),
        ""
    );
    assert!(sock.fdb_entries(flannel).expect("fdb").is_empty());
    let again = sock.del_fdb(flannel, PEER_MAC, moved).expect_err("gone");
    assert!(again.is_not_found(), "{again}");
    sock.del_fdb_if_present(flannel, PEER_MAC, moved)
        .expect("gone is fine");
}

#[test]
fn onlink_routes_with_a_protocol_are_replaced_idempotently_and_deleted() {
    let _serial = serial();
    let Some((mut sock, ul0)) =
        vxlan_host("onlink_routes_with_a_protocol_are_replaced_idempotently_and_deleted")
    else {
        return;
    };
    let flannel = flannel_1(&mut sock, ul0);
    // flannel.1 has no address in 10.244.1.0/24: only onlink reaches the gateway.
    let mut route = Route::new("10.244.1.0/24".parse().expect("net"));
    route.gw = Some(ip("10.244.1.0"));
    route.oif = Some(flannel);
    route.onlink = true;
    route.protocol = FLANNEL_PROTO;

    for _ in 0..2 {
        sock.replace_route(&route).expect("replace route");
    }
    let shown = lines(&run_in(None, "ip", &["route", "show", "dev", "flannel.1"]));
    assert_eq!(
        shown,
        ["10.244.1.0/24 via 10.244.1.0 proto 122 onlink"],
        "exactly one"
    );
    let ours: Vec<Route> = sock
        .routes(Family::V4, RT_TABLE_MAIN, Some(flannel))
        .expect("routes")
        .into_iter()
        .filter(|r| r.protocol == FLANNEL_PROTO)
        .collect();
    assert_eq!(ours, [route.clone()]);

    sock.del_route(&route).expect("delete route");
    assert_eq!(
        run_in(None, "ip", &["route", "show", "dev", "flannel.1"]),
        ""
    );
    let left = sock
        .routes(Family::V4, RT_TABLE_MAIN, Some(flannel))
        .expect("routes");
    assert!(left.is_empty(), "{left:?}");
    sock.del_route_if_present(&route).expect("gone is fine");
}
