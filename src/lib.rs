//! cni-multi: the CNI reference plugins as one multicall binary.

pub mod alloc;
pub mod attach;
pub mod cni;
pub mod cnitool;
pub mod dbus;
pub mod dhcp;
pub mod digest;
pub mod error_codes;
pub mod etcd;
pub mod files;
pub mod flanneld;
pub mod goflags;
pub mod install;
pub mod ipam;
pub mod kernel;
pub mod libcni;
pub mod lockfile;
pub mod multicall;
pub mod netfilter;
pub mod netlink;
pub mod netns;
pub mod plugins;
pub mod quote;

#[cfg(test)]
#[path = "layering_tests.rs"]
mod layering_tests;
#[cfg(test)]
mod source_scan;
