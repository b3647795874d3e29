//! The kernel's interfaces other than netlink: files under /proc/sys and
//! ioctls on device files. (Everything said over a netlink socket is in
//! `netlink`.)
//!
//! - `sysctl`: `net.*` sysctls under /proc/sys/net, read and written from the
//!   calling thread (so inside a container namespace within `NetNs::run`).
//! - `tun`: tap devices, created through /dev/net/tun ioctls; their failures
//!   are `netlink::Error`s like every other link operation's.
// The same cast lints as the netlink layer: ioctl arguments are C integers.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless
)]

pub mod sysctl;
pub mod tun;
