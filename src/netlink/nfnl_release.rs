//! The release of an nfnetlink socket, left to a detached process.
//!
//! When the last reference to a bound nfnetlink socket goes, nf_tables takes
//! its commit lock and waits for the destruction of every object deleted so
//! far (an RCU grace period, 15-25 ms here), before the closing call returns:
//! a plugin that deleted rules would spend most of its DEL in its own exit.
//! Nothing the caller can observe depends on that wait (the rules are gone
//! at commit), so the socket's last reference moves to a grandchild that
//! keeps no other descriptor (a runtime reading our stdout waits for nobody)
//! and is reparented at once (no zombie for a long-lived caller to reap).

use nix::libc;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once this process committed a batch that deleted or replaced
/// something: from then on closing any nfnetlink socket waits.
static DELETED: AtomicBool = AtomicBool::new(false);

/// Records that a committed batch left objects to destroy.
pub(crate) fn note_deleted() {
    DELETED.store(true, Ordering::Relaxed);
}

/// Whether closing an nfnetlink socket now would wait for destruction.
pub(crate) fn release_waits() -> bool {
    DELETED.load(Ordering::Relaxed)
}

/// Gives a grandchild a reference to `sock`, to be the last one. Returns the
/// descriptor whose close lets the grandchild go: close it only after the
/// caller's own `sock`, or the caller's close may still be the last. None when
/// no process could be made (the caller's close then waits, as it would have).
pub(crate) fn hand_over(sock: RawFd) -> Option<OwnedFd> {
    let mut pipe = [0; 2];
    // SAFETY: `pipe` has room for the two descriptors.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: both were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    let read_fd = std::os::fd::AsRawFd::as_raw_fd(&read);
    // SAFETY: the child makes async-signal-safe syscalls alone, then _exit()s.
    match unsafe { libc::fork() } {
        -1 => None,
        // SAFETY: in the forked child; `child` never returns.
        0 => unsafe { child(sock, read_fd) },
        pid => {
            let mut status = 0;
            // SAFETY: waits for our own child, which exits right after its fork.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            drop(read);
            Some(write)
        }
    }
}

/// The child: keeps `sock` and the pipe's read end only, forks the grandchild
/// and exits; the grandchild waits for the pipe's end of file (every writer
/// gone, the caller's socket closed before) and exits, its socket last.
///
/// # Safety
/// Only in the child of a fork: it makes async-signal-safe calls alone.
unsafe fn child(sock: RawFd, read: RawFd) -> ! {
    // SAFETY: raw syscalls on our own descriptors and a buffer on this stack.
    unsafe {
        super::link::close_all_but([sock, read]);
        if libc::fork() == 0 {
            let mut byte = [0u8; 1];
            while libc::read(read, byte.as_mut_ptr().cast(), 1) != 0 {
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    break;
                }
            }
        }
        libc::_exit(0)
    }
}

#[cfg(test)]
#[path = "nfnl_release_tests.rs"]
mod tests;
