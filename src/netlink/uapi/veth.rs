//! From linux/veth.h.

/// In a veth's IFLA_INFO_DATA: the peer, as an ifinfomsg and its attributes.
pub const VETH_INFO_PEER: u16 = 1;
