//! firewall (chained): lets the container's addresses through FORWARD in the
//! reference's `CNI-FORWARD` chain, with an admin chain and optional bridge
//! isolation; or, with firewalld (chosen, or found running), makes them
//! sources of a firewalld zone. Its output is prevResult, unchanged. Each
//! verb hands its work as a `firewall::Op` to an [`Apply`] (`Kernel` on a
//! node).

use crate::attach::records::{self, Split};
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::netfilter::firewall::{self as rules, IngressPolicy, Op, Plan, Target, firewalld};
use crate::netfilter::{Apply, Backend, Choice, Kernel};
use crate::quote::quoted;
use ipnet::IpNet;
use serde::Deserialize;

pub struct Firewall;

/// Where ADD records each attachment's addresses for GC (`dataDir`).
pub(crate) const DEFAULT_DATA_DIR: &str = "/run/cni/firewall";

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "FirewallNetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    backend: String,
    #[serde(rename = "iptablesAdminChainName")]
    admin_chain: String,
    firewalld_zone: String,
    ingress_policy: String,
}

struct Conf {
    admin_chain: String,
    zone: String,
    policy: IngressPolicy,
    /// None: detect (see `Conf::target`).
    target: Option<Target>,
}

const POLICY_NEEDS_IPTABLES: &str =
    "ingressPolicy other than \"open\" needs iptables (the iptables or firewalld backend)";

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        let target = match k.backend.as_str() {
            "" => None,
            "iptables" => Some(Target::Rules(Backend::IPTABLES)),
            "nftables" => Some(Target::Rules(Backend::Nftables)),
            "firewalld" => Some(Target::Firewalld),
            other => {
                return Err(Error::invalid_config(format!(
                    "unknown firewall backend {other}",
                    other = quoted(&other)
                )));
            }
        };
        let zone = if k.firewalld_zone.is_empty() {
            firewalld::DEFAULT_ZONE.to_string()
        } else {
            k.firewalld_zone
        };
        // firewalld judges zone names; only text it could log garbled stays out.
        if zone.chars().any(char::is_control) {
            return Err(Error::invalid_config(format!(
                "invalid firewalldZone {zone}",
                zone = quoted(&zone)
            )));
        }
        let admin_chain = if k.admin_chain.is_empty() {
            "CNI-ADMIN".to_string()
        } else {
            k.admin_chain
        };
        if !crate::netfilter::iptables::valid_chain_name(&admin_chain) {
            return Err(Error::invalid_config(format!(
                "invalid iptablesAdminChainName {admin_chain}",
                admin_chain = quoted(&admin_chain)
            )));
        }
        let policy = IngressPolicy::parse(&k.ingress_policy)?;
        if policy != IngressPolicy::Open && target == Some(Target::Rules(Backend::Nftables)) {
            return Err(Error::invalid_config(POLICY_NEEDS_IPTABLES));
        }
        Ok(Conf {
            admin_chain,
            zone,
            policy,
            target,
        })
    }
}

/// DEL's reading of the config. The reference's DEL refuses only an unknown
/// ingressPolicy; any other config ADD refuses (a backend or admin chain name
/// it does not take) made no rules, so there is nothing to delete (said on stderr).
fn del_conf(inv: &Invocation) -> CniResult<Option<Conf>> {
    match Conf::load(inv) {
        Ok(conf) => Ok(Some(conf)),
        Err(e) => {
            let k: Keys = inv.conf.plugin_keys()?;
            IngressPolicy::parse(&k.ingress_policy)?;
            eprintln!("firewall: nothing to delete for a config ADD refuses: {e}");
            Ok(None)
        }
    }
}

fn prev(inv: &Invocation) -> CniResult<NetResult> {
    inv.conf
        .container_prev_result()?
        .ok_or_else(|| Error::invalid_config("missing prevResult from earlier plugin"))
}

fn addresses(prev: &NetResult) -> Vec<IpNet> {
    prev.ips.iter().map(|ip| ip.address).collect()
}

impl Conf {
    /// What the rules of the container with `ips` depend on.
    fn plan(&self, inv: &Invocation, ips: Vec<IpNet>, bridge: String) -> Plan {
        self.plan_of(&inv.env.container_id, ips, bridge)
    }

    fn plan_of(&self, container_id: &str, ips: Vec<IpNet>, bridge: String) -> Plan {
        Plan {
            container_id: container_id.to_string(),
            addresses: ips,
            admin_chain: self.admin_chain.clone(),
            policy: self.policy,
            bridge,
            zone: self.zone.clone(),
        }
    }

    /// The configured target, else the reference's choice: firewalld when it
    /// owns its name on the system bus, else our rules' detected backend.
    fn target(&self, nf: &dyn Apply) -> CniResult<Target> {
        match self.target {
            Some(t) => Ok(t),
            None if nf.firewalld() => Ok(Target::Firewalld),
            None => Ok(Target::Rules(Choice::Detect.backend(nf)?)),
        }
    }

    /// `op` on the target; on nftables instead when iptables was only
    /// detected and is unusable here (the open policy alone: the isolating
    /// ones need iptables).
    fn on_target(
        &self,
        nf: &dyn Apply,
        target: Target,
        op: &Op,
    ) -> crate::netfilter::Result<Vec<rules::Remembered>> {
        nf.firewall(target, op).or_else(|e| {
            let instead = match target {
                Target::Rules(b) if self.target.is_none() && self.policy == IngressPolicy::Open => {
                    Choice::Detect.instead(nf, b, &e)
                }
                _ => None,
            };
            match instead {
                Some(other) => nf.firewall(Target::Rules(other), op),
                None => Err(e),
            }
        })
    }

    /// What DEL (and GC) cleans: with `backend` set, that backend's work;
    /// unset, whatever detection could have chosen at ADD: firewalld's sources
    /// when it runs, and the rules of each backend usable here.
    fn del_targets(&self, nf: &dyn Apply) -> (bool, Vec<Backend>) {
        match self.target {
            Some(Target::Firewalld) => (true, Vec::new()),
            Some(Target::Rules(b)) => (false, Choice::Configured(b).for_del(nf)),
            None => (nf.firewalld(), Choice::Detect.for_del(nf)),
        }
    }
}

/// The bridge the isolation stages name: the first host interface (no
/// sandbox) of the main plugin's result. The reference takes the first
/// interface whatever it is; a container's interface there carries a name the
/// pod chose (a Multus selection's `interface`), which would become host
/// FORWARD rules that nothing removes.
fn host_bridge(prev: &NetResult, policy: IngressPolicy) -> CniResult<String> {
    let host = prev
        .interfaces
        .iter()
        .find(|i| i.sandbox.is_empty())
        .map(|i| i.name.clone());
    match host {
        Some(name) => Ok(name),
        None if policy == IngressPolicy::Open => Ok(String::new()),
        None => Err(Error::invalid_config(
            "ingressPolicy needs the bridge: prevResult has no host interface (one without a sandbox)",
        )),
    }
}

/// The plans of the stale attachments for one target. Rules that name an
/// address (iptables, zone sources) keep those a live record names; rules that
/// name the container (`by_container`) stay while another attachment of it is
/// recorded.
fn gc_plans(conf: &Conf, split: &Split, by_container: bool) -> Vec<Plan> {
    split
        .stale
        .iter()
        .map(|(_, r)| r)
        .filter(|r| !by_container || !split.container_live(&r.container_id))
        .map(|r| conf.plan_of(&r.container_id, split.not_live(&r.addresses), String::new()))
        .collect()
}

impl Plugin for Firewall {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        add(inv, &Kernel)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        del(inv, &Kernel)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        gc(inv, &Kernel)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        check(inv, &Kernel)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let usable = match conf.target {
            Some(Target::Rules(Backend::Iptables(flavour))) => {
                flavour.usable(crate::netfilter::Family::V4)
            }
            Some(Target::Rules(Backend::Nftables)) => crate::netlink::nfnl::available(),
            Some(Target::Firewalld) => firewalld::running(),
            None => firewalld::running() || Backend::detect().is_ok(),
        };
        if usable {
            Ok(())
        } else {
            Err(Error::new(
                Code::NotAvailable,
                "firewall: its backend is not usable",
            ))
        }
    }
}

fn add(inv: &Invocation, nf: &dyn Apply) -> CniResult<NetResult> {
    let conf = Conf::load(inv)?;
    let prev = prev(inv)?;
    let ips = addresses(&prev);
    if ips.is_empty() {
        return Ok(prev);
    }
    let bridge = host_bridge(&prev, conf.policy)?;
    let target = conf.target(nf)?;
    if target == Target::Rules(Backend::Nftables) && conf.policy != IngressPolicy::Open {
        return Err(Error::invalid_config(POLICY_NEEDS_IPTABLES));
    }
    let dir = records::data_dir(inv, DEFAULT_DATA_DIR)?;
    // An earlier record: a repeated ADD (its rules looked for, first at
    // their remembered handles); an unreadable one counts as earlier.
    let known = match records::read(&dir, inv) {
        Ok(None) => rules::Known {
            fresh: true,
            handles: Vec::new(),
        },
        Ok(Some(r)) => rules::Known {
            fresh: false,
            handles: r.handles,
        },
        Err(_) => rules::Known::default(),
    };
    // Before any rule, so that GC finds what a failed ADD left.
    records::write(&dir, inv, &ips)?;
    let plan = conf.plan(inv, ips, bridge);
    let op = Op::Add {
        plan: plan.clone(),
        known,
    };
    let remembered = conf.on_target(nf, target, &op)?;
    if !remembered.is_empty() {
        records::write_handles(&dir, inv, &plan.addresses, &remembered)?;
    }
    Ok(prev)
}

/// Undoes ADD in each target `Conf::del_targets` names, then drops the
/// attachment's record.
fn del(inv: &Invocation, nf: &dyn Apply) -> CniResult<()> {
    let Some(conf) = del_conf(inv)? else {
        return Ok(());
    };
    let (zone_sources, backends) = conf.del_targets(nf);
    // Only the nftables rules are found without prevResult's addresses.
    let ips = if zone_sources || backends.contains(&Backend::IPTABLES) {
        inv.conf
            .container_prev_result()?
            .map(|prev| addresses(&prev))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let plan = conf.plan(inv, ips, String::new());
    let handles = remembered(inv);
    let op = |recorded| Op::Del {
        plan: plan.clone(),
        handles: handles.clone(),
        recorded,
    };
    if zone_sources {
        nf.firewall(Target::Firewalld, &op(true))?;
    }
    for backend in backends {
        // An unreadable dataDir leaves it unknown: as if recorded (only
        // nftables asks).
        let recorded = backend != Backend::Nftables
            || records::data_dir(inv, DEFAULT_DATA_DIR)
                .map_or(true, |dir| records::exists(&dir, inv));
        nf.firewall(Target::Rules(backend), &op(recorded))?;
    }
    // A dataDir ADD would refuse means ADD recorded nothing.
    if let Ok(dir) = records::data_dir(inv, DEFAULT_DATA_DIR) {
        records::remove(&dir, inv)?;
    }
    Ok(())
}

/// Removes, as DEL does in the same targets, the rules of this network's
/// recorded attachments not in the valid list, then their records.
/// Attachments ADD did not record (the reference's) are left alone.
fn gc(inv: &Invocation, nf: &dyn Apply) -> CniResult<()> {
    let Some(valid) = inv.conf.valid_attachments()? else {
        return Ok(());
    };
    let Some(conf) = del_conf(inv)? else {
        return Ok(());
    };
    let dir = records::data_dir(inv, DEFAULT_DATA_DIR)?;
    let split = Split::read(&dir, "firewall", inv.conf.name(), &valid)?;
    if split.stale.is_empty() {
        return Ok(());
    }
    let (zone_sources, backends) = conf.del_targets(nf);
    if zone_sources {
        let stale = gc_plans(&conf, &split, false);
        nf.firewall(Target::Firewalld, &Op::Gc { stale })?;
    }
    for backend in backends {
        // nftables rules name the container, not the attachment.
        let by_container = backend == Backend::Nftables;
        let stale = gc_plans(&conf, &split, by_container);
        nf.firewall(Target::Rules(backend), &Op::Gc { stale })?;
    }
    split.remove_stale()?;
    Ok(())
}

fn check(inv: &Invocation, nf: &dyn Apply) -> CniResult<()> {
    let conf = Conf::load(inv)?;
    let ips = addresses(&prev(inv)?);
    let op = Op::Check {
        plan: conf.plan(inv, ips, String::new()),
        handles: remembered(inv),
    };
    conf.on_target(nf, conf.target(nf)?, &op)?;
    Ok(())
}

/// The handles ADD remembered (checked before use; none is fine).
fn remembered(inv: &Invocation) -> Vec<rules::Remembered> {
    records::data_dir(inv, DEFAULT_DATA_DIR)
        .ok()
        .and_then(|dir| records::read(&dir, inv).ok().flatten())
        .map(|r| r.handles)
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "firewall_tests.rs"]
mod tests;
