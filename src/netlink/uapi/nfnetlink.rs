//! From linux/netfilter/nfnetlink.h.

pub const NFNETLINK_V0: u8 = 0;

// Subsystems: the high byte of an nfnetlink message type.
pub const NFNL_SUBSYS_CTNETLINK: u16 = 1;
pub const NFNL_SUBSYS_NFTABLES: u16 = 10;

pub const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
pub const NFNL_MSG_BATCH_END: u16 = 0x11;
