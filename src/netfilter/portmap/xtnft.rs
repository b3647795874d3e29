//! portmap's iptables rules where iptables is the nf_tables flavour: the
//! rules `iptables.rs` writes with `iptables-restore` (the reference's
//! `CNI-HOSTPORT-*` chains and the container's `CNI-DN-<hash>`), as data,
//! written and deleted in one nf_tables batch per family without any process.
//! ADD looks up each shared chain by name and reads the small ones (the mark
//! and masquerade chains, PREROUTING and OUTPUT); CNI-HOSTPORT-DNAT, which
//! holds a rule per container, is never read but to find a repeated ADD's
//! old entries when their handles are not where its batch put them. DEL reads
//! the container's chain and deletes its entries by handle. `conditionsV4`/
//! `conditionsV6` are iptables arguments of the operator's: a plan with any
//! takes the `iptables-restore` path.

use super::iptables::{
    DNAT_CHAIN, MASQ_CHAIN, MASQ_COMMENT, MULTIPORT_MAX, SETMARK_CHAIN, SETMARK_COMMENT,
};
use super::{Plan, Target as Dest};
use crate::netfilter::xtnft::{self, Batch, Match, Proto, Rule, Target};
use crate::netfilter::{Error, Family, Result};
use crate::netlink::nfnl::NfSocket;
use crate::quote::quoted;
use ipnet::IpNet;
use std::collections::BTreeMap;

const TABLE: &str = "nat";

fn proto(name: &str) -> Result<Proto> {
    Proto::parse(name)
        .ok_or_else(|| Error::InvalidConfig(format!("protocol {name}", name = quoted(&name))))
}

fn mark(plan: &Plan) -> (u32, u32) {
    let bit = 1u32 << plan.mark_bit;
    (bit, bit)
}

/// Whether the plan marks for masquerading in the shared chains of its own.
fn own_mark(plan: &Plan) -> bool {
    plan.snat && plan.external_mark_chain.is_none()
}

fn setmark_rule(plan: &Plan) -> Rule {
    let (value, mask) = mark(plan);
    Rule::to(Target::SetXmark { value, mask }).comment(SETMARK_COMMENT)
}

fn masq_rule(plan: &Plan) -> Rule {
    let (value, mask) = mark(plan);
    Rule::to(Target::Masquerade).with(Match::Mark { value, mask })
}

fn masq_jump() -> Rule {
    Rule::to(Target::Jump(MASQ_CHAIN.into())).comment(MASQ_COMMENT)
}

fn dnat_jump() -> Rule {
    Rule::to(Target::Jump(DNAT_CHAIN.into())).with(Match::DstLocal)
}

/// The container chain's rules, in the reference's order (see
/// `iptables::dnat_rules`).
pub fn dnat_rules(plan: &Plan, family: Family, dest: &Dest) -> Result<Vec<Rule>> {
    let mut rules = Vec::new();
    let source = if plan.masq_all {
        let any: IpNet = match family {
            Family::V4 => IpNet::V4(Default::default()),
            Family::V6 => IpNet::V6(Default::default()),
        };
        any
    } else {
        dest.address
    };
    let mark_target = Target::Jump(plan.mark_target());
    for m in plan.mappings_for(family) {
        let mut base = Rule::to(Target::Accept)
            .proto(proto(&m.protocol)?)
            .with(Match::Dport(m.host_port));
        if let Some(ip) = m.host_ip.filter(|ip| !ip.is_unspecified()) {
            base = base.dst(IpNet::from(ip), false);
        }
        if plan.snat {
            let mut hairpin = base.clone().src(source, false);
            hairpin.target = mark_target.clone();
            rules.push(hairpin);
            if family == Family::V4 && !plan.masq_all {
                let localhost = IpNet::from(std::net::IpAddr::from([127, 0, 0, 1]));
                let mut local = base.clone().src(localhost, false);
                local.target = mark_target.clone();
                rules.push(local);
            }
        }
        let mut dnat = base;
        dnat.target = Target::Dnat {
            addr: dest.address.addr(),
            port: m.container_port,
        };
        rules.push(dnat);
    }
    Ok(rules)
}

/// The jumps from CNI-HOSTPORT-DNAT: per protocol (sorted), at most 15 ports
/// each, the ports of every mapping (see `iptables::entry_rules`).
pub fn entry_rules(plan: &Plan) -> Result<Vec<Rule>> {
    let mut by_proto: BTreeMap<&str, Vec<u16>> = BTreeMap::new();
    for m in &plan.mappings {
        by_proto
            .entry(m.protocol.as_str())
            .or_default()
            .push(m.host_port);
    }
    let mut rules = Vec::new();
    for (name, ports) in by_proto {
        for chunk in ports.chunks(MULTIPORT_MAX) {
            rules.push(
                Rule::to(Target::Jump(plan.dnat_chain()))
                    .proto(proto(name)?)
                    .comment(&plan.dnat_comment())
                    .with(Match::Multiport(chunk.to_vec())),
            );
        }
    }
    Ok(rules)
}

/// What an ADD found by name before writing.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// PREROUTING, OUTPUT, POSTROUTING exist.
    pub builtins: [bool; 3],
    /// PREROUTING, OUTPUT jump to CNI-HOSTPORT-DNAT.
    pub dnat_jumps: [bool; 2],
    pub dnat_chain: bool,
    pub setmark_chain: bool,
    pub setmark_rule: bool,
    pub masq_chain: bool,
    pub masq_rule: bool,
    /// Something (POSTROUTING) jumps to CNI-HOSTPORT-MASQ.
    pub masq_jumped: bool,
    /// The container's chain exists (a repeated ADD): the handles of the
    /// CNI-HOSTPORT-DNAT rules jumping to it.
    pub container: Option<Vec<u64>>,
}

/// The ADD batch of one family: the shared chains and their rules and jumps
/// made where missing (as `iptables::ensure_shared`), then the container's
/// chain written afresh and its entry rules appended.
pub fn add_batch(plan: &Plan, family: Family, dest: &Dest, found: &Found) -> Result<Batch> {
    let mut batch = Batch::new(family, TABLE);
    if own_mark(plan) {
        if !found.setmark_chain {
            batch.new_chain(SETMARK_CHAIN);
        }
        if !found.setmark_rule {
            batch.append(SETMARK_CHAIN, &setmark_rule(plan))?;
        }
        if !found.masq_chain {
            batch.new_chain(MASQ_CHAIN);
        }
        if !found.masq_rule {
            batch.append(MASQ_CHAIN, &masq_rule(plan))?;
        }
        if !found.masq_jumped {
            if !found.builtins[2] {
                batch.builtin_chain("POSTROUTING")?;
            }
            batch.insert_first("POSTROUTING", &masq_jump())?;
        }
    }
    if !found.dnat_chain {
        batch.new_chain(DNAT_CHAIN);
    }
    for (i, chain) in ["PREROUTING", "OUTPUT"].into_iter().enumerate() {
        if !found.dnat_jumps[i] {
            if !found.builtins[i] {
                batch.builtin_chain(chain)?;
            }
            batch.append(chain, &dnat_jump())?;
        }
    }
    let chain = plan.dnat_chain();
    match &found.container {
        // Rewritten whole: a repeated ADD replaces, never duplicates.
        Some(entries) => {
            for handle in entries {
                batch.delete_rule(DNAT_CHAIN, *handle);
            }
            batch.flush(&chain);
        }
        None => batch.new_chain(&chain),
    }
    for rule in dnat_rules(plan, family, dest)? {
        batch.append(&chain, &rule)?;
    }
    for rule in entry_rules(plan)? {
        batch.append(DNAT_CHAIN, &rule)?;
    }
    Ok(batch)
}

/// The CNI-HOSTPORT-DNAT rules jumping to the container's chain, when it exists.
fn container_entries(sock: &mut NfSocket, family: Family, plan: &Plan) -> Result<Option<Vec<u64>>> {
    let chain = plan.dnat_chain();
    let Some(used) = xtnft::chain_use(sock, family, TABLE, &chain)? else {
        return Ok(None);
    };
    let own = xtnft::chain_rules(sock, family, TABLE, &chain)?;
    let count = (used as usize).saturating_sub(own.len());
    xtnft::jumps_into(sock, family, TABLE, (DNAT_CHAIN, &chain), &own, count).map(Some)
}

/// Whether `chain` exists and holds `rule` (as ADD writes it).
fn holds(sock: &mut NfSocket, family: Family, chain: &str, rule: &Rule) -> Result<(bool, bool)> {
    if !xtnft::exists(sock, family, TABLE, chain)? {
        return Ok((false, false));
    }
    let rules = xtnft::chain_rules(sock, family, TABLE, chain)?;
    Ok((true, rules.iter().any(|r| r.is(rule, family))))
}

/// ADD in one family for one container address.
pub fn add(plan: &Plan, family: Family, dest: &Dest) -> Result<()> {
    let mut sock = xtnft::open()?;
    let s = &mut sock;
    let mut found = Found {
        dnat_chain: xtnft::exists(s, family, TABLE, DNAT_CHAIN)?,
        container: container_entries(s, family, plan)?,
        ..Found::default()
    };
    for (i, chain) in ["PREROUTING", "OUTPUT", "POSTROUTING"]
        .into_iter()
        .enumerate()
    {
        found.builtins[i] = xtnft::exists(s, family, TABLE, chain)?;
    }
    if found.dnat_chain {
        for (i, chain) in ["PREROUTING", "OUTPUT"].into_iter().enumerate() {
            found.dnat_jumps[i] = found.builtins[i]
                && xtnft::chain_rules(s, family, TABLE, chain)?
                    .iter()
                    .any(|r| r.jumps_to(DNAT_CHAIN));
        }
    }
    if own_mark(plan) {
        (found.setmark_chain, found.setmark_rule) =
            holds(s, family, SETMARK_CHAIN, &setmark_rule(plan))?;
        (found.masq_chain, found.masq_rule) = holds(s, family, MASQ_CHAIN, &masq_rule(plan))?;
        // Only POSTROUTING jumps to the masquerade chain, and POSTROUTING
        // holds a rule per ipMasq container: the use count answers.
        if let Some(used) = xtnft::chain_use(s, family, TABLE, MASQ_CHAIN)? {
            let own = xtnft::chain_rules(s, family, TABLE, MASQ_CHAIN)?.len();
            found.masq_jumped = used as usize > own;
        }
    }
    add_batch(plan, family, dest, &found)?.commit(&mut sock)
}

/// The DEL batch of one family: the entries (by handle), then the
/// container's chain flushed and deleted.
pub fn del_batch(plan: &Plan, family: Family, entries: &[u64]) -> Batch {
    let chain = plan.dnat_chain();
    let mut batch = Batch::new(family, TABLE);
    for handle in entries {
        batch.delete_rule(DNAT_CHAIN, *handle);
    }
    batch.flush(&chain);
    batch.delete_chain(&chain);
    batch
}

/// DEL in one family, by the chain's name (no mappings needed): nothing to
/// do when it does not exist. A chain of old reference versions
/// (`CNI-SN-<hash>`) is left to the `iptables-restore` path.
pub fn del(plan: &Plan, family: Family) -> Result<()> {
    let mut sock = xtnft::open()?;
    if xtnft::exists(&mut sock, family, TABLE, &plan.legacy_snat_chain())? {
        return Err(Error::InvalidConfig(
            "an old reference version's SNAT chain: read the table".into(),
        ));
    }
    let Some(entries) = container_entries(&mut sock, family, plan)? else {
        return Ok(());
    };
    del_batch(plan, family, &entries).commit(&mut sock)
}

fn mismatch(detail: String) -> Error {
    Error::Mismatch {
        owner: "portmap",
        detail,
    }
}

/// CHECK in one family for one container address, reading only the
/// container's own objects: its chain by name (a DNAT per mapping) and its
/// entries in CNI-HOSTPORT-DNAT by the chain's use count and handle (see
/// `xtnft::jumps_into`), never CNI-HOSTPORT-DNAT itself when they are where
/// ADD puts them. The verdicts of `iptables::check`.
pub fn check(plan: &Plan, family: Family, dest: &Dest) -> Result<()> {
    let chain = plan.dnat_chain();
    let mut sock = xtnft::open()?;
    let s = &mut sock;
    let missing = || mismatch(format!("chain {chain} is missing"));
    let Some(used) = xtnft::chain_use(s, family, TABLE, &chain)? else {
        return Err(missing());
    };
    let own = xtnft::chain_rules(s, family, TABLE, &chain)?;
    let count = (used as usize).saturating_sub(own.len());
    if xtnft::jump_rules_into(s, family, TABLE, (DNAT_CHAIN, &chain), &own, count)?.is_empty() {
        return Err(missing());
    }
    let dnats = dnat_rules(plan, family, dest)?;
    let dnats = dnats
        .iter()
        .filter(|r| matches!(r.target, Target::Dnat { .. }));
    for (m, rule) in plan.mappings_for(family).into_iter().zip(dnats) {
        if !own.iter().any(|r| r.is(rule, family)) {
            let to = super::iptables::to_destination(dest.address.addr(), m.container_port);
            return Err(mismatch(format!(
                "no rule for {} port {} -> {to}",
                m.protocol, m.host_port
            )));
        }
    }
    Ok(())
}
