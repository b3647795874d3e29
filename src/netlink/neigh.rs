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
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x0e, 0xaa, 0xbb, 0xcc, 0xdd, 0xee];

    /// The request of `ip neigh replace 10.244.1.0 lladdr 0e:aa:bb:cc:dd:ee
    /// dev flannel.1 nud permanent` (flannel.1 = link 4), byte for byte as
    /// iproute2 6.1 sent it (`strace -e trace=sendmsg -e write=3`), its
    /// sequence number included.
    #[test]
    #[cfg(target_endian = "little")]
    fn a_permanent_neighbour_is_iproute2s_request() {
        #[rustfmt::skip]
        let iproute2: Vec<u8> = vec![
            0x30, 0, 0, 0, 0x1c, 0, 0x05, 0x05,     // len 48, RTM_NEWNEIGH, REQUEST|ACK|REPLACE|CREATE
            0x3a, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
            2, 0, 0, 0, 4, 0, 0, 0,                 // AF_INET, ifindex 4
            0x80, 0, 0, 0,                          // NUD_PERMANENT, flags 0, type 0
            8, 0, 1, 0, 10, 244, 1, 0,              // NDA_DST
            10, 0, 2, 0, 0x0e, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, // NDA_LLADDR
        ];
        let ip: IpAddr = "10.244.1.0".parse().expect("ip");
        assert_eq!(
            replace_neighbour_request(4, ip, MAC).bytes(0x6b0b_b73a),
            iproute2
        );
        // As the kernel dumps it back.
        let n = Neighbour::parse(&iproute2[16..]).expect("parsed");
        assert_eq!((n.index, n.ip, n.mac), (4, ip, Some(MAC)));
        assert!(n.is_permanent());
    }

    /// The request of `bridge fdb replace 0e:aa:bb:cc:dd:ee dev flannel.1 dst
    /// 10.9.0.2 self permanent`, byte for byte as iproute2 6.1 sent it.
    #[test]
    #[cfg(target_endian = "little")]
    fn an_fdb_entry_is_iproute2s_request() {
        #[rustfmt::skip]
        let iproute2: Vec<u8> = vec![
            0x30, 0, 0, 0, 0x1c, 0, 0x05, 0x05,     // len 48, RTM_NEWNEIGH, REQUEST|ACK|REPLACE|CREATE
            0x3a, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
            7, 0, 0, 0, 4, 0, 0, 0,                 // AF_BRIDGE, ifindex 4
            0xc0, 0, 0x02, 0,                       // NUD_NOARP|NUD_PERMANENT, NTF_SELF, type 0
            10, 0, 2, 0, 0x0e, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, // NDA_LLADDR
            8, 0, 1, 0, 10, 9, 0, 2,                // NDA_DST
        ];
        let dst: IpAddr = "10.9.0.2".parse().expect("ip");
        assert_eq!(
            replace_fdb_request(4, MAC, dst).bytes(0x6b0b_b73a),
            iproute2
        );
        let f = Fdb::parse(&iproute2[16..]).expect("parsed");
        assert_eq!(
            (f.index, f.mac, f.dst, f.flags),
            (4, MAC, Some(dst), NTF_SELF)
        );
        assert!(f.is_permanent());
    }

    #[test]
    fn deletes_name_the_entry_and_dumps_without_an_address_are_skipped() {
        let v6: IpAddr = "fd00::2".parse().expect("ip");
        let del = del_neighbour_request(9, v6);
        let (header, attrs) = NdMsg::parse(&del.body).expect("ndmsg");
        let want = NdMsg {
            family: 10,
            index: 9,
            ..NdMsg::default()
        };
        assert_eq!(header, want);
        assert_eq!(wire::find(attrs, NDA_DST).and_then(wire::as_ip), Some(v6));
        let del = del_fdb_request(9, MAC, v6);
        let want = NdMsg {
            family: AF_BRIDGE,
            index: 9,
            flags: NTF_SELF,
            ..NdMsg::default()
        };
        assert_eq!(NdMsg::parse(&del.body).map(|(h, _)| h), Some(want));
        // An unresolved neighbour has no MAC; an FDB entry needs one.
        let incomplete = NdMsg {
            family: 2,
            index: 3,
            state: 0x01,
            ..NdMsg::default()
        };
        let incomplete = Body::new(&incomplete.bytes()).ip(NDA_DST, v6).into_bytes();
        assert_eq!(Neighbour::parse(&incomplete).map(|n| n.mac), Some(None));
        assert_eq!(Fdb::parse(&incomplete), None);
        assert_eq!(Neighbour::parse(&[2, 0, 0]), None);
    }
}
