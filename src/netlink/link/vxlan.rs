//! VXLAN links: the settings `create_link` writes into IFLA_INFO_DATA and
//! `Link::vxlan` reads back from a dump, so a caller can tell whether an
//! existing device is the one it would create.

use super::wire;
use std::net::IpAddr;

use crate::netlink::uapi::if_link::{
    IFLA_VXLAN_GBP, IFLA_VXLAN_ID, IFLA_VXLAN_LEARNING, IFLA_VXLAN_LINK, IFLA_VXLAN_LOCAL,
    IFLA_VXLAN_LOCAL6, IFLA_VXLAN_PORT,
};

/// A VXLAN device's settings: what `Kind::Vxlan` creates and `Link::vxlan` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VxlanInfo {
    /// The VXLAN network identifier (24 bits).
    pub vni: u32,
    /// The underlay link the tunnel's packets leave by (`dev`); `None`: any.
    pub link: Option<u32>,
    /// The source address of the tunnel's packets; `None`: chosen per packet.
    pub local: Option<IpAddr>,
    /// UDP destination port. On creation 0 leaves the kernel's default (its
    /// `udp_port`, 8472), as Go netlink does; a dump always reports the port.
    pub port: u16,
    /// Whether the device learns remote MACs from received packets.
    pub learning: bool,
    /// Group Based Policy extension.
    pub gbp: bool,
}

impl VxlanInfo {
    /// A device on `link` sending from `local`, learning off (as flannel makes it).
    pub fn new(vni: u32, link: Option<u32>, local: Option<IpAddr>, port: u16) -> VxlanInfo {
        VxlanInfo {
            vni,
            link,
            local,
            port,
            learning: false,
            gbp: false,
        }
    }

    /// IFLA_INFO_DATA, in the order iproute2 writes it.
    pub(super) fn data(&self, d: wire::Body) -> wire::Body {
        let mut d = match self.link {
            Some(link) => d.u32(IFLA_VXLAN_LINK, link),
            None => d,
        };
        if self.gbp {
            // A flag attribute: present means on.
            d = d.attr(IFLA_VXLAN_GBP, &[]);
        }
        d = d.u32(IFLA_VXLAN_ID, self.vni);
        d = match self.local {
            Some(ip @ IpAddr::V4(_)) => d.ip(IFLA_VXLAN_LOCAL, ip),
            Some(ip @ IpAddr::V6(_)) => d.ip(IFLA_VXLAN_LOCAL6, ip),
            None => d,
        };
        d = d.u8(IFLA_VXLAN_LEARNING, u8::from(self.learning));
        match self.port {
            0 => d,
            // The one big-endian attribute of the set.
            port => d.attr(IFLA_VXLAN_PORT, &port.to_be_bytes()),
        }
    }

    /// Reads IFLA_INFO_DATA of a vxlan link; `None` without a VNI.
    pub(super) fn parse(data: &[u8]) -> Option<VxlanInfo> {
        let mut info = VxlanInfo::new(0, None, None, 0);
        // The kernel always reports learning; its creation default is on.
        info.learning = true;
        let mut vni = None;
        for (ty, p) in wire::attrs(data) {
            match ty {
                IFLA_VXLAN_ID => vni = wire::as_u32(p),
                IFLA_VXLAN_LINK => info.link = wire::as_u32(p).filter(|i| *i != 0),
                IFLA_VXLAN_LOCAL | IFLA_VXLAN_LOCAL6 => {
                    info.local = wire::as_ip(p).filter(|ip| !ip.is_unspecified());
                }
                IFLA_VXLAN_LEARNING => info.learning = p.first().is_some_and(|v| *v != 0),
                IFLA_VXLAN_PORT => {
                    info.port = p.get(..2).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
                }
                IFLA_VXLAN_GBP => info.gbp = true,
                _ => {}
            }
        }
        info.vni = vni?;
        Some(info)
    }
}

#[cfg(test)]
#[path = "vxlan_tests.rs"]
mod tests;
