//! Long-running processes started through the binary (`dhcp daemon`,
//! `flanneld`): front ends like cnitool, above the plugins.

pub mod dhcp;
pub mod flanneld;
pub mod goflags;
