//! Policy routing rules (`ip rule`): add, delete, dump.

use super::addr::Family;
use super::headers::RtMsg;
use super::uapi::fib_rules::{FR_ACT_TO_TBL, FRA_PRIORITY, FRA_SRC, FRA_TABLE};
use super::uapi::socket::AF_INET6;
use super::wire::{self, Body};
use super::{Result, Socket};
use ipnet::IpNet;
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;

/// A `from <src> lookup <table>` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub family: Family,
    pub src: Option<IpNet>,
    pub table: u32,
    pub priority: Option<u32>,
}

impl Rule {
    fn body(&self) -> Body {
        let src_len = self.src.map_or(0, |s| s.prefix_len());
        let table_u8 = u8::try_from(self.table).unwrap_or(0);
        // struct fib_rule_hdr: rtmsg's layout, the action where the route type is.
        let header = RtMsg {
            family: self.family.af(),
            src_len,
            table: table_u8,
            route_type: FR_ACT_TO_TBL,
            ..RtMsg::default()
        };
        let mut b = Body::new(&header.bytes()).u32(FRA_TABLE, self.table);
        if let Some(src) = self.src {
            b = b.ip(FRA_SRC, src.addr());
        }
        if let Some(p) = self.priority {
            b = b.u32(FRA_PRIORITY, p);
        }
        b
    }

    /// Parses one reply payload (header struct + attributes); public for the fuzz targets.
    pub fn parse(msg: &[u8]) -> Option<Rule> {
        let (h, attrs) = RtMsg::parse(msg)?;
        let family = if h.family == AF_INET6 {
            Family::V6
        } else {
            Family::V4
        };
        let mut rule = Rule {
            family,
            src: None,
            table: u32::from(h.table),
            priority: None,
        };
        for (ty, p) in wire::attrs(attrs) {
            match ty {
                FRA_SRC => rule.src = wire::as_ip(p).and_then(|ip| IpNet::new(ip, h.src_len).ok()),
                FRA_TABLE => rule.table = wire::as_u32(p).unwrap_or(rule.table),
                FRA_PRIORITY => rule.priority = wire::as_u32(p),
                _ => {}
            }
        }
        Some(rule)
    }
}

impl Socket {
    pub fn rules(&mut self, family: Family) -> Result<Vec<Rule>> {
        let header = RtMsg {
            family: family.af(),
            ..RtMsg::default()
        };
        let body = Body::new(&header.bytes());
        let replies: Vec<Buffer> = self.get(
            "list rules",
            Rtm::Getrule,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .filter_map(|b| Rule::parse(b.as_ref()))
            .collect())
    }

    pub fn add_rule(&mut self, rule: &Rule) -> Result<()> {
        let op = format!("add rule {rule}");
        self.change(
            &op,
            Rtm::Newrule,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(rule.body().into_bytes()),
        )
    }

    pub fn del_rule(&mut self, rule: &Rule) -> Result<()> {
        let op = format!("delete rule {rule}");
        self.change(
            &op,
            Rtm::Delrule,
            NlmF::empty(),
            Buffer::from(rule.body().into_bytes()),
        )
    }
}
