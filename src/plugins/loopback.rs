//! loopback: brings `lo` up in the container (CNI_IFNAME is ignored) and reports
//! its addresses, or passes a previous result through unchanged.

use crate::cni::result::{Interface, IpConfig};
use crate::cni::{CniResult, Error, Invocation, NetResult, Plugin};
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::Change;
use crate::netns::NetNs;
use crate::quote::quoted;

pub struct Loopback;

const LO: &str = "lo";

impl Plugin for Loopback {
    /// No keys of its own: the common keys are all it reads.
    fn validate(&self, _inv: &Invocation) -> CniResult<()> {
        Ok(())
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let prev = inv.conf.prev_result()?;
        let ns = NetNs::open(&inv.env.netns)?;
        let (v4, v6) = ns.run(bring_up_lo)??;
        if let Some(prev) = prev {
            return Ok(prev);
        }
        let mut result = NetResult::new();
        result.interfaces.push(Interface {
            name: LO.into(),
            mac: "00:00:00:00:00:00".into(),
            sandbox: inv.env.netns.clone(),
            ..Default::default()
        });
        for address in [v4, v6].into_iter().flatten() {
            result.ips.push(IpConfig {
                interface: Some(0),
                address,
                gateway: None,
            });
        }
        Ok(result)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let Some(ns) = NetNs::open_for_del(&inv.env.netns)? else {
            return Ok(());
        };
        ns.run(|| -> CniResult<()> {
            let mut sock = Socket::open()?;
            let lo = sock.link_by_name(LO)?;
            sock.set_link(&lo, Change::Up(false))?;
            Ok(())
        })?
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let ns = NetNs::open(&inv.env.netns)?;
        ns.run(|| -> CniResult<()> {
            let lo = Socket::open()?.link_by_name(LO)?;
            if !lo.is_up() {
                return Err(Error::internal("loopback interface is down"));
            }
            Ok(())
        })?
    }
}

type LoAddrs = (Option<ipnet::IpNet>, Option<ipnet::IpNet>);

/// Sets `lo` up and returns its first IPv4 and IPv6 address, refusing a `lo`
/// that carries a non-loopback address.
fn bring_up_lo() -> CniResult<LoAddrs> {
    let mut sock = Socket::open()?;
    let lo = sock.link_by_name(LO)?;
    sock.set_link(&lo, Change::Up(true))?;
    let mut first = [None, None];
    for (slot, family) in first.iter_mut().zip([Family::V4, Family::V6]) {
        let addrs = sock.addresses(lo.index, family)?;
        if let Some(bad) = addrs.iter().find(|a| !a.addr.addr().is_loopback()) {
            return Err(Error::internal(format!(
                "loopback interface found with non-loopback address {}",
                quoted(&bad.addr.addr().to_string())
            )));
        }
        *slot = addrs.first().map(|a| a.addr);
    }
    Ok((first[0], first[1]))
}
