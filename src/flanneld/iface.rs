//! Which interface carries traffic between nodes, and which address other
//! nodes reach us on: each `--iface` (a name or one of its addresses) in
//! order, then the interface of the route to `--iface-can-reach`; with
//! neither given, the interface of the default route, as flanneld chooses.

use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::Link;
use anyhow::{Context, Result, anyhow, bail};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The external interface and the addresses flanneld uses on it.
#[derive(Debug, Clone)]
pub struct External {
    pub link: Link,
    /// The interface's own IPv4 address (the vxlan source address).
    pub iface_ip: Ipv4Addr,
    /// What the lease advertises (`--public-ip`, else `iface_ip`).
    pub public_ip: Ipv4Addr,
    /// How the interface was chosen, for the log.
    pub reason: String,
}

/// Picks the external interface: `wanted` are the `--iface` values,
/// `can_reach` the `--iface-can-reach` address.
pub fn choose(
    sock: &mut Socket,
    wanted: &[String],
    can_reach: Option<IpAddr>,
    public_ip: Option<Ipv4Addr>,
) -> Result<External> {
    let mut tried = Vec::new();
    for want in wanted {
        match by_name_or_ip(sock, want) {
            Ok((link, ip)) => return Ok(external(link, ip, public_ip, format!("--iface {want}"))),
            Err(e) => tried.push(format!("--iface {want}: {e:#}")),
        }
    }
    if let Some(target) = can_reach {
        match towards(sock, target) {
            Ok((link, ip)) => {
                let reason = format!("the route to --iface-can-reach {target}");
                return Ok(external(link, ip, public_ip, reason));
            }
            Err(e) => tried.push(format!("--iface-can-reach {target}: {e:#}")),
        }
    }
    if !tried.is_empty() {
        bail!("no interface asked for is usable ({})", tried.join("; "));
    }
    let index = default_route_oif(sock)?;
    let link = sock
        .link_by_index(index)
        .with_context(|| format!("default route's interface {index}"))?;
    let ip = first_ipv4(sock, &link)?;
    let reason = format!("the default route's interface {}", link.name);
    Ok(external(link, ip, public_ip, reason))
}

fn external(
    link: Link,
    iface_ip: Ipv4Addr,
    public_ip: Option<Ipv4Addr>,
    reason: String,
) -> External {
    External {
        link,
        iface_ip,
        public_ip: public_ip.unwrap_or(iface_ip),
        reason,
    }
}

fn by_name_or_ip(sock: &mut Socket, want: &str) -> Result<(Link, Ipv4Addr)> {
    if let Ok(ip) = want.parse::<IpAddr>() {
        let IpAddr::V4(v4) = ip else {
            bail!("an IPv6 address cannot be the vxlan source");
        };
        let found = sock
            .all_addresses(Family::V4)
            .context("listing addresses")?
            .into_iter()
            .find(|a| a.addr.addr() == ip)
            .ok_or_else(|| anyhow!("no interface has this address"))?;
        let link = sock.link_by_index(found.index).context("its interface")?;
        return Ok((link, v4));
    }
    let link = sock.link_by_name(want).context("no such interface")?;
    let ip = first_ipv4(sock, &link)?;
    Ok((link, ip))
}

/// The interface the kernel would send to `target` on (`ip route get`), and
/// the route's IPv4 source address, else the interface's first usable one.
fn towards(sock: &mut Socket, target: IpAddr) -> Result<(Link, Ipv4Addr)> {
    let route = sock
        .route_get(target)
        .context("asking the kernel for the route")?
        .ok_or_else(|| anyhow!("no route reaches it"))?;
    let index = route
        .oif
        .ok_or_else(|| anyhow!("its route names no interface"))?;
    let link = sock
        .link_by_index(index)
        .with_context(|| format!("the route's interface {index}"))?;
    let ip = match route.src {
        Some(IpAddr::V4(src)) => src,
        _ => first_ipv4(sock, &link)?,
    };
    Ok((link, ip))
}

fn first_ipv4(sock: &mut Socket, link: &Link) -> Result<Ipv4Addr> {
    sock.addresses(link.index, Family::V4)
        .with_context(|| format!("addresses of {}", link.name))?
        .into_iter()
        .filter(|a| a.scope == crate::netlink::route::RT_SCOPE_UNIVERSE)
        .find_map(|a| match a.addr.addr() {
            IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_link_local() => Some(v4),
            _ => None,
        })
        .ok_or_else(|| anyhow!("{} has no usable IPv4 address", link.name))
}

/// The IPv6 side on the same interface (flannel needs both families on one):
/// its first global IPv6 address, and what the lease advertises
/// (`--public-ipv6`, else that address).
pub fn ipv6_of(
    sock: &mut Socket,
    link: &Link,
    public_ipv6: Option<Ipv6Addr>,
) -> Result<(Ipv6Addr, Ipv6Addr)> {
    let ip = sock
        .addresses(link.index, Family::V6)
        .with_context(|| format!("IPv6 addresses of {}", link.name))?
        .into_iter()
        .filter(|a| a.scope == crate::netlink::route::RT_SCOPE_UNIVERSE)
        .find_map(|a| match a.addr.addr() {
            IpAddr::V6(v6) if !v6.is_loopback() && !v6.is_unicast_link_local() => Some(v6),
            _ => None,
        })
        .ok_or_else(|| {
            anyhow!(
                "{} has no global IPv6 address (EnableIPv6 needs one on the interface carrying IPv4)",
                link.name
            )
        })?;
    Ok((ip, public_ipv6.unwrap_or(ip)))
}

/// The output interface of the main table's IPv4 default route.
fn default_route_oif(sock: &mut Socket) -> Result<u32> {
    sock.routes(Family::V4, crate::netlink::route::RT_TABLE_MAIN, None)
        .context("listing routes")?
        .into_iter()
        .filter(|r| r.dst.prefix_len() == 0)
        .min_by_key(|r| r.priority.unwrap_or(0))
        .and_then(|r| r.oif)
        .ok_or_else(|| anyhow!("no default route; name the interface with --iface"))
}
