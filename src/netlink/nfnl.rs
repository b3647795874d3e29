//! nfnetlink for nf_tables: one batch (BEGIN … END) per operation, sent as one
//! buffer on neli's raw socket, every message acknowledged; and rule dumps.
//! neli has no nf_tables support, so frames are written here (see netlink-notes).

use super::wire::{self, Body};
use super::{Error, Result};
use neli::consts::socket::{Msg, NlFamily};
use neli::socket::NlSocket;
use neli::utils::Groups;
use nix::libc;

const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_CREATE: u16 = 0x400;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_APPEND: u16 = 0x800;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const HDR_LEN: usize = 16;

/// One nf_tables message of a batch.
#[derive(Debug, Clone)]
pub struct NfMsg {
    /// NFT_MSG_* (without the subsystem).
    pub kind: u16,
    pub flags: u16,
    /// NFPROTO_* of the object.
    pub family: u8,
    pub attrs: Vec<u8>,
    /// What it does, for error messages.
    pub what: String,
}

fn frame(out: &mut Vec<u8>, ty: u16, flags: u16, seq: u32, family: u8, res_id: u16, attrs: &[u8]) {
    let len = HDR_LEN + 4 + attrs.len();
    out.extend_from_slice(&(len as u32).to_ne_bytes());
    out.extend_from_slice(&ty.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.push(family);
    out.push(0); // NFNETLINK_V0
    out.extend_from_slice(&res_id.to_be_bytes());
    out.extend_from_slice(attrs);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// A received netlink message: type, flags, seq, payload.
struct Received<'a> {
    ty: u16,
    seq: u32,
    payload: &'a [u8],
}

fn messages(mut buf: &[u8]) -> impl Iterator<Item = Received<'_>> {
    std::iter::from_fn(move || {
        if buf.len() < HDR_LEN {
            return None;
        }
        let len = u32::from_ne_bytes(buf[0..4].try_into().ok()?) as usize;
        if len < HDR_LEN || len > buf.len() {
            return None;
        }
        let msg = Received {
            ty: u16::from_ne_bytes(buf[4..6].try_into().ok()?),
            seq: u32::from_ne_bytes(buf[8..12].try_into().ok()?),
            payload: &buf[HDR_LEN..len],
        };
        buf = &buf[((len + 3) & !3).min(buf.len())..];
        Some(msg)
    })
}

/// An NLMSG_ERROR payload: errno (positive; 0 = ack) and extack text.
fn error_of(payload: &[u8]) -> (i32, Option<String>) {
    let code = payload
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_ne_bytes)
        .unwrap_or(0);
    // With extended ACKs the original header (capped) follows, then TLVs.
    let orig_len = payload
        .get(4..8)
        .and_then(|b| b.try_into().ok())
        .map(|b| u32::from_ne_bytes(b) as usize)
        .unwrap_or(0);
    let capped = if code == 0 {
        HDR_LEN
    } else {
        HDR_LEN.max(orig_len.min(payload.len().saturating_sub(4)))
    };
    let tlvs = payload.get(4 + capped..).unwrap_or_default();
    let text = wire::find(tlvs, 1)
        .map(wire::as_str)
        .filter(|s| !s.is_empty());
    (-code, text)
}

/// An nfnetlink socket in the calling thread's namespace.
pub struct NfSocket {
    sock: NlSocket,
    seq: u32,
}

impl NfSocket {
    pub fn open() -> Result<NfSocket> {
        let sock = NlSocket::connect(NlFamily::Netfilter, None, Groups::empty())
            .map_err(|e| Error::local("open nfnetlink socket", e))?;
        let _ = sock.enable_ext_ack(true);
        Ok(NfSocket { sock, seq: 0 })
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    fn receive(&self, op: &str) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; 1 << 16];
        let (n, _) = self
            .sock
            .recv(&mut buf[..], Msg::empty())
            .map_err(|e| Error::local(op, e))?;
        buf.truncate(n);
        Ok(buf)
    }

    /// Commits the messages as one transaction: all or nothing.
    pub fn transaction(&mut self, msgs: &[NfMsg]) -> Result<()> {
        if msgs.is_empty() {
            return Ok(());
        }
        let mut out = Vec::new();
        let begin = self.next_seq();
        frame(
            &mut out,
            NFNL_MSG_BATCH_BEGIN,
            NLM_F_REQUEST,
            begin,
            0,
            NFNL_SUBSYS_NFTABLES,
            &[],
        );
        let mut pending = std::collections::BTreeMap::new();
        for m in msgs {
            let seq = self.next_seq();
            let ty = (NFNL_SUBSYS_NFTABLES << 8) | m.kind;
            frame(
                &mut out,
                ty,
                NLM_F_REQUEST | NLM_F_ACK | m.flags,
                seq,
                m.family,
                0,
                &m.attrs,
            );
            pending.insert(seq, m.what.as_str());
        }
        let end = self.next_seq();
        frame(
            &mut out,
            NFNL_MSG_BATCH_END,
            NLM_F_REQUEST,
            end,
            0,
            NFNL_SUBSYS_NFTABLES,
            &[],
        );
        self.sock
            .send(&out, Msg::empty())
            .map_err(|e| Error::local("send nf_tables batch", e))?;
        while !pending.is_empty() {
            let buf = self.receive("nf_tables batch")?;
            for msg in messages(&buf) {
                if msg.ty != NLMSG_ERROR {
                    continue;
                }
                let (errno, extack) = error_of(msg.payload);
                let what = pending.remove(&msg.seq).unwrap_or("nf_tables batch");
                if errno != 0 {
                    return Err(Error {
                        op: what.to_string(),
                        errno,
                        extack,
                        detail: std::io::Error::from_raw_os_error(errno).to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// A dump request (e.g. GETRULE of one chain); returns each object's attributes.
    pub fn dump(&mut self, kind: u16, family: u8, attrs: Body) -> Result<Vec<Vec<u8>>> {
        self.dump_of(NFNL_SUBSYS_NFTABLES, kind, family, attrs)
    }

    /// One request of any nfnetlink subsystem, acknowledged.
    pub fn request(&mut self, subsys: u16, kind: u16, family: u8, attrs: &[u8]) -> Result<()> {
        let op = "nfnetlink request";
        let seq = self.next_seq();
        let mut out = Vec::new();
        frame(
            &mut out,
            (subsys << 8) | kind,
            NLM_F_REQUEST | NLM_F_ACK,
            seq,
            family,
            0,
            attrs,
        );
        self.sock
            .send(&out, Msg::empty())
            .map_err(|e| Error::local(op, e))?;
        loop {
            let buf = self.receive(op)?;
            for msg in messages(&buf) {
                if msg.seq != seq || msg.ty != NLMSG_ERROR {
                    continue;
                }
                let (errno, extack) = error_of(msg.payload);
                if errno == 0 {
                    return Ok(());
                }
                return Err(Error {
                    op: op.to_string(),
                    errno,
                    extack,
                    detail: std::io::Error::from_raw_os_error(errno).to_string(),
                });
            }
        }
    }

    /// A dump of any nfnetlink subsystem.
    pub fn dump_of(
        &mut self,
        subsys: u16,
        kind: u16,
        family: u8,
        attrs: Body,
    ) -> Result<Vec<Vec<u8>>> {
        let op = "nfnetlink dump";
        let seq = self.next_seq();
        let mut out = Vec::new();
        let ty = (subsys << 8) | kind;
        frame(
            &mut out,
            ty,
            NLM_F_REQUEST | NLM_F_DUMP,
            seq,
            family,
            0,
            &attrs.into_bytes(),
        );
        self.sock
            .send(&out, Msg::empty())
            .map_err(|e| Error::local(op, e))?;
        let mut objects = Vec::new();
        loop {
            let buf = self.receive(op)?;
            for msg in messages(&buf) {
                if msg.seq != seq {
                    continue;
                }
                match msg.ty {
                    NLMSG_DONE => return Ok(objects),
                    NLMSG_ERROR => {
                        let (errno, extack) = error_of(msg.payload);
                        if errno == 0 {
                            return Ok(objects);
                        }
                        return Err(Error {
                            op: op.to_string(),
                            errno,
                            extack,
                            detail: std::io::Error::from_raw_os_error(errno).to_string(),
                        });
                    }
                    _ => objects.push(msg.payload.get(4..).unwrap_or_default().to_vec()),
                }
            }
        }
    }
}

/// Whether nf_tables answers here (a table dump).
pub fn available() -> bool {
    NfSocket::open()
        .and_then(|mut s| s.dump(1, libc::AF_UNSPEC as u8, Body::default()))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_back() {
        let mut out = Vec::new();
        frame(&mut out, 0x0a06, NLM_F_REQUEST, 7, 2, 0, &[1, 2, 3]);
        assert_eq!(out.len() % 4, 0);
        let msgs: Vec<_> = messages(&out).collect();
        assert_eq!(msgs.len(), 1);
        assert_eq!((msgs[0].ty, msgs[0].seq), (0x0a06, 7));
        assert_eq!(&msgs[0].payload[..7], &[2, 0, 0, 0, 1, 2, 3]);
        let mut err = (-17i32).to_ne_bytes().to_vec();
        err.extend_from_slice(&[0u8; 16]);
        assert_eq!(error_of(&err), (17, None));
    }
}
