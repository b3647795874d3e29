//! Policy routing rules (`ip rule`): add, delete, dump.

use super::addr::Family;
use super::wire::{self, Body, RTMSG_LEN};
use super::{Result, Socket};
use ipnet::IpNet;
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;

// linux/fib_rules.h
const FRA_SRC: u16 = 2;
const FRA_PRIORITY: u16 = 6;
const FRA_TABLE: u16 = 15;
const FR_ACT_TO_TBL: u8 = 1;

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
        let mut b = Body::new(&wire::rtmsg(
            self.family.af(),
            0,
            src_len,
            table_u8,
            0,
            0,
            FR_ACT_TO_TBL,
            0,
        ))
        .u32(FRA_TABLE, self.table);
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
        let h = msg.get(..RTMSG_LEN)?;
        let family = if u16::from(h[0]) == nix::libc::AF_INET6 as u16 {
            Family::V6
        } else {
            Family::V4
        };
        let mut rule = Rule {
            family,
            src: None,
            table: u32::from(h[4]),
            priority: None,
        };
        for (ty, p) in wire::attrs(&msg[RTMSG_LEN..]) {
            match ty {
                FRA_SRC => rule.src = wire::as_ip(p).and_then(|ip| IpNet::new(ip, h[2]).ok()),
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
        let body = Body::new(&wire::rtmsg(family.af(), 0, 0, 0, 0, 0, 0, 0));
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
        let op = format!("add rule {rule:?}");
        self.change(
            &op,
            Rtm::Newrule,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(rule.body().into_bytes()),
        )
    }

    pub fn del_rule(&mut self, rule: &Rule) -> Result<()> {
        let op = format!("delete rule {rule:?}");
        self.change(
            &op,
            Rtm::Delrule,
            NlmF::empty(),
            Buffer::from(rule.body().into_bytes()),
        )
    }
}
