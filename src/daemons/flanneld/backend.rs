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
//!
//! What flanneld owns: everything on `flannel.<VNI>`, and main-table routes
//! into the flannel Network through the external interface (other than the
//! kernel's own). Nothing else is touched.

use super::iface::External;
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::{Change, Kind, NewLink, VxlanInfo};
use crate::netlink::route::Route;
use anyhow::{Context, Result, bail};
use ipnet::{IpNet, Ipv4Net};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

/// Link overhead of VXLAN over IPv4: outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14.
pub const VXLAN_OVERHEAD: u32 = 50;
const RTPROT_KERNEL: u8 = 2;

/// Another node as its lease describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub public_ip: Ipv4Addr,
    pub backend_type: String,
    /// vxlan only: the peer's VTEP MAC.
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
    /// The MTU pods get (FLANNEL_MTU).
    pub fn mtu(&self) -> u32 {
        match &self.mode {
            Mode::Vxlan(v) => v
                .mtu
                .unwrap_or(self.ext.link.mtu)
                .saturating_sub(VXLAN_OVERHEAD),
            Mode::HostGw => self.ext.link.mtu,
        }
    }

    /// Creates or fixes the vxlan device (not for host-gw); returns its MAC.
    pub fn ensure_device(&self, sock: &mut Socket) -> Result<Option<[u8; 6]>> {
        let Mode::Vxlan(v) = &self.mode else {
            return Ok(None);
        };
        let name = format!("flannel.{}", v.vni);
        let mut want = VxlanInfo::new(
            v.vni,
            Some(self.ext.link.index),
            Some(IpAddr::V4(self.ext.iface_ip)),
            v.port,
        );
        want.learning = v.learning;
        want.gbp = v.gbp;
        let mac = stable_mac(self.ext.public_ip, v.vni);
        let mtu = self.mtu();
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
        if let Some(own) = self.own {
            self.ensure_address(sock, link.index, own)?;
        }
        Ok(Some(mac))
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

    /// The subnet's network address as /32 on the device (no connected route),
    /// and no other address of the Network there.
    fn ensure_address(&self, sock: &mut Socket, index: u32, own: Ipv4Net) -> Result<()> {
        let want = IpNet::V4(Ipv4Net::new(own.network(), 32).context("own address")?);
        let have = sock
            .addresses(index, Family::V4)
            .context("device addresses")?;
        for a in &have {
            if a.addr != want
                && matches!(a.addr.addr(), IpAddr::V4(ip) if self.network.contains(&ip))
            {
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

    /// Makes the kernel's routes, neighbours and FDB entries exactly those
    /// `peers` call for.
    pub fn reconcile(&self, sock: &mut Socket, peers: &BTreeMap<Ipv4Net, Peer>) -> Result<Changes> {
        let mut changes = Changes::default();
        let peers: BTreeMap<Ipv4Net, &Peer> = peers
            .iter()
            .filter(|(subnet, _)| Some(**subnet) != self.own && self.network.contains(*subnet))
            .map(|(s, p)| (*s, p))
            .collect();
        match &self.mode {
            Mode::HostGw => {
                let want: Vec<Route> = peers
                    .iter()
                    .filter(|(_, p)| p.backend_type == "host-gw")
                    .map(|(s, p)| self.via(*s, p.public_ip))
                    .collect();
                self.sync_routes(sock, &want, &mut changes)?;
            }
            Mode::Vxlan(v) => {
                let dev = sock
                    .link_by_name(&format!("flannel.{}", v.vni))
                    .context("the vxlan device")?;
                let mut routes = Vec::new();
                let mut neighbours = BTreeMap::new();
                let mut fdb = BTreeMap::new();
                for (subnet, peer) in &peers {
                    let (true, Some(mac)) = (peer.backend_type == "vxlan", peer.vtep_mac) else {
                        continue;
                    };
                    if v.direct_routing && self.on_segment(sock, peer.public_ip) {
                        routes.push(self.via(*subnet, peer.public_ip));
                        continue;
                    }
                    neighbours.insert(IpAddr::V4(subnet.network()), mac);
                    fdb.insert(mac, IpAddr::V4(peer.public_ip));
                    let mut r = Route::new(IpNet::V4(*subnet));
                    r.gw = Some(IpAddr::V4(subnet.network()));
                    r.oif = Some(dev.index);
                    r.onlink = true;
                    routes.push(r);
                }
                // Neighbours and FDB before routes: a route must not send
                // traffic to a peer we cannot yet encapsulate for.
                self.sync_neighbours(sock, dev.index, &neighbours, &mut changes)?;
                self.sync_fdb(sock, dev.index, &fdb, &mut changes)?;
                self.sync_routes_on(sock, &routes, Some(dev.index), &mut changes)?;
            }
        }
        Ok(changes)
    }

    fn via(&self, subnet: Ipv4Net, gw: Ipv4Addr) -> Route {
        let mut r = Route::new(IpNet::V4(subnet));
        r.gw = Some(IpAddr::V4(gw));
        r.oif = Some(self.ext.link.index);
        r
    }

    /// DirectRouting's test: the kernel reaches the peer without a gateway.
    fn on_segment(&self, sock: &mut Socket, ip: Ipv4Addr) -> bool {
        matches!(sock.route_get(IpAddr::V4(ip)), Ok(Some(r)) if r.gw.is_none())
    }

    fn sync_routes(&self, sock: &mut Socket, want: &[Route], changes: &mut Changes) -> Result<()> {
        self.sync_routes_on(sock, want, None, changes)
    }

    /// Routes we own: main table, into the Network, not the kernel's, through
    /// the vxlan device or (gatewayed) the external interface.
    fn sync_routes_on(
        &self,
        sock: &mut Socket,
        want: &[Route],
        dev: Option<u32>,
        changes: &mut Changes,
    ) -> Result<()> {
        let have: Vec<Route> = sock
            .routes(Family::V4, crate::netlink::route::RT_TABLE_MAIN, None)
            .context("listing routes")?
            .into_iter()
            .filter(|r| r.protocol != RTPROT_KERNEL && self.network_contains(&r.dst))
            .filter(|r| {
                Some(r.dst) != self.own.map(IpNet::V4)
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

    fn network_contains(&self, dst: &IpNet) -> bool {
        matches!(dst, IpNet::V4(d) if self.network.contains(d) && *d != self.network)
    }

    fn sync_neighbours(
        &self,
        sock: &mut Socket,
        dev: u32,
        want: &BTreeMap<IpAddr, [u8; 6]>,
        changes: &mut Changes,
    ) -> Result<()> {
        let have = sock
            .neighbours(dev, Family::V4)
            .context("listing neighbours")?;
        let mut seen = BTreeSet::new();
        for n in &have {
            match want.get(&n.ip) {
                Some(mac) if n.mac == Some(*mac) && n.is_permanent() => {
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
pub fn stable_mac(public_ip: Ipv4Addr, vni: u32) -> [u8; 6] {
    let mut seed = b"flannel vtep ".to_vec();
    seed.extend_from_slice(&public_ip.octets());
    seed.extend_from_slice(&vni.to_be_bytes());
    let h = crate::digest::sha512(&seed);
    let mut mac = [h[0], h[1], h[2], h[3], h[4], h[5]];
    mac[0] = (mac[0] & 0xfe) | 0x02;
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_mac_is_local_unicast_and_per_node() {
        let a = stable_mac("10.0.0.1".parse().unwrap(), 1);
        assert_eq!(a, stable_mac("10.0.0.1".parse().unwrap(), 1));
        assert_ne!(a, stable_mac("10.0.0.2".parse().unwrap(), 1));
        assert_ne!(a, stable_mac("10.0.0.1".parse().unwrap(), 2));
        assert_eq!(a[0] & 0x03, 0x02, "locally administered, unicast");
    }
}
