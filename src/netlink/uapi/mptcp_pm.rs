//! From linux/mptcp_pm.h (linux/mptcp.h before Linux 6.7): the MPTCP path
//! manager's generic netlink family, its commands and attributes.

pub const MPTCP_PM_NAME: &str = "mptcp_pm";
pub const MPTCP_PM_VER: u8 = 1;

// enum mptcp_pm_command
pub const MPTCP_PM_CMD_ADD_ADDR: u8 = 1;
pub const MPTCP_PM_CMD_DEL_ADDR: u8 = 2;
pub const MPTCP_PM_CMD_GET_ADDR: u8 = 3;
pub const MPTCP_PM_CMD_SET_LIMITS: u8 = 5;
pub const MPTCP_PM_CMD_GET_LIMITS: u8 = 6;

// The family's attributes
pub const MPTCP_PM_ATTR_ADDR: u16 = 1;
pub const MPTCP_PM_ATTR_RCV_ADD_ADDRS: u16 = 2;
pub const MPTCP_PM_ATTR_SUBFLOWS: u16 = 3;

// Nested in MPTCP_PM_ATTR_ADDR
pub const MPTCP_PM_ADDR_ATTR_FAMILY: u16 = 1;
pub const MPTCP_PM_ADDR_ATTR_ID: u16 = 2;
pub const MPTCP_PM_ADDR_ATTR_ADDR4: u16 = 3;
pub const MPTCP_PM_ADDR_ATTR_ADDR6: u16 = 4;
pub const MPTCP_PM_ADDR_ATTR_FLAGS: u16 = 6;
pub const MPTCP_PM_ADDR_ATTR_IF_IDX: u16 = 7;
