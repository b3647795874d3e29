//! The firewall plugin's rules: the `ingressPolicy` value, the iptables form
//! (`iptables.rs`, the reference's), the firewalld form (`firewalld.rs`, the
//! reference's, over D-Bus) and the nftables form (`nftables.rs`). The verbs
//! `add`, `del`, `check` and `gc` of a [`Plan`] for a [`Target`] are here, and
//! only here is the netfilter lock taken. The plugin hands each as an [`Op`]
//! to an [`crate::netfilter::Apply`] (on a node, [`run`]).

pub mod firewalld;
pub mod iptables;
pub mod nftables;
pub mod xtnft;

use crate::netfilter::{Backend, Error, Flavour, Result, lock};
use crate::quote::quoted;
use ipnet::IpNet;

/// Where the container's addresses go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Our own rules, in iptables or nftables.
    Rules(Backend),
    /// Sources of a firewalld zone.
    Firewalld,
}

/// Everything one container's rules depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub container_id: String,
    pub addresses: Vec<IpNet>,
    /// iptables' admin chain (a valid chain name).
    pub admin_chain: String,
    pub policy: IngressPolicy,
    /// The bridge the isolation stages name (empty with policy open).
    pub bridge: String,
    /// firewalld's zone.
    pub zone: String,
}

/// An address and the handles of its two rules in its family's CNI-FORWARD,
/// as iptables-nft over netlink wrote them: what lets DEL (and a repeated
/// ADD) find them without reading the chain, which holds every pod's rules.
pub type Remembered = (std::net::IpAddr, [u64; 2]);

/// What the caller remembers of an attachment's earlier ADD.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    /// No earlier ADD of this attachment (it had no record): ADD appends its
    /// rules without looking for them in CNI-FORWARD.
    pub fresh: bool,
    /// Handles remembered at that ADD (checked before use).
    pub handles: Vec<Remembered>,
}

/// One firewall operation, as data: what [`crate::netfilter::Apply::firewall`]
/// is handed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// [`add_known`]: its output, the handles to remember.
    Add { plan: Plan, known: Known },
    /// [`del_known`] at the handles remembered; with nftables,
    /// [`del_nftables`] told whether ADD `recorded` the attachment.
    Del {
        plan: Plan,
        handles: Vec<Remembered>,
        recorded: bool,
    },
    /// [`check_known`] at the handles remembered.
    Check {
        plan: Plan,
        handles: Vec<Remembered>,
    },
    /// [`gc`] of the `stale` plans.
    Gc { stale: Vec<Plan> },
}

/// Runs `op` on `target` on this node (what [`crate::netfilter::Kernel`]
/// does): the handles to remember of an ADD over iptables-nft, else none.
pub fn run(target: Target, op: &Op) -> Result<Vec<Remembered>> {
    match op {
        Op::Add { plan, known } => add_known(target, plan, known),
        Op::Del {
            plan,
            handles,
            recorded,
        } => match target {
            Target::Rules(Backend::Nftables) => del_nftables(plan, *recorded),
            _ => del_known(target, plan, handles),
        }
        .map(|()| Vec::new()),
        Op::Check { plan, handles } => check_known(target, plan, handles).map(|()| Vec::new()),
        Op::Gc { stale } => gc(target, stale).map(|()| Vec::new()),
    }
}

/// ADD: the addresses let through. With firewalld, the isolation stages are
/// iptables rules all the same (as the reference).
pub fn add(target: Target, plan: &Plan) -> Result<()> {
    add_known(target, plan, &Known::default()).map(drop)
}

/// [`add`] given what is `known` of the attachment's earlier ADD: the handles
/// to remember of the rules written over iptables-nft (none elsewhere).
pub fn add_known(target: Target, plan: &Plan, known: &Known) -> Result<Vec<Remembered>> {
    match target {
        Target::Rules(Backend::Iptables(flavour)) => {
            let _lock = lock()?;
            iptables::add_known(flavour, plan, known)
        }
        Target::Rules(Backend::Nftables) => {
            let _lock = lock()?;
            nftables::add(plan).map(|()| Vec::new())
        }
        Target::Firewalld => {
            firewalld::add(&plan.zone, &plan.addresses)?;
            if plan.policy == IngressPolicy::Open {
                return Ok(Vec::new());
            }
            let _lock = lock()?;
            iptables::isolate(Flavour::Default, plan).map(|()| Vec::new())
        }
    }
}

/// DEL: the addresses' rules (or zone sources) removed. The iptables rules
/// and the zone sources carry only addresses: without them nothing is done.
pub fn del(target: Target, plan: &Plan) -> Result<()> {
    del_known(target, plan, &[])
}

/// [`del`] given the handles remembered at ADD (see [`Known`]).
pub fn del_known(target: Target, plan: &Plan, known: &[Remembered]) -> Result<()> {
    match target {
        Target::Rules(Backend::Iptables(_)) if plan.addresses.is_empty() => Ok(()),
        Target::Rules(Backend::Iptables(flavour)) => {
            let _lock = lock()?;
            iptables::del_known(flavour, &plan.addresses, known)
        }
        Target::Rules(Backend::Nftables) => {
            let _lock = lock()?;
            nftables::del(plan, true)
        }
        Target::Firewalld if plan.addresses.is_empty() => Ok(()),
        Target::Firewalld => {
            // Sources are runtime state of firewalld: gone with it.
            if let Some(gone) = firewalld::del(&plan.zone, &plan.addresses)? {
                eprintln!(
                    "firewall: firewalld is not running ({gone}); no zone {} sources to remove",
                    plan.zone
                );
            }
            Ok(())
        }
    }
}

/// DEL of the nftables rules, where the caller knows whether ADD recorded
/// the attachment: without a record, a container with no anchor has no rules
/// and nothing is read.
pub fn del_nftables(plan: &Plan, recorded: bool) -> Result<()> {
    let _lock = lock()?;
    nftables::del(plan, recorded)
}

/// GC: the rules (or zone sources) of each of the `stale` plans removed, as
/// DEL removes them, under one lock. The rules name no network: the caller
/// picks the plans (the plugin's records of its attachments).
pub fn gc(target: Target, stale: &[Plan]) -> Result<()> {
    match target {
        Target::Rules(Backend::Iptables(flavour)) => {
            let addresses: Vec<IpNet> = stale.iter().flat_map(|p| p.addresses.clone()).collect();
            if addresses.is_empty() {
                return Ok(());
            }
            del_addresses(flavour, &addresses)
        }
        Target::Rules(Backend::Nftables) => {
            let _lock = lock()?;
            for plan in stale {
                nftables::del(plan, true)?;
            }
            Ok(())
        }
        Target::Firewalld => stale.iter().try_for_each(|plan| del(target, plan)),
    }
}

/// The iptables rules of `addresses` removed with the flavour's tools,
/// whoever's they were (GC's, and the doctor's for addresses no attachment
/// holds).
pub fn del_addresses(flavour: Flavour, addresses: &[IpNet]) -> Result<()> {
    let _lock = lock()?;
    iptables::del_addresses(flavour, addresses)
}

/// CHECK: what ADD wrote is there (read only: no lock).
pub fn check(target: Target, plan: &Plan) -> Result<()> {
    check_known(target, plan, &[])
}

/// [`check`] given the handles remembered at ADD (see [`Known`]).
pub fn check_known(target: Target, plan: &Plan, known: &[Remembered]) -> Result<()> {
    match target {
        Target::Rules(Backend::Iptables(flavour)) => iptables::check(flavour, plan, known),
        Target::Rules(Backend::Nftables) => nftables::check(plan),
        Target::Firewalld => firewalld::check(&plan.zone, &plan.addresses),
    }
}

/// `ingressPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngressPolicy {
    Open,
    SameBridge,
    Isolated,
}

impl IngressPolicy {
    pub fn parse(s: &str) -> Result<IngressPolicy> {
        match s {
            "" | "open" => Ok(IngressPolicy::Open),
            "same-bridge" => Ok(IngressPolicy::SameBridge),
            "isolated" => Ok(IngressPolicy::Isolated),
            other => Err(Error::InvalidConfig(format!(
                "unknown ingressPolicy {other}",
                other = quoted(&other)
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IngressPolicy::Open => "open",
            IngressPolicy::SameBridge => "same-bridge",
            IngressPolicy::Isolated => "isolated",
        }
    }
}
