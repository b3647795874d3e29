//! The netlink layer's detached delete, used by every DEL that removes a link.

mod harness;

use cni_multi::netlink::Socket;
use cni_multi::netlink::link::{Kind, NewLink};
use harness::enter_test_host;
use nix::libc;
use std::os::fd::AsRawFd;

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
