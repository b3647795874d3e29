//! From linux/netfilter/nf_nat.h: `nf_nat_range` flags.

pub const NF_NAT_RANGE_MAP_IPS: u32 = 1 << 0;
pub const NF_NAT_RANGE_PROTO_SPECIFIED: u32 = 1 << 1;
