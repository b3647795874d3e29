//! A change to an existing link, the bridge-port and VLAN flags some take,
//! and how error texts name the change and the link.

use super::*;
use crate::quote::quoted;

/// One change to an existing link (RTM_SETLINK / RTM_NEWLINK on an index).
#[derive(Debug, Clone)]
pub enum Change<'a> {
    /// Enslave to a master, or `None` for nomaster.
    Master(Option<u32>),
    Mtu(u32),
    Mac([u8; 6]),
    Name(&'a str),
    Alias(&'a str),
    /// Move into the namespace of this fd.
    Netns(RawFd),
    TxQueueLen(u32),
    Up(bool),
    Promisc(bool),
    AllMulti(bool),
    /// Sets `net.ipv4.conf.<if>.<setting>` (IPV4_DEVCONF_* id) without a
    /// /proc/sys path walk, whose cost grows with the number of namespaces.
    Ipv4Conf(u16, u32),
}

/// Bridge-port flags (IFLA_PROTINFO), each set on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortFlags {
    /// Frames may leave through the port they came in on.
    pub hairpin: bool,
    /// The port talks only to non-isolated ports.
    pub isolated: bool,
}

/// How a bridge port carries a VLAN (struct bridge_vlan_info's flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VlanFlags {
    /// Untagged frames entering the port join this VLAN.
    pub pvid: bool,
    /// Frames of this VLAN leave the port untagged.
    pub untagged: bool,
}

impl VlanFlags {
    /// A trunk VLAN: tagged both ways.
    pub const TAGGED: VlanFlags = VlanFlags {
        pvid: false,
        untagged: false,
    };
    /// An access VLAN: the port's untagged PVID.
    pub const ACCESS: VlanFlags = VlanFlags {
        pvid: true,
        untagged: true,
    };

    pub(super) fn bits(self) -> u16 {
        let mut bits = 0;
        if self.pvid {
            bits |= BRIDGE_VLAN_INFO_PVID;
        }
        if self.untagged {
            bits |= BRIDGE_VLAN_INFO_UNTAGGED;
        }
        bits
    }
}

impl Change<'_> {
    /// What the change does to `link`, as a sentence for error texts.
    pub(super) fn describe(&self, link: &str) -> String {
        let on_off = |on: &bool| if *on { "on" } else { "off" };
        match self {
            Change::Master(Some(m)) => format!("set master of {link} to {m}"),
            Change::Master(None) => format!("release {link} from its master"),
            Change::Mtu(mtu) => format!("set mtu of {link} to {mtu}"),
            Change::Mac(mac) => format!("set mac of {link} to {}", format_mac(mac)),
            Change::Name(name) => format!("rename {link} to {name}", name = quoted(&name)),
            Change::Alias("") => format!("clear alias of {link}"),
            Change::Alias(alias) => {
                format!("set alias of {link} to {alias}", alias = quoted(&alias))
            }
            Change::Netns(fd) => format!("move {link} to the network namespace of fd {fd}"),
            Change::TxQueueLen(q) => format!("set txqueuelen of {link} to {q}"),
            Change::Up(true) => format!("set {link} up"),
            Change::Up(false) => format!("set {link} down"),
            Change::Promisc(on) => format!("turn {} promiscuous mode of {link}", on_off(on)),
            Change::AllMulti(on) => format!("turn {} allmulticast of {link}", on_off(on)),
            Change::Ipv4Conf(id, value) => {
                let setting = match *id {
                    IPV4_DEVCONF_ARP_NOTIFY => "arp_notify".to_string(),
                    IPV4_DEVCONF_ROUTE_LOCALNET => "route_localnet".to_string(),
                    id => format!("devconf {id}"),
                };
                format!("set ipv4 {setting} of {link} to {value}")
            }
        }
    }
}

/// The link a change is for: its index, and its name where the caller has
/// it (error texts then name it).
#[derive(Debug, Clone, Copy)]
pub struct LinkRef<'a> {
    pub index: u32,
    pub name: Option<&'a str>,
}

impl From<u32> for LinkRef<'_> {
    fn from(index: u32) -> Self {
        LinkRef { index, name: None }
    }
}

impl<'a> From<&'a Link> for LinkRef<'a> {
    fn from(link: &'a Link) -> Self {
        LinkRef {
            index: link.index,
            name: Some(&link.name),
        }
    }
}

impl std::fmt::Display for LinkRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name {
            Some(name) => write!(f, "link {name} ({})", self.index, name = quoted(&name)),
            None => write!(f, "link {}", self.index),
        }
    }
}
