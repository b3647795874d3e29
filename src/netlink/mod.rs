//! One rtnetlink layer for every plugin, on neli's `NlSocketHandle` with our own
//! request loop: it keeps the kernel's extended-ACK text and the errno, which
//! neli's router drops (see netlink-notes.md).

pub mod addr;
pub mod conntrack;
pub mod link;
pub mod nfnl;
pub mod route;
pub mod rule;
pub mod sysctl;
pub mod tc;
pub mod tun;
pub mod wire;

use neli::consts::nl::{NlType, NlmF};
use neli::consts::socket::NlFamily;
use neli::nl::{NlPayload, NlmsghdrBuilder};
use neli::socket::synchronous::NlSocketHandle;
use neli::types::Buffer;
use neli::utils::Groups;
use neli::{FromBytesWithInput, Size, ToBytes};
use nix::libc;
use std::fmt;
use std::io::Cursor;

/// A failed netlink operation: what was tried, the kernel's errno and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub op: String,
    /// Positive errno (`libc::ENODEV`, …); 0 when the failure was not the kernel's.
    pub errno: i32,
    pub extack: Option<String>,
    pub detail: String,
}

impl Error {
    fn local(op: &str, detail: impl fmt::Display) -> Self {
        Error {
            op: op.to_string(),
            errno: 0,
            extack: None,
            detail: detail.to_string(),
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

impl std::error::Error for Error {}

impl From<Error> for crate::cni::Error {
    fn from(e: Error) -> Self {
        crate::cni::Error::internal(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// An rtnetlink socket bound to the namespace of the thread that opened it.
pub struct Socket {
    handle: NlSocketHandle,
    seq: u32,
}

const DUMP_RETRIES: usize = 5;

impl Socket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Socket> {
        let handle = NlSocketHandle::connect(NlFamily::Route, None, Groups::empty())
            .map_err(|e| Error::local("open netlink socket", e))?;
        // Both are best effort: older kernels lack them and still work.
        let _ = handle.enable_ext_ack(true);
        let _ = handle.enable_strict_checking(true);
        Ok(Socket { handle, seq: 0 })
    }

    /// A change (NEW/SET/DEL): one request, one ACK.
    pub fn change<T, P>(&mut self, op: &str, ty: T, flags: NlmF, payload: P) -> Result<()>
    where
        T: NlType + fmt::Debug + Copy,
        P: Size + ToBytes + fmt::Debug,
    {
        self.transact::<T, P, Buffer>(op, ty, flags, payload)
            .map(|_| ())
    }

    /// A GET: one request, the replies parsed as `R`. Dumps interrupted by a
    /// concurrent change (NLM_F_DUMP_INTR) are retried, as the reference's netlinksafe does.
    pub fn get<T, P, R>(&mut self, op: &str, ty: T, flags: NlmF, payload: P) -> Result<Vec<R>>
    where
        T: NlType + fmt::Debug + Copy,
        P: Size + ToBytes + fmt::Debug + Clone,
        R: Size + FromBytesWithInput<Input = usize> + fmt::Debug,
    {
        let mut last = None;
        for _ in 0..DUMP_RETRIES {
            match self.transact::<T, P, R>(op, ty, flags, payload.clone()) {
                Err(e) if e.is(libc::EINTR) => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| Error::local(op, "dump interrupted")))
    }

    fn transact<T, P, R>(&mut self, op: &str, ty: T, flags: NlmF, payload: P) -> Result<Vec<R>>
    where
        T: NlType + fmt::Debug + Copy,
        P: Size + ToBytes + fmt::Debug,
        R: Size + FromBytesWithInput<Input = usize> + fmt::Debug,
    {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        // Always ask for an ACK: without one a change gives no reply to wait for.
        let msg = NlmsghdrBuilder::default()
            .nl_type(ty)
            .nl_flags(flags | NlmF::REQUEST | NlmF::ACK)
            .nl_seq(seq)
            .nl_pid(0)
            .nl_payload(NlPayload::Payload(payload))
            .build()
            .map_err(|e| Error::local(op, e))?;
        self.handle.send(&msg).map_err(|e| Error::local(op, e))?;

        let mut replies = Vec::new();
        let mut interrupted = false;
        loop {
            let (msgs, _) = self
                .handle
                .recv::<u16, Buffer>()
                .map_err(|e| Error::local(op, e))?;
            for msg in msgs {
                let msg = msg.map_err(|e| Error::local(op, e))?;
                if *msg.nl_seq() != seq {
                    continue;
                }
                if msg.nl_flags().contains(NlmF::DUMP_INTR) {
                    interrupted = true;
                }
                let done = *msg.nl_type() == libc::NLMSG_DONE as u16;
                match msg.nl_payload() {
                    NlPayload::Payload(buf) if !done => {
                        let bytes: &[u8] = buf.as_ref();
                        let parsed = R::from_bytes_with_input(&mut Cursor::new(bytes), bytes.len())
                            .map_err(|e| Error::local(op, format!("bad reply: {e}")))?;
                        replies.push(parsed);
                    }
                    NlPayload::Err(err) => {
                        let extack = err
                            .ext_ack()
                            .get_attr_handle()
                            .get_attr_payload_as_with_len::<String>(
                                neli::consts::nl::NlmsgerrAttr::Msg,
                            )
                            .ok()
                            .map(|s| s.trim_end_matches('\0').to_string())
                            .filter(|s| !s.is_empty());
                        let errno = -*err.error();
                        return Err(Error {
                            op: op.to_string(),
                            errno,
                            extack,
                            detail: std::io::Error::from_raw_os_error(errno).to_string(),
                        });
                    }
                    NlPayload::DumpExtAck(ack) if *ack.error() != 0 => {
                        let errno = -*ack.error();
                        return Err(Error {
                            op: op.to_string(),
                            errno,
                            extack: None,
                            detail: std::io::Error::from_raw_os_error(errno).to_string(),
                        });
                    }
                    NlPayload::Ack(_) | NlPayload::DumpExtAck(_) => {
                        return finish(op, interrupted, replies);
                    }
                    _ if done => return finish(op, interrupted, replies),
                    _ => {}
                }
            }
        }
    }
}

fn finish<R>(op: &str, interrupted: bool, replies: Vec<R>) -> Result<Vec<R>> {
    if interrupted {
        let mut e = Error::local(op, "dump interrupted");
        e.errno = libc::EINTR;
        return Err(e);
    }
    Ok(replies)
}
