//! Traffic control over rtnetlink (no `tc`): tbf and ingress qdiscs, and the u32
//! match-all filter with a mirred egress redirect that bandwidth uses.

use super::headers::TcMsg;
use super::uapi::if_ether::{ETH_P_ALL, ETH_P_IP, ETH_P_IPV6};
use super::uapi::pkt_cls::{
    TC_ACT_STOLEN, TC_U32_TERMINAL, TCA_ACT_KIND, TCA_ACT_OPTIONS, TCA_U32_ACT, TCA_U32_CLASSID,
    TCA_U32_SEL,
};
use super::uapi::pkt_sched::{
    TC_H_INGRESS, TC_H_MAJ_MASK, TC_H_MIN_INGRESS, TC_H_ROOT, TC_HTB_PROTOVER, TCA_HTB_CEIL64,
    TCA_HTB_INIT, TCA_HTB_PARMS, TCA_HTB_RATE64, TCA_TBF_PARMS, TCA_TBF_RATE64,
};
use super::uapi::rtnetlink::{TCA_KIND, TCA_OPTIONS};
use super::uapi::tc_mirred::{TCA_EGRESS_REDIR, TCA_MIRRED_PARMS};
use super::wire::{self, Body};
use super::{Result, Socket};
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;

/// The ingress qdisc's own handle, `ffff:` (the kernel takes no other).
const INGRESS_QDISC: u32 = TC_H_INGRESS & TC_H_MAJ_MASK;
/// TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS): names the ingress filters of an
/// ingress qdisc as of clsact's ingress side.
const PARENT_INGRESS_FILTERS: u32 = INGRESS_QDISC | TC_H_MIN_INGRESS;
/// Offset of `ifindex` in struct tc_mirred (tc_gen, then eaction).
const MIRRED_IFINDEX: usize = 24;
/// A filter's actions are nested by their order, the first at 1.
const FIRST_ACTION: u16 = 1;
/// struct tc_htb_glob's `rate2quantum`: iproute2's default.
const HTB_RATE2QUANTUM: u32 = 10;
/// Where a subnet filter's keys look: the source and destination address in
/// struct iphdr (linux/ip.h) and struct ipv6hdr (linux/ipv6.h).
const IPV4_SADDR_AT: i32 = 12;
const IPV4_DADDR_AT: i32 = 16;
const IPV6_SADDR_AT: i32 = 8;
const IPV6_DADDR_AT: i32 = 24;
/// Subnet filters' priorities: one per family.
const SUBNET_PRIO_V4: u32 = 16;
const SUBNET_PRIO_V6: u32 = 17;
/// iproute2's TIME_UNITS_PER_SEC (tc_core.h), not a kernel header.
pub const TIME_UNITS_PER_SEC: f64 = 1_000_000.0;

pub const fn make_handle(major: u16, minor: u16) -> u32 {
    // Widening `as`: `u32::from` is not callable in a const fn.
    ((major as u32) << 16) | minor as u32
}

/// `struct tc_ratespec` with only the rate set (no rate table, as Go netlink).
fn ratespec(rate: u32) -> [u8; 12] {
    let mut r = [0u8; 12];
    r[8..12].copy_from_slice(&rate.to_ne_bytes());
    r
}

/// Microseconds → scheduler ticks, from /proc/net/psched as Go netlink reads it.
pub fn tick_in_usec() -> f64 {
    let text = std::fs::read_to_string("/proc/net/psched").unwrap_or_default();
    let vals: Vec<u64> = text
        .split_whitespace()
        .take(4)
        .filter_map(|p| u64::from_str_radix(p, 16).ok())
        .collect();
    let [mut t2us, us2t, clock_res, _] = vals[..] else {
        return 1.0;
    };
    if clock_res == 1_000_000_000 {
        t2us = us2t;
    }
    let clock_factor = clock_res as f64 / TIME_UNITS_PER_SEC;
    if us2t == 0 {
        return 1.0;
    }
    t2us as f64 / us2t as f64 * clock_factor
}

/// A qdisc as dumped: kind, handle, parent and (tbf) rate, limit and buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qdisc {
    pub kind: String,
    pub handle: u32,
    pub parent: u32,
    pub tbf: Option<Tbf>,
}

/// tbf parameters in the kernel's units: bytes/s, bytes, ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tbf {
    pub rate: u64,
    pub limit: u32,
    pub buffer: u32,
}

impl Socket {
    /// `tc qdisc add dev <index> root handle 1: tbf …`.
    pub fn add_tbf(&mut self, index: u32, tbf: Tbf) -> Result<()> {
        let op = format!("add tbf qdisc on link {index}");
        let mut qopt = Vec::with_capacity(36);
        qopt.extend_from_slice(&ratespec(u32::try_from(tbf.rate).unwrap_or(u32::MAX)));
        qopt.extend_from_slice(&ratespec(0));
        qopt.extend_from_slice(&tbf.limit.to_ne_bytes());
        qopt.extend_from_slice(&tbf.buffer.to_ne_bytes());
        qopt.extend_from_slice(&0u32.to_ne_bytes());
        let rate64 = (tbf.rate >= 1 << 32).then_some(tbf.rate);
        let body = Body::new(
            &TcMsg {
                index,
                handle: make_handle(1, 0),
                parent: TC_H_ROOT,
                ..TcMsg::default()
            }
            .bytes(),
        )
        .str(TCA_KIND, "tbf")
        .nest(TCA_OPTIONS, |o| {
            let o = o.attr(TCA_TBF_PARMS, &qopt);
            match rate64 {
                Some(r) => o.attr(TCA_TBF_RATE64, &r.to_ne_bytes()),
                None => o,
            }
        });
        self.change(
            &op,
            Rtm::Newqdisc,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(body.into_bytes()),
        )
    }

    /// `tc qdisc add dev <index> ingress`.
    pub fn add_ingress(&mut self, index: u32) -> Result<()> {
        let op = format!("add ingress qdisc on link {index}");
        let body = Body::new(
            &TcMsg {
                index,
                handle: INGRESS_QDISC,
                parent: TC_H_INGRESS,
                ..TcMsg::default()
            }
            .bytes(),
        )
        .str(TCA_KIND, "ingress");
        self.change(
            &op,
            Rtm::Newqdisc,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(body.into_bytes()),
        )
    }

    /// A u32 match-all filter on the ingress qdisc redirecting every packet to `target`.
    pub fn add_redirect(&mut self, index: u32, target: u32) -> Result<()> {
        let op = format!("add redirect filter on link {index}");
        // tc_u32_sel (16 bytes) with one all-zero key (16 bytes): match all.
        let mut sel = vec![0u8; 32];
        sel[0] = TC_U32_TERMINAL;
        sel[2] = 1;
        let mut mirred = Vec::with_capacity(28);
        for v in [0i32, 0, TC_ACT_STOLEN, 0, 0, TCA_EGRESS_REDIR] {
            mirred.extend_from_slice(&v.to_ne_bytes());
        }
        mirred.extend_from_slice(&target.to_ne_bytes());
        let info = (1u32 << 16) | u32::from(ETH_P_ALL.to_be());
        let body = Body::new(
            &TcMsg {
                index,
                parent: INGRESS_QDISC,
                info,
                ..TcMsg::default()
            }
            .bytes(),
        )
        .str(TCA_KIND, "u32")
        .nest(TCA_OPTIONS, |o| {
            o.u32(TCA_U32_CLASSID, make_handle(1, 1))
                .attr(TCA_U32_SEL, &sel)
                .nest(TCA_U32_ACT, |acts| {
                    acts.nest(FIRST_ACTION, |a| {
                        a.str(TCA_ACT_KIND, "mirred")
                            .nest(TCA_ACT_OPTIONS, |m| m.attr(TCA_MIRRED_PARMS, &mirred))
                    })
                })
        });
        self.change(
            &op,
            Rtm::Newtfilter,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(body.into_bytes()),
        )
    }

    /// `tc qdisc add dev <index> root handle 1: htb default <default_minor>`.
    pub fn add_htb(&mut self, index: u32, default_minor: u16) -> Result<()> {
        let op = format!("add htb qdisc on link {index}");
        let mut glob = Vec::with_capacity(20);
        for v in [
            TC_HTB_PROTOVER,
            HTB_RATE2QUANTUM,
            u32::from(default_minor),
            0,
            0,
        ] {
            glob.extend_from_slice(&v.to_ne_bytes());
        }
        let body = Body::new(
            &TcMsg {
                index,
                handle: make_handle(1, 0),
                parent: TC_H_ROOT,
                ..TcMsg::default()
            }
            .bytes(),
        )
        .str(TCA_KIND, "htb")
        .nest(TCA_OPTIONS, |o| o.attr(TCA_HTB_INIT, &glob));
        self.change(
            &op,
            Rtm::Newqdisc,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(body.into_bytes()),
        )
    }

    /// An htb class `1:<minor>` with rate = ceil (bytes/s) and `buffer` ticks.
    pub fn add_htb_class(&mut self, index: u32, minor: u16, rate: u64, buffer: u32) -> Result<()> {
        let op = format!("add htb class 1:{minor} on link {index}");
        let rate32 = u32::try_from(rate).unwrap_or(u32::MAX);
        let mut opt = Vec::with_capacity(44);
        opt.extend_from_slice(&ratespec(rate32));
        opt.extend_from_slice(&ratespec(rate32));
        for v in [buffer, buffer, 0, 0, 0] {
            opt.extend_from_slice(&v.to_ne_bytes());
        }
        let big = (rate >= 1 << 32).then_some(rate);
        let body = Body::new(
            &TcMsg {
                index,
                handle: make_handle(1, minor),
                parent: make_handle(1, 0),
                ..TcMsg::default()
            }
            .bytes(),
        )
        .str(TCA_KIND, "htb")
        .nest(TCA_OPTIONS, |o| {
            let o = o.attr(TCA_HTB_PARMS, &opt);
            match big {
                Some(r) => o
                    .attr(TCA_HTB_RATE64, &r.to_ne_bytes())
                    .attr(TCA_HTB_CEIL64, &r.to_ne_bytes()),
                None => o,
            }
        });
        self.change(
            &op,
            Rtm::Newtclass,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(body.into_bytes()),
        )
    }

    /// A u32 filter on the htb root sending packets whose source (or destination)
    /// lies in `net` to class `1:<minor>`.
    pub fn add_subnet_filter(
        &mut self,
        index: u32,
        net: ipnet::IpNet,
        source: bool,
        minor: u16,
    ) -> Result<()> {
        let op = format!("add subnet filter {net} on link {index}");
        let (words, proto, base): (Vec<(u32, u32)>, u16, i32) = match net {
            ipnet::IpNet::V4(v4) => (
                vec![(u32::from(v4.netmask()), u32::from(v4.network()))],
                ETH_P_IP,
                if source { IPV4_SADDR_AT } else { IPV4_DADDR_AT },
            ),
            ipnet::IpNet::V6(v6) => {
                let mask = u128::from(v6.netmask());
                let val = u128::from(v6.network());
                let words = (0..4)
                    .map(|i| {
                        let shift = 96 - 32 * i;
                        let word = |v: u128| u32::try_from((v >> shift) & 0xffff_ffff).unwrap_or(0);
                        (word(mask), word(val))
                    })
                    .filter(|(m, _)| *m != 0)
                    .collect();
                let at = if source { IPV6_SADDR_AT } else { IPV6_DADDR_AT };
                (words, ETH_P_IPV6, at)
            }
        };
        let nkeys = words.len().max(1);
        let mut sel = vec![0u8; 16];
        sel[0] = TC_U32_TERMINAL;
        // At most four keys (an IPv6 prefix): always fits.
        sel[2] = u8::try_from(nkeys).unwrap_or(u8::MAX);
        if words.is_empty() {
            sel.extend_from_slice(&[0u8; 16]);
        }
        for ((mask, val), off) in words.iter().zip((base..).step_by(4)) {
            sel.extend_from_slice(&mask.to_be_bytes());
            sel.extend_from_slice(&val.to_be_bytes());
            sel.extend_from_slice(&i32::to_ne_bytes(off));
            sel.extend_from_slice(&0i32.to_ne_bytes());
        }
        let prio = if proto == ETH_P_IP {
            SUBNET_PRIO_V4
        } else {
            SUBNET_PRIO_V6
        };
        let info = (prio << 16) | u32::from(proto.to_be());
        let body = Body::new(
            &TcMsg {
                index,
                parent: make_handle(1, 0),
                info,
                ..TcMsg::default()
            }
            .bytes(),
        )
        .str(TCA_KIND, "u32")
        .nest(TCA_OPTIONS, |o| {
            o.u32(TCA_U32_CLASSID, make_handle(1, minor))
                .attr(TCA_U32_SEL, &sel)
        });
        self.change(
            &op,
            Rtm::Newtfilter,
            NlmF::CREATE | NlmF::EXCL,
            Buffer::from(body.into_bytes()),
        )
    }

    /// Deletes the root qdisc (`root`) or the ingress qdisc of a link.
    pub fn del_qdisc(&mut self, index: u32, ingress: bool) -> Result<()> {
        let op = format!("delete qdisc of link {index}");
        let (handle, parent) = if ingress {
            (INGRESS_QDISC, TC_H_INGRESS)
        } else {
            (0, TC_H_ROOT)
        };
        let body = Body::new(
            &TcMsg {
                index,
                handle,
                parent,
                ..TcMsg::default()
            }
            .bytes(),
        );
        self.change(
            &op,
            Rtm::Delqdisc,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )
    }

    /// The root and the ingress qdisc of link `index`: two lookups, where a
    /// dump would walk and encode every qdisc of every link of the namespace
    /// (a node with 1,000 pods has 1,000 veths).
    pub fn qdiscs(&mut self, index: u32) -> Result<Vec<Qdisc>> {
        let mut out = Vec::new();
        for parent in [TC_H_ROOT, TC_H_INGRESS] {
            let body = Body::new(
                &TcMsg {
                    index,
                    parent,
                    ..TcMsg::default()
                }
                .bytes(),
            );
            // The kernel answers a qdisc GET only when asked to echo it.
            let replies = match self.get(
                "get qdisc",
                Rtm::Getqdisc,
                NlmF::ECHO,
                Buffer::from(body.into_bytes()),
            ) {
                Ok(replies) => replies,
                // No such qdisc (no ingress queue yet).
                Err(e) if e.is(nix::libc::ENOENT) => continue,
                Err(e) => return Err(e),
            };
            out.extend(
                replies
                    .iter()
                    .filter_map(|b| parse_qdisc(b.as_ref(), index)),
            );
        }
        Ok(out)
    }
}

/// One qdisc message of link `index`.
fn parse_qdisc(msg: &[u8], index: u32) -> Option<Qdisc> {
    let (h, attrs) = TcMsg::parse(msg)?;
    if h.index != index {
        return None;
    }
    let kind = wire::find(attrs, TCA_KIND)
        .map(wire::as_str)
        .unwrap_or_default();
    let tbf = (kind == "tbf")
        .then(|| wire::find(attrs, TCA_OPTIONS))
        .flatten()
        .and_then(|o| wire::find(o, TCA_TBF_PARMS))
        .and_then(|p| {
            let rate = u64::from(wire::as_u32(p.get(8..12)?)?);
            let limit = wire::as_u32(p.get(24..28)?)?;
            let buffer = wire::as_u32(p.get(28..32)?)?;
            let rate = wire::find(attrs, TCA_OPTIONS)
                .and_then(|o| wire::find(o, TCA_TBF_RATE64))
                .and_then(|r| Some(u64::from_ne_bytes(r.get(..8)?.try_into().ok()?)))
                .unwrap_or(rate);
            Some(Tbf {
                rate,
                limit,
                buffer,
            })
        });
    Some(Qdisc {
        kind,
        handle: h.handle,
        parent: h.parent,
        tbf,
    })
}

/// The links a mirred action of one dumped filter sends packets to. Every
/// nested attribute of the classifier's options is read as an action list, so
/// u32, matchall, flower and bpf filters are all covered.
fn mirred_targets(msg: &[u8], index: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Some((h, attrs)) = TcMsg::parse(msg) else {
        return out;
    };
    if h.index != index {
        return out;
    }
    let Some(options) = wire::find(attrs, TCA_OPTIONS) else {
        return out;
    };
    for (_, actions) in wire::attrs(options) {
        for (_, action) in wire::attrs(actions) {
            if wire::find(action, TCA_ACT_KIND)
                .map(wire::as_str)
                .as_deref()
                != Some("mirred")
            {
                continue;
            }
            let target = wire::find(action, TCA_ACT_OPTIONS)
                .and_then(|o| wire::find(o, TCA_MIRRED_PARMS))
                .and_then(|p| wire::as_u32(p.get(MIRRED_IFINDEX..MIRRED_IFINDEX + 4)?));
            out.extend(target);
        }
    }
    out
}

impl Socket {
    /// The links that filters on link `index`'s ingress (an ingress qdisc or
    /// clsact) redirect or mirror packets to.
    pub fn ingress_mirred_targets(&mut self, index: u32) -> Result<Vec<u32>> {
        let body = Body::new(
            &TcMsg {
                index,
                parent: PARENT_INGRESS_FILTERS,
                ..TcMsg::default()
            }
            .bytes(),
        );
        let replies: Vec<Buffer> = self.get(
            &format!("list ingress filters of link {index}"),
            Rtm::Gettfilter,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .flat_map(|b| mirred_targets(b.as_ref(), index))
            .collect())
    }
}

#[cfg(test)]
#[path = "tc_tests.rs"]
mod tests;
