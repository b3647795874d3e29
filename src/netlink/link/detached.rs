//! The forked child of `delete_link_detached`: raw syscalls only, no allocation
//! (the parent may have other threads, whose locks the child inherits held).

use super::wire;
use crate::netlink::headers::IfInfoMsg;
use crate::netlink::uapi::netlink::{NLM_F_ACK, NLM_F_REQUEST};
use crate::netlink::uapi::rtnetlink::RTM_DELLINK;
use crate::netlink::uapi::sockios::SIOCGSKNS;
use nix::libc;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

const SEQ: u32 = 1;

pub enum Report {
    /// The child has not finished.
    Pending,
    /// The child's errno (0: deleted).
    Done(i32),
    /// The child ended without reporting.
    Lost,
}

pub struct Child {
    report: OwnedFd,
    pid: libc::pid_t,
}

/// Children not reaped when their `Child` went away (still tearing down).
/// Each is reaped by a later spawn, so a process that deletes many links
/// (cnitool GC) keeps no more zombies than deletes in flight.
static UNREAPED: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

/// Reaps `pid` if it has ended; true when it is gone.
fn reap(pid: libc::pid_t) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on our own child, without blocking.
    let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    got == pid || got < 0
}

fn reap_finished() {
    if let Ok(mut pids) = UNREAPED.lock() {
        pids.retain(|pid| !reap(*pid));
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !reap(self.pid)
            && let Ok(mut pids) = UNREAPED.lock()
        {
            pids.push(self.pid);
        }
    }
}

/// How many children are not reaped yet (for tests).
pub fn unreaped() -> usize {
    reap_finished();
    UNREAPED.lock().map(|p| p.len()).unwrap_or(0)
}

impl Child {
    /// Waits up to `timeout` for the child's report.
    pub fn wait(&self, timeout: Duration) -> Report {
        let mut fds = [libc::pollfd {
            fd: self.report.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: timeout.subsec_nanos().into(),
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let ready = unsafe { libc::ppoll(fds.as_mut_ptr(), 1, &ts, std::ptr::null()) };
        if ready == 0
            || (ready < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR))
        {
            return Report::Pending;
        }
        let mut code = [0u8; 4];
        // SAFETY: reads at most 4 bytes into `code`.
        let n = unsafe { libc::read(self.report.as_raw_fd(), code.as_mut_ptr().cast(), 4) };
        if n == 4 {
            Report::Done(i32::from_ne_bytes(code))
        } else {
            Report::Lost
        }
    }
}

/// Forks a child that deletes link `index` in the namespace of `sock`.
pub fn spawn_delete(sock: RawFd, index: u32) -> std::io::Result<Child> {
    reap_finished();
    // `as _`: the request parameter is c_ulong in glibc and c_int in musl.
    // SAFETY: plain ioctl returning a new descriptor (or -1).
    let ns = unsafe { libc::ioctl(sock, SIOCGSKNS as _) };
    if ns < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `ns` was just returned to us and is owned by nobody else.
    let ns = unsafe { OwnedFd::from_raw_fd(ns) };
    let mut pipe = [0; 2];
    // SAFETY: `pipe` has room for the two descriptors.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    let mut request = Vec::with_capacity(32);
    let flags = NLM_F_REQUEST | NLM_F_ACK;
    wire::frame(
        &mut request,
        RTM_DELLINK,
        flags,
        SEQ,
        &IfInfoMsg {
            index,
            ..IfInfoMsg::default()
        }
        .bytes(),
    );
    // SAFETY: the child runs only async-signal-safe syscalls on memory
    // prepared before the fork, then _exit()s.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        // SAFETY: in the forked child, with both descriptors open and the
        // request built before the fork; `child` never returns.
        0 => unsafe { child(ns.as_raw_fd(), write.as_raw_fd(), &request) },
        pid => Ok(Child { report: read, pid }),
    }
}

/// Closes every descriptor but `keep` (two of them).
pub(crate) unsafe fn close_all_but(keep: [RawFd; 2]) {
    // Open descriptors are never negative.
    let (lo, hi) = (
        keep[0].min(keep[1]).cast_unsigned(),
        keep[0].max(keep[1]).cast_unsigned(),
    );
    let ranges = [
        (0, lo.checked_sub(1)),
        (lo + 1, hi.checked_sub(1)),
        (hi + 1, Some(u32::MAX)),
    ];
    for (first, last) in ranges {
        let Some(last) = last.filter(|last| *last >= first) else {
            continue;
        };
        // SAFETY: close_range(2) on plain numbers; closing is all it does.
        if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } != 0 {
            // Before Linux 5.9: one by one, up to a common limit.
            for fd in first..=last.min(4095) {
                // SAFETY: as above.
                unsafe { libc::close(fd.cast_signed()) };
            }
        }
    }
}

/// The forked child's whole life: enter `ns`, send `request`, report, `_exit`.
///
/// # Safety
/// Only in the child of a fork: it makes async-signal-safe calls alone.
unsafe fn child(ns: RawFd, report: RawFd, request: &[u8]) -> ! {
    // SAFETY: every call below is a raw syscall on our own descriptors and
    // stack or pre-fork memory.
    unsafe {
        close_all_but([ns, report]);
        // The parent may stop reading once the link is unlisted.
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let errno = delete(ns, request);
        libc::write(report, errno.to_ne_bytes().as_ptr().cast(), 4);
        libc::_exit(0)
    }
}

/// Sends the request from a socket in namespace `ns`; the kernel's errno.
unsafe fn delete(ns: RawFd, request: &[u8]) -> i32 {
    let last_errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: raw syscalls on our descriptors, buffers on this stack.
    unsafe {
        if libc::setns(ns, libc::CLONE_NEWNET) != 0 {
            return last_errno();
        }
        let sock = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        );
        if sock < 0 {
            return last_errno();
        }
        if libc::send(sock, request.as_ptr().cast(), request.len(), 0) < 0 {
            return last_errno();
        }
        let mut buf = [0u8; 4096];
        loop {
            let n = libc::recv(sock, buf.as_mut_ptr().cast(), buf.len(), 0);
            if n < 0 {
                return last_errno();
            }
            let got = &buf[..n.unsigned_abs()];
            for msg in wire::messages(got) {
                if msg.seq == SEQ && msg.ty == wire::NLMSG_ERROR {
                    let code = msg.payload.get(..4).and_then(wire::as_u32).unwrap_or(0);
                    return i32::try_from(code.cast_signed().unsigned_abs()).unwrap_or(i32::MAX);
                }
            }
        }
    }
}
