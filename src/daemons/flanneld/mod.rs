//! `flanneld`: flannel's daemon in etcd mode. The pure parts: the network
//! config (`config`), the lease key and value (`lease`), choosing a subnet
//! (`alloc`) and subnet.env (`subnet_env`).

pub mod alloc;
pub mod config;
pub mod lease;
pub mod subnet_env;
