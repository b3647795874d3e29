//! portmap's rules: the plan and targets both backends build from, the
//! iptables form (the reference's `CNI-HOSTPORT-*` / `CNI-DN-<hash>` chains,
//! `iptables.rs`) and the nftables form (`ip[6] cni_hostport`, `nftables.rs`).
//! The verbs `add`, `del`, `check` and `gc` of a [`Plan`] for a [`Backend`]
//! are here, and only here is the netfilter lock taken. The plugin hands
//! each as an [`Op`] to an [`crate::netfilter::Apply`] (on a node, [`run`]).

pub mod iptables;
pub mod nftables;
pub mod xtnft;

use crate::netfilter::{Backend, Family, Result, lock};
use std::net::IpAddr;

/// One portmap operation, as data: what [`crate::netfilter::Apply::portmap`]
/// is handed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// [`add`].
    Add(Plan),
    /// [`del`]; with nftables, [`del_nftables`] told whether ADD `recorded`
    /// the attachment (iptables does not ask).
    Del { plan: Plan, recorded: bool },
    /// [`check`].
    Check(Plan),
    /// [`gc`].
    Gc {
        network: String,
        keep: Vec<String>,
        stale: Vec<String>,
    },
}

/// Runs `op` in `backend` on this node (what [`crate::netfilter::Kernel`] does).
pub fn run(backend: Backend, op: &Op) -> Result<()> {
    match op {
        Op::Add(plan) => add(backend, plan),
        Op::Del { plan, recorded } => match backend {
            Backend::Iptables(_) => del(backend, plan),
            Backend::Nftables => del_nftables(plan, *recorded),
        },
        Op::Check(plan) => check(backend, plan),
        Op::Gc {
            network,
            keep,
            stale,
        } => gc(backend, network, keep, stale),
    }
}

/// ADD: the plan's mappings to each of its targets.
pub fn add(backend: Backend, plan: &Plan) -> Result<()> {
    let _lock = lock()?;
    match backend {
        Backend::Iptables(flavour) => iptables::add(flavour, plan),
        Backend::Nftables => nftables::add(plan),
    }
}

/// DEL: the container's rules, found without the mappings, in the families
/// of the plan's targets (both without targets).
pub fn del(backend: Backend, plan: &Plan) -> Result<()> {
    let _lock = lock()?;
    match backend {
        Backend::Iptables(flavour) => iptables::del(flavour, plan),
        Backend::Nftables => nftables::del(plan, true),
    }
}

/// DEL of the nftables rules, where the caller knows whether ADD recorded
/// the attachment: without a record, a container with no anchor has no
/// rules in a table marked as ours, and nothing is read.
pub fn del_nftables(plan: &Plan, recorded: bool) -> Result<()> {
    let _lock = lock()?;
    nftables::del(plan, recorded)
}

/// CHECK: what ADD writes is there (read only: no lock).
pub fn check(backend: Backend, plan: &Plan) -> Result<()> {
    match backend {
        Backend::Iptables(flavour) => iptables::check(flavour, plan),
        Backend::Nftables => nftables::check(plan),
    }
}

/// GC: the rules of `network`'s attachments whose container is not in
/// `keep` removed. iptables rules name their network: they are found there.
/// nftables rules carry only the container ID (as the reference's): there the
/// rules of the `stale` containers go, those the caller knows to be this
/// network's (the plugin's records), as DEL removes them.
pub fn gc(backend: Backend, network: &str, keep: &[String], stale: &[String]) -> Result<()> {
    let _lock = lock()?;
    match backend {
        Backend::Iptables(flavour) => iptables::gc(flavour, network, keep),
        Backend::Nftables => nftables::gc(stale),
    }
}

/// One mapping, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub host_port: u16,
    pub container_port: u16,
    pub protocol: String,
    pub host_ip: Option<IpAddr>,
}

/// Everything one container's rules depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// The container addresses to map to (first of each family); may be
    /// empty for a DEL.
    pub targets: Vec<Target>,
}

impl Plan {
    /// What DEL needs of an attachment known only by network and container
    /// (its rules are found by name, in both families).
    pub fn named(network: &str, container_id: &str) -> Plan {
        Plan {
            network: network.to_string(),
            container_id: container_id.to_string(),
            mappings: Vec::new(),
            snat: true,
            masq_all: false,
            mark_bit: 13,
            external_mark_chain: None,
            conditions_v4: Vec::new(),
            conditions_v6: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// Mappings that apply to a container address of `family`.
    pub(crate) fn mappings_for(&self, family: Family) -> Vec<&Mapping> {
        self.mappings
            .iter()
            .filter(|m| m.host_ip.is_none_or(|ip| Family::of(ip) == family))
            .collect()
    }

    /// The families a DEL cleans: its targets', or both when it has none.
    fn del_families(&self) -> Vec<Family> {
        let mut families: Vec<Family> = Vec::new();
        for t in &self.targets {
            let f = Family::of(t.address.addr());
            if !families.contains(&f) {
                families.push(f);
            }
        }
        if families.is_empty() {
            families = vec![Family::V4, Family::V6];
        }
        families
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub address: ipnet::IpNet,
}
