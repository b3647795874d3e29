//! SCTP mappings: the reference's rules, and an association through the
//! DNAT where the kernel has SCTP.

use super::*;

/// An SCTP socket (one-to-one style); Err where the kernel has no SCTP.
fn sctp_socket() -> nix::Result<std::os::fd::OwnedFd> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType, socket};
    socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::Sctp,
    )
}

/// An SCTP server in `netns` on `port` answering every association with
/// `reply`; it lives as long as the test process (the thread blocks in accept).
fn sctp_server(netns: &str, port: u16, reply: &'static str) {
    use nix::sys::socket::{
        Backlog, MsgFlags, SockaddrIn, accept, bind, listen, send, setsockopt, sockopt,
    };
    use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
    let (tx, rx) = std::sync::mpsc::channel();
    let file = std::fs::File::open(netns).expect("open netns");
    std::thread::spawn(move || {
        nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
        let sock = sctp_socket().expect("SCTP socket");
        setsockopt(&sock, sockopt::ReuseAddr, &true).expect("SO_REUSEADDR");
        bind(
            sock.as_raw_fd(),
            &SockaddrIn::from(std::net::SocketAddrV4::new(
                std::net::Ipv4Addr::UNSPECIFIED,
                port,
            )),
        )
        .expect("bind sctp");
        listen(&sock, Backlog::new(8).expect("backlog")).expect("listen sctp");
        let _ = tx.send(());
        while let Ok(fd) = accept(sock.as_raw_fd()) {
            // SAFETY: accept(2) just returned this descriptor; nothing else owns it.
            let conn = unsafe { OwnedFd::from_raw_fd(fd) };
            let _ = send(conn.as_raw_fd(), reply.as_bytes(), MsgFlags::empty());
        }
    });
    rx.recv().expect("sctp server ready");
}

/// What an SCTP association from `netns` (None: the caller's) to `addr` reads
/// until the server closes it, if it is established within 3 s.
fn sctp_fetch(netns: Option<&str>, addr: &str) -> Option<String> {
    use nix::sys::socket::{MsgFlags, SockaddrIn, connect, recv, setsockopt, sockopt};
    use nix::sys::time::{TimeVal, TimeValLike};
    use std::os::fd::AsRawFd;
    let addr: std::net::SocketAddrV4 = addr.parse().expect("IPv4 socket address");
    harness::in_netns(netns, move || {
        let sock = sctp_socket().ok()?;
        // SO_SNDTIMEO bounds connect(2) for SCTP as for TCP.
        setsockopt(&sock, sockopt::SendTimeout, &TimeVal::seconds(3)).ok()?;
        setsockopt(&sock, sockopt::ReceiveTimeout, &TimeVal::seconds(3)).ok()?;
        connect(sock.as_raw_fd(), &SockaddrIn::from(addr)).ok()?;
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            match recv(sock.as_raw_fd(), &mut buf, MsgFlags::empty()) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) => return None,
            }
        }
        Some(String::from_utf8_lossy(&out).into_owned())
    })
}

/// SCTP mappings get the reference's rules everywhere; where the kernel has
/// SCTP (the stock-kernel lane requires it) an SCTP server in the container
/// answers through the mapped port, from a client and from the host's address,
/// and after DEL the port is no longer mapped.
#[test]
fn sctp_mappings_get_rules_and_are_reachable_where_the_kernel_has_sctp() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({}));
    let before = nat_but_shared();
    let ns = Netns::new();
    let caps = maps(&[(3868, 3868, "sctp", "")]);
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    let rules = nat();
    assert!(
        rules.contains("-p sctp -m sctp --dport 3868 -j DNAT --to-destination"),
        "{rules}"
    );
    assert!(
        rules.contains("-m multiport --dports 3868 -j CNI-DN-"),
        "{rules}"
    );
    let sctp = sctp_socket();
    if let Err(e) = sctp {
        harness::skip(
            "sctp_mappings_get_rules_and_are_reachable_where_the_kernel_has_sctp",
            &format!("kernel has no SCTP sockets ({e}); only the rules were checked"),
        );
    } else {
        drop(sctp);
        sctp_server(ns.path(), 3868, "sctp-hello");
        assert_eq!(
            sctp_fetch(Some(client.path()), "192.0.2.1:3868").as_deref(),
            Some("sctp-hello"),
            "client -> host SCTP port"
        );
        assert_eq!(
            sctp_fetch(None, "192.0.2.1:3868").as_deref(),
            Some("sctp-hello"),
            "host via its address"
        );
    }
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(
        nat_but_shared(),
        before,
        "DEL leaves the nat table as it was, but for the shared chains"
    );
    if sctp_socket().is_ok() {
        assert_eq!(
            sctp_fetch(Some(client.path()), "192.0.2.1:3868"),
            None,
            "no longer mapped after DEL"
        );
    }
}
