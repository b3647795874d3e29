//! From linux/netconf.h: a namespace's or link's IP settings (RTM_GETNETCONF).

pub const NETCONFA_IFINDEX: u16 = 1;
pub const NETCONFA_FORWARDING: u16 = 2;
/// NETCONFA_IFINDEX's value for the namespace-wide `all` settings.
pub const NETCONFA_IFINDEX_ALL: i32 = -1;
