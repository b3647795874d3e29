//! portmap's iptables form, in the reference's chains, order, comments and
//! hashes: shared `CNI-HOSTPORT-*` chains created once, one `CNI-DN-<hash>`
//! chain per container, all of one ADD in one restore per family.

use super::{Plan, Target};
use crate::netfilter::iptables::{Batch, Flavour, Saved, comment_container, jumps};
use crate::netfilter::{Error, Family, Result, chain_name, each_parallel, go_quote, nft, xtnft};
use std::collections::BTreeMap;
use std::net::IpAddr;

pub const SETMARK_CHAIN: &str = "CNI-HOSTPORT-SETMARK";
pub const MASQ_CHAIN: &str = "CNI-HOSTPORT-MASQ";
pub const DNAT_CHAIN: &str = "CNI-HOSTPORT-DNAT";
const SNAT_CHAIN: &str = "CNI-HOSTPORT-SNAT";
pub(super) const SETMARK_COMMENT: &str = "CNI portfwd masquerade mark";
pub(super) const MASQ_COMMENT: &str = "CNI portfwd requiring masquerade";
/// multiport takes at most 15 ports per rule.
pub(super) const MULTIPORT_MAX: usize = 15;

// The plan's chain names, mark and comment: iptables' alone.
impl Plan {
    pub fn dnat_chain(&self) -> String {
        chain_name("DN-", &self.network, &self.container_id)
    }

    pub(super) fn legacy_snat_chain(&self) -> String {
        chain_name("SN-", &self.network, &self.container_id)
    }

    fn mark(&self) -> String {
        let bit = 1u32 << self.mark_bit;
        format!("{bit:#x}/{bit:#x}")
    }

    pub(super) fn mark_target(&self) -> String {
        self.external_mark_chain
            .clone()
            .unwrap_or_else(|| SETMARK_CHAIN.to_string())
    }

    /// `dnat name: "<net>" id: "<cid>"`, cut as the reference cuts long comments.
    pub(super) fn dnat_comment(&self) -> String {
        let c = format!(
            "dnat name: {} id: {}",
            go_quote(&self.network),
            go_quote(&self.container_id)
        );
        if c.len() > 255 {
            let mut cut = 253;
            while !c.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}...", &c[..cut])
        } else {
            c
        }
    }
}

fn s(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_string()).collect()
}

pub(super) fn to_destination(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

/// The per-container chain's rules, in the reference's order.
fn dnat_rules(plan: &Plan, family: Family, target: &Target) -> Vec<Vec<String>> {
    let mut rules = Vec::new();
    let source = if plan.masq_all {
        match family {
            Family::V4 => "0.0.0.0/0".to_string(),
            Family::V6 => "::/0".to_string(),
        }
    } else {
        target.address.to_string()
    };
    for m in plan.mappings_for(family) {
        let mut base = s(&["-p", &m.protocol, "--dport", &m.host_port.to_string()]);
        if let Some(ip) = m.host_ip.filter(|ip| !ip.is_unspecified()) {
            base.extend(s(&["-d", &ip.to_string()]));
        }
        if plan.snat {
            let mut hairpin = base.clone();
            hairpin.extend(s(&["-s", &source, "-j", &plan.mark_target()]));
            rules.push(hairpin);
            if family == Family::V4 && !plan.masq_all {
                let mut localhost = base.clone();
                localhost.extend(s(&["-s", "127.0.0.1", "-j", &plan.mark_target()]));
                rules.push(localhost);
            }
        }
        let mut dnat = base;
        dnat.extend(s(&[
            "-j",
            "DNAT",
            "--to-destination",
            &to_destination(target.address.addr(), m.container_port),
        ]));
        rules.push(dnat);
    }
    rules
}

/// Jumps from CNI-HOSTPORT-DNAT: per protocol (sorted), ≤ 15 ports each. As
/// the reference, the ports are those of every mapping, a host-IP one of the
/// other family included (the container chain has no rule for it).
fn entry_rules(plan: &Plan, family: Family) -> Vec<Vec<String>> {
    let mut by_proto: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for m in &plan.mappings {
        by_proto
            .entry(m.protocol.as_str())
            .or_default()
            .push(m.host_port.to_string());
    }
    let mut rules = Vec::new();
    for (proto, ports) in by_proto {
        for chunk in ports.chunks(MULTIPORT_MAX) {
            let mut r = s(&[
                "-m",
                "comment",
                "--comment",
                &plan.dnat_comment(),
                "-m",
                "multiport",
                "-p",
                proto,
                "--destination-ports",
                &chunk.join(","),
            ]);
            r.extend(plan.conditions(family).iter().cloned());
            r.extend(s(&["-j", &plan.dnat_chain()]));
            rules.push(r);
        }
    }
    rules
}

/// The shared chains and their entry points, created when missing.
fn ensure_shared(batch: &mut Batch, saved: &mut Saved, plan: &Plan) {
    if plan.snat && plan.external_mark_chain.is_none() {
        let mark = plan.mark();
        batch.ensure_chain(saved, SETMARK_CHAIN);
        if saved
            .rules_in(SETMARK_CHAIN, |r| r.contains(&mark))
            .next()
            .is_none()
        {
            batch.append(
                SETMARK_CHAIN,
                &s(&[
                    "-m",
                    "comment",
                    "--comment",
                    SETMARK_COMMENT,
                    "-j",
                    "MARK",
                    "--set-xmark",
                    &mark,
                ]),
            );
        }
        batch.ensure_chain(saved, MASQ_CHAIN);
        if saved
            .rules_in(MASQ_CHAIN, |r| r.contains(&mark))
            .next()
            .is_none()
        {
            batch.append(
                MASQ_CHAIN,
                &s(&["-m", "mark", "--mark", &mark, "-j", "MASQUERADE"]),
            );
        }
        if !saved.jumps_to("POSTROUTING", MASQ_CHAIN) {
            batch.insert(
                "POSTROUTING",
                1,
                &s(&["-m", "comment", "--comment", MASQ_COMMENT, "-j", MASQ_CHAIN]),
            );
        }
    }
    batch.ensure_chain(saved, DNAT_CHAIN);
    for chain in ["PREROUTING", "OUTPUT"] {
        if !saved.jumps_to(chain, DNAT_CHAIN) {
            batch.append(
                chain,
                &s(&["-m", "addrtype", "--dst-type", "LOCAL", "-j", DNAT_CHAIN]),
            );
        }
    }
}

/// What nf_tables netlink says of the shared chains, so that an ADD can skip
/// `iptables-save` (one process, O(table) text) in the two common cases.
enum SharedState {
    /// Shared chains and jumps in place, the container's chain absent: append.
    Ready,
    /// None of the shared chains nor the container's exists: create them all.
    Fresh,
    /// Anything else, or iptables-legacy, or no answer: read the table.
    Unknown,
}

fn shared_state(flavour: Flavour, plan: &Plan, family: Family) -> SharedState {
    if !flavour.is_nft_based(family) {
        return SharedState::Unknown;
    }
    let f = nft::nfproto(family);
    let Ok(mut sock) = nft::open() else {
        return SharedState::Unknown;
    };
    let chain = plan.dnat_chain();
    // Looked up by name: a dump of every chain of nat grows with the containers.
    let mut present = Vec::new();
    for c in [DNAT_CHAIN, SETMARK_CHAIN, MASQ_CHAIN, chain.as_str()] {
        match nft::has_chain(&mut sock, f, "nat", c) {
            Ok(true) => present.push(c),
            Ok(false) => {}
            Err(_) => return SharedState::Unknown,
        }
    }
    let has = |c: &str| present.contains(&c);
    if present.is_empty() {
        return SharedState::Fresh;
    }
    // Only POSTROUTING jumps to the masquerade chain, and POSTROUTING holds a
    // rule per ipMasq container: the chain's use count answers without it.
    let masq_jumped = has(MASQ_CHAIN)
        && nft::jumps_to(&mut sock, f, "nat", MASQ_CHAIN).is_ok_and(|n| n.is_some_and(|n| n > 0));
    let masq_ready =
        !plan.snat || plan.external_mark_chain.is_some() || (has(SETMARK_CHAIN) && masq_jumped);
    let mut jumps = |chain: &str, target: &str| {
        nft::rules(&mut sock, f, "nat", chain)
            .is_ok_and(|rules| rules.iter().any(|r| r.jumps.iter().any(|j| j == target)))
    };
    let ready = has(DNAT_CHAIN)
        && !has(&chain)
        && masq_ready
        && jumps("PREROUTING", DNAT_CHAIN)
        && jumps("OUTPUT", DNAT_CHAIN);
    if ready {
        SharedState::Ready
    } else {
        SharedState::Unknown
    }
}

/// The ADD batch of one family when nf_tables netlink showed the state
/// (`fresh`: nothing exists yet; else the shared chains are ready): no save.
pub fn known_add_batch(plan: &Plan, family: Family, target: &Target, fresh: bool) -> Batch {
    let mut batch = Batch::new(family, "nat");
    if fresh {
        // `-N` fails if another process made a chain meanwhile.
        ensure_shared(&mut batch, &mut Saved::default(), plan);
    }
    write_container_rules(&mut batch, plan, family, target);
    batch
}

/// The ADD batch of one family from its saved `nat` table.
pub fn add_batch(plan: &Plan, family: Family, target: &Target, saved: &Saved) -> Batch {
    let mut saved = saved.clone();
    let mut batch = Batch::new(family, "nat");
    ensure_shared(&mut batch, &mut saved, plan);
    let chain = plan.dnat_chain();
    // Rewritten whole: a repeated ADD replaces, never duplicates.
    for spec in saved.rules_in(DNAT_CHAIN, |r| jumps(r, &chain)) {
        batch.delete_saved(DNAT_CHAIN, spec);
    }
    write_container_rules(&mut batch, plan, family, target);
    batch
}

/// The container's DNAT chain written afresh, and its entry rules.
fn write_container_rules(batch: &mut Batch, plan: &Plan, family: Family, target: &Target) {
    let chain = plan.dnat_chain();
    batch.reset_chain(&chain);
    for rule in dnat_rules(plan, family, target) {
        batch.append(&chain, &rule);
    }
    for rule in entry_rules(plan, family) {
        batch.append(DNAT_CHAIN, &rule);
    }
}

/// Adds (or rewrites) the container's mappings for each family it has an
/// address of, with the flavour's tools. The caller holds the lock.
pub fn add(flavour: Flavour, plan: &Plan) -> Result<()> {
    let add_one = |target: &Target| -> Result<()> {
        let family = Family::of(target.address.addr());
        if plan.mappings_for(family).is_empty() {
            return Ok(());
        }
        // iptables-nft: the same rules over netlink, no process (on failure
        // nothing was changed, and the restore below reports why).
        if xtnft::applies(flavour, family)
            && plan.conditions(family).is_empty()
            && super::xtnft::add(plan, family, target).is_ok()
        {
            return Ok(());
        }
        let fresh = match shared_state(flavour, plan, family) {
            SharedState::Ready => Some(false),
            SharedState::Fresh => Some(true),
            SharedState::Unknown => None,
        };
        // The restore is atomic: if the state changed meanwhile, fall back.
        if let Some(fresh) = fresh
            && flavour
                .apply(&known_add_batch(plan, family, target, fresh))
                .is_ok()
        {
            return Ok(());
        }
        let saved = flavour.save(family, "nat")?;
        flavour.apply(&add_batch(plan, family, target, &saved))
    };
    // Two addresses of one family write the same chain: one after the other.
    let targets = &plan.targets;
    let families: Vec<Family> = targets
        .iter()
        .map(|t| Family::of(t.address.addr()))
        .collect();
    let distinct = (0..families.len()).all(|i| !families[..i].contains(&families[i]));
    if distinct {
        each_parallel(targets, add_one)
    } else {
        targets.iter().try_for_each(add_one)
    }
}

/// The removal of one container's rules from a saved table.
fn teardown_batch(
    saved: &Saved,
    family: Family,
    dnat_chain: &str,
    snat_chain: Option<&str>,
) -> Batch {
    let mut batch = Batch::new(family, "nat");
    for spec in saved.rules_in(DNAT_CHAIN, |r| jumps(r, dnat_chain)) {
        batch.delete_saved(DNAT_CHAIN, spec);
    }
    if saved.has_chain(dnat_chain) {
        batch.flush_and_delete_chain(dnat_chain);
    }
    // Chains of old reference versions.
    let Some(snat_chain) = snat_chain else {
        return batch;
    };
    for spec in saved.rules_in(SNAT_CHAIN, |r| jumps(r, snat_chain)) {
        batch.delete_saved(SNAT_CHAIN, spec);
    }
    if saved.has_chain(snat_chain) {
        batch.flush_and_delete_chain(snat_chain);
    }
    batch
}

/// The `CNI-DN-` chain a saved entry rule jumps to when its comment is
/// `prefix` (the network's) and an ID cut short (`dnat_comment`).
fn cut_comment_target(spec: &str, prefix: &str) -> Option<String> {
    let printed = crate::netfilter::iptables::quote(prefix);
    let start = spec.find(printed.trim_end_matches('"'))? + printed.len() - 1;
    let rest = spec[start..].strip_prefix("\\\"")?;
    let body = &rest[..rest.find('"')?];
    // IDs hold no quote or backslash: a whole one ends in `\"`, a cut one does
    // not (iptables-nft cuts the comment further, to 255 bytes).
    let cut = !body.contains('\\');
    let words: Vec<&str> = spec.split_whitespace().collect();
    let target = words.windows(2).find(|w| w[0] == "-j").map(|w| w[1])?;
    (cut && target.starts_with("CNI-DN-")).then(|| target.to_string())
}

/// What DEL knows of one family's nat table without `iptables-save`.
enum Known {
    /// nf_tables netlink shows neither of the container's chains: nothing to do.
    Absent,
    /// It shows the container's chain (no legacy SNAT chain) and as many entry
    /// jumps to it as this plan's ADD writes: each entry deleted by that spec.
    Quick(Batch),
    /// iptables-legacy, no answer, or anything else: read the table.
    Unknown,
}

fn known(flavour: Flavour, plan: &Plan, family: Family) -> Known {
    if !flavour.is_nft_based(family) {
        return Known::Unknown;
    }
    let f = nft::nfproto(family);
    let Ok(mut sock) = nft::open() else {
        return Known::Unknown;
    };
    let (chain, legacy) = (plan.dnat_chain(), plan.legacy_snat_chain());
    let (Ok(used), Ok(has_legacy)) = (
        nft::jumps_to(&mut sock, f, "nat", &chain),
        nft::has_chain(&mut sock, f, "nat", &legacy),
    ) else {
        return Known::Unknown;
    };
    // Only the entry rules in CNI-HOSTPORT-DNAT jump to the container's
    // chain: its use count says how many there are without dumping that chain
    // (two rules per container).
    match (used, has_legacy) {
        (None, false) => return Known::Absent,
        (Some(used), false) if used as usize == entry_rules(plan, family).len() => {}
        _ => return Known::Unknown,
    }
    Known::Quick(known_del_batch(plan, family))
}

/// The DEL batch of one family when nf_tables netlink showed the container's
/// chain and as many entry jumps as this plan's ADD writes: each entry
/// deleted by its spec (the restore fails, and the table is read, if one differs).
pub fn known_del_batch(plan: &Plan, family: Family) -> Batch {
    let mut batch = Batch::new(family, "nat");
    for rule in &entry_rules(plan, family) {
        batch.delete(DNAT_CHAIN, rule);
    }
    batch.flush_and_delete_chain(&plan.dnat_chain());
    batch
}

/// The DEL batch of one family from its saved `nat` table.
pub fn del_batch(plan: &Plan, family: Family, saved: &Saved) -> Batch {
    teardown_batch(
        saved,
        family,
        &plan.dnat_chain(),
        Some(&plan.legacy_snat_chain()),
    )
}

/// Removes the container's rules in the plan's families, found by name (no
/// mappings needed). The shared chains stay (see `gc`). The caller holds the lock.
pub fn del(flavour: Flavour, plan: &Plan) -> Result<()> {
    each_parallel(&plan.del_families(), |&family| {
        if xtnft::applies(flavour, family) && super::xtnft::del(plan, family).is_ok() {
            return Ok(());
        }
        match known(flavour, plan, family) {
            Known::Absent => return Ok(()),
            // The restore is atomic: a spec that differs fails it, and the table is read.
            Known::Quick(batch) if flavour.apply(&batch).is_ok() => return Ok(()),
            Known::Quick(_) | Known::Unknown => {}
        }
        let Some(saved) = flavour.save_existing(family, "nat")? else {
            return Ok(());
        };
        flavour.apply(&del_batch(plan, family, &saved))
    })
}

/// CHECK: the container chain holds a DNAT per mapping and is jumped to.
/// With iptables-nft, over netlink and reading only the container's own
/// objects; the table is saved only when netlink did not answer.
pub fn check(flavour: Flavour, plan: &Plan) -> Result<()> {
    for target in &plan.targets {
        let family = Family::of(target.address.addr());
        if plan.mappings_for(family).is_empty() {
            continue;
        }
        if xtnft::applies(flavour, family) {
            match super::xtnft::check(plan, family, target) {
                Ok(()) => continue,
                Err(e @ Error::Mismatch { .. }) => return Err(e),
                Err(_) => {}
            }
        }
        let saved = flavour.save(family, "nat")?;
        let chain = plan.dnat_chain();
        if !saved.has_chain(&chain) || !saved.jumps_to(DNAT_CHAIN, &chain) {
            return Err(Error::Mismatch {
                owner: "portmap",
                detail: format!("chain {chain} is missing"),
            });
        }
        for m in plan.mappings_for(family) {
            let to = to_destination(target.address.addr(), m.container_port);
            let port = m.host_port.to_string();
            let bits = if family == Family::V4 { 32 } else { 128 };
            let dest = m
                .host_ip
                .filter(|ip| !ip.is_unspecified())
                .map(|ip| format!("{ip}/{bits}"));
            // Compared word by word: `10.0.0.2:80` is not `10.0.0.2:8080`.
            let found = saved
                .rules_in(&chain, |r| {
                    let words: Vec<&str> = r.split_whitespace().collect();
                    let after = |flag: &str| words.windows(2).find(|w| w[0] == flag).map(|w| w[1]);
                    after("-p") == Some(m.protocol.as_str())
                        && after("--dport") == Some(port.as_str())
                        && after("-d") == dest.as_deref()
                        && after("-j") == Some("DNAT")
                        && after("--to-destination") == Some(to.as_str())
                })
                .next()
                .is_some();
            if !found {
                return Err(Error::Mismatch {
                    owner: "portmap",
                    detail: format!("no rule for {} port {} -> {to}", m.protocol, m.host_port),
                });
            }
        }
    }
    Ok(())
}

/// The GC batch of one family from its saved `nat` table: the rules of
/// `network`'s attachments whose container is not in `keep`. A comment cut
/// short (a long container ID) names no container: the chain its rule jumps
/// to is then stale when it is no kept container's.
pub fn gc_batch(network: &str, keep: &[String], family: Family, saved: &Saved) -> Batch {
    let prefix = format!("dnat name: {} id: ", go_quote(network));
    let kept: Vec<String> = keep.iter().map(|k| chain_name("DN-", network, k)).collect();
    // (DNAT chain, legacy SNAT chain when the comment names the container)
    let mut stale: Vec<(String, Option<String>)> = Vec::new();
    for (_, spec) in saved.rules.iter().filter(|(c, _)| c == DNAT_CHAIN) {
        let chains = match comment_container(spec, &prefix) {
            Some(id) if keep.contains(&id) => continue,
            Some(id) => (
                chain_name("DN-", network, &id),
                Some(chain_name("SN-", network, &id)),
            ),
            None => match cut_comment_target(spec, &prefix) {
                Some(dn) if !kept.contains(&dn) => (dn, None),
                _ => continue,
            },
        };
        if !stale.contains(&chains) {
            stale.push(chains);
        }
    }
    let mut batch = Batch::new(family, "nat");
    for (dn, sn) in &stale {
        batch.extend(teardown_batch(saved, family, dn, sn.as_deref()));
    }
    // The shared chains and their jumps stay, as the reference leaves them:
    // another implementation (the reference's one-iptables-call-per-rule ADD)
    // may be between creating CNI-HOSTPORT-DNAT and appending to it, with no
    // lock of ours to tell.
    batch
}

/// GC: removes the rules of attachments of `network` whose container is not
/// in `keep`. The caller holds the lock.
pub fn gc(flavour: Flavour, network: &str, keep: &[String]) -> Result<()> {
    for family in [Family::V4, Family::V6] {
        let Some(saved) = xtnft::saved(flavour, family, "nat")? else {
            continue;
        };
        flavour.apply(&gc_batch(network, keep, family, &saved))?;
    }
    Ok(())
}

/// One attachment's port mappings as read from a saved `nat` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub network: String,
    pub container_id: String,
    /// Its `CNI-DN-<hash>` chain.
    pub chain: String,
    /// The container addresses the chain's DNATs send to.
    pub targets: Vec<IpAddr>,
}

/// The network and container of a saved rule's `dnat name: "<net>" id: "<cid>"` comment.
fn comment_owner(spec: &str) -> Option<(String, String)> {
    const START: &str = "--comment \"dnat name: \\\"";
    let rest = &spec[spec.find(START)? + START.len()..];
    let (network, rest) = rest.split_once("\\\" id: \\\"")?;
    let (id, _) = rest.split_once("\\\"")?;
    Some((network.to_string(), id.to_string()))
}

/// The address of a `--to-destination` value (`10.0.0.2:80`, `[fd00::2]:80`).
fn destination_ip(spec: &str) -> Option<IpAddr> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let to = words
        .windows(2)
        .find(|w| w[0] == "--to-destination")
        .map(|w| w[1])?;
    let host = match to.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.0,
        None => to.rsplit_once(':').map_or(to, |(h, _)| h),
    };
    host.parse().ok()
}

/// Every attachment's mappings in a saved `nat` table: a `CNI-DN-<hash>`
/// chain jumped to from CNI-HOSTPORT-DNAT by rules whose comment names the
/// network and container the chain's name is the hash of (a chain without
/// such a jump names no owner and is not listed).
pub fn mapped(saved: &Saved) -> Vec<Mapped> {
    let mut out: Vec<Mapped> = Vec::new();
    for (_, spec) in saved.rules.iter().filter(|(c, _)| c == DNAT_CHAIN) {
        let Some((network, id)) = comment_owner(spec) else {
            continue;
        };
        let chain = chain_name("DN-", &network, &id);
        if !jumps(spec, &chain) || out.iter().any(|m| m.chain == chain) {
            continue;
        }
        let mut targets: Vec<IpAddr> = Vec::new();
        for ip in saved.rules_in(&chain, |_| true).filter_map(destination_ip) {
            if !targets.contains(&ip) {
                targets.push(ip);
            }
        }
        out.push(Mapped {
            network,
            container_id: id,
            chain,
            targets,
        });
    }
    out
}

/// What [`mapped`] finds in each family's `nat` table on this node, as the
/// flavour's tools show it (read only: no lock; a family without its tools
/// or table has none).
pub fn read(flavour: Flavour) -> Result<Vec<(Family, Mapped)>> {
    let mut out = Vec::new();
    for family in [Family::V4, Family::V6] {
        // Another nftables user's nat table: no plugin writes there, and no
        // iptables-save can show it.
        if flavour.nat_foreign(family) {
            continue;
        }
        if let Some(saved) = xtnft::saved(flavour, family, "nat")? {
            out.extend(mapped(&saved).into_iter().map(|m| (family, m)));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "iptables_tests.rs"]
mod tests;
