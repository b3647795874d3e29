//! From linux/if.h: a link's flags (ifinfomsg's `flags`) and operational state,
//! and the size of a name.

/// A link name's buffer, its NUL included.
pub const IFNAMSIZ: usize = 16;

pub const IFF_UP: u32 = 0x1;
pub const IFF_PROMISC: u32 = 0x100;
pub const IFF_ALLMULTI: u32 = 0x200;

/// IF_OPER_UP: RFC 2863 operational state "up".
pub const IF_OPER_UP: u8 = 6;
