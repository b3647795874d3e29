//! Routes: add, delete, dump filtered by table and link.

use super::addr::Family;
use super::wire::{self, Body, RTMSG_LEN};
use super::{Request, Result, Socket};
use ipnet::IpNet;
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;
use std::net::IpAddr;

// linux/rtnetlink.h
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_PREFSRC: u16 = 7;
const RTA_METRICS: u16 = 8;
const RTA_TABLE: u16 = 15;
const RTAX_MTU: u16 = 2;
const RTAX_ADVMSS: u16 = 8;
pub const RT_TABLE_MAIN: u32 = 254;
pub const RT_SCOPE_UNIVERSE: u8 = 0;
pub const RT_SCOPE_LINK: u8 = 253;
pub const RT_SCOPE_HOST: u8 = 254;
const RTPROT_BOOT: u8 = 3;
const RTN_UNICAST: u8 = 1;
/// RTNH_F_ONLINK (rtm_flags): the gateway is on the link, whatever its addresses.
const RTNH_F_ONLINK: u32 = 4;

/// A route as plugins add, delete and compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub dst: IpNet,
    pub gw: Option<IpAddr>,
    pub oif: Option<u32>,
    pub src: Option<IpAddr>,
    pub scope: u8,
    /// The gateway is reached on `oif` directly, even outside its subnets
    /// (`onlink`).
    pub onlink: bool,
    pub table: u32,
    pub priority: Option<u32>,
    pub protocol: u8,
    pub mtu: Option<u32>,
    pub advmss: Option<u32>,
}

impl Route {
    /// A main-table unicast route to `dst` (scope universe, as Go netlink's default).
    pub fn new(dst: IpNet) -> Route {
        Route {
            dst,
            gw: None,
            oif: None,
            src: None,
            scope: RT_SCOPE_UNIVERSE,
            onlink: false,
            table: RT_TABLE_MAIN,
            priority: None,
            protocol: RTPROT_BOOT,
            mtu: None,
            advmss: None,
        }
    }

    /// A main-table default route of `gw`'s family through `gw`.
    pub fn default_via(gw: IpAddr) -> Route {
        let dst = match gw {
            IpAddr::V4(_) => IpNet::V4(ipnet::Ipv4Net::default()),
            IpAddr::V6(_) => IpNet::V6(ipnet::Ipv6Net::default()),
        };
        let mut r = Route::new(dst);
        r.gw = Some(gw);
        r
    }

    fn body(&self, with_protocol: bool) -> Body {
        let family = Family::of(self.dst.addr());
        let table_u8 = u8::try_from(self.table).unwrap_or(0);
        let protocol = if with_protocol { self.protocol } else { 0 };
        let mut b = Body::new(&wire::rtmsg(
            family.af(),
            self.dst.prefix_len(),
            0,
            table_u8,
            protocol,
            self.scope,
            RTN_UNICAST,
            if self.onlink { RTNH_F_ONLINK } else { 0 },
        ))
        .u32(RTA_TABLE, self.table)
        .ip(RTA_DST, self.dst.network());
        if let Some(gw) = self.gw {
            b = b.ip(RTA_GATEWAY, gw);
        }
        if let Some(oif) = self.oif {
            b = b.u32(RTA_OIF, oif);
        }
        if let Some(src) = self.src {
            b = b.ip(RTA_PREFSRC, src);
        }
        if let Some(p) = self.priority {
            b = b.u32(RTA_PRIORITY, p);
        }
        if self.mtu.is_some() || self.advmss.is_some() {
            let (mtu, advmss) = (self.mtu, self.advmss);
            b = b.nest(RTA_METRICS, |m| {
                let m = match mtu {
                    Some(v) => m.u32(RTAX_MTU, v),
                    None => m,
                };
                match advmss {
                    Some(v) => m.u32(RTAX_ADVMSS, v),
                    None => m,
                }
            });
        }
        b
    }

    /// Parses one reply payload (header struct + attributes); public for the fuzz targets.
    pub fn parse(msg: &[u8]) -> Option<Route> {
        let h = msg.get(..RTMSG_LEN)?;
        if h[7] != RTN_UNICAST {
            return None;
        }
        let family_v4 = u16::from(h[0]) == nix::libc::AF_INET as u16;
        let mut dst = None;
        let mut r = Route::new(if family_v4 {
            "0.0.0.0/0".parse().ok()?
        } else {
            "::/0".parse().ok()?
        });
        r.scope = h[6];
        r.protocol = h[5];
        r.onlink = wire::as_u32(&h[8..12]).is_some_and(|f| f & RTNH_F_ONLINK != 0);
        r.table = u32::from(h[4]);
        for (ty, p) in wire::attrs(&msg[RTMSG_LEN..]) {
            match ty {
                RTA_DST => dst = wire::as_ip(p),
                RTA_GATEWAY => r.gw = wire::as_ip(p),
                RTA_OIF => r.oif = wire::as_u32(p),
                RTA_PREFSRC => r.src = wire::as_ip(p),
                RTA_PRIORITY => r.priority = wire::as_u32(p),
                RTA_TABLE => r.table = wire::as_u32(p).unwrap_or(r.table),
                _ => {}
            }
        }
        if let Some(ip) = dst {
            r.dst = IpNet::new(ip, h[1]).ok()?;
        }
        Some(r)
    }
}

impl Socket {
    /// Adds a route; EEXIST when it is there.
    pub fn add_route(&mut self, route: &Route) -> Result<()> {
        self.new_route("add", route, NlmF::CREATE | NlmF::EXCL)
    }

    /// Adds a route without EXCL (Go's RouteAddEcmp): another route to the same
    /// destination with another gateway or metric is added next to it.
    pub fn append_route(&mut self, route: &Route) -> Result<()> {
        self.new_route("add", route, NlmF::CREATE)
    }

    fn new_route(&mut self, verb: &str, route: &Route, flags: NlmF) -> Result<()> {
        let op = format!("{verb} route {}", describe(route));
        self.change(
            &op,
            Rtm::Newroute,
            flags,
            Buffer::from(route.body(true).into_bytes()),
        )
    }

    /// Replaces (or creates) a route.
    pub fn replace_route(&mut self, route: &Route) -> Result<()> {
        let op = format!("replace route {}", describe(route));
        self.apply(&op, &replace_request(route))
    }

    pub fn del_route(&mut self, route: &Route) -> Result<()> {
        let op = format!("delete route {}", describe(route));
        self.change(
            &op,
            Rtm::Delroute,
            NlmF::empty(),
            Buffer::from(route.body(false).into_bytes()),
        )
    }

    /// Deletes a route; one already gone is no error.
    pub fn del_route_if_present(&mut self, route: &Route) -> Result<()> {
        match self.del_route(route) {
            Err(e) if e.is_not_found() => Ok(()),
            r => r,
        }
    }

    /// Unicast routes of one family in `table`, optionally only those out of `oif`.
    pub fn routes(&mut self, family: Family, table: u32, oif: Option<u32>) -> Result<Vec<Route>> {
        let op = "list routes";
        // Strict dumps filter on the attributes given; the header must stay zero.
        let mut body =
            Body::new(&wire::rtmsg(family.af(), 0, 0, 0, 0, 0, 0, 0)).u32(RTA_TABLE, table);
        if let Some(oif) = oif {
            body = body.u32(RTA_OIF, oif);
        }
        let replies: Vec<Buffer> = self.get(
            op,
            Rtm::Getroute,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .filter_map(|b| Route::parse(b.as_ref()))
            .filter(|r| r.table == table && oif.is_none_or(|o| r.oif == Some(o)))
            .collect())
    }
}

impl Socket {
    /// Unicast routes of one family in every table.
    pub fn all_routes(&mut self, family: Family) -> Result<Vec<Route>> {
        let body = Body::new(&wire::rtmsg(family.af(), 0, 0, 0, 0, 0, 0, 0));
        let replies: Vec<Buffer> = self.get(
            "list routes",
            Rtm::Getroute,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .filter_map(|b| Route::parse(b.as_ref()))
            .collect())
    }

    /// The route the kernel would use to reach `ip` (`ip route get`).
    pub fn route_get(&mut self, ip: std::net::IpAddr) -> Result<Option<Route>> {
        let family = Family::of(ip);
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        let body = Body::new(&wire::rtmsg(family.af(), bits, 0, 0, 0, 0, 0, 0)).ip(RTA_DST, ip);
        let replies: Vec<Buffer> = self.get(
            "get route",
            Rtm::Getroute,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies.iter().find_map(|b| Route::parse(b.as_ref())))
    }
}

fn replace_request(route: &Route) -> Request {
    Request::new(
        Rtm::Newroute,
        NlmF::CREATE | NlmF::REPLACE,
        route.body(true),
    )
}

fn describe(r: &Route) -> String {
    let mut s = r.dst.to_string();
    if let Some(gw) = r.gw {
        s.push_str(&format!(" via {gw}"));
    }
    if let Some(oif) = r.oif {
        s.push_str(&format!(" dev {oif}"));
    }
    if r.onlink {
        s.push_str(" onlink");
    }
    if r.table != RT_TABLE_MAIN {
        s.push_str(&format!(" table {}", r.table));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip route replace 10.244.1.0/24 via 10.244.1.0 dev flannel.1 onlink
    /// proto 0x7a` (flannel.1 = link 4): the request iproute2 6.1 sent
    /// (`strace -e trace=sendmsg -e write=3`), byte for byte, but for the one
    /// attribute we add to every route, RTA_TABLE (tables above 255 fit only
    /// there), which makes it 8 bytes longer.
    #[test]
    #[cfg(target_endian = "little")]
    fn an_onlink_route_with_a_protocol_is_iproute2s_request() {
        #[rustfmt::skip]
        let ours: Vec<u8> = vec![
            0x34 + 8, 0, 0, 0, 0x18, 0, 0x05, 0x05, // len, RTM_NEWROUTE, REQUEST|ACK|REPLACE|CREATE
            0x39, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
            2, 24, 0, 0,                            // AF_INET, /24, src_len, tos
            254, 0x7a, 0, 1,                        // main, proto 0x7a, scope universe, unicast
            4, 0, 0, 0,                             // RTNH_F_ONLINK
            8, 0, 15, 0, 254, 0, 0, 0,              // RTA_TABLE (ours only)
            8, 0, 1, 0, 10, 244, 1, 0,              // RTA_DST
            8, 0, 5, 0, 10, 244, 1, 0,              // RTA_GATEWAY
            8, 0, 4, 0, 4, 0, 0, 0,                 // RTA_OIF
        ];
        let mut route = Route::new("10.244.1.0/24".parse().expect("net"));
        route.gw = Some("10.244.1.0".parse().expect("ip"));
        route.oif = Some(4);
        route.onlink = true;
        route.protocol = 0x7a;
        assert_eq!(replace_request(&route).bytes(0x6b0b_b739), ours);
        // Read back as the kernel dumps it: protocol and onlink kept.
        assert_eq!(Route::parse(&ours[16..]), Some(route));
        assert_eq!(
            describe(&Route::parse(&ours[16..]).expect("parsed")),
            "10.244.1.0/24 via 10.244.1.0 dev 4 onlink"
        );
    }
}
