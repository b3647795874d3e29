//! From linux/netfilter.h: verdicts, protocol families and the inet hooks.

// Verdicts
pub const NF_DROP: i32 = 0;
pub const NF_ACCEPT: i32 = 1;

// Protocol families of netfilter tables (NFPROTO_*)
pub const NFPROTO_INET: u8 = 1;
pub const NFPROTO_IPV4: u8 = 2;
pub const NFPROTO_BRIDGE: u8 = 7;
pub const NFPROTO_IPV6: u8 = 10;

// enum nf_inet_hooks
pub const NF_INET_PRE_ROUTING: u32 = 0;
pub const NF_INET_LOCAL_IN: u32 = 1;
pub const NF_INET_FORWARD: u32 = 2;
pub const NF_INET_LOCAL_OUT: u32 = 3;
pub const NF_INET_POST_ROUTING: u32 = 4;
