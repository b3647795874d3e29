//! From linux/if_bridge.h: a bridge port's VLANs in IFLA_AF_SPEC.

pub const IFLA_BRIDGE_VLAN_INFO: u16 = 2;

// struct bridge_vlan_info's flags
pub const BRIDGE_VLAN_INFO_PVID: u16 = 2;
pub const BRIDGE_VLAN_INFO_UNTAGGED: u16 = 4;
pub const BRIDGE_VLAN_INFO_RANGE_BEGIN: u16 = 8;
pub const BRIDGE_VLAN_INFO_RANGE_END: u16 = 16;
