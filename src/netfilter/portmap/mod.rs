//! portmap's rules: the plan and targets both backends build from, the
//! iptables form (the reference's `CNI-HOSTPORT-*` / `CNI-DN-<hash>` chains,
//! `iptables.rs`) and the nftables form (`ip[6] cni_hostport`, `nftables.rs`).
//! The iptables form is the reference's default: its add/del/check/gc are the
//! module's own; the nftables ones are under `nftables::`.

pub mod iptables;
pub mod nftables;

pub use iptables::{add, check, del, gc};

use crate::netfilter::Family;
use std::net::IpAddr;

/// One mapping, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub host_port: u16,
    pub container_port: u16,
    pub protocol: String,
    pub host_ip: Option<IpAddr>,
}

/// Everything one container's rules depend on.
#[derive(Debug, Clone)]
pub struct Plan {
    pub network: String,
    pub container_id: String,
    pub mappings: Vec<Mapping>,
    pub snat: bool,
    pub masq_all: bool,
    pub mark_bit: u32,
    pub external_mark_chain: Option<String>,
    pub conditions_v4: Vec<String>,
    pub conditions_v6: Vec<String>,
}

impl Plan {
    /// Mappings that apply to a container address of `family`.
    fn mappings_for(&self, family: Family) -> Vec<&Mapping> {
        self.mappings
            .iter()
            .filter(|m| m.host_ip.is_none_or(|ip| Family::of(ip) == family))
            .collect()
    }

    /// The match conditions for a container address of `family`.
    fn conditions(&self, family: Family) -> &[String] {
        match family {
            Family::V4 => &self.conditions_v4,
            Family::V6 => &self.conditions_v6,
        }
    }
}

/// The container address as `ip/prefix` (as allocated) and as a DNAT target.
#[derive(Debug, Clone)]
pub struct Target {
    pub address: ipnet::IpNet,
}
