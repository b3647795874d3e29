//! ptp: a veth pair per container with point-to-point routing: the container
//! reaches everything through the gateway on the host end, the host reaches the
//! container through a /32 (/128) route.

use crate::attach;
use crate::cni::delegate::Delegate;
use crate::cni::error::Context;
use crate::cni::result::{Dns, NetResult};
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netfilter::Kernel;
use crate::netfilter::masq::Masquerade;
use crate::netlink::Socket;
use crate::netlink::link::{Link, LinkKind};
use crate::netlink::route::{RT_SCOPE_HOST, RT_SCOPE_LINK, Route};
use ipnet::IpNet;
use nix::libc;
use serde::Deserialize;

pub struct Ptp;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    ip_masq: bool,
    ip_masq_backend: Option<String>,
    mtu: i64,
}

struct Conf {
    masq: Masquerade,
    mtu: Option<u32>,
    dns: Option<Dns>,
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        Ok(Conf {
            masq: Masquerade::from_keys(k.ip_masq, k.ip_masq_backend.as_deref())?,
            mtu: attach::optional_mtu(k.mtu)?,
            dns: inv.conf.common.dns.clone().filter(|d| !d.is_empty()),
        })
    }
}

impl Plugin for Ptp {
    fn delegates_ipam(&self) -> bool {
        true
    }

    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv)?;
        Delegate::ipam(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let ipam = Delegate::ipam(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let (ipam_result, rollback) = ipam.add_guarded()?;
        let mut result = NetResult::new();
        attach::adopt_ipam_result(&mut result, ipam_result, 1)?;
        if let Some(ip) = result.ips.iter().find(|ip| ip.gateway.is_none()) {
            return Err(Error::internal(format!(
                "IPAM result for {} has no gateway: ptp needs one per address",
                ip.address
            )));
        }
        let mut host = Socket::open()?;
        attach::enable_forwarding(&mut host, &result.ips)?;

        let ifname = inv.env.ifname.as_str();
        let veth = attach::setup_veth(&mut host, &ns, ifname, conf.mtu, None)?;
        let cleanup = attach::ContainerLinkGuard::new(&ns, ifname);
        result.interfaces = vec![
            attach::result_interface(&veth.host, None),
            attach::result_interface(&veth.container, Some(&inv.env.netns)),
        ];

        let configured = result.clone();
        ns.run(|| -> CniResult<()> {
            let mut sock = Socket::open()?;
            attach::configure(&mut sock, ifname, &configured)?;
            route_via_gateways(&mut sock, ifname, &configured)
        })??;
        host_side(&mut host, &veth.host, &result)?;
        let container_now =
            ns.run(|| Socket::open().and_then(|mut s| s.link_by_name(ifname)))??;
        result.interfaces[1].mac = container_now.mac_string();
        if let Some(dns) = conf.dns {
            result.dns = dns;
        }
        let ips: Vec<IpNet> = result.ips.iter().map(|ip| ip.address).collect();
        conf.masq.add(
            &Kernel,
            inv.conf.name(),
            &inv.env.container_id,
            &inv.env.ifname,
            &ips,
        )?;
        cleanup.keep();
        rollback.keep();
        Ok(result)
    }

    /// Only the keys it needs: what ADD alone refuses (a bad mtu or
    /// ipMasqBackend) does not stop DEL, as in the reference.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        Delegate::ipam(inv)?.del()?;
        attach::delete_for_del(&inv.env.netns, &inv.env.ifname)?;
        let masq = Masquerade::for_del(k.ip_masq, k.ip_masq_backend.as_deref());
        super::masquerade::del(inv, masq, &Kernel)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv)?;
        // ptp always has IPAM; check_single runs its CHECK.
        Delegate::ipam(inv)?;
        attach::check_single(inv, Some(LinkKind::Veth)).map(drop)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        Delegate::ipam(inv)?.gc()?;
        let k: Keys = inv.conf.plugin_keys()?;
        let masq = Masquerade::for_del(k.ip_masq, k.ip_masq_backend.as_deref());
        super::masquerade::gc(inv, masq, &Kernel)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        Delegate::ipam(inv)?.status()
    }
}

fn add_tolerating_exists(sock: &mut Socket, route: &Route) -> CniResult<()> {
    match sock.add_route(route) {
        Ok(()) => Ok(()),
        Err(e) if e.is(libc::EEXIST) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("failed to add route {}", route.dst)),
    }
}

/// In the container: the connected route of each address replaced by "the
/// gateway is on the link, the rest of the subnet via the gateway".
fn route_via_gateways(sock: &mut Socket, ifname: &str, result: &NetResult) -> CniResult<()> {
    let link = sock.link_by_name(ifname)?;
    for ip in &result.ips {
        let Some(gw) = ip.gateway else { continue };
        let mut connected = Route::new(ip.address.trunc());
        connected.oif = Some(link.index);
        connected.scope = RT_SCOPE_LINK;
        match sock.del_route(&connected) {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                return Err(e).with_context(|| format!("failed to delete route {}", connected.dst));
            }
        }
        let mut to_gw = Route::new(IpNet::from(gw));
        to_gw.oif = Some(link.index);
        to_gw.scope = RT_SCOPE_LINK;
        to_gw.src = Some(ip.address.addr());
        add_tolerating_exists(sock, &to_gw)?;
        let mut via_gw = Route::new(ip.address.trunc());
        via_gw.oif = Some(link.index);
        via_gw.gw = Some(gw);
        via_gw.src = Some(ip.address.addr());
        add_tolerating_exists(sock, &via_gw)?;
    }
    Ok(())
}

/// On the host: each gateway address on the host end, and a host route to
/// each container address through it.
fn host_side(host: &mut Socket, host_end: &Link, result: &NetResult) -> CniResult<()> {
    for ip in &result.ips {
        let Some(gw) = ip.gateway else { continue };
        match host.add_address(host_end.index, IpNet::from(gw), 0) {
            Ok(()) => {}
            Err(e) if e.is(libc::EEXIST) => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("failed to add gateway address {gw} to {}", host_end.name)
                });
            }
        }
        let mut to_container = Route::new(IpNet::from(ip.address.addr()));
        to_container.oif = Some(host_end.index);
        to_container.scope = RT_SCOPE_HOST;
        add_tolerating_exists(host, &to_container)?;
    }
    Ok(())
}
