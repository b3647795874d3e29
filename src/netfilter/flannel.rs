//! flanneld's rules in iptables mode, with flannel's chains, comments and
//! order (`pkg/trafficmngr/iptables/iptables.go` masqRules, masqIP6Rules,
//! forwardRules), so a node switched between Go flanneld and ours keeps
//! one set:
//!
//! - nat `POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG`,
//!   the chain: no NAT for kube-proxy's mark (0x4000, `pkg/trafficmngr/trafficmngr.go`
//!   KubeProxyMark), nor within the network, nor towards this node's pods
//!   from outside; MASQUERADE (`--random-fully` where iptables has it) from
//!   the network out (not multicast) and from elsewhere into it;
//! - filter `FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD`,
//!   the chain accepting traffic from and to the network.
//!
//! Applied as flannel's bootstrap does, but whole: per family one
//! `iptables-restore` that declares (creates or flushes) each chain and
//! refills it, keeps exactly one jump to it, and removes the part not
//! wanted. The builders are pure (plan + saved tables → batches).

use super::iptables::{Batch, Flavour, Saved, jumps, quote};
use super::{Error, Family, Result, each_parallel, lock};
use ipnet::IpNet;

pub const MASQ_CHAIN: &str = "FLANNEL-POSTRTG";
pub const FORWARD_CHAIN: &str = "FLANNEL-FWD";
const MASQ_COMMENT: &str = "flanneld masq";
const FORWARD_COMMENT: &str = "flanneld forward";
const KUBE_PROXY_MARK: &str = "0x4000/0x4000";
/// flanneld's rules are written with the tools PATH names, as flannel's.
const TOOLS: Flavour = Flavour::Default;

/// One family's rules: flannel's network and this node's subnet of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub network: IpNet,
    pub subnet: IpNet,
    /// `--ip-masq`: the nat chain; without it, removed if there.
    pub masq: bool,
    /// `--iptables-forward-rules` (flannel's default: on); without it, removed if there.
    pub forward: bool,
    /// MASQUERADE with `--random-fully` (see [`random_fully_supported`]).
    pub random_fully: bool,
}

impl Plan {
    /// The plan's family; an error when network and subnet differ in it.
    pub fn family(&self) -> Result<Family> {
        let family = Family::of(self.network.addr());
        if Family::of(self.subnet.addr()) != family {
            return Err(Error::InvalidConfig(format!(
                "flannel rules: network {} and subnet {} are of different families",
                self.network, self.subnet
            )));
        }
        Ok(family)
    }
}

fn args(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// The rules of FLANNEL-POSTRTG, in flannel's order.
pub fn masq_rules(plan: &Plan) -> Result<Vec<Vec<String>>> {
    let multicast = match plan.family()? {
        Family::V4 => "224.0.0.0/4",
        Family::V6 => "ff00::/8",
    };
    let (cluster, pod) = (
        plan.network.trunc().to_string(),
        plan.subnet.trunc().to_string(),
    );
    let (cluster, pod) = (cluster.as_str(), pod.as_str());
    let comment = ["-m", "comment", "--comment", MASQ_COMMENT];
    let masquerade: &[&str] = if plan.random_fully {
        &["-j", "MASQUERADE", "--random-fully"]
    } else {
        &["-j", "MASQUERADE"]
    };
    let rule = |matches: &[&str], target: &[&str]| args(&[matches, &comment, target].concat());
    Ok(vec![
        rule(
            &["-m", "mark", "--mark", KUBE_PROXY_MARK],
            &["-j", "RETURN"],
        ),
        rule(&["-s", pod, "-d", cluster], &["-j", "RETURN"]),
        rule(&["-s", cluster, "-d", pod], &["-j", "RETURN"]),
        rule(&["!", "-s", cluster, "-d", pod], &["-j", "RETURN"]),
        rule(&["-s", cluster, "!", "-d", multicast], masquerade),
        rule(&["!", "-s", cluster, "-d", cluster], masquerade),
    ])
}

/// The rules of FLANNEL-FWD.
pub fn forward_rules(plan: &Plan) -> Result<Vec<Vec<String>>> {
    plan.family()?;
    let network = plan.network.trunc().to_string();
    let comment = ["-m", "comment", "--comment", FORWARD_COMMENT];
    Ok(["-s", "-d"]
        .iter()
        .map(|dir| args(&[&[*dir, network.as_str()][..], &comment, &["-j", "ACCEPT"]].concat()))
        .collect())
}

/// The jump from a built-in chain into ours.
fn jump(chain: &str, comment: &str) -> Vec<String> {
    args(&["-m", "comment", "--comment", comment, "-j", chain])
}

/// One of our chains in a table: `parent` jumps to `chain` with `comment`.
struct Part {
    table: &'static str,
    parent: &'static str,
    chain: &'static str,
    comment: &'static str,
}

const MASQ: Part = Part {
    table: "nat",
    parent: "POSTROUTING",
    chain: MASQ_CHAIN,
    comment: MASQ_COMMENT,
};

const FORWARD: Part = Part {
    table: "filter",
    parent: "FORWARD",
    chain: FORWARD_CHAIN,
    comment: FORWARD_COMMENT,
};

impl Part {
    /// The chain declared (created, or flushed) and filled with `rules`, and
    /// exactly one jump to it: the first saved one that is ours as iptables-save
    /// prints it is kept (so its place and counters stay), other jumps to the
    /// chain go, and it is appended when there was none.
    fn ensure(&self, batch: &mut Batch, saved: &Saved, rules: &[Vec<String>]) {
        batch.reset_chain(self.chain);
        for rule in rules {
            batch.append(self.chain, rule);
        }
        let ours = jump(self.chain, self.comment);
        let printed: Vec<String> = ours.iter().map(|a| quote(a)).collect();
        let printed = printed.join(" ");
        let mut kept = false;
        for spec in saved.rules_in(self.parent, |s| jumps(s, self.chain)) {
            if !kept && spec == printed {
                kept = true;
            } else {
                batch.delete_saved(self.parent, spec);
            }
        }
        if !kept {
            batch.append(self.parent, &ours);
        }
    }

    /// Every jump to the chain deleted, then the chain, if it exists.
    fn remove(&self, batch: &mut Batch, saved: &Saved) {
        for spec in saved.rules_in(self.parent, |s| jumps(s, self.chain)) {
            batch.delete_saved(self.parent, spec);
        }
        if saved.has_chain(self.chain) {
            batch.flush_and_delete_chain(self.chain);
        }
    }
}

/// The batches (nat, filter) that make one family's rules exactly the plan's.
pub fn ensure_batches(plan: &Plan, nat: &Saved, filter: &Saved) -> Result<[Batch; 2]> {
    let family = plan.family()?;
    let mut masq = Batch::new(family, MASQ.table);
    if plan.masq {
        MASQ.ensure(&mut masq, nat, &masq_rules(plan)?);
    } else {
        MASQ.remove(&mut masq, nat);
    }
    let mut forward = Batch::new(family, FORWARD.table);
    if plan.forward {
        FORWARD.ensure(&mut forward, filter, &forward_rules(plan)?);
    } else {
        FORWARD.remove(&mut forward, filter);
    }
    Ok([masq, forward])
}

/// The batches (nat, filter) that remove all of flanneld's rules of a family.
pub fn remove_batches(family: Family, nat: &Saved, filter: &Saved) -> [Batch; 2] {
    let mut masq = Batch::new(family, MASQ.table);
    MASQ.remove(&mut masq, nat);
    let mut forward = Batch::new(family, FORWARD.table);
    FORWARD.remove(&mut forward, filter);
    [masq, forward]
}

/// Makes each plan's family hold exactly its rules: per family two
/// `iptables-save` and one `iptables-restore`, families in parallel, under
/// the netfilter lock (POSTROUTING and FORWARD are shared with the plugins).
pub fn ensure(plans: &[Plan]) -> Result<()> {
    let _lock = lock()?;
    each_parallel(plans, |plan| {
        let family = plan.family()?;
        let nat = TOOLS.save(family, "nat")?;
        let filter = TOOLS.save(family, "filter")?;
        TOOLS.apply_all(family, &ensure_batches(plan, &nat, &filter)?)
    })
}

/// Removes flanneld's rules from each family (a family without the tools,
/// or a table, has none).
pub fn remove(families: &[Family]) -> Result<()> {
    let _lock = lock()?;
    each_parallel(families, |&family| {
        let nat = TOOLS.save_existing(family, "nat")?.unwrap_or_default();
        let filter = TOOLS.save_existing(family, "filter")?.unwrap_or_default();
        TOOLS.apply_all(family, &remove_batches(family, &nat, &filter))
    })
}

/// Whether `iptables --version` output names a version with MASQUERADE's
/// `--random-fully` (1.6.2 and later, as go-iptables' HasRandomFully decides).
pub fn random_fully_supported(version_output: &str) -> bool {
    let Some(v) = version_output
        .split_whitespace()
        .find_map(|w| w.strip_prefix('v'))
    else {
        return false;
    };
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    match (
        parts.next().flatten(),
        parts.next().flatten(),
        parts.next().flatten(),
    ) {
        (Some(major), Some(minor), Some(patch)) => (major, minor, patch) >= (1, 6, 2),
        _ => false,
    }
}

/// Whether the family's iptables takes `--random-fully` (runs `iptables --version`).
pub fn has_random_fully(family: Family) -> bool {
    std::process::Command::new(TOOLS.command(family))
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| random_fully_supported(&String::from_utf8_lossy(&o.stdout)))
}

#[cfg(test)]
#[path = "flannel_tests.rs"]
mod tests;
