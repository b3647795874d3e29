//! From linux/rtnetlink.h.

/// IFLA_EXT_MASK bit: bridge dumps carry each port's VLANs.
pub const RTEXT_FILTER_BRVLAN: u32 = 2;

pub const RTM_DELLINK: u16 = 17;
/// A namespace's or link's IP settings (linux/netconf.h); neli's `Rtm` has no name for it.
pub const RTM_GETNETCONF: u16 = 82;

// Route attributes and metrics
pub const RTA_DST: u16 = 1;
pub const RTA_OIF: u16 = 4;
pub const RTA_GATEWAY: u16 = 5;
pub const RTA_PRIORITY: u16 = 6;
pub const RTA_PREFSRC: u16 = 7;
pub const RTA_METRICS: u16 = 8;
pub const RTA_TABLE: u16 = 15;
pub const RTAX_MTU: u16 = 2;
pub const RTAX_ADVMSS: u16 = 8;
pub const RT_TABLE_MAIN: u32 = 254;
pub const RT_SCOPE_UNIVERSE: u8 = 0;
pub const RT_SCOPE_LINK: u8 = 253;
pub const RT_SCOPE_HOST: u8 = 254;
pub const RTPROT_BOOT: u8 = 3;
pub const RTN_UNICAST: u8 = 1;
pub const RTN_LOCAL: u8 = 2;
/// RTNH_F_ONLINK (rtm_flags): the gateway is on the link, whatever its addresses.
pub const RTNH_F_ONLINK: u32 = 4;

// Traffic control attributes
pub const TCA_KIND: u16 = 1;
pub const TCA_OPTIONS: u16 = 2;
