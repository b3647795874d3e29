//! Neighbours (`ip neigh`) and a device's own forwarding entries (`bridge fdb
//! ... self`): permanent entries, replaced idempotently, deleted, dumped per link.
//! A VXLAN device's FDB says which remote address a MAC is reached through.

use super::addr::Family;
use super::headers::NdMsg;
use super::uapi::neighbour::{NDA_DST, NDA_IFINDEX, NDA_LLADDR};
pub use super::uapi::neighbour::{NTF_SELF, NUD_NOARP, NUD_PERMANENT};
use super::uapi::socket::AF_BRIDGE;
use super::wire::{self, Body};
use super::{Request, Result, Socket};
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;
use std::net::IpAddr;

fn mac_of(p: &[u8]) -> Option<[u8; 6]> {
    p.try_into().ok()
}

/// An entry of a link's neighbour table (ARP or NDP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    pub index: u32,
    pub ip: IpAddr,
    /// `None` while unresolved (INCOMPLETE, FAILED) or for links without
    /// Ethernet addresses.
    pub mac: Option<[u8; 6]>,
    /// NUD_* bits.
    pub state: u16,
    /// NTF_* bits.
    pub flags: u8,
}

impl Neighbour {
    pub fn is_permanent(&self) -> bool {
        self.state & NUD_PERMANENT != 0
    }

    /// Parses one reply payload (header struct + attributes); public for the fuzz targets.
    pub fn parse(msg: &[u8]) -> Option<Neighbour> {
        let (m, attrs) = NdMsg::parse(msg)?;
        Some(Neighbour {
            index: m.index,
            ip: wire::find(attrs, NDA_DST).and_then(wire::as_ip)?,
            mac: wire::find(attrs, NDA_LLADDR).and_then(mac_of),
            state: m.state,
            flags: m.flags,
        })
    }
}

/// A forwarding entry of a device itself (NTF_SELF): for a VXLAN device, the
/// remote endpoint (`dst`) behind a MAC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fdb {
    pub index: u32,
    pub mac: [u8; 6],
    pub dst: Option<IpAddr>,
    /// NUD_* bits.
    pub state: u16,
    /// NTF_* bits.
    pub flags: u8,
}

impl Fdb {
    pub fn is_permanent(&self) -> bool {
        self.state & NUD_PERMANENT != 0
    }

    /// Parses one AF_BRIDGE reply payload; public for the fuzz targets.
    pub fn parse(msg: &[u8]) -> Option<Fdb> {
        let (m, attrs) = NdMsg::parse(msg)?;
        Some(Fdb {
            index: m.index,
            mac: wire::find(attrs, NDA_LLADDR).and_then(mac_of)?,
            dst: wire::find(attrs, NDA_DST).and_then(wire::as_ip),
            state: m.state,
            flags: m.flags,
        })
    }
}

/// `ip neigh replace IP lladdr MAC dev IFINDEX nud permanent`.
fn replace_neighbour_request(index: u32, ip: IpAddr, mac: [u8; 6]) -> Request {
    let body = Body::new(
        &NdMsg {
            family: Family::of(ip).af(),
            index,
            state: NUD_PERMANENT,
            ..NdMsg::default()
        }
        .bytes(),
    )
    .ip(NDA_DST, ip)
    .attr(NDA_LLADDR, &mac);
    Request::new(Rtm::Newneigh, NlmF::CREATE | NlmF::REPLACE, body)
}

fn del_neighbour_request(index: u32, ip: IpAddr) -> Request {
    let body = Body::new(
        &NdMsg {
            family: Family::of(ip).af(),
            index,
            ..NdMsg::default()
        }
        .bytes(),
    )
    .ip(NDA_DST, ip);
    Request::new(Rtm::Delneigh, NlmF::empty(), body)
}

/// `bridge fdb replace MAC dev IFINDEX dst DST self permanent`. The state is
/// iproute2's (NOARP|PERMANENT); the kernel stores and reports it as given.
fn replace_fdb_request(index: u32, mac: [u8; 6], dst: IpAddr) -> Request {
    let body = Body::new(
        &NdMsg {
            family: AF_BRIDGE,
            index,
            state: NUD_NOARP | NUD_PERMANENT,
            flags: NTF_SELF,
            ..NdMsg::default()
        }
        .bytes(),
    )
    .attr(NDA_LLADDR, &mac)
    .ip(NDA_DST, dst);
    Request::new(Rtm::Newneigh, NlmF::CREATE | NlmF::REPLACE, body)
}

/// Deletes the remote `dst` of `mac` (a MAC may have several).
fn del_fdb_request(index: u32, mac: [u8; 6], dst: IpAddr) -> Request {
    let body = Body::new(
        &NdMsg {
            family: AF_BRIDGE,
            index,
            flags: NTF_SELF,
            ..NdMsg::default()
        }
        .bytes(),
    )
    .attr(NDA_LLADDR, &mac)
    .ip(NDA_DST, dst);
    Request::new(Rtm::Delneigh, NlmF::empty(), body)
}

fn mac_text(mac: &[u8; 6]) -> String {
    super::link::format_mac(mac)
}

impl Socket {
    /// Sets `ip` → `mac` on link `index` as a permanent entry, replacing
    /// whatever entry `ip` had there.
    pub fn replace_neighbour(&mut self, index: u32, ip: IpAddr, mac: [u8; 6]) -> Result<()> {
        let op = format!(
            "replace neighbour {ip} lladdr {} on link {index}",
            mac_text(&mac)
        );
        self.apply(&op, &replace_neighbour_request(index, ip, mac))
    }

    /// ENOENT when link `index` has no entry for `ip`.
    pub fn del_neighbour(&mut self, index: u32, ip: IpAddr) -> Result<()> {
        let op = format!("delete neighbour {ip} on link {index}");
        self.apply(&op, &del_neighbour_request(index, ip))
    }

    /// Deletes a neighbour; one already gone is no error.
    pub fn del_neighbour_if_present(&mut self, index: u32, ip: IpAddr) -> Result<()> {
        match self.del_neighbour(index, ip) {
            Err(e) if e.is_not_found() => Ok(()),
            r => r,
        }
    }

    /// The neighbour entries of one family on link `index`.
    pub fn neighbours(&mut self, index: u32, family: Family) -> Result<Vec<Neighbour>> {
        let op = format!("list neighbours of link {index}");
        // Strict dumps take the link as NDA_IFINDEX; the header must stay zero.
        let body = Body::new(
            &NdMsg {
                family: family.af(),
                ..NdMsg::default()
            }
            .bytes(),
        )
        .u32(NDA_IFINDEX, index);
        let replies: Vec<Buffer> = self.get(
            &op,
            Rtm::Getneigh,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .filter_map(|b| Neighbour::parse(b.as_ref()))
            .filter(|n| n.index == index)
            .collect())
    }

    /// Sets the permanent forwarding entry `mac` → remote `dst` of link
    /// `index` (a VXLAN device), replacing the remote `mac` had.
    pub fn replace_fdb(&mut self, index: u32, mac: [u8; 6], dst: IpAddr) -> Result<()> {
        let op = format!(
            "replace fdb entry {} dst {dst} on link {index}",
            mac_text(&mac)
        );
        self.apply(&op, &replace_fdb_request(index, mac, dst))
    }

    /// ENOENT when link `index` has no such entry.
    pub fn del_fdb(&mut self, index: u32, mac: [u8; 6], dst: IpAddr) -> Result<()> {
        let op = format!(
            "delete fdb entry {} dst {dst} on link {index}",
            mac_text(&mac)
        );
        self.apply(&op, &del_fdb_request(index, mac, dst))
    }

    /// Deletes an FDB entry; one already gone is no error.
    pub fn del_fdb_if_present(&mut self, index: u32, mac: [u8; 6], dst: IpAddr) -> Result<()> {
        match self.del_fdb(index, mac, dst) {
            Err(e) if e.is_not_found() => Ok(()),
            r => r,
        }
    }

    /// The forwarding entries link `index` holds itself with a remote
    /// address: a VXLAN device's remotes. The MAC addresses every device
    /// lists (its own, multicast groups) have no remote and are left out.
    pub fn fdb_entries(&mut self, index: u32) -> Result<Vec<Fdb>> {
        let op = format!("list fdb entries of link {index}");
        // The bridge family's dump takes the port in the header.
        let body = Body::new(
            &NdMsg {
                family: AF_BRIDGE,
                index,
                ..NdMsg::default()
            }
            .bytes(),
        );
        let replies: Vec<Buffer> = self.get(
            &op,
            Rtm::Getneigh,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .filter_map(|b| Fdb::parse(b.as_ref()))
            .filter(|f| f.index == index && f.flags & NTF_SELF != 0 && f.dst.is_some())
            .collect())
    }
}

#[cfg(test)]
#[path = "neigh_tests.rs"]
mod tests;
