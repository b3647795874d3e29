//! An interface's addresses and routes: the reference's ConfigureIface (with its
//! DAD wait), forwarding and neighbour announcements, and CHECK of addresses and routes.

use super::result::ips_of;
use crate::cni::error::Context;
use crate::cni::result::{IpConfig, NetResult, Route as ResultRoute};
use crate::cni::{CniResult, Error};
use crate::kernel::sysctl;
use crate::netlink::Socket;
use crate::netlink::addr::{Family, IFA_F_DADFAILED, IFA_F_TENTATIVE};
use crate::netlink::link::{Change, IPV4_DEVCONF_ARP_NOTIFY, Link};
use crate::netlink::route::{RT_TABLE_MAIN, Route};
use crate::netns::NetNs;
use crate::quote::quoted;
use ipnet::IpNet;
use nix::libc;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The first gateway of each family among `ips`.
fn first_gateways(ips: &[&IpConfig]) -> (Option<IpAddr>, Option<IpAddr>) {
    let find = |v4: bool| {
        ips.iter()
            .filter_map(|ip| ip.gateway)
            .find(|gw| gw.is_ipv4() == v4)
    };
    (find(true), find(false))
}

/// The reference's ConfigureIface, run inside the container namespace: the
/// result's addresses for `ifname`, link up, DAD wait, then its routes.
pub fn configure(sock: &mut Socket, ifname: &str, result: &NetResult) -> CniResult<()> {
    let link = sock.link_by_name(ifname)?;
    let mut ips = Vec::new();
    for ip in &result.ips {
        let Some(idx) = ip.interface else {
            continue;
        };
        if result.interfaces.get(idx).map(|i| i.name.as_str()) != Some(ifname) {
            return Err(Error::internal(format!(
                "failed to add IP addr {} to {ifname}: invalid interface index",
                ip.address,
                ifname = quoted(&ifname)
            )));
        }
        ips.push(ip);
    }
    if ips.iter().any(|ip| ip.address.addr().is_ipv6()) {
        // Only if it was disabled; a node without IPv6 has no such files.
        for dev in [ifname, "lo"] {
            let key = sysctl::conf_key("ipv6", dev, "disable_ipv6");
            if sysctl::get(&key).is_ok_and(|v| v == "1") {
                let _ = sysctl::set(&key, "0");
            }
        }
        let _ = sysctl::set(&sysctl::conf_key("ipv6", ifname, "keep_addr_on_down"), "1");
    }
    for ip in &ips {
        sock.add_address(link.index, ip.address, 0)
            .with_context(|| {
                format!(
                    "failed to add IP addr {} to {ifname}",
                    ip.address,
                    ifname = quoted(&ifname)
                )
            })?;
    }
    sock.set_link(&link, Change::Up(true))
        .with_context(|| format!("failed to set {ifname} UP", ifname = quoted(&ifname)))?;
    let (gw4, gw6) = first_gateways(&ips);
    if gw6.is_some() {
        wait_for_dad(sock, &link)?;
    }
    for r in &result.routes {
        // The IP's gateway stands in for a route without one, as in the
        // reference, except on a link-scope route (the kernel refuses a
        // gateway there); 0.0.0.0 / :: (the reference's dhcp writes it for an
        // on-link route of option 121) means none.
        let gw = match r.gw {
            Some(g) if g.is_unspecified() => None,
            Some(g) => Some(g),
            None if r.scope == Some(i64::from(libc::RT_SCOPE_LINK)) => None,
            None if r.dst.addr().is_ipv4() => gw4,
            None => gw6,
        };
        let route = kernel_route(r, gw, link.index);
        match sock.append_route(&route) {
            Ok(()) => {}
            Err(e) if e.is(libc::EEXIST) => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "failed to add route '{} via {} dev {ifname}'",
                        r.dst,
                        gw.map(|g| g.to_string()).unwrap_or_else(|| "<nil>".into())
                    )
                });
            }
        }
    }
    Ok(())
}

/// A result route as the kernel route ConfigureIface adds (mtu/advmss ignored, as the reference).
fn kernel_route(r: &ResultRoute, gw: Option<IpAddr>, oif: u32) -> Route {
    let mut route = Route::new(r.dst.trunc());
    route.gw = gw;
    route.oif = Some(oif);
    route.priority = u32::try_from(r.priority).ok().filter(|p| *p > 0);
    route.table = r
        .table
        .and_then(|t| u32::try_from(t).ok())
        .unwrap_or(RT_TABLE_MAIN);
    if let Some(scope) = r.scope.and_then(|s| u8::try_from(s).ok()) {
        route.scope = scope;
    }
    route
}

/// Waits until no IPv6 address of `link` is tentative (5 s). The polls start
/// at 1 ms and back off to 50 ms: with DAD off, an address added before its
/// link came up stays tentative only until the kernel's addrconf work runs
/// (about a millisecond), and a first pause of 50 ms made every such ADD wait
/// that long.
fn wait_for_dad(sock: &mut Socket, link: &Link) -> CniResult<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut pause = Duration::from_millis(1);
    loop {
        let addrs = sock.addresses(link.index, Family::V6)?;
        if let Some(a) = addrs.iter().find(|a| a.flags & IFA_F_DADFAILED != 0) {
            return Err(Error::internal(format!(
                "failed to add IPv6 address {} to {}: duplicate address detected",
                a.addr, link.name
            )));
        }
        if addrs.iter().all(|a| a.flags & IFA_F_TENTATIVE == 0) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let current = sock.link_by_index(link.index)?;
            if current.oper_state == crate::netlink::link::OPER_UP {
                return Err(Error::internal(format!(
                    "failed while waiting for addresses of {} to leave tentative state",
                    link.name
                )));
            }
            return Ok(());
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Enables forwarding for each family present, in the calling thread's
/// namespace (where `sock` lives): the sysctl is written only when netlink says
/// it is off, so the usual ADD on a forwarding node walks no /proc/sys path.
pub fn enable_forwarding(sock: &mut Socket, ips: &[IpConfig]) -> CniResult<()> {
    for (family, key) in [
        (Family::V4, "net.ipv4.ip_forward"),
        (Family::V6, "net.ipv6.conf.all.forwarding"),
    ] {
        if !ips.iter().any(|ip| Family::of(ip.address.addr()) == family) {
            continue;
        }
        if sock.forwarding(family).ok().flatten() != Some(true) {
            sysctl::set(key, "1")?;
        }
    }
    Ok(())
}

/// `net.ipv4.conf.<link>.arp_notify=1`, best effort as in the reference, over
/// netlink (no /proc/sys path walk).
pub fn set_arp_notify(sock: &mut Socket, index: u32) {
    let _ = sock.set_link(index, Change::Ipv4Conf(IPV4_DEVCONF_ARP_NOTIFY, 1));
}

/// arp_notify and ndisc_notify on a new container link (best effort, as the
/// reference's macvlan and ipvlan): the kernel announces it when it comes up.
pub fn announce_on_up(ns: &NetNs, ifname: &str, index: u32) -> CniResult<()> {
    ns.run(|| {
        if let Ok(mut sock) = Socket::open() {
            set_arp_notify(&mut sock, index);
        }
        set_conf("ipv6", ifname, "ndisc_notify", "1");
    })?;
    Ok(())
}

/// Sets a per-interface sysctl, ignoring a missing file (that family is off).
pub fn set_conf(family: &str, ifname: &str, name: &str, value: &str) {
    let _ = sysctl::set(&sysctl::conf_key(family, ifname, name), value);
}

/// CHECK: every address of `ifname` in the result is on the link.
pub fn check_addresses(sock: &mut Socket, ifname: &str, result: &NetResult) -> CniResult<()> {
    let link = sock.link_by_name(ifname)?;
    let mut present: Vec<IpNet> = Vec::new();
    for family in [Family::V4, Family::V6] {
        present.extend(
            sock.addresses(link.index, family)?
                .into_iter()
                .map(|a| a.addr),
        );
    }
    for ip in ips_of(result, ifname) {
        if !present.contains(&ip.address) {
            return Err(Error::internal(format!(
                "Failed to match addr {} on interface {ifname}",
                ip.address
            )));
        }
    }
    Ok(())
}

/// CHECK: every result route is in the container's tables.
pub fn check_routes(sock: &mut Socket, result: &NetResult) -> CniResult<()> {
    for r in &result.routes {
        let family = Family::of(r.dst.addr());
        let table = r
            .table
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(RT_TABLE_MAIN);
        let routes = sock.routes(family, table, None)?;
        let want = r.gw.filter(|g| !g.is_unspecified());
        let found = routes
            .iter()
            .any(|k| k.dst == r.dst.trunc() && (want.is_none() || k.gw == want));
        if !found {
            return Err(Error::internal(format!(
                "Failed to match route: {} via {}",
                r.dst,
                r.gw.map(|g| g.to_string()).unwrap_or_default()
            )));
        }
    }
    Ok(())
}
