//! sbr (chained): source-based routing for CNI_IFNAME, so replies from each of
//! its addresses leave by that interface: a `from <ip>` rule per address into
//! its own table holding the interface's routes. Its output is prevResult.

use crate::attach;
use crate::cni::error::Context;
use crate::cni::result::{IpConfig, NetResult};
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::route::{RT_SCOPE_LINK, RT_TABLE_MAIN, Route};
use crate::netlink::rule::Rule;
use crate::netns::NetNs;
use crate::quote::quoted;
use ipnet::IpNet;
use nix::fcntl::Flock;
use nix::libc;
use serde::Deserialize;
use std::net::IpAddr;

pub struct Sbr;

/// The first table sbr considers when it picks one.
const FIRST_TABLE: u32 = 100;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    table: Option<u32>,
    /// Gateways of the tables' default routes, one per family, in place of
    /// prevResult's.
    gateways: Vec<String>,
    /// Keeps each address's subnet route in main, with the address as source.
    add_source_hints: bool,
}

/// The `gateways` key read: at most one gateway of each family.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Gateways {
    v4: Option<IpAddr>,
    v6: Option<IpAddr>,
}

impl Gateways {
    /// Read as upstream main reads them, its messages included.
    fn parse(list: &[String]) -> CniResult<Gateways> {
        if list.len() > 2 {
            return Err(Error::invalid_config(
                "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)",
            ));
        }
        let mut gws = Gateways::default();
        for text in list {
            let ip = text
                .parse::<IpAddr>()
                .map_err(|_| {
                    Error::invalid_config(format!("invalid static gateway IP address: {text}"))
                })?
                .to_canonical();
            let (slot, family) = match ip {
                IpAddr::V4(_) => (&mut gws.v4, "IPv4"),
                IpAddr::V6(_) => (&mut gws.v6, "IPv6"),
            };
            if let Some(first) = slot {
                return Err(Error::invalid_config(format!(
                    "gateways list contains multiple {family} addresses: {first} and {text}"
                )));
            }
            *slot = Some(ip);
        }
        Ok(gws)
    }

    /// The gateway of `ip`'s default route: the configured one of its
    /// family, else prevResult's.
    fn for_ip(&self, ip: &IpConfig) -> Option<IpAddr> {
        let fixed = match ip.address {
            IpNet::V4(_) => self.v4,
            IpNet::V6(_) => self.v6,
        };
        fixed.or(ip.gateway)
    }
}

/// How the interface's routes move when sbr picks the tables.
struct Moves {
    gateways: Gateways,
    source_hints: bool,
}

/// What ADD does: only rules into a fixed table, or tables of its own choice.
enum Plan {
    Rules(u32),
    Tables(Moves),
}

impl Plan {
    /// As the reference, a fixed table leaves the other keys unread.
    fn of(k: &Keys) -> CniResult<Plan> {
        Ok(match k.table {
            Some(table) => Plan::Rules(table),
            None => Plan::Tables(Moves {
                gateways: Gateways::parse(&k.gateways)?,
                source_hints: k.add_source_hints,
            }),
        })
    }
}

/// The IPs of CNI_IFNAME in prevResult (or with no interface index).
fn ips_of_iface(prev: &NetResult, ifname: &str) -> Vec<IpConfig> {
    prev.ips
        .iter()
        .filter(|ip| match ip.interface {
            None => true,
            Some(i) => prev.interfaces.get(i).is_some_and(|itf| itf.name == ifname),
        })
        .cloned()
        .collect()
}

fn host(ip: IpAddr) -> IpNet {
    IpNet::from(ip)
}

/// The tables some rule points to or some route lives in.
fn used_tables(sock: &mut Socket) -> CniResult<Vec<u32>> {
    let mut used = Vec::new();
    for family in [Family::V4, Family::V6] {
        used.extend(sock.rules(family)?.into_iter().map(|r| r.table));
        used.extend(sock.all_routes(family)?.into_iter().map(|r| r.table));
    }
    Ok(used)
}

/// The first table ≥ `from` not in `used` (which then holds it too): each
/// address gets a table checked free, not merely the previous one plus one.
fn take_free_table(used: &mut Vec<u32>, from: u32) -> CniResult<u32> {
    let table = (from..u32::MAX)
        .find(|t| !used.contains(t))
        .ok_or_else(|| Error::internal("no free routing table"))?;
    used.push(table);
    Ok(table)
}

fn add_rule(sock: &mut Socket, ip: IpAddr, table: u32) -> CniResult<()> {
    let rule = Rule {
        family: Family::of(ip),
        src: Some(host(ip)),
        table,
        priority: None,
    };
    match sock.add_rule(&rule) {
        Ok(()) => Ok(()),
        Err(e) if e.is(libc::EEXIST) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("failed to add rule for {ip}")),
    }
}

/// The reference's doRoutes: rules, default routes and the interface's routes
/// copied into one table per address, then out of the main table.
fn source_route(sock: &mut Socket, ifname: &str, ips: &[IpConfig], moves: &Moves) -> CniResult<()> {
    let mut used = used_tables(sock)?;
    let link = sock.link_by_name(ifname)?;
    let mut routes = Vec::new();
    for family in [Family::V4, Family::V6] {
        routes.extend(sock.routes(family, RT_TABLE_MAIN, Some(link.index))?);
    }
    let mut from = FIRST_TABLE;
    for ip in ips {
        let table = take_free_table(&mut used, from)?;
        from = table.saturating_add(1);
        add_rule(sock, ip.address.addr(), table)?;
        if let Some(gw) = moves.gateways.for_ip(ip) {
            add_default_route(sock, gw, link.index, table)?;
        }
        copy_routes(sock, &routes, ip, table)?;
    }
    // Deleted only now: several addresses of one subnet share these routes.
    if moves.source_hints {
        delete_routes(sock, routes.iter().filter(|r| r.scope != RT_SCOPE_LINK))?;
        add_source_hints(sock, ips, link.index)
    } else {
        delete_routes(sock, routes.iter())
    }
}

fn add_default_route(sock: &mut Socket, gw: IpAddr, oif: u32, table: u32) -> CniResult<()> {
    let mut route = Route::default_via(gw);
    route.oif = Some(oif);
    route.table = table;
    match sock.add_route(&route) {
        Ok(()) => Ok(()),
        Err(e) if e.is(libc::EEXIST) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("failed to add default route to {gw}")),
    }
}

/// Copies the routes of `ip` (see [`belongs_to`]) into `table`.
fn copy_routes(sock: &mut Socket, routes: &[Route], ip: &IpConfig, table: u32) -> CniResult<()> {
    for r in routes.iter().filter(|r| belongs_to(r, ip)) {
        let mut copy = r.clone();
        copy.table = table;
        sock.replace_route(&copy)
            .with_context(|| format!("failed to copy route {} to table {table}", r.dst))?;
    }
    Ok(())
}

fn delete_routes<'a>(sock: &mut Socket, routes: impl Iterator<Item = &'a Route>) -> CniResult<()> {
    for r in routes {
        sock.del_route_if_present(r)
            .with_context(|| format!("failed to delete route {}", r.dst))?;
    }
    Ok(())
}

/// `addSourceHints`: each address's subnet route in main, scope link, with
/// the address as source, so traffic to the subnet leaves by the interface
/// from that address. Added after the deletions: an IPv6 subnet route has
/// universe scope, so the kernel's own was deleted, and a hint that replaced
/// a listed route must not be deleted with it.
fn add_source_hints(sock: &mut Socket, ips: &[IpConfig], oif: u32) -> CniResult<()> {
    for ip in ips {
        let mut route = Route::new(ip.address.trunc());
        route.oif = Some(oif);
        route.src = Some(ip.address.addr());
        route.scope = RT_SCOPE_LINK;
        sock.replace_route(&route).with_context(|| {
            format!(
                "failed to add route {} with source {} to the main table",
                route.dst,
                ip.address.addr()
            )
        })?;
    }
    Ok(())
}

/// The reference's test for copying a route of the interface into an
/// address's table: its source or gateway lies in the address's subnet, or it
/// has neither (a route of the link itself, of either family: an IPv4
/// address's table gets fe80::/64 too).
fn belongs_to(r: &Route, ip: &IpConfig) -> bool {
    let generic = r.src.is_none() && r.gw.is_none();
    generic
        || r.src.is_some_and(|s| ip.address.contains(&s))
        || r.gw.is_some_and(|g| ip.address.contains(&g))
}

/// Where sbr's lock lives: a directory only root can enter.
const LOCK_DIR: &str = "/run/cni/sbr";

/// sbr's calls on this node run one at a time (each takes a few
/// milliseconds). The reference flocks the netns file instead, which any user
/// who can open that file can hold, stalling every ADD and DEL of the pod.
fn lock() -> CniResult<Flock<std::fs::File>> {
    let dir = std::path::Path::new(LOCK_DIR);
    crate::files::create_dir_mode(dir, 0o700)?;
    crate::lockfile::lock_private(&dir.join("lock"), crate::lockfile::DEADLINE).map_err(Error::from)
}

fn prev(inv: &Invocation) -> CniResult<NetResult> {
    inv.conf
        .container_prev_result()?
        .ok_or_else(|| Error::invalid_config("This plugin must be called as chained plugin"))
}

impl Plugin for Sbr {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        Plan::of(&k).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let k: Keys = inv.conf.plugin_keys()?;
        let prev = prev(inv)?;
        if prev.ips.is_empty() {
            return Err(Error::invalid_config(format!(
                "No IP addresses supplied on interface: {}",
                inv.env.ifname
            )));
        }
        let ips = ips_of_iface(&prev, &inv.env.ifname);
        if ips.is_empty() {
            return Err(Error::invalid_config(format!(
                "prevResult has no address of interface {} to route from",
                quoted(&inv.env.ifname)
            )));
        }
        let plan = Plan::of(&k)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let _lock = lock()?;
        let ifname = inv.env.ifname.clone();
        ns.run(move || -> CniResult<()> {
            let mut sock = Socket::open()?;
            match plan {
                Plan::Rules(table) => ips
                    .iter()
                    .try_for_each(|ip| add_rule(&mut sock, ip.address.addr(), table)),
                Plan::Tables(moves) => source_route(&mut sock, &ifname, &ips, &moves),
            }
        })??;
        Ok(prev)
    }

    /// Deletes the rules whose source is an address of the interface.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        let Some(ns) = NetNs::open_for_del(&inv.env.netns)? else {
            return Ok(());
        };
        let _lock = lock()?;
        let ifname = inv.env.ifname.clone();
        ns.run(move || -> CniResult<()> {
            let mut sock = Socket::open()?;
            let link = match sock.link_by_name(&ifname) {
                Ok(l) => l,
                Err(e) if e.is_not_found() => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            for family in [Family::V4, Family::V6] {
                let addrs: Vec<_> = sock
                    .addresses(link.index, family)?
                    .into_iter()
                    .map(|a| a.addr.addr())
                    .collect();
                for rule in sock.rules(family)? {
                    let ours = rule.src.is_some_and(|s| addrs.contains(&s.addr()));
                    if ours && k.table.is_none_or(|t| t == rule.table) {
                        match sock.del_rule(&rule) {
                            Ok(()) => {}
                            Err(e) if e.is_not_found() => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                }
            }
            Ok(())
        })?
    }

    /// Checks nothing, as the reference's CHECK: it only decodes the keys (a
    /// wrongly typed `table` is a decode error) and succeeds.
    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let _: Keys = inv.conf.plugin_keys()?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "sbr_tests.rs"]
mod tests;
