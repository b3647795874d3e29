//! Routes: add, delete, dump filtered by table and link.

use super::addr::Family;
use super::headers::RtMsg;
pub use super::uapi::rtnetlink::{RT_SCOPE_HOST, RT_SCOPE_LINK, RT_SCOPE_UNIVERSE, RT_TABLE_MAIN};
use super::uapi::rtnetlink::{
    RTA_DST, RTA_GATEWAY, RTA_METRICS, RTA_OIF, RTA_PREFSRC, RTA_PRIORITY, RTA_TABLE, RTAX_ADVMSS,
    RTAX_MTU, RTN_UNICAST, RTNH_F_ONLINK, RTPROT_BOOT,
};
use super::uapi::socket::AF_INET;
use super::wire::{self, Body};
use super::{Object, Request, Result, Socket};
use ipnet::IpNet;
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;
use std::net::IpAddr;

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
        let header = RtMsg {
            family: family.af(),
            dst_len: self.dst.prefix_len(),
            table: table_u8,
            protocol,
            scope: self.scope,
            route_type: RTN_UNICAST,
            flags: if self.onlink { RTNH_F_ONLINK } else { 0 },
            ..RtMsg::default()
        };
        let mut b = Body::new(&header.bytes())
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
        let (h, attrs) = RtMsg::parse(msg)?;
        if h.route_type != RTN_UNICAST {
            return None;
        }
        let family_v4 = h.family == AF_INET;
        let mut dst = None;
        let mut r = Route::new(if family_v4 {
            "0.0.0.0/0".parse().ok()?
        } else {
            "::/0".parse().ok()?
        });
        r.scope = h.scope;
        r.protocol = h.protocol;
        r.onlink = h.flags & RTNH_F_ONLINK != 0;
        r.table = u32::from(h.table);
        for (ty, p) in wire::attrs(attrs) {
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
            r.dst = IpNet::new(ip, h.dst_len).ok()?;
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
        let op = format!("{verb} route {}", route);
        self.change(
            &op,
            Rtm::Newroute,
            flags,
            Buffer::from(route.body(true).into_bytes()),
        )
        .map_err(|e| e.about(Object::Route))
    }

    /// Replaces (or creates) a route.
    pub fn replace_route(&mut self, route: &Route) -> Result<()> {
        let op = format!("replace route {}", route);
        self.apply(&op, &replace_request(route))
    }

    pub fn del_route(&mut self, route: &Route) -> Result<()> {
        let op = format!("delete route {}", route);
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
        let header = RtMsg {
            family: family.af(),
            ..RtMsg::default()
        };
        let mut body = Body::new(&header.bytes()).u32(RTA_TABLE, table);
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
        let header = RtMsg {
            family: family.af(),
            ..RtMsg::default()
        };
        let body = Body::new(&header.bytes());
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
        let header = RtMsg {
            family: family.af(),
            dst_len: bits,
            ..RtMsg::default()
        };
        let body = Body::new(&header.bytes()).ip(RTA_DST, ip);
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

#[cfg(test)]
#[path = "route_tests.rs"]
mod tests;
