//! From linux/if_ether.h: ethernet protocol numbers (a filter's protocol).

pub const ETH_P_ALL: u16 = 0x0003;
pub const ETH_P_IP: u16 = 0x0800;
pub const ETH_P_IPV6: u16 = 0x86DD;
