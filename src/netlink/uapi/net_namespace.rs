//! From linux/net_namespace.h: namespace ids (RTM_GETNSID).

pub const NETNSA_NSID: u16 = 1;
pub const NETNSA_FD: u16 = 3;
/// NETNSA_NSID's value when the namespace has no id for the other yet.
pub const NETNSA_NSID_NOT_ASSIGNED: i32 = -1;
