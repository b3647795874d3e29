//! Plugins with one container interface (macvlan, ipvlan, vlan, dummy, tap,
//! host-device): creating it under a temporary name, ADD's tail (addresses
//! from IPAM or prevResult, the config's DNS), DEL, CHECK, GC and STATUS, the
//! master lookup, MTU and MAC settings.

use super::address::{announce_on_up, check_addresses, check_routes, configure};
use super::container::{ContainerLinkGuard, delete_for_del, open_netns};
use super::result::{adopt_ipam_result, result_interface};
use super::veth::random_name;
use crate::cni::delegate::Delegate;
use crate::cni::error::Context;
use crate::cni::hint;
use crate::cni::{CniResult, Error, Invocation, NetResult};
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::{Change, Link, LinkKind, NewLink, parse_mac};
use crate::netlink::route::RT_TABLE_MAIN;
use crate::netns::NetNs;
use crate::quote::quoted;

/// Creates a link for the container under a temporary name, directly in the
/// container namespace (or inside it, when its parent lives there), then renames
/// it to `ifname`, as the reference does for macvlan, ipvlan, vlan and dummy.
pub fn create_in_container(
    ns: &NetNs,
    mut spec: NewLink,
    ifname: &str,
    parent_in_container: bool,
) -> CniResult<Link> {
    spec.name = random_name("veth")?;
    let tmp = spec.name.clone();
    let kind = spec.kind.name();
    if parent_in_container {
        spec.netns = None;
    } else {
        spec.netns = Some(ns.fd());
        Socket::open()?
            .create_link(&spec)
            .with_context(|| format!("failed to create {kind}"))?;
    }
    ns.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        if parent_in_container {
            sock.create_link(&spec)
                .with_context(|| format!("failed to create {kind}"))?;
        }
        let link = sock.link_by_name(&tmp)?;
        if let Err(e) = sock.set_link(&link, Change::Name(ifname)) {
            let _ = sock.delete_link(link.index);
            return Err(e).with_context(|| {
                format!(
                    "failed to rename {kind} to {ifname}",
                    ifname = quoted(&ifname)
                )
            });
        }
        Ok(sock.link_by_index(link.index)?)
    })?
}

/// ADD's second half for plugins with one container interface (result index 0):
/// IPAM (DEL'd again if configuring fails) and ConfigureIface, or just link up
/// without IPAM. `ipam_required` makes a missing `ipam.type` a config error.
pub fn configure_single(
    inv: &Invocation,
    ns: &NetNs,
    ifname: &str,
    mut result: NetResult,
    ipam_required: bool,
) -> CniResult<NetResult> {
    let has_ipam = inv.conf.ipam_type().is_some();
    if !has_ipam {
        if ipam_required {
            return Err(Error::invalid_config("IPAM config missing 'type' key"));
        }
        ns.run(|| -> CniResult<()> {
            let mut sock = Socket::open()?;
            let link = sock.link_by_name(ifname)?;
            Ok(sock.set_link(&link, Change::Up(true))?)
        })??;
        return Ok(result);
    }
    let ipam = Delegate::ipam(inv)?;
    let (ipam_result, rollback) = ipam.add_guarded()?;
    adopt_ipam_result(&mut result, ipam_result, 0)?;
    configure_in(ns, ifname, &result)?;
    rollback.keep();
    Ok(result)
}

/// ConfigureIface for `ifname` inside `ns`.
fn configure_in(ns: &NetNs, ifname: &str, result: &NetResult) -> CniResult<()> {
    ns.run(|| -> CniResult<()> {
        let mut sock = Socket::open()?;
        configure(&mut sock, ifname, result)
    })?
}

/// Where ADD's addresses for the one container link come from.
pub enum Addressing {
    /// IPAM; `required` makes a missing `ipam.type` a config error, else the
    /// link is only brought up.
    Ipam { required: bool },
    /// prevResult's IPs and routes (ipvlan chained with no IPAM of its own).
    Prev(NetResult),
}

/// The config's `dns` replaces the result's only when it says something.
pub fn config_dns_over(inv: &Invocation, result: &mut NetResult) {
    if let Some(dns) = inv.conf.common.dns.clone().filter(|d| !d.is_empty()) {
        result.dns = dns;
    }
}

/// ADD's tail for plugins with one container link, `link` just created as
/// CNI_IFNAME: deleted again if a later step fails; neighbour announcements on
/// up when `announce`; addresses; the config's DNS when it has one, else
/// IPAM's (the reference's macvlan, ipvlan, vlan and tap drop IPAM's, so a
/// DHCP lease's name servers never reached the result; its bridge keeps them).
pub fn finish_single(
    inv: &Invocation,
    ns: &NetNs,
    link: &Link,
    announce: bool,
    addressing: Addressing,
) -> CniResult<NetResult> {
    let ifname = inv.env.ifname.as_str();
    let cleanup = ContainerLinkGuard::new(ns, ifname);
    if announce {
        announce_on_up(ns, ifname, link.index)?;
    }
    let mut result = NetResult::new();
    result.interfaces = vec![result_interface(link, Some(&inv.env.netns))];
    let mut result = match addressing {
        Addressing::Ipam { required } => configure_single(inv, ns, ifname, result, required)?,
        Addressing::Prev(prev) => {
            result.ips = prev.ips;
            result.routes = prev.routes;
            result.dns = prev.dns;
            for ip in &mut result.ips {
                ip.interface = Some(0);
            }
            configure_in(ns, ifname, &result)?;
            result
        }
    };
    config_dns_over(inv, &mut result);
    cleanup.keep();
    Ok(result)
}

/// DEL for plugins with one container interface: IPAM DEL, then the link.
pub fn del_single(inv: &Invocation) -> CniResult<()> {
    if inv.conf.ipam_type().is_some() {
        Delegate::ipam(inv)?.del()?;
    }
    delete_for_del(&inv.env.netns, &inv.env.ifname)?;
    Ok(())
}

/// The link of the first default route (IPv4, then IPv6) in the calling
/// thread's namespace: the reference's default master.
pub fn default_route_link(sock: &mut Socket) -> CniResult<Link> {
    for family in [Family::V4, Family::V6] {
        let routes = sock.routes(family, RT_TABLE_MAIN, None)?;
        if let Some(oif) = routes
            .iter()
            .find(|r| r.dst.prefix_len() == 0)
            .and_then(|r| r.oif)
        {
            return Ok(sock.link_by_index(oif)?);
        }
    }
    Err(Error::internal("no default route interface found"))
}

/// CHECK for plugins with one container interface: the link exists with the
/// prevResult's MAC, its addresses and routes are there. Returns the link.
/// `kind` None accepts any link kind (host-device moves physical devices).
pub fn check_single(inv: &Invocation, kind: Option<LinkKind>) -> CniResult<Link> {
    if inv.conf.ipam_type().is_some() {
        Delegate::ipam(inv)?.check()?;
    }
    let prev = inv
        .conf
        .prev_result()?
        .ok_or_else(|| Error::invalid_config("Required prevResult missing"))?;
    let ifname = inv.env.ifname.as_str();
    let want = prev
        .interfaces
        .iter()
        .find(|i| i.name == ifname && !i.sandbox.is_empty())
        .cloned()
        .ok_or_else(|| {
            Error::internal(format!(
                "no interface {ifname} with a sandbox in prevResult",
                ifname = quoted(&ifname)
            ))
        })?;
    let ns = open_netns(&inv.env.netns)?;
    ns.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        let link = sock.link_by_name(ifname)?;
        if let Some(kind) = kind
            && link.kind != kind
        {
            return Err(Error::internal(format!(
                "{ifname} is a {} link, not {kind}",
                link.kind,
                ifname = quoted(&ifname)
            )));
        }
        if !want.mac.is_empty() && want.mac != link.mac_string() {
            return Err(Error::internal(format!(
                "interface {ifname} MAC {} does not match prevResult {}",
                link.mac_string(),
                want.mac
            )));
        }
        check_addresses(&mut sock, ifname, &prev)?;
        check_routes(&mut sock, &prev)?;
        Ok(link)
    })?
}

/// GC forwarded to the IPAM plugin, when there is one.
pub fn gc_ipam(inv: &Invocation) -> CniResult<()> {
    match inv.conf.ipam_type() {
        Some(_) => Delegate::ipam(inv)?.gc(),
        None => Ok(()),
    }
}

/// STATUS forwarded to the IPAM plugin, when there is one.
pub fn status_ipam(inv: &Invocation) -> CniResult<()> {
    match inv.conf.ipam_type() {
        Some(_) => Delegate::ipam(inv)?.status(),
        None => Ok(()),
    }
}

/// The master of a macvlan/ipvlan/vlan link: by name, or (when `name` is empty)
/// the default-route interface; in the host, or in the container namespace when
/// the config says `linkInContainer`.
pub fn find_master(inv: &Invocation, name: &str, in_container: bool) -> CniResult<Link> {
    crate::cni::config::link_name_key("master", name)?;
    let lookup = || -> CniResult<Link> {
        let mut sock = Socket::open()?;
        if name.is_empty() {
            return default_route_link(&mut sock);
        }
        sock.link_by_name(name).map_err(|e| {
            let missing = e.is_not_found().then(|| hint::missing_link("master"));
            Error::from(e).with_hint(missing).context(format!(
                "failed to lookup master {name}",
                name = quoted(&name)
            ))
        })
    };
    if in_container {
        open_netns(&inv.env.netns)?.run(lookup)?
    } else {
        lookup()
    }
}

/// A configured MTU: 0 means the kernel's default; at most the master's MTU.
pub fn mtu_within_master(mtu: i64, master: &Link) -> CniResult<Option<u32>> {
    if mtu < 0 || mtu > i64::from(master.mtu) {
        return Err(Error::invalid_config(format!(
            "invalid MTU {mtu}, must be [0, master MTU({})]",
            master.mtu
        )));
    }
    Ok(u32::try_from(mtu).ok().filter(|m| *m > 0))
}

/// A configured MTU for a link the plugin creates: 0 means the kernel's default.
pub fn optional_mtu(mtu: i64) -> CniResult<Option<u32>> {
    let mtu =
        u32::try_from(mtu).map_err(|_| Error::invalid_config(format!("invalid MTU {mtu}")))?;
    Ok((mtu > 0).then_some(mtu))
}

/// MAC from CNI_ARGS `MAC`, then `args.cni.mac`, then `runtimeConfig.mac`: the last one set wins.
pub fn requested_mac(inv: &Invocation, from_conf: Option<String>) -> CniResult<Option<[u8; 6]>> {
    let mut mac = from_conf.filter(|m| !m.is_empty());
    if let Some(m) = inv.cni_args.get("MAC") {
        mac = Some(m.to_string());
    }
    if let Some(m) = inv.conf.args_cni::<String>("mac")? {
        mac = Some(m);
    }
    if let Some(m) = inv.conf.runtime_config::<String>("mac")? {
        mac = Some(m);
    }
    mac.map(|m| {
        parse_mac(&m).ok_or_else(|| {
            Error::invalid_config(format!("invalid MAC address {m}", m = quoted(&m)))
        })
    })
    .transpose()
}
