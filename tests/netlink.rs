//! The netlink layer's detached delete, used by every DEL that removes a link.

mod harness;

use cni_multi::netlink::Socket;
use cni_multi::netlink::link::{Kind, NewLink, unreaped_detached_deletes};
use harness::enter_test_host;
use nix::libc;
use std::os::fd::AsRawFd;

/// One test at a time: a child forked for another test's delete holds copies
/// of our descriptors until its first syscalls close them.
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
