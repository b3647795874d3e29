//! Addresses: dump per link and family.

use super::{Error, Result, Socket};
use ipnet::IpNet;
use neli::consts::nl::NlmF;
use neli::consts::rtnl::{Ifa, RtAddrFamily, RtScope, Rtm};
use neli::rtnl::{Ifaddrmsg, IfaddrmsgBuilder};
use std::net::IpAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    fn rt(self) -> RtAddrFamily {
        match self {
            Family::V4 => RtAddrFamily::Inet,
            Family::V6 => RtAddrFamily::Inet6,
        }
    }
}

/// An address on a link: the address with its prefix length, host bits kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub index: u32,
    pub addr: IpNet,
    pub scope: u8,
}

fn ip_from_bytes(b: &[u8]) -> Option<IpAddr> {
    if let Ok(v4) = <[u8; 4]>::try_from(b) {
        Some(IpAddr::from(v4))
    } else if let Ok(v6) = <[u8; 16]>::try_from(b) {
        Some(IpAddr::from(v6))
    } else {
        None
    }
}

impl Socket {
    /// Addresses of one family on link `index`, in kernel order.
    pub fn addresses(&mut self, index: u32, family: Family) -> Result<Vec<Address>> {
        let op = format!("list addresses of link {index}");
        // Strict checking lets the kernel filter by index.
        let msg = IfaddrmsgBuilder::default()
            .ifa_family(family.rt())
            .ifa_prefixlen(0)
            .ifa_scope(RtScope::Universe)
            .ifa_index(index)
            .build()
            .map_err(|e| Error::local(&op, e))?;
        let replies: Vec<Ifaddrmsg> = self.get(&op, Rtm::Getaddr, NlmF::DUMP, msg)?;
        let mut out = Vec::new();
        for m in replies {
            if *m.ifa_index() != index {
                continue;
            }
            let attrs = m.rtattrs().get_attr_handle();
            // IFA_ADDRESS is the peer on point-to-point links; IFA_LOCAL is ours.
            let raw = attrs
                .get_attr_payload_as_with_len_borrowed::<&[u8]>(Ifa::Local)
                .or_else(|_| attrs.get_attr_payload_as_with_len_borrowed::<&[u8]>(Ifa::Address));
            let Some(ip) = raw.ok().and_then(ip_from_bytes) else {
                continue;
            };
            let Ok(addr) = IpNet::new(ip, *m.ifa_prefixlen()) else {
                continue;
            };
            out.push(Address {
                index,
                addr,
                scope: u8::from(*m.ifa_scope()),
            });
        }
        Ok(out)
    }
}
