//! Addresses: add, delete, dump per link and family.

use super::headers::IfAddrMsg;
use super::uapi::if_addr::{IFA_ADDRESS, IFA_BROADCAST, IFA_FLAGS, IFA_LOCAL};
pub use super::uapi::if_addr::{IFA_F_DADFAILED, IFA_F_NODAD, IFA_F_TENTATIVE};
use super::uapi::socket::{AF_INET, AF_INET6};
use super::wire::{self, Body};
use super::{Error, Object, Result, Socket};
use ipnet::IpNet;
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;
use std::net::IpAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn af(self) -> u8 {
        match self {
            Family::V4 => AF_INET,
            Family::V6 => AF_INET6,
        }
    }

    pub fn of(ip: IpAddr) -> Family {
        if ip.is_ipv4() { Family::V4 } else { Family::V6 }
    }
}

/// An address on a link: the address with its prefix length, host bits kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub index: u32,
    pub addr: IpNet,
    pub scope: u8,
    pub flags: u32,
}

impl Address {
    /// Parses one reply payload (header struct + attributes); public for the fuzz targets.
    pub fn parse(msg: &[u8]) -> Option<Address> {
        let (h, attrs) = IfAddrMsg::parse(msg)?;
        let mut flags = u32::from(h.flags);
        let (mut local, mut address) = (None, None);
        for (ty, p) in wire::attrs(attrs) {
            match ty {
                IFA_LOCAL => local = wire::as_ip(p),
                IFA_ADDRESS => address = wire::as_ip(p),
                IFA_FLAGS => flags = wire::as_u32(p).unwrap_or(flags),
                _ => {}
            }
        }
        // IFA_ADDRESS is the peer on point-to-point links; IFA_LOCAL is ours.
        let ip = local.or(address)?;
        Some(Address {
            index: h.index,
            addr: IpNet::new(ip, h.prefix_len).ok()?,
            scope: h.scope,
            flags,
        })
    }
}

impl Socket {
    /// Addresses of one family on link `index`, in kernel order.
    pub fn addresses(&mut self, index: u32, family: Family) -> Result<Vec<Address>> {
        let op = format!("list addresses of link {index}");
        // Strict checking lets the kernel filter by index.
        let body = Body::new(
            &IfAddrMsg {
                family: family.af(),
                index,
                ..IfAddrMsg::default()
            }
            .bytes(),
        );
        let replies: Vec<Buffer> = self.get(
            &op,
            Rtm::Getaddr,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .filter_map(|b| Address::parse(b.as_ref()))
            .filter(|a| a.index == index)
            .collect())
    }

    /// Every address of one family on every link of the namespace.
    pub fn all_addresses(&mut self, family: Family) -> Result<Vec<Address>> {
        let body = Body::new(
            &IfAddrMsg {
                family: family.af(),
                ..IfAddrMsg::default()
            }
            .bytes(),
        );
        let replies: Vec<Buffer> = self.get(
            "list addresses",
            Rtm::Getaddr,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .filter_map(|b| Address::parse(b.as_ref()))
            .collect())
    }

    /// `ip addr add`; IPv4 gets the broadcast address as iproute2 and Go netlink set it.
    pub fn add_address(&mut self, index: u32, addr: IpNet, flags: u32) -> Result<()> {
        let op = format!("add address {addr} to link {index}");
        let family = Family::of(addr.addr());
        let prefix = addr.prefix_len();
        let header = IfAddrMsg {
            family: family.af(),
            prefix_len: prefix,
            // The low 8 bits; all of them go in IFA_FLAGS when more are set.
            flags: u8::try_from(flags & 0xff).unwrap_or(0),
            scope: 0,
            index,
        };
        let mut body = Body::new(&header.bytes())
            .ip(IFA_LOCAL, addr.addr())
            .ip(IFA_ADDRESS, addr.addr());
        if let IpNet::V4(v4) = addr
            && prefix < 31
        {
            body = body.ip(IFA_BROADCAST, IpAddr::V4(v4.broadcast()));
        }
        if flags > 0xff {
            body = body.u32(IFA_FLAGS, flags);
        }
        self.change(
            &op,
            Rtm::Newaddr,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(body.into_bytes()),
        )
        .map_err(|e| e.about(Object::Address))
    }

    pub fn del_address(&mut self, index: u32, addr: IpNet) -> Result<()> {
        let op = format!("delete address {addr} from link {index}");
        let family = Family::of(addr.addr());
        let header = IfAddrMsg {
            family: family.af(),
            prefix_len: addr.prefix_len(),
            index,
            ..IfAddrMsg::default()
        };
        let body = Body::new(&header.bytes()).ip(IFA_LOCAL, addr.addr());
        self.change(
            &op,
            Rtm::Deladdr,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )
        .map_err(|e: Error| e)
    }
}
