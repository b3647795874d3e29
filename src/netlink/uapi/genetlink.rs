//! From linux/genetlink.h: the generic netlink controller, which resolves a
//! family's name to its message type.

/// The controller's own message type.
pub const GENL_ID_CTRL: u16 = 0x10;
pub const CTRL_CMD_GETFAMILY: u8 = 3;
pub const CTRL_ATTR_FAMILY_ID: u16 = 1;
pub const CTRL_ATTR_FAMILY_NAME: u16 = 2;
