//! The data path to other nodes' subnets, kept level-triggered: from the
//! leases seen in etcd, `reconcile` computes the routes, neighbours and FDB
//! entries there should be, compares them with the kernel's, and changes only
//! the difference (so a periodic pass after a link flap or a stray `ip route
//! del` repairs it, and a lease that went away leaves nothing behind).
//!
//! - vxlan (flannel's `pkg/backend/vxlan`): per peer a permanent neighbour
//!   `subnet.0 -> VtepMAC` and a permanent FDB entry `VtepMAC -> PublicIP` on
//!   `flannel.<VNI>`, and `subnet via subnet.0 dev flannel.<VNI> onlink`; with
//!   DirectRouting, a peer on our own segment gets `subnet via PublicIP` instead.
//! - host-gw (flannel's `pkg/backend/hostgw`): `subnet via PublicIP dev <iface>`.
//! - IPv6 (dual-stack) alike, on `flannel-v6.<VNI>` (over the external
//!   interface's IPv6 address, its own VTEP MAC in `BackendV6Data`) and with
//!   `PublicIPv6` for host-gw.
//!
//! What flanneld owns: permanent neighbours, FDB entries and routes on
//! `flannel.<VNI>` and `flannel-v6.<VNI>`, and main-table routes into the
//! flannel Networks through the external interface (other than the kernel's
//! own). Nothing else is touched: the kernel's own neighbour entries (the
//! multicast ones IPv6 makes) stay.

use super::iface::External;
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::{Change, Kind, NewLink, VxlanInfo};
use crate::netlink::route::Route;
use anyhow::{Context, Result, bail};
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Link overhead of VXLAN over IPv4: outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14.
pub const VXLAN_OVERHEAD: u32 = 50;
/// Over IPv6 the outer header is 40 bytes.
pub const VXLAN6_OVERHEAD: u32 = 70;
const RTPROT_KERNEL: u8 = 2;

/// Another node as its lease describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub public_ip: Ipv4Addr,
    pub backend_type: String,
    /// vxlan only: the peer's VTEP MAC.
    pub vtep_mac: Option<[u8; 6]>,
    /// The peer's IPv6 side, when its lease has one.
    pub v6: Option<Peer6>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer6 {
    pub subnet: Ipv6Net,
    pub public_ip: Ipv6Addr,
    /// vxlan only: the MAC of the peer's `flannel-v6.<VNI>`.
    pub vtep_mac: Option<[u8; 6]>,
}

/// The vxlan settings from the network config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VxlanConf {
    pub vni: u32,
    pub port: u16,
    pub mtu: Option<u32>,
    pub gbp: bool,
    pub learning: bool,
    pub direct_routing: bool,
}

#[derive(Debug, Clone)]
pub enum Mode {
    Vxlan(VxlanConf),
    HostGw,
}

/// One node's data path: which backend, over which interface, for which Network.
#[derive(Debug, Clone)]
pub struct DataPath {
    pub mode: Mode,
    pub ext: External,
    pub network: Ipv4Net,
    /// Our own subnet, once leased.
    pub own: Option<Ipv4Net>,
    /// The IPv6 side (EnableIPv6).
    pub v6: Option<Side6>,
}

/// The IPv6 half of a dual-stack data path.
#[derive(Debug, Clone)]
pub struct Side6 {
    pub network: Ipv6Net,
    pub own: Option<Ipv6Net>,
    /// The external interface's IPv6 address (the vxlan source).
    pub iface_ip: Ipv6Addr,
    /// What the lease advertises (`--public-ipv6`, else `iface_ip`).
    pub public_ip: Ipv6Addr,
}

/// The VTEP MACs of our devices, for the lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vteps {
    pub v4: [u8; 6],
    pub v6: Option<[u8; 6]>,
}

/// What one reconcile pass changed, for the log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

impl DataPath {
    /// The MTU pods get (FLANNEL_MTU): one value for both families, so with
    /// IPv6 enabled it leaves room for the larger IPv6 outer header (Go
    /// flanneld gives pods the IPv4 device's, too big for IPv6 peers).
    pub fn mtu(&self) -> u32 {
        match &self.mode {
            Mode::Vxlan(_) if self.v6.is_some() => self.device_mtu(VXLAN6_OVERHEAD),
            Mode::Vxlan(_) => self.device_mtu(VXLAN_OVERHEAD),
            Mode::HostGw => self.ext.link.mtu,
        }
    }

    fn device_mtu(&self, overhead: u32) -> u32 {
        let base = match &self.mode {
            Mode::Vxlan(v) => v.mtu.unwrap_or(self.ext.link.mtu),
            Mode::HostGw => self.ext.link.mtu,
        };
        base.saturating_sub(overhead)
    }

    /// Creates or fixes the vxlan devices (not for host-gw); returns their MACs.
    pub fn ensure_device(&self, sock: &mut Socket) -> Result<Option<Vteps>> {
        let Mode::Vxlan(v) = &self.mode else {
            return Ok(None);
        };
        let v4 = self.ensure_vxlan(
            sock,
            v,
            &format!("flannel.{}", v.vni),
            (
                IpAddr::V4(self.ext.iface_ip),
                IpAddr::V4(self.ext.public_ip),
            ),
            self.device_mtu(VXLAN_OVERHEAD),
            self.own
                .map(|own| (IpNet::V4(own), IpNet::V4(self.network))),
        )?;
        let v6 = match &self.v6 {
            Some(s6) => Some(self.ensure_vxlan(
                sock,
                v,
                &format!("flannel-v6.{}", v.vni),
                (IpAddr::V6(s6.iface_ip), IpAddr::V6(s6.public_ip)),
                self.device_mtu(VXLAN6_OVERHEAD),
                s6.own.map(|own| (IpNet::V6(own), IpNet::V6(s6.network))),
            )?),
            None => None,
        };
        Ok(Some(Vteps { v4, v6 }))
    }

    /// One vxlan device: `addrs` are its (local, public) addresses, `own` our
    /// subnet and the Network it lies in, once leased.
    fn ensure_vxlan(
        &self,
        sock: &mut Socket,
        v: &VxlanConf,
        name: &str,
        (local, public): (IpAddr, IpAddr),
        mtu: u32,
        own: Option<(IpNet, IpNet)>,
    ) -> Result<[u8; 6]> {
        let mut want = VxlanInfo::new(v.vni, Some(self.ext.link.index), Some(local), v.port);
        want.learning = v.learning;
        want.gbp = v.gbp;
        let mac = stable_mac(public, v.vni);
        let name = name.to_string();
        let link = match sock.link_by_name(&name) {
            Ok(link) if link.vxlan().is_some_and(|have| compatible(&have, &want)) => {
                if link.mtu != mtu {
                    sock.set_link(link.index, Change::Mtu(mtu))
                        .with_context(|| format!("setting {name}'s MTU to {mtu}"))?;
                }
                if link.mac.as_slice() != mac {
                    sock.set_link(link.index, Change::Mac(mac))
                        .with_context(|| format!("setting {name}'s MAC"))?;
                }
                link
            }
            Ok(old) => {
                super::log(format!("{name} exists with other settings: recreating it"));
                sock.delete_link(old.index)
                    .with_context(|| format!("deleting {name}"))?;
                self.create(sock, &name, want, mac, mtu)?
            }
            Err(e) if e.is_not_found() => self.create(sock, &name, want, mac, mtu)?,
            Err(e) => return Err(e).with_context(|| format!("looking up {name}")),
        };
        if local.is_ipv6() {
            // Router advertisements on the overlay must not add addresses or
            // routes of their own (flannel sets the same).
            let key = crate::kernel::sysctl::conf_key("ipv6", &name, "accept_ra");
            if crate::kernel::sysctl::get(&key).is_ok_and(|v| v.trim() != "0") {
                crate::kernel::sysctl::set(&key, "0")
                    .with_context(|| format!("setting {name}'s accept_ra to 0"))?;
            }
        }
        if !link.is_up() {
            sock.set_link(link.index, Change::Up(true))
                .with_context(|| format!("setting {name} up"))?;
        }
        // systemd's MACAddressPolicy may rewrite a MAC when the link appears.
        let now = sock
            .link_by_index(link.index)
            .context("re-reading the vxlan device")?;
        if now.mac.as_slice() != mac {
            bail!(
                "{name}'s MAC is {} after set up, not {}",
                now.mac_string(),
                crate::netlink::link::format_mac(&mac)
            );
        }
        if let Some((own, network)) = own {
            ensure_address(sock, link.index, own, network)?;
        }
        Ok(mac)
    }

    fn create(
        &self,
        sock: &mut Socket,
        name: &str,
        spec: VxlanInfo,
        mac: [u8; 6],
        mtu: u32,
    ) -> Result<crate::netlink::link::Link> {
        let mut new = NewLink::new(name, Kind::Vxlan(spec));
        new.mac = Some(mac);
        new.mtu = Some(mtu);
        sock.create_link(&new)
            .with_context(|| format!("creating {name}"))?;
        sock.link_by_name(name)
            .with_context(|| format!("reading back {name}"))
    }

    /// Makes the kernel's routes, neighbours and FDB entries exactly those
    /// `peers` call for, for each family.
    pub fn reconcile(&self, sock: &mut Socket, peers: &BTreeMap<Ipv4Net, Peer>) -> Result<Changes> {
        let mut changes = Changes::default();
        let peers: Vec<(Ipv4Net, &Peer)> = peers
            .iter()
            .filter(|(subnet, _)| Some(**subnet) != self.own && self.network.contains(*subnet))
            .map(|(s, p)| (*s, p))
            .collect();
        let v4: Vec<Remote> = peers
            .iter()
            .map(|(s, p)| Remote {
                subnet: IpNet::V4(*s),
                public_ip: IpAddr::V4(p.public_ip),
                vtep_mac: p.vtep_mac,
                backend_type: &p.backend_type,
            })
            .collect();
        self.reconcile_family(sock, Family::V4, &v4, &mut changes)?;
        if let Some(s6) = &self.v6 {
            let v6: Vec<Remote> = peers
                .iter()
                .filter_map(|(_, p)| {
                    let p6 = p.v6.as_ref()?;
                    let ours = Some(p6.subnet) == s6.own || !s6.network.contains(&p6.subnet);
                    (!ours).then_some(Remote {
                        subnet: IpNet::V6(p6.subnet),
                        public_ip: IpAddr::V6(p6.public_ip),
                        vtep_mac: p6.vtep_mac,
                        backend_type: &p.backend_type,
                    })
                })
                .collect();
            self.reconcile_family(sock, Family::V6, &v6, &mut changes)?;
        }
        Ok(changes)
    }

    fn reconcile_family(
        &self,
        sock: &mut Socket,
        family: Family,
        peers: &[Remote],
        changes: &mut Changes,
    ) -> Result<()> {
        match &self.mode {
            Mode::HostGw => {
                let want: Vec<Route> = peers
                    .iter()
                    .filter(|p| p.backend_type == "host-gw")
                    .map(|p| self.via(p.subnet, p.public_ip))
                    .collect();
                self.sync_routes_on(sock, family, &want, None, changes)
            }
            Mode::Vxlan(v) => {
                let name = match family {
                    Family::V6 => format!("flannel-v6.{}", v.vni),
                    _ => format!("flannel.{}", v.vni),
                };
                let dev = sock
                    .link_by_name(&name)
                    .with_context(|| format!("the vxlan device {name}"))?;
                let mut routes = Vec::new();
                let mut neighbours = BTreeMap::new();
                let mut fdb = BTreeMap::new();
                for peer in peers {
                    let (true, Some(mac)) = (peer.backend_type == "vxlan", peer.vtep_mac) else {
                        continue;
                    };
                    if v.direct_routing && self.on_segment(sock, peer.public_ip) {
                        routes.push(self.via(peer.subnet, peer.public_ip));
                        continue;
                    }
                    let gw = peer.subnet.network();
                    neighbours.insert(gw, mac);
                    fdb.insert(mac, peer.public_ip);
                    let mut r = Route::new(peer.subnet);
                    r.gw = Some(gw);
                    r.oif = Some(dev.index);
                    r.onlink = true;
                    routes.push(r);
                }
                // Neighbours and FDB before routes: a route must not send
                // traffic to a peer we cannot yet encapsulate for.
                self.sync_neighbours(sock, dev.index, family, &neighbours, changes)?;
                self.sync_fdb(sock, dev.index, &fdb, changes)?;
                self.sync_routes_on(sock, family, &routes, Some(dev.index), changes)
            }
        }
    }

    fn via(&self, subnet: IpNet, gw: IpAddr) -> Route {
        let mut r = Route::new(subnet);
        r.gw = Some(gw);
        r.oif = Some(self.ext.link.index);
        r
    }

    /// DirectRouting's test: the kernel reaches the peer without a gateway.
    fn on_segment(&self, sock: &mut Socket, ip: IpAddr) -> bool {
        matches!(sock.route_get(ip), Ok(Some(r)) if r.gw.is_none())
    }

    /// Routes we own: main table, into the Network, not the kernel's, through
    /// the vxlan device or (gatewayed) the external interface.
    fn sync_routes_on(
        &self,
        sock: &mut Socket,
        family: Family,
        want: &[Route],
        dev: Option<u32>,
        changes: &mut Changes,
    ) -> Result<()> {
        let have: Vec<Route> = sock
            .routes(family, crate::netlink::route::RT_TABLE_MAIN, None)
            .context("listing routes")?
            .into_iter()
            .filter(|r| r.protocol != RTPROT_KERNEL && self.network_contains(&r.dst))
            .filter(|r| {
                !self.is_own(&r.dst)
                    && (r.oif.is_some() && r.oif == dev
                        || (r.oif == Some(self.ext.link.index) && r.gw.is_some()))
            })
            .collect();
        for r in &have {
            if !want.iter().any(|w| same_route(w, r)) {
                sock.del_route_if_present(r)
                    .with_context(|| format!("removing route {}", r.dst))?;
                changes.removed.push(format!("route {}", r.dst));
            }
        }
        for w in want {
            if !have.iter().any(|r| same_route(w, r)) {
                sock.replace_route(w)
                    .with_context(|| format!("adding route {}", w.dst))?;
                changes.added.push(format!("route {}", w.dst));
            }
        }
        Ok(())
    }

    /// Inside a Network (of either family), not the Network itself.
    fn network_contains(&self, dst: &IpNet) -> bool {
        match dst {
            IpNet::V4(d) => self.network.contains(d) && *d != self.network,
            IpNet::V6(d) => self
                .v6
                .as_ref()
                .is_some_and(|s6| s6.network.contains(d) && *d != s6.network),
        }
    }

    fn is_own(&self, dst: &IpNet) -> bool {
        match dst {
            IpNet::V4(d) => Some(*d) == self.own,
            IpNet::V6(d) => self.v6.as_ref().is_some_and(|s6| Some(*d) == s6.own),
        }
    }

    /// Permanent neighbours are ours: wrong or unwanted ones go, missing ones
    /// are added. The kernel's own entries are left alone unless one sits on
    /// an address we want (the replace makes it ours).
    fn sync_neighbours(
        &self,
        sock: &mut Socket,
        dev: u32,
        family: Family,
        want: &BTreeMap<IpAddr, [u8; 6]>,
        changes: &mut Changes,
    ) -> Result<()> {
        let have = sock.neighbours(dev, family).context("listing neighbours")?;
        let mut seen = BTreeSet::new();
        for n in have.iter().filter(|n| n.is_permanent()) {
            match want.get(&n.ip) {
                Some(mac) if n.mac == Some(*mac) => {
                    seen.insert(n.ip);
                }
                _ => {
                    sock.del_neighbour(dev, n.ip)
                        .with_context(|| format!("removing neighbour {}", n.ip))?;
                    changes.removed.push(format!("neighbour {}", n.ip));
                }
            }
        }
        for (ip, mac) in want {
            if !seen.contains(ip) {
                sock.replace_neighbour(dev, *ip, *mac)
                    .with_context(|| format!("adding neighbour {ip}"))?;
                changes.added.push(format!("neighbour {ip}"));
            }
        }
        Ok(())
    }

    fn sync_fdb(
        &self,
        sock: &mut Socket,
        dev: u32,
        want: &BTreeMap<[u8; 6], IpAddr>,
        changes: &mut Changes,
    ) -> Result<()> {
        let have = sock.fdb_entries(dev).context("listing FDB entries")?;
        let mut seen = BTreeSet::new();
        for f in &have {
            let Some(dst) = f.dst else { continue };
            if want.get(&f.mac) == Some(&dst) && f.is_permanent() && seen.insert(f.mac) {
                continue;
            }
            sock.del_fdb(dev, f.mac, dst)
                .with_context(|| format!("removing FDB entry to {dst}"))?;
            changes.removed.push(format!(
                "fdb {} -> {dst}",
                crate::netlink::link::format_mac(&f.mac)
            ));
        }
        for (mac, dst) in want {
            if !seen.contains(mac) {
                sock.replace_fdb(dev, *mac, *dst)
                    .with_context(|| format!("adding FDB entry to {dst}"))?;
                changes.added.push(format!(
                    "fdb {} -> {dst}",
                    crate::netlink::link::format_mac(mac)
                ));
            }
        }
        Ok(())
    }
}

/// One peer as one family sees it.
struct Remote<'a> {
    subnet: IpNet,
    public_ip: IpAddr,
    vtep_mac: Option<[u8; 6]>,
    backend_type: &'a str,
}

/// The subnet's network address as a host address on the device (/32 or
/// /128: no connected route), and no other address of the Network there.
fn ensure_address(sock: &mut Socket, index: u32, own: IpNet, network: IpNet) -> Result<()> {
    let (family, len) = match own {
        IpNet::V4(_) => (Family::V4, 32),
        IpNet::V6(_) => (Family::V6, 128),
    };
    let want = IpNet::new(own.network(), len).context("own address")?;
    let have = sock.addresses(index, family).context("device addresses")?;
    for a in &have {
        if a.addr != want && network.contains(&a.addr.addr()) {
            sock.del_address(index, a.addr)
                .with_context(|| format!("removing old {}", a.addr))?;
        }
    }
    if !have.iter().any(|a| a.addr == want) {
        sock.add_address(index, want, 0)
            .with_context(|| format!("adding {want}"))?;
    }
    Ok(())
}

/// The vxlan attributes flannel compares to reuse a device (not MTU or
/// learning: those are fixed in place).
fn compatible(have: &VxlanInfo, want: &VxlanInfo) -> bool {
    have.vni == want.vni
        && have.link == want.link
        && have.local == want.local
        && (have.port == want.port || want.port == 0 && have.port == 8472)
        && have.gbp == want.gbp
        && have.learning == want.learning
}

fn same_route(a: &Route, b: &Route) -> bool {
    a.dst == b.dst && a.gw == b.gw && a.oif == b.oif
}

/// Locally administered unicast MAC from the public IP and VNI.
pub fn stable_mac(public_ip: IpAddr, vni: u32) -> [u8; 6] {
    let mut seed = b"flannel vtep ".to_vec();
    match public_ip {
        IpAddr::V4(ip) => seed.extend_from_slice(&ip.octets()),
        IpAddr::V6(ip) => seed.extend_from_slice(&ip.octets()),
    }
    seed.extend_from_slice(&vni.to_be_bytes());
    let h = crate::digest::sha512(&seed);
    let mut mac = [h[0], h[1], h[2], h[3], h[4], h[5]];
    mac[0] = (mac[0] & 0xfe) | 0x02;
    mac
}

#[cfg(test)]
#[path = "backend_tests.rs"]
mod tests;
