//! Namespace IDs: the number this namespace gives a peer namespace, as it
//! appears in IFLA_LINK_NETNSID of links whose other end lives there.

use super::uapi::net_namespace::{NETNSA_FD, NETNSA_NSID, NETNSA_NSID_NOT_ASSIGNED};
use super::wire::{self, Body};
use super::{Error, Result, Socket};
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;
use std::os::fd::RawFd;

/// struct rtgenmsg (one byte, family) padded to the attribute alignment.
const RTGENMSG_LEN: usize = 4;

impl Socket {
    /// The ID this socket's namespace has for the namespace open as `ns_fd`;
    /// None when it has none yet. Dumping a link whose peer is there assigns one.
    pub fn netns_id(&mut self, ns_fd: RawFd) -> Result<Option<i32>> {
        let op = "get netns id";
        let fd = u32::try_from(ns_fd).map_err(|_| Error::local(op, "bad namespace descriptor"))?;
        let body = Body::new(&[0u8; RTGENMSG_LEN]).u32(NETNSA_FD, fd);
        let replies = self.get(
            op,
            Rtm::Getnsid,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )?;
        let id = replies
            .iter()
            .find_map(|r| nsid_of_reply(r.as_ref()))
            .ok_or_else(|| Error::local(op, "reply without NETNSA_NSID"))?;
        Ok((id != NETNSA_NSID_NOT_ASSIGNED).then_some(id))
    }
}

/// NETNSA_NSID of an RTM_NEWNSID reply (rtgenmsg, then attributes).
fn nsid_of_reply(msg: &[u8]) -> Option<i32> {
    let attrs = msg.get(RTGENMSG_LEN..)?;
    wire::as_u32(wire::find(attrs, NETNSA_NSID)?).map(u32::cast_signed)
}

#[cfg(test)]
#[path = "nsid_tests.rs"]
mod tests;
