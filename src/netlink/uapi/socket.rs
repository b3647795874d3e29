//! From linux/socket.h: the address families netlink headers carry (one byte
//! there, two in attribute types and MPTCP's family attribute).

pub const AF_UNSPEC: u8 = 0;
pub const AF_INET: u8 = 2;
pub const AF_BRIDGE: u8 = 7;
pub const AF_INET6: u8 = 10;
