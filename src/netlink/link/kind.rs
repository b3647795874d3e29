//! What a link is, as the kernel reports it (IFLA_LINKINFO): its kind, parsed
//! from IFLA_INFO_KIND, and the kind-specific settings plugins read, parsed
//! from IFLA_INFO_DATA. Above this layer kinds are compared as values, never
//! as the kernel's strings.

use super::vxlan::VxlanInfo;
use super::wire;
use crate::netlink::uapi::if_link::{
    IFLA_IPVLAN_MODE, IFLA_MACVLAN_MODE, IFLA_VLAN_ID, IFLA_VRF_TABLE, MACVLAN_MODE_BRIDGE,
    MACVLAN_MODE_PASSTHRU, MACVLAN_MODE_PRIVATE, MACVLAN_MODE_SOURCE, MACVLAN_MODE_VEPA,
};
use std::fmt;

/// IFLA_INFO_KIND. Kinds no plugin decides on keep their name in `Other`.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(from = "String", into = "String")]
pub enum LinkKind {
    /// No IFLA_INFO_KIND: a device a driver made (a NIC, loopback).
    #[default]
    Device,
    Veth,
    Bridge,
    Macvlan,
    Macvtap,
    Ipvlan,
    Vlan,
    Dummy,
    Vrf,
    Ifb,
    Vxlan,
    /// A tun or tap device.
    Tun,
    Other(String),
}

/// The kernel's name of each kind (IFLA_INFO_KIND), spelled here only: both
/// ways (`name`, `parse`) and the kinds links are created as read this table.
static NAMES: [(LinkKind, &str); 12] = [
    (LinkKind::Device, ""),
    (LinkKind::Veth, "veth"),
    (LinkKind::Bridge, "bridge"),
    (LinkKind::Macvlan, "macvlan"),
    (LinkKind::Macvtap, "macvtap"),
    (LinkKind::Ipvlan, "ipvlan"),
    (LinkKind::Vlan, "vlan"),
    (LinkKind::Dummy, "dummy"),
    (LinkKind::Vrf, "vrf"),
    (LinkKind::Ifb, "ifb"),
    (LinkKind::Vxlan, "vxlan"),
    (LinkKind::Tun, "tun"),
];

impl LinkKind {
    /// The kernel's name (IFLA_INFO_KIND); empty for `Device`.
    pub fn name(&self) -> &str {
        match self {
            LinkKind::Other(name) => name,
            kind => kind.known_name(),
        }
    }

    /// The name of a kind of the table; empty for `Other`, which has its own.
    pub(super) fn known_name(&self) -> &'static str {
        NAMES
            .iter()
            .find(|(kind, _)| kind == self)
            .map_or("", |(_, name)| name)
    }

    /// The kind the kernel calls `name` (empty: `Device`).
    pub fn parse(name: &str) -> LinkKind {
        NAMES.iter().find(|(_, known)| *known == name).map_or_else(
            || LinkKind::Other(name.to_string()),
            |(kind, _)| kind.clone(),
        )
    }
}

/// The kernel's name; "device" for a link without a kind.
impl fmt::Display for LinkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkKind::Device => f.write_str("device"),
            kind => f.write_str(kind.name()),
        }
    }
}

/// State files keep the kernel's name (empty for a device).
impl From<String> for LinkKind {
    fn from(name: String) -> Self {
        LinkKind::parse(&name)
    }
}

impl From<LinkKind> for String {
    fn from(kind: LinkKind) -> Self {
        kind.name().to_string()
    }
}

/// A macvlan's mode: MACVLAN_MODE_* (linux/if_link.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacvlanMode(pub u32);

impl MacvlanMode {
    pub const PRIVATE: MacvlanMode = MacvlanMode(MACVLAN_MODE_PRIVATE);
    pub const VEPA: MacvlanMode = MacvlanMode(MACVLAN_MODE_VEPA);
    pub const BRIDGE: MacvlanMode = MacvlanMode(MACVLAN_MODE_BRIDGE);
    pub const PASSTHRU: MacvlanMode = MacvlanMode(MACVLAN_MODE_PASSTHRU);

    /// `ip link`'s name for the mode, if it is one mode of those.
    pub fn name(self) -> Option<&'static str> {
        match self.0 {
            MACVLAN_MODE_PRIVATE => Some("private"),
            MACVLAN_MODE_VEPA => Some("vepa"),
            MACVLAN_MODE_BRIDGE => Some("bridge"),
            MACVLAN_MODE_PASSTHRU => Some("passthru"),
            MACVLAN_MODE_SOURCE => Some("source"),
            _ => None,
        }
    }
}

/// IFLA_INFO_DATA of the kinds whose settings plugins check.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum InfoData {
    /// None, or settings of a kind not read here.
    #[default]
    None,
    /// MACVLAN_MODE_* (linux/if_link.h).
    Macvlan {
        mode: u32,
    },
    /// IPVLAN_MODE_* (linux/if_link.h).
    Ipvlan {
        mode: u16,
    },
    Vlan {
        id: u16,
    },
    Vrf {
        table: u32,
    },
    Vxlan(VxlanInfo),
}

impl InfoData {
    /// The settings of a `kind` link in its IFLA_INFO_DATA `data`; `None` when
    /// they are missing or malformed.
    pub(super) fn parse(kind: &LinkKind, data: &[u8]) -> InfoData {
        let parsed = match kind {
            LinkKind::Macvlan => wire::find(data, IFLA_MACVLAN_MODE)
                .and_then(wire::as_u32)
                .map(|mode| InfoData::Macvlan { mode }),
            LinkKind::Ipvlan => wire::find(data, IFLA_IPVLAN_MODE)
                .and_then(wire::as_u16)
                .map(|mode| InfoData::Ipvlan { mode }),
            LinkKind::Vlan => wire::find(data, IFLA_VLAN_ID)
                .and_then(wire::as_u16)
                .map(|id| InfoData::Vlan { id }),
            LinkKind::Vrf => wire::find(data, IFLA_VRF_TABLE)
                .and_then(wire::as_u32)
                .map(|table| InfoData::Vrf { table }),
            LinkKind::Vxlan => VxlanInfo::parse(data).map(InfoData::Vxlan),
            _ => None,
        };
        parsed.unwrap_or_default()
    }
}

#[cfg(test)]
#[path = "kind_tests.rs"]
mod tests;
