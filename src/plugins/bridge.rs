//! bridge: a veth pair per container, the host end enslaved to a Linux bridge
//! (created on first use), addresses from IPAM, the bridge optionally the gateway.

use crate::attach;
use crate::cni::delegate::{Delegate, Rollback};
use crate::cni::error::Context;
use crate::cni::result::{Dns, NetResult, Route as ResultRoute};
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::kernel::sysctl;
use crate::netfilter::Kernel;
use crate::netfilter::macspoof;
use crate::netfilter::masq::Masquerade;
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::{
    Change, Kind, Link, LinkKind, NewLink, OPER_UP, PortFlags, VlanFlags, format_mac,
};
use crate::netns::NetNs;
use crate::quote::quoted;
use ipnet::IpNet;
use nix::libc;
use serde::Deserialize;
use std::time::Duration;
use vlans::{Vlans, forwardable_groups, group_fwd_mask_in_range, vlans};

pub struct Bridge;

pub(crate) const DEFAULT_BRIDGE: &str = "cni0";

#[derive(Debug, Deserialize)]
#[serde(rename = "VlanTrunk", rename_all = "camelCase")]
struct TrunkKeys {
    #[serde(default)]
    min_id: Option<i64>,
    #[serde(default)]
    max_id: Option<i64>,
    #[serde(default)]
    id: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    bridge: String,
    is_gateway: bool,
    is_default_gateway: bool,
    force_address: bool,
    ip_masq: bool,
    ip_masq_backend: Option<String>,
    mtu: i64,
    hairpin_mode: bool,
    promisc_mode: bool,
    vlan: i64,
    vlan_trunk: Option<Vec<TrunkKeys>>,
    preserve_default_vlan: bool,
    macspoofchk: bool,
    enabledad: bool,
    disable_container_interface: bool,
    port_isolation: bool,
    group_fwd_mask: i64,
    mac: Option<String>,
}

/// What the bridge is to its containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A switch only: no address of the network on it.
    Switch,
    /// `isGateway`: it holds each network's gateway address.
    Gateway,
    /// `isDefaultGateway` (a gateway too): also the containers' default route.
    DefaultGateway,
}

/// How a container's traffic comes back to it through the bridge, in
/// kubelet's `--hairpin-mode` words: not at all, `hairpinMode` on its port,
/// or `promiscMode` on the bridge. The reference refuses both at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hairpin {
    None,
    Veth,
    PromiscuousBridge,
}

/// The container's interface: addressed from IPAM, with DAD as `enabledad`
/// says; without IPAM only set up; or left down (`disableContainerInterface`,
/// which IPAM may not go with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Addressed { dad: bool },
    Up,
    Down,
}

/// The validated config.
struct Conf {
    bridge: String,
    role: Role,
    /// `forceAddress`: a conflicting address on the bridge is replaced.
    force_address: bool,
    mtu: Option<u32>,
    hairpin: Hairpin,
    port_isolation: bool,
    vlans: Vlans,
    container: Container,
    group_fwd_mask: Option<u16>,
    macspoofchk: bool,
    mac: Option<[u8; 6]>,
    dns: Option<Dns>,
    masq: Masquerade,
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        let vlans = vlans(&k)?;
        let group_fwd_mask = forwardable_groups(k.group_fwd_mask)?;
        let hairpin = match (k.hairpin_mode, k.promisc_mode) {
            (false, false) => Hairpin::None,
            (true, false) => Hairpin::Veth,
            (false, true) => Hairpin::PromiscuousBridge,
            (true, true) => {
                return Err(Error::invalid_config(
                    "cannot set hairpin mode and promiscuous mode at the same time",
                ));
            }
        };
        let container = match (inv.conf.ipam_type(), k.disable_container_interface) {
            (Some(_), true) => {
                return Err(Error::invalid_config(
                    "cannot use IPAM when 'disableContainerInterface' flag is set",
                ));
            }
            (Some(_), false) => Container::Addressed { dad: k.enabledad },
            (None, false) => Container::Up,
            (None, true) => Container::Down,
        };
        crate::cni::config::link_name_key("bridge", &k.bridge)?;
        let bridge = if k.bridge.is_empty() {
            DEFAULT_BRIDGE.to_string()
        } else {
            k.bridge
        };
        let role = match (k.is_gateway, k.is_default_gateway) {
            (_, true) => Role::DefaultGateway,
            (true, false) => Role::Gateway,
            (false, false) => Role::Switch,
        };
        let addressed = matches!(container, Container::Addressed { .. });
        if role != Role::Switch && vlans.access != 0 && addressed {
            let gateway = vlan_gateway_name(&bridge, vlans.access);
            crate::cni::config::link_name_key("vlan gateway", &gateway)?;
        }
        let masq = Masquerade::from_keys(k.ip_masq, k.ip_masq_backend.as_deref())?;
        Ok(Conf {
            bridge,
            role,
            force_address: k.force_address,
            mtu: attach::optional_mtu(k.mtu)?,
            hairpin,
            port_isolation: k.port_isolation,
            vlans,
            container,
            group_fwd_mask,
            macspoofchk: k.macspoofchk,
            mac: attach::requested_mac(inv, k.mac)?,
            dns: inv.conf.common.dns.clone().filter(|d| !d.is_empty()),
            masq,
        })
    }
}

impl Plugin for Bridge {
    fn delegates_ipam(&self) -> bool {
        true
    }

    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let mut host = Socket::open()?;
        let (bridge, created) = ensure_bridge(&mut host, &conf)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        let veth = attach::setup_veth(&mut host, &ns, ifname, conf.mtu, conf.mac)?;
        // From here on, a failure removes the container end (and with it the host end).
        let cleanup = attach::ContainerLinkGuard::new(&ns, ifname);
        attach_port(&mut host, &conf, &bridge, &veth.host)?;
        // As the reference: once the veth exists, before IPAM; undone if ADD fails.
        let spoofchk = match conf.macspoofchk {
            true => Some(macspoof_setup(inv, &veth.host, &veth.container)?),
            false => None,
        };
        let mut result = NetResult::new();
        result.interfaces = vec![
            attach::result_interface(&bridge, None),
            attach::result_interface(&veth.host, None),
            attach::result_interface(&veth.container, Some(&inv.env.netns)),
        ];
        let ipam = inv
            .conf
            .ipam_type()
            .map(|_| Delegate::ipam(inv))
            .transpose()?;
        let rollback = match &ipam {
            Some(ipam) => Some(adopt_ipam(ipam, &mut result)?),
            None => None,
        };
        let gateways = match conf.role {
            Role::Switch => Vec::new(),
            Role::Gateway => assign_gateways(&mut result, false),
            Role::DefaultGateway => assign_gateways(&mut result, true),
        };
        // ipMasq's rules need only the addresses: they are written while the
        // container side and the gateways are configured.
        let ips: Vec<IpNet> = result.ips.iter().map(|ip| ip.address).collect();
        let id = inv.env.container_id.as_str();
        conf.masq
            .add_during(&Kernel, inv.conf.name(), id, ifname, &ips, || {
                configure_container(&ns, conf.container, ifname, &result)?;
                configure_gateways(&mut host, &conf, &bridge, created, &gateways, &mut result)?;
                if conf.container != Container::Down {
                    wait_oper_up(&mut host, veth.host.index)?;
                }
                Ok::<(), Error>(())
            })?;
        if let Some(dns) = conf.dns.clone() {
            result.dns = dns;
        }
        cleanup.keep();
        if let Some(guard) = rollback {
            guard.keep();
        }
        if let Some(guard) = spoofchk {
            guard.keep();
        }
        Ok(result)
    }

    /// Refuses only what the reference's DEL refuses (bad VLAN IDs): ADD-only
    /// checks (bridge name, mtu, mac, hairpin with promisc, …) do not stop it.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        vlans(&k)?;
        group_fwd_mask_in_range(k.group_fwd_mask)?;
        attach::del_single(inv)?;
        if k.macspoofchk {
            macspoof::teardown(&inv.env.container_id, &inv.env.ifname)?;
        }
        let masq = Masquerade::for_del(k.ip_masq, k.ip_masq_backend.as_deref());
        super::masquerade::del(inv, masq, &Kernel)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let mut host = Socket::open()?;
        let bridge = host
            .link_by_name(&conf.bridge)
            .with_context(|| format!("failed to find bridge {}", quoted(&conf.bridge)))?;
        if bridge.kind != LinkKind::Bridge {
            return Err(Error::internal(format!(
                "{} is not a bridge",
                quoted(&conf.bridge)
            )));
        }
        if conf.hairpin == Hairpin::PromiscuousBridge && !bridge.is_promisc() {
            return Err(Error::internal(format!(
                "bridge {} is not in promiscuous mode",
                quoted(&conf.bridge)
            )));
        }
        // The container veth, its MAC, addresses and routes (and IPAM's CHECK).
        let container = attach::check_single(inv, Some(LinkKind::Veth))?;
        let ifname = inv.env.ifname.as_str();
        let peer = container.parent.ok_or_else(|| {
            Error::internal(format!(
                "{ifname} has no veth peer",
                ifname = quoted(&ifname)
            ))
        })?;
        let host_end = host.link_by_index(peer)?;
        if host_end.master != Some(bridge.index) {
            return Err(Error::internal(format!(
                "host veth {} is not attached to bridge {}",
                quoted(&host_end.name),
                quoted(&conf.bridge)
            )));
        }
        Ok(())
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        if conf.macspoofchk {
            macspoof_gc(inv, &conf)?;
        }
        attach::gc_ipam(inv)?;
        super::masquerade::gc(inv, conf.masq, &Kernel)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        attach::status_ipam(inv)
    }
}

/// The bridge, created (with MTU and vlan_filtering) when missing, promisc as
/// configured, up; and whether this call created it.
fn ensure_bridge(sock: &mut Socket, conf: &Conf) -> CniResult<(Link, bool)> {
    let existing = match sock.link_by_name(&conf.bridge) {
        Ok(link) => Some(link),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    let created = existing.is_none();
    let mut made_here = false;
    let link = match existing {
        Some(link) => link,
        None => {
            let mut spec = NewLink::new(
                &conf.bridge,
                Kind::Bridge {
                    vlan_filtering: conf.vlans.filtering(),
                    group_fwd_mask: conf.group_fwd_mask,
                },
            );
            spec.mtu = conf.mtu;
            // EEXIST: a concurrent ADD created it first, which is fine.
            match sock.create_link(&spec) {
                Ok(()) => made_here = true,
                Err(e) if e.is(libc::EEXIST) => {}
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("could not add {}", quoted(&conf.bridge)));
                }
            }
            sock.link_by_name(&conf.bridge)
                .with_context(|| format!("could not add {}", quoted(&conf.bridge)))?
        }
    };
    if link.kind != LinkKind::Bridge {
        return Err(Error::internal(format!(
            "{} already exists but is not a bridge",
            quoted(&conf.bridge)
        )));
    }
    // The bridge's routes are ours, on every ADD as the reference (someone may
    // have turned router advertisements back on); read first, since writing
    // is the dearer /proc/sys access. No file: IPv6 is off.
    let accept_ra = sysctl::conf_key("ipv6", &conf.bridge, "accept_ra");
    if sysctl::get(&accept_ra).is_ok_and(|v| v != "0") {
        let _ = sysctl::set(&accept_ra, "0");
    }
    // On every ADD, as upstream: someone may have changed it since.
    if let Some(mask) = conf.group_fwd_mask.filter(|_| !made_here) {
        sock.set_bridge_group_fwd_mask(link.index, mask)
            .with_context(|| format!("could not set groupFwdMask of {}", quoted(&conf.bridge)))?;
    }
    if conf.hairpin == Hairpin::PromiscuousBridge && !link.is_promisc() {
        sock.set_link(&link, Change::Promisc(true))?;
    }
    if !link.is_up() {
        sock.set_link(&link, Change::Up(true))?;
    }
    Ok((sock.link_by_index(link.index)?, created))
}

/// Pins the bridge's MAC to the one it had before this ADD's port (a new
/// bridge's random one), as the reference; else it follows the lowest port
/// MAC. A bridge whose last port left has none (all zeros, which the kernel
/// refuses to set): it keeps the one it has taken now. Returns the pinned MAC.
fn pin_mac(sock: &mut Socket, bridge: &Link) -> CniResult<Option<[u8; 6]>> {
    let usable = |mac: &[u8]| {
        <[u8; 6]>::try_from(mac)
            .ok()
            .filter(|m| *m != [0; 6] && m[0] & 1 == 0)
    };
    let mac = match usable(&bridge.mac) {
        Some(mac) => Some(mac),
        None => usable(&sock.link_by_index(bridge.index)?.mac),
    };
    if let Some(mac) = mac {
        sock.set_link(bridge, Change::Mac(mac))
            .with_context(|| format!("could not set bridge's mac on {}", quoted(&bridge.name)))?;
    }
    Ok(mac)
}

/// Enslaves the host end and sets its bridge-port options and VLANs.
fn attach_port(sock: &mut Socket, conf: &Conf, bridge: &Link, host: &Link) -> CniResult<()> {
    sock.set_link(host, Change::Master(Some(bridge.index)))
        .with_context(|| {
            format!(
                "failed to connect {} to bridge {}",
                quoted(&host.name),
                bridge.name
            )
        })?;
    let hairpin = conf.hairpin == Hairpin::Veth;
    if hairpin || conf.port_isolation {
        let flags = PortFlags {
            hairpin,
            isolated: conf.port_isolation,
        };
        sock.set_bridge_port(host.index, flags)
            .with_context(|| format!("failed to setup hairpin mode for {}", host.name))?;
    }
    set_port_vlans(sock, host, &conf.vlans)
}

/// With an access VLAN or a trunk: the port's VLANs. Unless
/// `preserve_default`, first every VLAN the kernel gave the new port goes (the
/// bridge's default PVID, 1 unless changed). The access VLAN (VLAN 1 for a
/// trunk without one) is the untagged PVID, the trunk's are tagged.
fn set_port_vlans(sock: &mut Socket, port: &Link, vlans: &Vlans) -> CniResult<()> {
    let (vlan, trunk) = (vlans.access, &vlans.trunk);
    if vlan == 0 && trunk.is_empty() {
        return Ok(());
    }
    if !vlans.preserve_default {
        for vid in sock.bridge_port_vlans(port.index)? {
            sock.delete_bridge_vlan(port.index, vid).with_context(|| {
                format!(
                    "failed to remove default vlan on interface {}",
                    quoted(&port.name)
                )
            })?;
        }
    }
    let access = if vlan != 0 { vlan } else { 1 };
    sock.add_bridge_vlan(port.index, access, VlanFlags::ACCESS)?;
    for vid in trunk.iter().filter(|v| **v != access) {
        sock.add_bridge_vlan(port.index, *vid, VlanFlags::TAGGED)?;
    }
    Ok(())
}

/// macspoofchk for the container end's MAC, entering through the host end.
fn macspoof_setup(inv: &Invocation, host: &Link, container: &Link) -> CniResult<macspoof::Guard> {
    let mac = <[u8; 6]>::try_from(container.mac.as_slice()).map_err(|_| {
        Error::internal(format!(
            "{} has no Ethernet address",
            quoted(&container.name)
        ))
    })?;
    let (id, ifname) = (&inv.env.container_id, &inv.env.ifname);
    Ok(macspoof::setup(id, ifname, &host.name, mac)?)
}

/// GC of macspoofchk (the reference has none): the chains of attachments not in
/// `cni.dev/valid-attachments`, when their host veth is a port of this network's
/// bridge or gone (a port of another bridge is another network's).
fn macspoof_gc(inv: &Invocation, conf: &Conf) -> CniResult<()> {
    let Some(valid) = inv.conf.valid_attachments()? else {
        return Ok(());
    };
    let valid: Vec<(&str, &str)> = valid
        .iter()
        .map(|a| (a.container_id.as_str(), a.ifname.as_str()))
        .collect();
    let mut host = Socket::open()?;
    let bridge = match host.link_by_name(&conf.bridge) {
        Ok(link) => Some(link.index),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    let owned = |name: &str| match host.link_by_name(name) {
        Ok(link) => bridge.is_some() && link.master == bridge,
        Err(e) => e.is_not_found(),
    };
    Ok(macspoof::gc(&valid, owned)?)
}

fn vlan_gateway_name(bridge: &str, vlan: u16) -> String {
    format!("{bridge}.{vlan}")
}

/// The gateway of a `vlan` bridge network, made by the first ADD that needs it
/// and reused after: a veth `<bridge>.<vlan>` in the host namespace that holds
/// the gateway addresses, its peer a bridge port in that VLAN (untagged PVID).
fn ensure_vlan_gateway(host: &mut Socket, conf: &Conf, bridge: &Link) -> CniResult<Link> {
    let name = vlan_gateway_name(&bridge.name, conf.vlans.access);
    match host.link_by_name(&name) {
        Ok(link) => return Ok(link),
        Err(e) if e.is_not_found() => {}
        Err(e) => {
            return Err(e)
                .with_context(|| format!("failed to find interface {name}", name = quoted(&name)));
        }
    }
    let here = NetNs::current()?;
    let pair = attach::setup_veth(host, &here, &name, Some(bridge.mtu), None)
        .with_context(|| format!("failed to create vlan gateway {name}", name = quoted(&name)))?;
    let attach = |host: &mut Socket| -> CniResult<()> {
        host.set_link(&pair.host, Change::Master(Some(bridge.index)))?;
        let access_only = Vlans {
            access: conf.vlans.access,
            trunk: Vec::new(),
            preserve_default: conf.vlans.preserve_default,
        };
        set_port_vlans(host, &pair.host, &access_only)?;
        host.set_link(&pair.container, Change::Up(true))?;
        Ok(())
    };
    if let Err(e) = attach(host) {
        // Half made, it would be reused as it is by the next ADD.
        let _ = host.delete_link(pair.container.index);
        return Err(e.context(format!(
            "failed to create vlan gateway {name}",
            name = quoted(&name)
        )));
    }
    Ok(pair.container)
}

/// Fills missing gateways (network + 1) and, for isDefaultGateway, adds a default
/// route per family unless one with a gateway is there. Returns the gateway
/// addresses for the bridge, one per distinct gateway.
fn assign_gateways(result: &mut NetResult, default_gateway: bool) -> Vec<IpNet> {
    let mut bridge_addrs: Vec<IpNet> = Vec::new();
    let mut default_done = [false, false];
    for i in 0..result.ips.len() {
        let address = result.ips[i].address;
        let gw = *result.ips[i]
            .gateway
            .get_or_insert_with(|| crate::ipam::next_ip(address.network()));
        if let Ok(net) = IpNet::new(gw, address.prefix_len())
            && !bridge_addrs.iter().any(|a| a.addr() == gw)
        {
            bridge_addrs.push(net);
        }
        if default_gateway {
            let slot = usize::from(gw.is_ipv6());
            let default = if gw.is_ipv4() {
                IpNet::V4(ipnet::Ipv4Net::default())
            } else {
                IpNet::V6(ipnet::Ipv6Net::default())
            };
            let present = result
                .routes
                .iter()
                .any(|r| r.gw.is_some() && r.dst == default);
            if !default_done[slot] && !present {
                result.routes.push(ResultRoute::new(default, Some(gw)));
            }
            default_done[slot] = true;
        }
    }
    bridge_addrs
}

/// Puts the gateway address on the bridge; true when it was not there. Another
/// IPv4 address (or an overlapping IPv6 prefix) is a conflict unless forceAddress
/// replaces it.
fn ensure_address(sock: &mut Socket, bridge: &Link, gw: IpNet, force: bool) -> CniResult<bool> {
    let family = Family::of(gw.addr());
    for a in sock.addresses(bridge.index, family)? {
        if a.addr == gw {
            return Ok(false);
        }
        let conflict =
            family == Family::V4 || a.addr.contains(&gw.addr()) || gw.contains(&a.addr.addr());
        if conflict && a.scope == 0 {
            if !force {
                return Err(Error::internal(format!(
                    "{} already has an IP address different from {gw}",
                    quoted(&bridge.name)
                )));
            }
            sock.del_address(bridge.index, a.addr)?;
        }
    }
    match sock.add_address(bridge.index, gw, 0) {
        Ok(()) => Ok(true),
        Err(e) if e.is(libc::EEXIST) => Ok(false),
        Err(e) => {
            Err(e).with_context(|| format!("could not add IP address to {}", quoted(&bridge.name)))
        }
    }
}

/// Waits for the host end to be operationally up (0, 50, 500, 1000, 1000 ms).
fn wait_oper_up(sock: &mut Socket, index: u32) -> CniResult<()> {
    let mut link = sock.link_by_index(index)?;
    for ms in [0u64, 50, 500, 1000, 1000] {
        if link.oper_state == OPER_UP {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(ms));
        link = sock.link_by_index(index)?;
    }
    if link.oper_state == OPER_UP {
        return Ok(());
    }
    Err(Error::internal(format!(
        "bridge port in error state: {}",
        link.oper_state
    )))
}

/// IPAM's ADD, its result taken into `result` (the container's interface is
/// the third); the guard gives the addresses back unless kept.
fn adopt_ipam<'d, 'a>(
    ipam: &'d Delegate<'a>,
    result: &mut NetResult,
) -> CniResult<Rollback<'d, 'a>> {
    let (ipam_result, guard) = ipam.add_guarded()?;
    attach::adopt_ipam_result(result, ipam_result, 2)?;
    Ok(guard)
}

/// The container's interface: its addresses and routes, with ARP
/// notification and DAD as the reference sets them; or up; or left as it is.
fn configure_container(
    ns: &NetNs,
    container: Container,
    ifname: &str,
    result: &NetResult,
) -> CniResult<()> {
    ns.run(|| -> CniResult<()> {
        let mut sock = Socket::open()?;
        let dad = match container {
            Container::Addressed { dad } => dad,
            Container::Up => {
                let link = sock.link_by_name(ifname)?;
                return Ok(sock.set_link(&link, Change::Up(true))?);
            }
            Container::Down => return Ok(()),
        };
        let link = sock.link_by_name(ifname)?;
        attach::set_arp_notify(&mut sock, link.index);
        if dad {
            attach::set_conf("ipv6", ifname, "enhanced_dad", "1");
            attach::set_conf("ipv6", ifname, "accept_dad", "1");
        } else {
            attach::set_conf("ipv6", ifname, "accept_dad", "0");
        }
        attach::configure(&mut sock, ifname, result)
    })?
}

/// The gateway addresses on the bridge (or, with a VLAN, on its
/// `<bridge>.<vlan>` veth), forwarding on, and the bridge's MAC in the result.
fn configure_gateways(
    host: &mut Socket,
    conf: &Conf,
    bridge: &Link,
    created: bool,
    gateways: &[IpNet],
    result: &mut NetResult,
) -> CniResult<()> {
    if !gateways.is_empty() && conf.vlans.access == 0 {
        let mut added = false;
        for gw in gateways {
            added |= ensure_address(host, bridge, *gw, conf.force_address)?;
        }
        // Once set the MAC stays (the kernel keeps a user-set bridge address),
        // so only the ADD that made the bridge or gave it its gateway pays for
        // it: with many ports the kernel's cost of this grows with each one.
        // A pinned MAC is the one read when the bridge was found: no refetch.
        if (created || added)
            && let Some(mac) = pin_mac(host, bridge)?
        {
            result.interfaces[0].mac = format_mac(&mac);
        }
        attach::enable_forwarding(host, &result.ips)?;
        return Ok(());
    }
    if !gateways.is_empty() {
        // With a VLAN the gateway is the `<bridge>.<vlan>` veth, a port of
        // that VLAN; the bridge itself gets no address (and no pinned MAC).
        let gateway = ensure_vlan_gateway(host, conf, bridge)?;
        result
            .interfaces
            .push(attach::result_interface(&gateway, None));
        for gw in gateways {
            ensure_address(host, &gateway, *gw, conf.force_address)?;
        }
        attach::enable_forwarding(host, &result.ips)?;
    }
    // Unpinned, a bridge takes the lowest port MAC: read what it is now.
    result.interfaces[0].mac = host.link_by_index(bridge.index)?.mac_string();
    Ok(())
}

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;

#[path = "bridge_vlans.rs"]
mod vlans;
