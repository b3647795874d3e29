//! From linux/neighbour.h: neighbour attributes (NDA_*), states and flags.

pub const NDA_DST: u16 = 1;
pub const NDA_LLADDR: u16 = 2;
pub const NDA_IFINDEX: u16 = 8;
/// A static entry: never probed, never expires.
pub const NUD_PERMANENT: u16 = 0x80;
/// No address resolution for the entry.
pub const NUD_NOARP: u16 = 0x40;
/// An entry of the device itself (not of the bridge it is a port of).
pub const NTF_SELF: u8 = 0x02;
