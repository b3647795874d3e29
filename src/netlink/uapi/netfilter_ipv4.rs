//! From linux/netfilter_ipv4.h: the hook priorities of iptables' tables
//! (ip6tables' in netfilter_ipv6.h have the same values).

pub const NF_IP_PRI_NAT_DST: i32 = -100;
pub const NF_IP_PRI_FILTER: i32 = 0;
pub const NF_IP_PRI_NAT_SRC: i32 = 100;
