//! Generic netlink: a family resolved by name through the controller, then
//! acknowledged requests and dumps of it. neli's raw socket carries frames
//! written here, as for nfnetlink.

use super::headers::GenlMsgHdr;
use super::uapi::genetlink::{
    CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME, CTRL_CMD_GETFAMILY, GENL_ID_CTRL,
};
use super::uapi::netlink::{NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};
use super::wire::{self, Body};
use super::{Channel, Error, Result};
use crate::quote::quoted;
use neli::consts::socket::NlFamily;
use nix::libc;

const RECV_LEN: usize = 32 * 1024;

/// `header` and the attributes.
pub fn body(header: GenlMsgHdr, attrs: &[u8]) -> Vec<u8> {
    let mut b = header.bytes().to_vec();
    b.extend_from_slice(attrs);
    b
}

/// A socket talking to one generic netlink family, in the namespace of the
/// thread that opened it.
pub struct GenlSocket {
    channel: Channel,
    seq: u32,
    family: u16,
    version: u8,
}

impl GenlSocket {
    /// Resolves `name`; None when this kernel has no such family.
    pub fn open(name: &str, version: u8) -> Result<Option<GenlSocket>> {
        let channel = Channel::open(NlFamily::Generic, RECV_LEN)
            .map_err(|e| Error::local("open generic netlink socket", e))?;
        let mut sock = GenlSocket {
            channel,
            seq: 0,
            family: GENL_ID_CTRL,
            version: 1,
        };
        let attrs = Body::default()
            .str(CTRL_ATTR_FAMILY_NAME, name)
            .into_bytes();
        let replies = match sock.exchange(CTRL_CMD_GETFAMILY, NLM_F_ACK, &attrs, "resolve") {
            Ok(r) => r,
            Err(e) if e.is(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(e),
        };
        let id = replies
            .iter()
            .find_map(|r| wire::find(r, CTRL_ATTR_FAMILY_ID).and_then(wire::as_u16))
            .ok_or_else(|| {
                Error::local(
                    "resolve generic netlink family",
                    format!("no id for {name}", name = quoted(&name)),
                )
            })?;
        sock.family = id;
        sock.version = version;
        Ok(Some(sock))
    }

    /// An acknowledged request; the attributes of any reply it brings.
    pub fn request(&mut self, cmd: u8, attrs: &[u8], op: &str) -> Result<Vec<Vec<u8>>> {
        self.exchange(cmd, NLM_F_ACK, attrs, op)
    }

    /// A dump: each object's attributes.
    pub fn dump(&mut self, cmd: u8, attrs: &[u8], op: &str) -> Result<Vec<Vec<u8>>> {
        self.exchange(cmd, NLM_F_DUMP, attrs, op)
    }

    fn exchange(&mut self, cmd: u8, flags: u16, attrs: &[u8], op: &str) -> Result<Vec<Vec<u8>>> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut out = Vec::new();
        wire::frame(
            &mut out,
            self.family,
            NLM_F_REQUEST | flags,
            seq,
            &body(
                GenlMsgHdr {
                    cmd,
                    version: self.version,
                },
                attrs,
            ),
        );
        self.channel.send(&out).map_err(|e| Error::local(op, e))?;
        self.channel.replies(seq, op)
    }
}

#[cfg(test)]
#[path = "genl_tests.rs"]
mod tests;
