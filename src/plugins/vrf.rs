//! vrf (chained): puts CNI_IFNAME into a VRF in the container (created on first
//! use with the first free table), keeping its IPv6 addresses and routes.
//! Its output is prevResult.

use crate::attach;
use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::{Change, Kind, Link, LinkKind, NewLink};
use crate::netlink::route::{RT_SCOPE_UNIVERSE, RT_TABLE_MAIN};
use crate::netns::NetNs;
use serde::Deserialize;
use std::time::Duration;

pub struct Vrf;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "VRFNetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    vrfname: String,
    table: Option<u32>,
}

fn load(inv: &Invocation) -> CniResult<Keys> {
    let k: Keys = inv.conf.plugin_keys()?;
    if k.vrfname.is_empty() {
        return Err(
            Error::invalid_config("configuration is expected to have a valid vrf name")
                .with_details("key vrfname"),
        );
    }
    // The cause's message only, as before: its details (the length limit) stay out.
    crate::cni::env::validate_ifname(&k.vrfname)
        .map_err(|e| Error::invalid_config(format!("invalid vrfname: {}", e.msg)).with_source(e))?;
    Ok(k)
}

/// The VRF, created (up) when missing with `table` or the lowest free table ≥ 1.
fn ensure_vrf(sock: &mut Socket, name: &str, table: Option<u32>) -> CniResult<Link> {
    match sock.link_by_name(name) {
        Ok(link) if link.kind == LinkKind::Vrf => {
            let current = link.vrf_table();
            if let Some(t) = table
                && current != Some(t)
            {
                let current = current.map_or_else(|| "none".to_string(), |t| t.to_string());
                return Err(Error::internal(format!(
                    "VRF {name} already exists with a different table {current}"
                )));
            }
            return Ok(link);
        }
        Ok(_) => {
            return Err(Error::internal(format!(
                "{name} already exists and is not a VRF"
            )));
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    let used: Vec<u32> = sock.links()?.iter().filter_map(|l| l.vrf_table()).collect();
    let table = match table {
        Some(t) => t,
        None => (1..u32::MAX)
            .find(|t| !used.contains(t) && *t != RT_TABLE_MAIN && *t != 255)
            .ok_or_else(|| Error::internal("no free table for the VRF"))?,
    };
    sock.create_link(&NewLink::new(name, Kind::Vrf { table }))
        .with_context(|| format!("could not add VRF {name}"))?;
    let vrf = sock.link_by_name(name)?;
    sock.set_link(&vrf, Change::Up(true))?;
    Ok(vrf)
}

fn enslave(sock: &mut Socket, ifname: &str, vrf: &Link) -> CniResult<()> {
    let link = sock.link_by_name(ifname)?;
    if link.master.is_some() {
        return Err(Error::internal(format!(
            "interface {ifname} has already a master set"
        )));
    }
    let table = vrf.vrf_table().unwrap_or(0);
    // Enslaving drops IPv6 addresses: note them to put them back.
    let v6: Vec<_> = sock
        .addresses(link.index, Family::V6)?
        .into_iter()
        .filter(|a| a.scope == 0)
        .collect();
    let mut routes = sock.routes(Family::V4, RT_TABLE_MAIN, Some(link.index))?;
    routes.extend(sock.routes(Family::V6, RT_TABLE_MAIN, Some(link.index))?);
    sock.set_link(&link, Change::Master(Some(vrf.index)))?;
    let now: Vec<_> = sock
        .addresses(link.index, Family::V6)?
        .into_iter()
        .map(|a| a.addr)
        .collect();
    for a in v6.iter().filter(|a| !now.contains(&a.addr)) {
        sock.add_address(link.index, a.addr, crate::netlink::addr::IFA_F_NODAD)?;
    }
    for attempt in 0..8u32 {
        let back: Vec<_> = sock
            .addresses(link.index, Family::V6)?
            .into_iter()
            .map(|a| a.addr)
            .collect();
        if v6.iter().all(|a| back.contains(&a.addr)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10 << attempt));
    }
    for r in routes.iter().filter(|r| r.scope == RT_SCOPE_UNIVERSE) {
        let mut copy = r.clone();
        copy.table = table;
        sock.replace_route(&copy)
            .with_context(|| format!("failed to move route {} to the VRF", r.dst))?;
    }
    Ok(())
}

impl Plugin for Vrf {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        load(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let k = load(inv)?;
        let result = inv
            .conf
            .container_prev_result()?
            .unwrap_or_else(NetResult::new);
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.clone();
        ns.run(move || -> CniResult<()> {
            let mut sock = Socket::open()?;
            let vrf = ensure_vrf(&mut sock, &k.vrfname, k.table)?;
            enslave(&mut sock, &ifname, &vrf)
        })??;
        Ok(result)
    }

    /// Releases the interface; the VRF goes with its last member.
    /// A vrfname no link can have (ADD refuses it) names no VRF to leave:
    /// success, said on stderr. An empty one is refused, as the reference.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let k = match load(inv) {
            Ok(k) => k,
            Err(e) => {
                let k: Keys = inv.conf.plugin_keys()?;
                if k.vrfname.is_empty() {
                    return Err(e);
                }
                eprintln!("vrf: nothing to delete: {e}");
                return Ok(());
            }
        };
        let Some(ns) = NetNs::open_for_del(&inv.env.netns)? else {
            return Ok(());
        };
        let ifname = inv.env.ifname.clone();
        ns.run(move || -> CniResult<()> {
            let mut sock = Socket::open()?;
            let vrf = match sock.link_by_name(&k.vrfname) {
                Ok(v) => v,
                Err(e) if e.is_not_found() => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            if let Ok(link) = sock.link_by_name(&ifname)
                && link.master == Some(vrf.index)
            {
                sock.set_link(&link, Change::Master(None))?;
            }
            let members = sock
                .links()?
                .iter()
                .filter(|l| l.master == Some(vrf.index))
                .count();
            if members == 0 {
                sock.delete_link(vrf.index)?;
            }
            Ok(())
        })?
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let k = load(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.clone();
        ns.run(move || -> CniResult<()> {
            let mut sock = Socket::open()?;
            let vrf = sock.link_by_name(&k.vrfname)?;
            let link = sock.link_by_name(&ifname)?;
            if link.master != Some(vrf.index) {
                return Err(Error::internal(format!(
                    "{ifname} is not in VRF {}",
                    k.vrfname
                )));
            }
            Ok(())
        })?
    }
}
