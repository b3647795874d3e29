//! The forwarding switches read over netlink (RTM_GETNETCONF), which costs no
//! /proc/sys path walk: the kernel keeps a `net` dentry per namespace under
//! /proc/sys, so each walk there grows with the number of namespaces on the node.

use super::Socket;
use super::addr::Family;
use super::uapi::netconf::{NETCONFA_FORWARDING, NETCONFA_IFINDEX, NETCONFA_IFINDEX_ALL};
use super::uapi::rtnetlink::RTM_GETNETCONF;
use super::wire::{self, Body};
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;

impl Socket {
    /// `net.ipv4.ip_forward` / `net.ipv6.conf.all.forwarding` of the socket's
    /// namespace; None when the kernel does not say (the family is off).
    pub fn forwarding(&mut self, family: Family) -> super::Result<Option<bool>> {
        let body = Body::new(&[family.af(), 0, 0, 0])
            .u32(NETCONFA_IFINDEX, NETCONFA_IFINDEX_ALL.cast_unsigned());
        let replies = self.get(
            "get netconf",
            Rtm::from(RTM_GETNETCONF),
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies.iter().find_map(|reply| {
            let attrs = reply.as_ref().get(4..)?;
            wire::find(attrs, NETCONFA_FORWARDING)
                .and_then(wire::as_u32)
                .map(|v| v != 0)
        }))
    }
}
