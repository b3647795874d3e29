//! One rtnetlink layer for every plugin, on neli's raw `NlSocket` with our own
//! request loop: it keeps the kernel's extended-ACK text and the errno, which
//! neli's router drops (see netlink-notes.md), and reads into one buffer per
//! socket (neli's handle re-zeroes a 32 KB pool buffer after every read).
// Wire formats mix u8/u16/u32/i32 fields: a silent `as` could truncate or wrap
// a value on its way to the kernel, so each conversion says what it does.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless
)]

pub mod addr;
pub mod conntrack;
/// Display for the values that reach error texts.
mod display;
pub mod genl;
pub mod headers;
pub mod link;
pub mod mptcp;
pub mod neigh;
mod netconf;
pub mod nfnl;
mod nfnl_release;
pub mod nsid;
pub mod route;
pub mod rule;
pub mod tc;
pub mod uapi;
pub mod wire;

use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::consts::socket::{Msg, NlFamily};
use neli::socket::NlSocket;
use neli::types::Buffer;
use neli::utils::Groups;
use nix::libc;
use std::fmt;
use std::os::fd::AsRawFd;
use uapi::netlink::NLMSG_MIN_TYPE;
use wire::{NLM_F_DUMP_INTR, NLMSG_DONE, NLMSG_ERROR};

/// A failed netlink operation: what was tried, the kernel's errno and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub op: String,
    /// Positive errno (`libc::ENODEV`, …); 0 when the failure was not the kernel's.
    pub errno: i32,
    pub extack: Option<String>,
    pub detail: String,
    /// What the operation acted on, where the errno alone does not say what
    /// a user can do about it (an EEXIST of a link name, of an address, of a route).
    pub object: Object,
    /// The errno as an error value, for `source()`.
    cause: Option<nix::errno::Errno>,
}

/// What a failed operation acted on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Object {
    /// The link of this name: created, or another renamed to it.
    Link(String),
    /// An address added to a link.
    Address,
    /// A route added.
    Route,
    /// Anything else.
    #[default]
    Other,
}

impl Error {
    fn local(op: &str, detail: impl fmt::Display) -> Self {
        Error {
            op: op.to_string(),
            errno: 0,
            extack: None,
            detail: detail.to_string(),
            object: Object::Other,
            cause: None,
        }
    }

    /// This error, about `object`.
    pub fn about(self, object: Object) -> Self {
        Error { object, ..self }
    }

    /// A failed system call of this layer (an ioctl, opening a device), with
    /// its errno as the cause.
    pub fn os(op: impl Into<String>, errno: nix::errno::Errno) -> Self {
        let mut e = kernel_error("", errno as i32, None);
        e.op = op.into();
        e
    }

    /// As `os`, from an io::Error (its errno when it has one).
    pub fn io(op: impl Into<String>, e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(errno) => Error::os(op, nix::errno::Errno::from_raw(errno)),
            None => Error::local(&op.into(), e),
        }
    }

    pub fn is(&self, errno: i32) -> bool {
        self.errno == errno
    }

    /// The object is already gone: what idempotent DEL tolerates.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self.errno,
            libc::ENODEV | libc::ENOENT | libc::ESRCH | libc::EADDRNOTAVAIL
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.detail)?;
        if let Some(text) = &self.extack {
            write!(f, " ({text})")?;
        }
        Ok(())
    }
}

/// The kernel's errno is the cause (its text is already in `detail`).
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A netlink socket with one receive buffer, reused for every read.
pub(crate) struct Channel {
    sock: NlSocket,
    buf: Vec<u8>,
}

impl Channel {
    /// Opens a socket of `family` in the calling thread's network namespace.
    pub(crate) fn open(family: NlFamily, buf_len: usize) -> std::io::Result<Channel> {
        let sock = NlSocket::connect(family, None, Groups::empty())?;
        // Best effort: older kernels lack it and still work.
        let _ = sock.enable_ext_ack(true);
        // A reply that never comes (a kernel bug, a wedged subsystem) ends in an
        // error after RECV_TIMEOUT instead of a plugin that never returns.
        // SAFETY: the descriptor belongs to `sock`, which outlives this borrow.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(sock.as_raw_fd()) };
        nix::sys::socket::setsockopt(
            &fd,
            nix::sys::socket::sockopt::ReceiveTimeout,
            // 30 s: within every platform's time_t, so `seconds` cannot panic.
            &<nix::sys::time::TimeVal as nix::sys::time::TimeValLike>::seconds(
                i64::try_from(RECV_TIMEOUT.as_secs()).unwrap_or(30),
            ),
        )?;
        Ok(Channel {
            sock,
            buf: vec![0; buf_len],
        })
    }

    pub(crate) fn socket(&self) -> &NlSocket {
        &self.sock
    }

    pub(crate) fn send(&self, bytes: &[u8]) -> std::io::Result<()> {
        self.sock.send(bytes, Msg::empty()).map(|_| ())
    }

    /// One datagram: every message the kernel put in it. MSG_TRUNC makes the
    /// kernel report a datagram's full size, so one that did not fit is an
    /// error rather than messages silently lost; a timeout says so.
    pub(crate) fn recv(&mut self) -> std::io::Result<&[u8]> {
        let n = match self.sock.recv(&mut self.buf[..], Msg::TRUNC) {
            Ok((n, _)) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "no reply from the kernel within {} s",
                        RECV_TIMEOUT.as_secs()
                    ),
                ));
            }
            Err(e) => return Err(e),
        };
        if n > self.buf.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "netlink reply of {n} bytes truncated to the {}-byte buffer",
                    self.buf.len()
                ),
            ));
        }
        Ok(&self.buf[..n])
    }
}

impl Channel {
    /// Every reply to request `seq` until its ACK or DONE, each without the
    /// 4-byte family header (`nfgenmsg`, `genlmsghdr`) that precedes its
    /// attributes; an error reply is the error.
    pub(crate) fn replies(&mut self, seq: u32, op: &str) -> Result<Vec<Vec<u8>>> {
        let mut objects = Vec::new();
        loop {
            let datagram = self.recv().map_err(|e| Error::local(op, e))?;
            for msg in wire::messages(datagram) {
                if msg.seq != seq {
                    continue;
                }
                match msg.ty {
                    NLMSG_DONE | NLMSG_ERROR => {
                        return match wire::error_of(&msg) {
                            (0, _) => Ok(objects),
                            (errno, extack) => Err(kernel_error(op, errno, extack)),
                        };
                    }
                    _ => objects.push(msg.payload.get(4..).unwrap_or_default().to_vec()),
                }
            }
        }
    }
}

/// An error reply as our `Error`: the errno's text as the C library words it
/// ("File exists"), without Rust's "(os error 17)".
fn kernel_error(op: &str, errno: i32, extack: Option<String>) -> Error {
    let cause = nix::errno::Errno::from_raw(errno);
    Error {
        op: op.to_string(),
        errno,
        extack,
        detail: cause.desc().to_string(),
        object: Object::Other,
        cause: Some(cause),
    }
}

/// How long any netlink socket waits for a reply.
pub const RECV_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// An rtnetlink socket bound to the namespace of the thread that opened it.
pub struct Socket {
    channel: Channel,
    seq: u32,
}

const DUMP_RETRIES: usize = 5;
/// neli's receive size: a dump datagram of rtnetlink fits.
const RECV_LEN: usize = 32 * 1024;

impl Socket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Socket> {
        let channel = Channel::open(NlFamily::Route, RECV_LEN)
            .map_err(|e| Error::local("open netlink socket", e))?;
        // Best effort, as extended ACKs.
        let _ = channel.socket().enable_strict_checking(true);
        Ok(Socket { channel, seq: 0 })
    }

    /// A change (NEW/SET/DEL): one request, one ACK.
    pub fn change(&mut self, op: &str, ty: Rtm, flags: NlmF, payload: Buffer) -> Result<()> {
        self.transact(op, ty, flags, payload.as_ref()).map(|_| ())
    }

    /// A GET: one request, the replies' payloads. Dumps interrupted by a
    /// concurrent change (NLM_F_DUMP_INTR) are retried, as the reference's netlinksafe does.
    pub fn get(&mut self, op: &str, ty: Rtm, flags: NlmF, payload: Buffer) -> Result<Vec<Buffer>> {
        let mut last = None;
        for _ in 0..DUMP_RETRIES {
            match self.transact(op, ty, flags, payload.as_ref()) {
                Err(e) if e.is(libc::EINTR) => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| Error::local(op, "dump interrupted")))
    }

    /// A change built apart from the socket (`Request`): one request, one ACK.
    pub(crate) fn apply(&mut self, op: &str, request: &Request) -> Result<()> {
        self.transact(op, request.ty, request.flags, &request.body)
            .map(|_| ())
    }

    fn transact(&mut self, op: &str, ty: Rtm, flags: NlmF, body: &[u8]) -> Result<Vec<Buffer>> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let request = request_bytes(ty, flags, seq, body);
        self.channel
            .send(&request)
            .map_err(|e| Error::local(op, e))?;

        let mut replies = Vec::new();
        let mut interrupted = false;
        loop {
            let datagram = self.channel.recv().map_err(|e| Error::local(op, e))?;
            for msg in wire::messages(datagram) {
                if msg.seq != seq {
                    continue;
                }
                if msg.flags & NLM_F_DUMP_INTR != 0 {
                    interrupted = true;
                }
                match msg.ty {
                    NLMSG_ERROR | NLMSG_DONE => {
                        let (errno, extack) = wire::error_of(&msg);
                        if errno != 0 {
                            return Err(kernel_error(op, errno, extack));
                        }
                        return finish(op, interrupted, replies);
                    }
                    // NOOP / OVERRUN: control messages, not replies.
                    ty if ty < NLMSG_MIN_TYPE => {}
                    _ => replies.push(Buffer::from(msg.payload)),
                }
            }
        }
    }
}

/// A change request, built by a pure function so that tests can compare its
/// bytes with the request iproute2 sends for the same command.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) ty: Rtm,
    pub(crate) flags: NlmF,
    pub(crate) body: Vec<u8>,
}

impl Request {
    pub(crate) fn new(ty: Rtm, flags: NlmF, body: wire::Body) -> Request {
        Request {
            ty,
            flags,
            body: body.into_bytes(),
        }
    }

    /// The bytes sent for it with sequence number `seq`.
    #[cfg(test)]
    pub(crate) fn bytes(&self, seq: u32) -> Vec<u8> {
        request_bytes(self.ty, self.flags, seq, &self.body)
    }
}

/// `nlmsghdr` then `body`. Always with an ACK: without one a change gives no
/// reply to wait for.
fn request_bytes(ty: Rtm, flags: NlmF, seq: u32, body: &[u8]) -> Vec<u8> {
    let flags = (flags | NlmF::REQUEST | NlmF::ACK).bits();
    let mut request = Vec::with_capacity(wire::HDR_LEN + body.len());
    wire::frame(&mut request, u16::from(ty), flags, seq, body);
    request
}

fn finish<R>(op: &str, interrupted: bool, replies: Vec<R>) -> Result<Vec<R>> {
    if interrupted {
        let mut e = Error::local(op, "dump interrupted");
        e.errno = libc::EINTR;
        return Err(e);
    }
    Ok(replies)
}
