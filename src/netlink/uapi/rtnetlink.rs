//! From linux/rtnetlink.h.

/// IFLA_EXT_MASK bit: bridge dumps carry each port's VLANs.
pub const RTEXT_FILTER_BRVLAN: u32 = 2;

pub const RTM_DELLINK: u16 = 17;
