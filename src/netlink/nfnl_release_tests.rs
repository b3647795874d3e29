use super::*;
use std::os::fd::AsRawFd;

/// Whether reading `fd` would end (end of file) rather than block.
fn ended(fd: RawFd, wait_ms: i32) -> bool {
    let mut p = [libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(p.as_mut_ptr(), 1, wait_ms) };
    n == 1 && p[0].revents & (libc::POLLHUP | libc::POLLIN) != 0
}

#[test]
fn the_grandchild_holds_the_last_reference_until_released() {
    // A pipe's write end stands in for the socket: its reader sees end
    // of file exactly when the last reference to it goes.
    let mut pipe = [0; 2];
    // SAFETY: room for two descriptors.
    let made = unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(made, 0);
    // SAFETY: just created, owned by nobody else.
    let (reader, stand_in) =
        unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    let release = hand_over(stand_in.as_raw_fd()).expect("a process to hand over to");
    drop(stand_in);
    // Our reference is gone, the grandchild's is not.
    assert!(!ended(reader.as_raw_fd(), 200));
    drop(release);
    assert!(ended(reader.as_raw_fd(), 10_000));
}
