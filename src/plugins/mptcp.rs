//! mptcp (chained): the container's MPTCP path manager. Each `endpoints`
//! entry makes endpoints of CNI_IFNAME's addresses in prevResult (all of them,
//! or the one `address` names) with its `flags` (`signal`, `subflow`,
//! `backup`, `fullmesh`), bound to that interface; `limits` sets the
//! namespace's `subflows` and `addAddrAccepted`. Its output is prevResult.
//! Everything lives in the container's namespace, so DEL only tidies an
//! interface that stays; GC has nothing to collect.

use crate::attach;
use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::netlink::Socket;
use crate::netlink::mptcp::{
    Endpoint, FLAGS, LIMIT_MAX, Limits, MPTCP_PM_ADDR_FLAG_FULLMESH, MPTCP_PM_ADDR_FLAG_SIGNAL,
    PathManager,
};
use crate::netns::NetNs;
use crate::quote::quoted;
use serde::Deserialize;
use std::net::IpAddr;

pub struct Mptcp;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
struct Keys {
    endpoints: Vec<EndpointKeys>,
    limits: Option<LimitKeys>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "Endpoint", rename_all = "camelCase", default)]
struct EndpointKeys {
    address: Option<String>,
    flags: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "Limits", rename_all = "camelCase", default)]
struct LimitKeys {
    subflows: Option<u32>,
    add_addr_accepted: Option<u32>,
}

/// The validated config: per endpoint entry, its address (None: every
/// address of the interface) and flags.
struct Conf {
    endpoints: Vec<(Option<IpAddr>, u32)>,
    subflows: Option<u32>,
    add_addr_accepted: Option<u32>,
}

/// Limits as an error text shows them.
fn limits_text(l: Limits) -> String {
    format!(
        "subflows {}, add_addr_accepted {}",
        l.subflows, l.add_addr_accepted
    )
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        let mut endpoints = Vec::new();
        for e in &k.endpoints {
            let address = match &e.address {
                Some(a) => Some(a.parse::<IpAddr>().map_err(|_| {
                    Error::invalid_config(format!(
                        "mptcp: invalid endpoint address {a}",
                        a = quoted(&a)
                    ))
                })?),
                None => None,
            };
            endpoints.push((address, flags(&e.flags)?));
        }
        let limits = k.limits.unwrap_or_default();
        for (name, v) in [
            ("subflows", limits.subflows),
            ("addAddrAccepted", limits.add_addr_accepted),
        ] {
            if v.is_some_and(|v| v > LIMIT_MAX) {
                return Err(Error::invalid_config(format!(
                    "mptcp: limits.{name} must be at most {LIMIT_MAX}"
                )));
            }
        }
        Ok(Conf {
            endpoints,
            subflows: limits.subflows,
            add_addr_accepted: limits.add_addr_accepted,
        })
    }

    /// The endpoints ADD makes for these interface addresses.
    fn wanted(&self, ifaddrs: &[IpAddr], ifindex: i32) -> CniResult<Vec<Endpoint>> {
        let mut out: Vec<Endpoint> = Vec::new();
        for (address, flags) in &self.endpoints {
            let addresses = match address {
                Some(a) if ifaddrs.contains(a) => vec![*a],
                Some(a) => {
                    return Err(Error::invalid_config(format!(
                        "mptcp: endpoint address {a} is not an address of the interface in prevResult"
                    )));
                }
                None => ifaddrs.to_vec(),
            };
            for address in addresses {
                // A later entry for the same address wins.
                out.retain(|e| e.address != address);
                out.push(Endpoint {
                    id: 0,
                    address,
                    flags: *flags,
                    ifindex,
                });
            }
        }
        Ok(out)
    }

    /// The limits ADD sets, unset ones kept as they are.
    fn limits(&self, now: Limits) -> Option<Limits> {
        if self.subflows.is_none() && self.add_addr_accepted.is_none() {
            return None;
        }
        Some(Limits {
            subflows: self.subflows.unwrap_or(now.subflows),
            add_addr_accepted: self.add_addr_accepted.unwrap_or(now.add_addr_accepted),
        })
    }
}

fn flags(names: &[String]) -> CniResult<u32> {
    let mut bits = 0;
    for name in names {
        let (_, bit) = FLAGS.iter().find(|(n, _)| n == name).ok_or_else(|| {
            Error::invalid_config(format!(
                "mptcp: unknown endpoint flag {name} (signal, subflow, backup, fullmesh)",
                name = quoted(&name)
            ))
        })?;
        bits |= bit;
    }
    // The kernel refuses the pair.
    if bits & MPTCP_PM_ADDR_FLAG_SIGNAL != 0 && bits & MPTCP_PM_ADDR_FLAG_FULLMESH != 0 {
        return Err(Error::invalid_config(
            "mptcp: an endpoint cannot be both signal and fullmesh",
        ));
    }
    Ok(bits)
}

fn prev(inv: &Invocation) -> CniResult<NetResult> {
    inv.conf
        .container_prev_result()?
        .ok_or_else(|| Error::invalid_config("mptcp: must be called as chained plugin"))
}

/// CNI_IFNAME's addresses in prevResult.
fn iface_addresses(prev: &NetResult, ifname: &str) -> Vec<IpAddr> {
    prev.ips
        .iter()
        .filter(|ip| match ip.interface {
            None => true,
            Some(i) => prev.interfaces.get(i).is_some_and(|itf| itf.name == ifname),
        })
        .map(|ip| ip.address.addr())
        .collect()
}

fn path_manager() -> CniResult<PathManager> {
    PathManager::open()?
        .ok_or_else(|| Error::internal("mptcp: this kernel has no MPTCP path manager"))
}

fn ifindex(ifname: &str) -> CniResult<i32> {
    let link = Socket::open()?
        .link_by_name(ifname)
        .with_context(|| format!("mptcp: failed to find {ifname}"))?;
    i32::try_from(link.index).map_err(|_| Error::internal("mptcp: interface index out of range"))
}

/// Adds each endpoint, replacing one of the same address the namespace has.
fn add_endpoints(pm: &mut PathManager, wanted: &[Endpoint]) -> CniResult<()> {
    let have = pm.endpoints()?;
    for e in wanted {
        if let Some(old) = have.iter().find(|h| h.address == e.address) {
            if old.flags & 0xf == e.flags && old.ifindex == e.ifindex {
                continue;
            }
            pm.del(old)?;
        }
        pm.add(e)?;
    }
    Ok(())
}

impl Plugin for Mptcp {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let prev = prev(inv)?;
        let ifname = inv.env.ifname.clone();
        let ifaddrs = iface_addresses(&prev, &ifname);
        let ns = attach::open_netns(&inv.env.netns)?;
        ns.run(move || -> CniResult<()> {
            let mut pm = path_manager()?;
            let wanted = conf.wanted(&ifaddrs, ifindex(&ifname)?)?;
            add_endpoints(&mut pm, &wanted)?;
            if let Some(limits) = conf.limits(pm.limits()?) {
                pm.set_limits(limits)?;
            }
            Ok(())
        })??;
        Ok(prev)
    }

    /// Removes the endpoints of the interface's addresses (and of the
    /// configured ones), when the namespace and the interface are still there.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        // DEL takes what ADD refuses: only the addresses it names matter.
        let k: Keys = inv.conf.plugin_keys()?;
        let named: Vec<IpAddr> = k
            .endpoints
            .iter()
            .filter_map(|e| e.address.as_deref().and_then(|a| a.parse().ok()))
            .collect();
        let Some(ns) = NetNs::open_for_del(&inv.env.netns)? else {
            return Ok(());
        };
        let ifname = inv.env.ifname.clone();
        ns.run(move || -> CniResult<()> {
            let Some(mut pm) = PathManager::open()? else {
                return Ok(());
            };
            // The interface may be gone: then only named addresses are known.
            let index = ifindex(&ifname).ok();
            for e in pm.endpoints()? {
                if Some(e.ifindex) == index || named.contains(&e.address) {
                    match pm.del(&e) {
                        Ok(()) => {}
                        Err(err) if err.is_not_found() => {}
                        Err(err) => return Err(err.into()),
                    }
                }
            }
            Ok(())
        })?
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let prev = prev(inv)?;
        let ifname = inv.env.ifname.clone();
        let ifaddrs = iface_addresses(&prev, &ifname);
        let ns = attach::open_netns(&inv.env.netns)?;
        ns.run(move || -> CniResult<()> {
            let mut pm = path_manager()?;
            let have = pm.endpoints()?;
            for e in conf.wanted(&ifaddrs, ifindex(&ifname)?)? {
                let found = have.iter().find(|h| h.address == e.address);
                if !found.is_some_and(|h| h.flags & 0xf == e.flags && h.ifindex == e.ifindex) {
                    return Err(Error::internal(format!(
                        "mptcp: endpoint {} is {}, expected flags {:#x} on {ifname}",
                        e.address,
                        found.map_or("missing".into(), |h| format!(
                            "flags {:#x} on interface index {}",
                            h.flags, h.ifindex
                        )),
                        e.flags
                    )));
                }
            }
            let now = pm.limits()?;
            if let Some(want) = conf.limits(now)
                && want != now
            {
                return Err(Error::internal(format!(
                    "mptcp: limits are {}, expected {}",
                    limits_text(now),
                    limits_text(want)
                )));
            }
            Ok(())
        })?
    }

    /// Ready when this kernel has MPTCP.
    fn status(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv)?;
        match PathManager::open()? {
            Some(_) => Ok(()),
            None => Err(Error::new(
                Code::NotAvailable,
                "mptcp: this kernel has no MPTCP path manager",
            )),
        }
    }
}

#[cfg(test)]
#[path = "mptcp_tests.rs"]
mod tests;
