//! From linux/if_addr.h: address attributes (IFA_*) and flags.

pub const IFA_ADDRESS: u16 = 1;
pub const IFA_LOCAL: u16 = 2;
pub const IFA_BROADCAST: u16 = 4;
pub const IFA_FLAGS: u16 = 8;
pub const IFA_F_NODAD: u32 = 0x02;
pub const IFA_F_DADFAILED: u32 = 0x08;
pub const IFA_F_TENTATIVE: u32 = 0x40;
