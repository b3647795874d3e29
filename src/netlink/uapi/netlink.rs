//! From linux/netlink.h: message types, flags and attribute bits.

pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_CREATE: u16 = 0x400;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_APPEND: u16 = 0x800;
pub const NLM_F_REPLACE: u16 = 0x100;
pub const NLM_F_ECHO: u16 = 0x8;

/// `struct nlmsghdr` length.
pub const HDR_LEN: usize = 16;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
/// Types below it are control messages (NOOP, ERROR, DONE, OVERRUN).
pub const NLMSG_MIN_TYPE: u16 = 0x10;
/// The dump raced a change and may be inconsistent.
pub const NLM_F_DUMP_INTR: u16 = 0x10;
/// On an NLMSG_ERROR: only the request's header is echoed.
pub const NLM_F_CAPPED: u16 = 0x100;
/// In an extended ACK (enum nlmsgerr_attrs): the kernel's error text.
pub const NLMSGERR_ATTR_MSG: u16 = 1;

/// Set on nests the kernel parses strictly (e.g. IFLA_PROTINFO for AF_BRIDGE).
pub const NLA_F_NESTED: u16 = 0x8000;
/// An attribute's type without the NESTED and NET_BYTEORDER flags.
pub const NLA_TYPE_MASK: u16 = 0x3fff;
