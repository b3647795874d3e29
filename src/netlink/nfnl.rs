//! nfnetlink for nf_tables: one batch (BEGIN … END) per operation, sent as one
//! buffer on neli's raw socket, every message acknowledged; and rule dumps.
//! neli has no nf_tables support, so frames are written here (see netlink-notes).

use super::headers::NfGenMsg;
use super::uapi::netlink::{NLM_F_ACK, NLM_F_REPLACE, NLM_F_REQUEST};
pub use super::uapi::netlink::{NLM_F_APPEND, NLM_F_CREATE, NLM_F_DUMP, NLM_F_ECHO, NLM_F_EXCL};
use super::uapi::nfnetlink::{
    NFNETLINK_V0, NFNL_MSG_BATCH_BEGIN, NFNL_MSG_BATCH_END, NFNL_SUBSYS_NFTABLES,
};
use super::uapi::socket::AF_UNSPEC;
use super::wire::{self, Body, NLMSG_ERROR};
use super::{Channel, Error, Result, kernel_error};
use neli::consts::socket::NlFamily;
use std::os::fd::AsRawFd;

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

/// Appends one nfnetlink message: `nlmsghdr`, `header`, attributes.
fn frame(out: &mut Vec<u8>, ty: u16, flags: u16, seq: u32, header: NfGenMsg, attrs: &[u8]) {
    let mut body = Vec::with_capacity(NfGenMsg::LEN + attrs.len());
    body.extend_from_slice(&header.bytes());
    body.extend_from_slice(attrs);
    wire::frame(out, ty, flags, seq, &body);
}

/// The nfgenmsg of a batch's BEGIN and END: the subsystem in `res_id`.
const BATCH: NfGenMsg = NfGenMsg {
    family: 0,
    version: NFNETLINK_V0,
    res_id: NFNL_SUBSYS_NFTABLES,
};

/// The nfgenmsg of an object of `family` (NFPROTO_*).
fn of_family(family: u8) -> NfGenMsg {
    NfGenMsg {
        family,
        version: NFNETLINK_V0,
        res_id: 0,
    }
}

/// An nfnetlink socket in the calling thread's namespace.
pub struct NfSocket {
    channel: Channel,
    seq: u32,
    /// Dropped after `channel`: lets the process holding the socket's last
    /// reference go (see nfnl_release).
    release: Option<std::os::fd::OwnedFd>,
}

impl Drop for NfSocket {
    fn drop(&mut self) {
        if super::nfnl_release::release_waits() {
            self.release = super::nfnl_release::hand_over(self.channel.socket().as_raw_fd());
        }
    }
}

/// Whether committing message `kind` leaves objects for nf_tables' deferred
/// destruction (a delete; NFT_MSG_DESTROY* are deletes that accept absence).
fn destroys(kind: u16) -> bool {
    use super::uapi::nf_tables::*;
    matches!(
        kind,
        NFT_MSG_DELTABLE
            | NFT_MSG_DELCHAIN
            | NFT_MSG_DELRULE
            | NFT_MSG_DELSET
            | NFT_MSG_DELSETELEM
            | NFT_MSG_DELOBJ
            | NFT_MSG_DELFLOWTABLE
            | NFT_MSG_DESTROYTABLE..=NFT_MSG_DESTROYFLOWTABLE
    )
}

/// Rule dumps of busy chains come in large datagrams.
const RECV_LEN: usize = 64 * 1024;

impl NfSocket {
    pub fn open() -> Result<NfSocket> {
        let channel = Channel::open(NlFamily::Netfilter, RECV_LEN)
            .map_err(|e| Error::local("open nfnetlink socket", e))?;
        Ok(NfSocket {
            channel,
            seq: 0,
            release: None,
        })
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Commits the messages as one transaction: all or nothing.
    pub fn transaction(&mut self, msgs: &[NfMsg]) -> Result<()> {
        self.transaction_echoed(msgs).map(drop)
    }

    /// As [`NfSocket::transaction`]; the objects the kernel echoes (for the
    /// messages flagged `NLM_F_ECHO`: e.g. a new rule with its handle), each
    /// with the index of its message.
    pub fn transaction_echoed(&mut self, msgs: &[NfMsg]) -> Result<Vec<(usize, Vec<u8>)>> {
        let mut echoed = Vec::new();
        if msgs.is_empty() {
            return Ok(echoed);
        }
        let mut out = Vec::new();
        let begin = self.next_seq();
        frame(
            &mut out,
            NFNL_MSG_BATCH_BEGIN,
            NLM_F_REQUEST,
            begin,
            BATCH,
            &[],
        );
        let mut pending = std::collections::BTreeMap::new();
        let mut index = std::collections::BTreeMap::new();
        for (i, m) in msgs.iter().enumerate() {
            let seq = self.next_seq();
            let ty = (NFNL_SUBSYS_NFTABLES << 8) | m.kind;
            frame(
                &mut out,
                ty,
                NLM_F_REQUEST | NLM_F_ACK | m.flags,
                seq,
                of_family(m.family),
                &m.attrs,
            );
            pending.insert(seq, m.what.as_str());
            index.insert(seq, i);
        }
        let end = self.next_seq();
        frame(&mut out, NFNL_MSG_BATCH_END, NLM_F_REQUEST, end, BATCH, &[]);
        self.channel
            .send(&out)
            .map_err(|e| Error::local("send nf_tables batch", e))?;
        if msgs
            .iter()
            .any(|m| destroys(m.kind) || m.flags & NLM_F_REPLACE != 0)
        {
            super::nfnl_release::note_deleted();
        }
        while !pending.is_empty() {
            let datagram = self
                .channel
                .recv()
                .map_err(|e| Error::local("nf_tables batch", e))?;
            for msg in wire::messages(datagram) {
                if msg.ty != NLMSG_ERROR {
                    // An echo: the object's attributes follow the nfgenmsg.
                    if let (Some(i), Some(attrs)) = (index.get(&msg.seq), msg.payload.get(4..)) {
                        echoed.push((*i, attrs.to_vec()));
                    }
                    continue;
                }
                let (errno, extack) = wire::error_of(&msg);
                let what = pending.remove(&msg.seq).unwrap_or("nf_tables batch");
                if errno != 0 {
                    return Err(kernel_error(what, errno, extack));
                }
            }
        }
        Ok(echoed)
    }

    /// A dump request (e.g. GETRULE of one chain); returns each object's attributes.
    pub fn dump(&mut self, kind: u16, family: u8, attrs: Body) -> Result<Vec<Vec<u8>>> {
        self.dump_of(NFNL_SUBSYS_NFTABLES, kind, family, attrs)
    }

    /// Frames and sends one message of any nfnetlink subsystem; its sequence number.
    fn send(
        &mut self,
        op: &str,
        ty: (u16, u16),
        flags: u16,
        family: u8,
        attrs: &[u8],
    ) -> Result<u32> {
        let seq = self.next_seq();
        let mut out = Vec::new();
        frame(
            &mut out,
            (ty.0 << 8) | ty.1,
            flags,
            seq,
            of_family(family),
            attrs,
        );
        self.channel.send(&out).map_err(|e| Error::local(op, e))?;
        Ok(seq)
    }

    /// One request of any nfnetlink subsystem, acknowledged.
    pub fn request(&mut self, subsys: u16, kind: u16, family: u8, attrs: &[u8]) -> Result<()> {
        let op = "nfnetlink request";
        let seq = self.send(op, (subsys, kind), NLM_F_REQUEST | NLM_F_ACK, family, attrs)?;
        self.channel.replies(seq, op).map(drop)
    }

    /// One object of any nfnetlink subsystem by a GET (not a dump): its
    /// attributes, or an error (ENOENT where there is none).
    pub fn get_of(&mut self, subsys: u16, kind: u16, family: u8, attrs: &[u8]) -> Result<Vec<u8>> {
        let op = "nfnetlink get";
        let seq = self.send(op, (subsys, kind), NLM_F_REQUEST | NLM_F_ACK, family, attrs)?;
        let mut objects = self.channel.replies(seq, op)?;
        objects
            .pop()
            .ok_or_else(|| Error::local(op, "no object in the reply"))
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
        let flags = NLM_F_REQUEST | NLM_F_DUMP;
        let seq = self.send(op, (subsys, kind), flags, family, &attrs.into_bytes())?;
        self.channel.replies(seq, op)
    }
}

/// Whether nf_tables answers here (a table dump).
pub fn available() -> bool {
    NfSocket::open()
        .and_then(|mut s| s.dump(1, AF_UNSPEC, Body::default()))
        .is_ok()
}

#[cfg(test)]
#[path = "nfnl_tests.rs"]
mod tests;
