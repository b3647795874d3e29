//! From linux/sockios.h: socket ioctls.

/// A descriptor of the network namespace a socket lives in.
pub const SIOCGSKNS: nix::libc::c_ulong = 0x894C;
