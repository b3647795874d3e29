//! From linux/if_link.h: link attributes (IFLA_*) and the kind-specific ones
//! nested in IFLA_LINKINFO.

pub const IFLA_ADDRESS: u16 = 1;
pub const IFLA_IFNAME: u16 = 3;
pub const IFLA_MTU: u16 = 4;
pub const IFLA_LINK: u16 = 5;
pub const IFLA_MASTER: u16 = 10;
pub const IFLA_PROTINFO: u16 = 12;
pub const IFLA_TXQLEN: u16 = 13;
pub const IFLA_OPERSTATE: u16 = 16;
pub const IFLA_LINKINFO: u16 = 18;
pub const IFLA_IFALIAS: u16 = 20;
pub const IFLA_AF_SPEC: u16 = 26;
pub const IFLA_NET_NS_FD: u16 = 28;
pub const IFLA_EXT_MASK: u16 = 29;
pub const IFLA_LINK_NETNSID: u16 = 37;
pub const IFLA_PERM_ADDRESS: u16 = 54;
pub const IFLA_PARENT_DEV_NAME: u16 = 56;
pub const IFLA_PARENT_DEV_BUS_NAME: u16 = 57;

/// In IFLA_AF_SPEC's AF_INET nest: the `net.ipv4.conf.<if>.*` table.
pub const IFLA_INET_CONF: u16 = 1;

// IFLA_LINKINFO
pub const IFLA_INFO_KIND: u16 = 1;
pub const IFLA_INFO_DATA: u16 = 2;

// IFLA_INFO_DATA of a bridge
pub const IFLA_BR_VLAN_FILTERING: u16 = 7;
pub const IFLA_BR_GROUP_FWD_MASK: u16 = 9;

// IFLA_PROTINFO of a bridge port
pub const IFLA_BRPORT_MODE: u16 = 4;
pub const IFLA_BRPORT_ISOLATED: u16 = 33;

// IFLA_INFO_DATA of a macvlan
pub const IFLA_MACVLAN_MODE: u16 = 1;
pub const IFLA_MACVLAN_BC_QUEUE_LEN: u16 = 7;
pub const MACVLAN_MODE_PRIVATE: u32 = 1;
pub const MACVLAN_MODE_VEPA: u32 = 2;
pub const MACVLAN_MODE_BRIDGE: u32 = 4;
pub const MACVLAN_MODE_PASSTHRU: u32 = 8;
pub const MACVLAN_MODE_SOURCE: u32 = 16;

// IFLA_INFO_DATA of an ipvlan
pub const IFLA_IPVLAN_MODE: u16 = 1;

// IFLA_INFO_DATA of a vlan
pub const IFLA_VLAN_ID: u16 = 1;

// IFLA_INFO_DATA of a vrf
pub const IFLA_VRF_TABLE: u16 = 1;

// IFLA_INFO_DATA of a vxlan
pub const IFLA_VXLAN_ID: u16 = 1;
pub const IFLA_VXLAN_LINK: u16 = 3;
pub const IFLA_VXLAN_LOCAL: u16 = 4;
pub const IFLA_VXLAN_LEARNING: u16 = 7;
pub const IFLA_VXLAN_PORT: u16 = 15;
pub const IFLA_VXLAN_LOCAL6: u16 = 17;
pub const IFLA_VXLAN_GBP: u16 = 23;
