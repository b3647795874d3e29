//! Links: look up, create (every kind the plugins make), change, move, delete.

use super::headers::IfInfoMsg;
use super::wire::{self, Body, NESTED};
use super::{Error, Object, Request, Result, Socket};
use crate::quote::quoted;
use neli::consts::nl::NlmF;
use neli::consts::rtnl::Rtm;
use neli::types::Buffer;
use nix::libc;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Changes to a link and how error texts name them.
mod change;
/// The forked child that makes `delete_link_detached`'s deleting syscall.
mod detached;
pub(crate) use detached::close_all_but;
/// What a link is: its kind and kind-specific settings, as read back.
mod kind;
/// VXLAN settings: written at creation, read back from a dump.
mod vxlan;

pub use change::{Change, LinkRef, PortFlags, VlanFlags};
pub use kind::{InfoData, LinkKind, MacvlanMode};
pub use vxlan::VxlanInfo;

/// How often a detached delete checks whether the link is unlisted yet.
const UNLIST_POLL: Duration = Duration::from_micros(250);

use super::uapi::if_bridge::*;
pub use super::uapi::if_flags::IF_OPER_UP as OPER_UP;
use super::uapi::if_flags::{IFF_ALLMULTI, IFF_PROMISC, IFF_UP};
use super::uapi::if_link::*;
pub use super::uapi::ip::{IPV4_DEVCONF_ARP_NOTIFY, IPV4_DEVCONF_ROUTE_LOCALNET};
use super::uapi::rtnetlink::RTEXT_FILTER_BRVLAN;
use super::uapi::socket::{AF_BRIDGE, AF_INET};
use super::uapi::veth::VETH_INFO_PEER;

/// What plugins need to know about a link.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Link {
    pub index: u32,
    pub name: String,
    pub flags: u32,
    pub mtu: u32,
    pub mac: Vec<u8>,
    /// IFLA_INFO_KIND (`Device` for links a driver made).
    pub kind: LinkKind,
    pub master: Option<u32>,
    /// IFLA_LINK: a veth's peer or a macvlan's parent (its index in `link_netnsid`'s namespace).
    pub parent: Option<u32>,
    pub link_netnsid: Option<i32>,
    pub alias: String,
    /// IFLA_PERM_ADDRESS: the hardware address a driver gave the device
    /// (empty when it has none, as virtual links mostly do).
    pub perm_addr: Vec<u8>,
    /// IFLA_PARENT_DEV_BUS_NAME and IFLA_PARENT_DEV_NAME: the bus and device
    /// (`pci`, `0000:01:00.0`) the netdev belongs to; empty for virtual links.
    pub parent_bus: String,
    pub parent_dev: String,
    pub oper_state: u8,
    pub txqlen: u32,
    /// IFLA_INFO_DATA, for the kinds whose settings plugins check.
    pub info: InfoData,
    /// `net.ipv4.conf.<if>.*` values, devconf id `n` at index `n - 1`.
    pub ipv4_conf: Vec<u32>,
}

impl Link {
    pub fn is_up(&self) -> bool {
        self.flags & IFF_UP != 0
    }

    pub fn is_promisc(&self) -> bool {
        self.flags & IFF_PROMISC != 0
    }

    pub fn is_allmulti(&self) -> bool {
        self.flags & IFF_ALLMULTI != 0
    }

    /// `aa:bb:…` lowercase, as the reference prints MACs.
    pub fn mac_string(&self) -> String {
        format_mac(&self.mac)
    }

    /// A macvlan's mode, if it is one.
    pub fn macvlan_mode(&self) -> Option<MacvlanMode> {
        match self.info {
            InfoData::Macvlan { mode } => Some(MacvlanMode(mode)),
            _ => None,
        }
    }

    /// An ipvlan's mode (IPVLAN_MODE_*), if it is one.
    pub fn ipvlan_mode(&self) -> Option<u16> {
        match self.info {
            InfoData::Ipvlan { mode } => Some(mode),
            _ => None,
        }
    }

    /// A VLAN link's ID, if it is one.
    pub fn vlan_id(&self) -> Option<u16> {
        match self.info {
            InfoData::Vlan { id } => Some(id),
            _ => None,
        }
    }

    /// A VRF's routing table, if it is one.
    pub fn vrf_table(&self) -> Option<u32> {
        match self.info {
            InfoData::Vrf { table } => Some(table),
            _ => None,
        }
    }

    /// A VXLAN link's settings, if it is one.
    pub fn vxlan(&self) -> Option<VxlanInfo> {
        match self.info {
            InfoData::Vxlan(info) => Some(info),
            _ => None,
        }
    }

    /// An IPv4 per-interface setting (IPV4_DEVCONF_*), if the link reported it.
    pub fn ipv4_conf(&self, id: u16) -> Option<u32> {
        self.ipv4_conf.get(usize::from(id).checked_sub(1)?).copied()
    }

    /// Parses one reply payload (header struct + attributes); public for the fuzz targets.
    pub fn parse(msg: &[u8]) -> Option<Link> {
        let (header, attrs) = IfInfoMsg::parse(msg)?;
        let mut link = Link {
            index: header.index,
            flags: header.flags,
            ..Link::default()
        };
        for (ty, p) in wire::attrs(attrs) {
            match ty {
                IFLA_IFNAME => link.name = wire::as_str(p),
                IFLA_MTU => link.mtu = wire::as_u32(p).unwrap_or(0),
                IFLA_ADDRESS => link.mac = p.to_vec(),
                IFLA_MASTER => link.master = wire::as_u32(p).filter(|m| *m != 0),
                IFLA_LINK => link.parent = wire::as_u32(p),
                IFLA_LINK_NETNSID => link.link_netnsid = wire::as_u32(p).map(u32::cast_signed),
                IFLA_IFALIAS => link.alias = wire::as_str(p),
                IFLA_PERM_ADDRESS => link.perm_addr = p.to_vec(),
                IFLA_PARENT_DEV_NAME => link.parent_dev = wire::as_str(p),
                IFLA_PARENT_DEV_BUS_NAME => link.parent_bus = wire::as_str(p),
                IFLA_OPERSTATE => link.oper_state = p.first().copied().unwrap_or(0),
                IFLA_TXQLEN => link.txqlen = wire::as_u32(p).unwrap_or(0),
                IFLA_AF_SPEC => {
                    if let Some(conf) = wire::find(p, AF_INET.into())
                        .and_then(|inet| wire::find(inet, IFLA_INET_CONF))
                    {
                        link.ipv4_conf = conf.chunks_exact(4).filter_map(wire::as_u32).collect();
                    }
                }
                IFLA_LINKINFO => {
                    link.kind = wire::find(p, IFLA_INFO_KIND)
                        .map_or(LinkKind::Device, |k| LinkKind::parse(&wire::as_str(k)));
                    let data = wire::find(p, IFLA_INFO_DATA).unwrap_or_default();
                    link.info = InfoData::parse(&link.kind, data);
                }
                _ => {}
            }
        }
        (!link.name.is_empty()).then_some(link)
    }
}

pub fn format_mac(mac: &[u8]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// `aa:bb:cc:dd:ee:ff` (either case) → bytes.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for byte in &mut out {
        let part = parts.next()?;
        if part.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// The kinds of link the plugins create, with their kind-specific settings.
#[derive(Debug, Clone)]
pub enum Kind {
    /// A veth pair; the peer may be created straight into another namespace.
    Veth {
        peer: String,
        peer_netns: Option<RawFd>,
    },
    Bridge {
        vlan_filtering: bool,
        /// Which of 01-80-C2-00-00-0X it forwards (bit X); `None`: the kernel's.
        group_fwd_mask: Option<u16>,
    },
    Macvlan {
        parent: u32,
        mode: u32,
        bc_queue_len: Option<u32>,
    },
    Ipvlan {
        parent: u32,
        mode: u16,
    },
    Vlan {
        parent: u32,
        id: u16,
    },
    Dummy,
    Vrf {
        table: u32,
    },
    Ifb,
    /// Its underlay link is `VxlanInfo::link` (IFLA_VXLAN_LINK), not IFLA_LINK.
    Vxlan(VxlanInfo),
}

impl Kind {
    /// The kind of link this makes, as a dump reads it back.
    pub fn link_kind(&self) -> LinkKind {
        match self {
            Kind::Veth { .. } => LinkKind::Veth,
            Kind::Bridge { .. } => LinkKind::Bridge,
            Kind::Macvlan { .. } => LinkKind::Macvlan,
            Kind::Ipvlan { .. } => LinkKind::Ipvlan,
            Kind::Vlan { .. } => LinkKind::Vlan,
            Kind::Dummy => LinkKind::Dummy,
            Kind::Vrf { .. } => LinkKind::Vrf,
            Kind::Ifb => LinkKind::Ifb,
            Kind::Vxlan(_) => LinkKind::Vxlan,
        }
    }

    /// Its IFLA_INFO_KIND, from `LinkKind`'s one table of names.
    pub fn name(&self) -> &'static str {
        self.link_kind().known_name()
    }

    fn parent(&self) -> Option<u32> {
        match self {
            Kind::Macvlan { parent, .. }
            | Kind::Ipvlan { parent, .. }
            | Kind::Vlan { parent, .. } => Some(*parent),
            _ => None,
        }
    }
}

/// A link to create.
#[derive(Debug, Clone)]
pub struct NewLink {
    pub name: String,
    pub kind: Kind,
    pub mtu: Option<u32>,
    pub mac: Option<[u8; 6]>,
    /// Create the link directly in this namespace.
    pub netns: Option<RawFd>,
    pub txqlen: Option<u32>,
}

impl NewLink {
    pub fn new(name: &str, kind: Kind) -> NewLink {
        NewLink {
            name: name.to_string(),
            kind,
            mtu: None,
            mac: None,
            netns: None,
            txqlen: None,
        }
    }
}

/// A lookup that found no link: ENODEV, as the kernel answers a GET by name.
fn not_found(op: String) -> Error {
    super::kernel_error(&op, libc::ENODEV, None)
}

impl Socket {
    fn links_matching(&mut self, op: &str, body: Body, flags: NlmF) -> Result<Vec<Link>> {
        let replies: Vec<Buffer> =
            self.get(op, Rtm::Getlink, flags, Buffer::from(body.into_bytes()))?;
        Ok(replies
            .iter()
            .filter_map(|b| Link::parse(b.as_ref()))
            .collect())
    }

    /// The link called `name`; an error with errno ENODEV when there is none.
    pub fn link_by_name(&mut self, name: &str) -> Result<Link> {
        let op = format!("get link {name}", name = quoted(&name));
        let body = Body::new(&IfInfoMsg::default().bytes()).str(IFLA_IFNAME, name);
        let links = self.links_matching(&op, body, NlmF::empty())?;
        links.into_iter().next().ok_or_else(|| not_found(op))
    }

    pub fn link_by_index(&mut self, index: u32) -> Result<Link> {
        let op = format!("get link {index}");
        let body = Body::new(
            &IfInfoMsg {
                index,
                ..IfInfoMsg::default()
            }
            .bytes(),
        );
        let links = self.links_matching(&op, body, NlmF::empty())?;
        links.into_iter().next().ok_or_else(|| not_found(op))
    }

    /// Every link of this namespace.
    pub fn links(&mut self) -> Result<Vec<Link>> {
        let body = Body::new(&IfInfoMsg::default().bytes());
        self.links_matching("list links", body, NlmF::DUMP)
    }

    /// Creates a link; EEXIST when the name is taken.
    pub fn create_link(&mut self, spec: &NewLink) -> Result<()> {
        let op = format!("create {} link {}", spec.kind.name(), quoted(&spec.name));
        self.apply(&op, &new_link_request(spec))
            .map_err(|e| e.about(Object::Link(spec.name.clone())))
    }
}

/// RTM_NEWLINK for `spec`.
fn new_link_request(spec: &NewLink) -> Request {
    let mut body = Body::new(&IfInfoMsg::default().bytes());
    if let Some(mtu) = spec.mtu {
        body = body.u32(IFLA_MTU, mtu);
    }
    if let Some(mac) = spec.mac {
        body = body.attr(IFLA_ADDRESS, &mac);
    }
    if let Some(q) = spec.txqlen {
        body = body.u32(IFLA_TXQLEN, q);
    }
    if let Some(fd) = spec.netns {
        // The kernel reads the u32 back as the int descriptor.
        body = body.u32(IFLA_NET_NS_FD, fd.cast_unsigned());
    }
    // After the settings, as iproute2 orders them (the kernel does not care).
    body = body.str(IFLA_IFNAME, &spec.name);
    if let Some(parent) = spec.kind.parent() {
        body = body.u32(IFLA_LINK, parent);
    }
    let kind = spec.kind.clone();
    let mtu = spec.mtu;
    body = body.nest(IFLA_LINKINFO, |info| {
        // Without a NUL, as iproute2 and Go netlink send it.
        let info = info.attr(IFLA_INFO_KIND, kind.name().as_bytes());
        match kind {
            Kind::Veth { peer, peer_netns } => {
                // The peer is described by an ifinfomsg followed by its attributes.
                let mut p = Body::new(&IfInfoMsg::default().bytes()).str(IFLA_IFNAME, &peer);
                if let Some(mtu) = mtu {
                    p = p.u32(IFLA_MTU, mtu);
                }
                if let Some(fd) = peer_netns {
                    p = p.u32(IFLA_NET_NS_FD, fd.cast_unsigned());
                }
                let p = p.into_bytes();
                info.nest(IFLA_INFO_DATA, |data| data.attr(VETH_INFO_PEER, &p))
            }
            Kind::Bridge {
                vlan_filtering,
                group_fwd_mask,
            } if vlan_filtering || group_fwd_mask.is_some() => info.nest(IFLA_INFO_DATA, |d| {
                bridge_data(d, vlan_filtering, group_fwd_mask)
            }),
            Kind::Macvlan {
                mode, bc_queue_len, ..
            } => info.nest(IFLA_INFO_DATA, |d| {
                let d = d.u32(IFLA_MACVLAN_MODE, mode);
                match bc_queue_len {
                    Some(q) => d.u32(IFLA_MACVLAN_BC_QUEUE_LEN, q),
                    None => d,
                }
            }),
            Kind::Ipvlan { mode, .. } => {
                info.nest(IFLA_INFO_DATA, |d| d.u16(IFLA_IPVLAN_MODE, mode))
            }
            Kind::Vlan { id, .. } => info.nest(IFLA_INFO_DATA, |d| d.u16(IFLA_VLAN_ID, id)),
            Kind::Vrf { table } => info.nest(IFLA_INFO_DATA, |d| d.u32(IFLA_VRF_TABLE, table)),
            Kind::Vxlan(vxlan) => info.nest(IFLA_INFO_DATA, |d| vxlan.data(d)),
            Kind::Bridge { .. } | Kind::Dummy | Kind::Ifb => info,
        }
    });
    Request::new(Rtm::Newlink, NlmF::CREATE | NlmF::EXCL, body)
}

impl Socket {
    pub fn delete_link(&mut self, index: u32) -> Result<()> {
        let op = format!("delete link {index}");
        let body = Body::new(
            &IfInfoMsg {
                index,
                ..IfInfoMsg::default()
            }
            .bytes(),
        );
        self.change(
            &op,
            Rtm::Dellink,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )
    }

    /// Deletes link `index` and returns once the kernel has unlisted it: its
    /// name, addresses and routes are gone and nothing in the namespace can see
    /// it. The deleting syscall then still waits for RCU grace periods (~15–25 ms
    /// here, most of a DEL); a forked child makes that call, so the caller does
    /// not wait for teardown nobody can observe. The child keeps no descriptor
    /// but its socket and a report pipe, so a runtime reading our stdout does
    /// not wait for it either. Ok also when the link was already gone.
    pub fn delete_link_detached(&mut self, index: u32) -> Result<()> {
        let op = format!("delete link {index}");
        match detached::spawn_delete(self.channel.socket().as_raw_fd(), index) {
            Ok(report) => loop {
                match report.wait(UNLIST_POLL) {
                    detached::Report::Pending => match self.link_by_index(index) {
                        Err(e) if e.is_not_found() => return Ok(()),
                        Err(e) => return Err(e),
                        Ok(_) => {}
                    },
                    detached::Report::Done(0) => return Ok(()),
                    // The child failed (or could not report): redo it here for the
                    // kernel's own error text.
                    detached::Report::Done(_) | detached::Report::Lost => {
                        return match self.delete_link(index) {
                            Err(e) if e.is_not_found() => Ok(()),
                            other => other,
                        };
                    }
                }
            },
            // No child: delete here and wait.
            Err(_) => match self.delete_link(index) {
                Err(e) if e.is_not_found() => Ok(()),
                other => other.map_err(|e| Error { op, ..e }),
            },
        }
    }

    /// Applies one change to a link, given as its index or (for error texts
    /// that name it) as a `&Link`.
    pub fn set_link<'a>(&mut self, link: impl Into<LinkRef<'a>>, change: Change<'_>) -> Result<()> {
        let link = link.into();
        let index = link.index;
        let op = change.describe(&link.to_string());
        let flag = |f: u32, on: bool| {
            IfInfoMsg {
                index,
                flags: if on { f } else { 0 },
                change: f,
                ..IfInfoMsg::default()
            }
            .bytes()
        };
        let renamed_to = match change {
            Change::Name(name) => Some(name.to_string()),
            _ => None,
        };
        let body = match change {
            Change::Up(on) => Body::new(&flag(IFF_UP, on)),
            Change::Promisc(on) => Body::new(&flag(IFF_PROMISC, on)),
            Change::AllMulti(on) => Body::new(&flag(IFF_ALLMULTI, on)),
            other => {
                let body = Body::new(
                    &IfInfoMsg {
                        index,
                        ..IfInfoMsg::default()
                    }
                    .bytes(),
                );
                match other {
                    Change::Master(m) => body.u32(IFLA_MASTER, m.unwrap_or(0)),
                    Change::Mtu(mtu) => body.u32(IFLA_MTU, mtu),
                    Change::Mac(mac) => body.attr(IFLA_ADDRESS, &mac),
                    Change::Name(name) => body.str(IFLA_IFNAME, name),
                    Change::Alias(alias) => body.attr(IFLA_IFALIAS, alias.as_bytes()),
                    Change::Netns(fd) => body.u32(IFLA_NET_NS_FD, fd.cast_unsigned()),
                    Change::TxQueueLen(q) => body.u32(IFLA_TXQLEN, q),
                    Change::Ipv4Conf(id, value) => body.nest(IFLA_AF_SPEC, |spec| {
                        spec.nest(AF_INET.into(), |inet| {
                            inet.nest(IFLA_INET_CONF, |conf| conf.u32(id, value))
                        })
                    }),
                    Change::Up(_) | Change::Promisc(_) | Change::AllMulti(_) => body,
                }
            }
        };
        self.change(
            &op,
            Rtm::Setlink,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )
        .map_err(|e| match renamed_to {
            Some(name) => e.about(Object::Link(name)),
            None => e,
        })
    }

    /// Sets which link-local groups (01-80-C2-00-00-0X, bit X) bridge
    /// `index` forwards: a changelink, which only RTM_NEWLINK carries.
    pub fn set_bridge_group_fwd_mask(&mut self, index: u32, mask: u16) -> Result<()> {
        let op = format!("set group_fwd_mask of bridge {index} to {mask:#06x}");
        let body = Body::new(
            &IfInfoMsg {
                index,
                ..IfInfoMsg::default()
            }
            .bytes(),
        )
        .nest(IFLA_LINKINFO, |i| {
            i.str(IFLA_INFO_KIND, LinkKind::Bridge.name())
                .nest(IFLA_INFO_DATA, |d| bridge_data(d, false, Some(mask)))
        });
        self.change(
            &op,
            Rtm::Newlink,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )
    }

    /// Sets the bridge-port flags of an enslaved link (each one on or off).
    pub fn set_bridge_port(&mut self, index: u32, flags: PortFlags) -> Result<()> {
        let op = format!("set bridge port flags of link {index}");
        let body = Body::new(
            &IfInfoMsg {
                family: AF_BRIDGE,
                index,
                ..IfInfoMsg::default()
            }
            .bytes(),
        )
        .nest(IFLA_PROTINFO | NESTED, |p| {
            p.u8(IFLA_BRPORT_MODE, u8::from(flags.hairpin))
                .u8(IFLA_BRPORT_ISOLATED, u8::from(flags.isolated))
        });
        self.change(
            &op,
            Rtm::Setlink,
            NlmF::empty(),
            Buffer::from(body.into_bytes()),
        )
    }

    /// Adds VLAN `vid` on a bridge port.
    pub fn add_bridge_vlan(&mut self, index: u32, vid: u16, flags: VlanFlags) -> Result<()> {
        let op = format!("add vlan {vid} on bridge port {index}");
        self.change_bridge_vlan(&op, Rtm::Setlink, index, vid, flags.bits())
    }

    /// Removes VLAN `vid` from a bridge port.
    pub fn delete_bridge_vlan(&mut self, index: u32, vid: u16) -> Result<()> {
        let op = format!("delete vlan {vid} on bridge port {index}");
        self.change_bridge_vlan(&op, Rtm::Dellink, index, vid, 0)
    }

    fn change_bridge_vlan(
        &mut self,
        op: &str,
        ty: Rtm,
        index: u32,
        vid: u16,
        flags: u16,
    ) -> Result<()> {
        let mut info = flags.to_ne_bytes().to_vec();
        info.extend_from_slice(&vid.to_ne_bytes());
        let body = Body::new(
            &IfInfoMsg {
                family: AF_BRIDGE,
                index,
                ..IfInfoMsg::default()
            }
            .bytes(),
        )
        .nest(IFLA_AF_SPEC, |s| s.attr(IFLA_BRIDGE_VLAN_INFO, &info));
        self.change(op, ty, NlmF::empty(), Buffer::from(body.into_bytes()))
    }

    /// The VLAN IDs on bridge port `index` (none when it is no port of a
    /// VLAN-filtering bridge). The kernel answers this only as a dump of every
    /// port, so the others are skipped here.
    pub fn bridge_port_vlans(&mut self, index: u32) -> Result<Vec<u16>> {
        let op = format!("list vlans of bridge port {index}");
        let body = Body::new(
            &IfInfoMsg {
                family: AF_BRIDGE,
                ..IfInfoMsg::default()
            }
            .bytes(),
        )
        .u32(IFLA_EXT_MASK, RTEXT_FILTER_BRVLAN);
        let replies: Vec<Buffer> = self.get(
            &op,
            Rtm::Getlink,
            NlmF::DUMP,
            Buffer::from(body.into_bytes()),
        )?;
        Ok(replies
            .iter()
            .find_map(|b| port_vlans(b.as_ref()).filter(|(i, _)| *i == index))
            .map(|(_, vids)| vids)
            .unwrap_or_default())
    }
}

/// One AF_BRIDGE link message: the port's index and the VLAN IDs in its
/// IFLA_AF_SPEC (single entries or begin/end ranges).
fn port_vlans(msg: &[u8]) -> Option<(u32, Vec<u16>)> {
    let (header, attrs) = IfInfoMsg::parse(msg)?;
    let spec = wire::find(attrs, IFLA_AF_SPEC).unwrap_or_default();
    let mut vids = Vec::new();
    let mut range_start = None;
    for (_, p) in wire::attrs(spec).filter(|(ty, _)| *ty == IFLA_BRIDGE_VLAN_INFO) {
        // struct bridge_vlan_info { u16 flags; u16 vid; }
        let (Some(flags), Some(vid)) = (wire::as_u16(p), p.get(2..).and_then(wire::as_u16)) else {
            continue;
        };
        if flags & BRIDGE_VLAN_INFO_RANGE_BEGIN != 0 {
            range_start = Some(vid);
        } else if flags & BRIDGE_VLAN_INFO_RANGE_END != 0 {
            vids.extend(range_start.take().unwrap_or(vid)..=vid);
        } else {
            vids.push(vid);
        }
    }
    Some((header.index, vids))
}

/// Children of detached deletes not reaped yet (still tearing down); reaps
/// those that ended first.
pub fn unreaped_detached_deletes() -> usize {
    detached::unreaped()
}

/// A bridge's IFLA_INFO_DATA: vlan_filtering only when on, the mask when set.
fn bridge_data(d: Body, vlan_filtering: bool, group_fwd_mask: Option<u16>) -> Body {
    let d = match vlan_filtering {
        true => d.u8(IFLA_BR_VLAN_FILTERING, 1),
        false => d,
    };
    match group_fwd_mask {
        Some(mask) => d.u16(IFLA_BR_GROUP_FWD_MASK, mask),
        None => d,
    }
}

#[cfg(test)]
mod tests;
