//! From linux/mptcp.h: an endpoint's flags (MPTCP_PM_ADDR_ATTR_FLAGS).

pub const MPTCP_PM_ADDR_FLAG_SIGNAL: u32 = 1 << 0;
pub const MPTCP_PM_ADDR_FLAG_SUBFLOW: u32 = 1 << 1;
pub const MPTCP_PM_ADDR_FLAG_BACKUP: u32 = 1 << 2;
pub const MPTCP_PM_ADDR_FLAG_FULLMESH: u32 = 1 << 3;
