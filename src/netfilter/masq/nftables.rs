//! The nftables form of ipMasq (`inet cni_plugins_masquerade`), as the
//! reference: a rule per attachment in `masq_checks`, commented with a hash of
//! network, interface and container. ADD, DEL and CHECK find an attachment's
//! rules by its anchor (`nft::anchor`), not by reading `masq_checks`, while
//! the table is marked as ours: the `goto masq_checks` of `postrouting` carries
//! [`MARK`]. Every ADD rewrites `postrouting` (as the reference's); ours marks
//! it only where it was marked (or is new), the reference's and older
//! cni-multi's never, so where an ADD that writes no anchor has run, rules are
//! found by reading `masq_checks` until the table goes with its last rule.

use super::Plan;
use crate::digest::sha512_hex;
use crate::netfilter::nft::{
    self, ChainInfo, DumpedRule, Field, HOOK_POSTROUTING, NFPROTO_INET, PRIO_SRCNAT, Tx,
    match_addr, match_nfproto,
};
use crate::netfilter::{Error, Kept, Result};
use crate::netlink::nfnl::NfSocket;
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const TABLE: &str = "cni_plugins_masquerade";
const TABLE_COMMENT: &str = "Masquerading for plugins from github.com/containernetworking/plugins";
const CHECKS: &str = "masq_checks";
const POSTROUTING: &str = "postrouting";
/// The comment of `postrouting`'s goto while every rule of `masq_checks` is anchored.
pub const MARK: &str = "cni-multi: masq_checks anchored";
/// Multicast is never masqueraded: (is IPv6, range). Built in a const, so a
/// bad prefix fails the build, not a run.
const MULTICAST: [(bool, IpNet); 2] = [
    (
        false,
        IpNet::new_assert(IpAddr::V4(Ipv4Addr::new(224, 0, 0, 0)), 4),
    ),
    (
        true,
        IpNet::new_assert(IpAddr::V6(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0)), 8),
    ),
];

fn h(s: &str) -> String {
    sha512_hex(s.as_bytes())[..16].to_string()
}

/// `<h(net)>-<h(ifname:cid)>`: what every rule of one attachment starts with.
pub fn instance(network: &str, ifname: &str, container_id: &str) -> String {
    format!("{}-{}", h(network), h(&format!("{ifname}:{container_id}")))
}

pub fn comment(network: &str, ifname: &str, container_id: &str) -> String {
    let c = format!(
        "{}, net: {network}, if: {ifname}, id: {container_id}",
        instance(network, ifname, container_id)
    )
    .replace('"', "");
    c.chars().take(128).collect()
}

fn plan_instance(plan: &Plan) -> String {
    instance(&plan.network, &plan.ifname, &plan.container_id)
}

/// What an ADD, DEL or CHECK read of the table.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// `masq_checks`, when there is one.
    pub checks: Option<ChainInfo>,
    /// The rules of `postrouting` (three, as the last ADD wrote them).
    pub postrouting: Vec<DumpedRule>,
    /// The attachment's anchor, when there is one.
    pub anchor: Option<ChainInfo>,
    /// The handles of the attachment's rules in `masq_checks`.
    pub mine: Vec<u64>,
    /// How many rules `masq_checks` holds.
    pub total: usize,
}

impl Seen {
    /// Whether every rule of `masq_checks` is anchored (see the module doc).
    pub fn marked(&self) -> bool {
        self.postrouting.iter().any(|r| r.comment == MARK)
    }

    /// Whether `postrouting` is as our ADD writes it: the two multicast
    /// returns, then the marked goto.
    fn intact(&self) -> bool {
        match self.postrouting.as_slice() {
            [a, b, goto] => {
                [a, b]
                    .iter()
                    .all(|r| r.jumps.is_empty() && r.comment.is_empty())
                    && goto.comment == MARK
                    && goto.jumps == [CHECKS]
            }
            _ => false,
        }
    }
}

/// Reads what the plan's attachment has in the table: its anchor and the
/// rules after it, two small chains' rules and use counts; `masq_checks` is
/// dumped only in a table not marked as ours, for an attachment without anchor.
fn seen(sock: &mut NfSocket, plan: &Plan) -> Result<Seen> {
    let prefix = plan_instance(plan);
    let mine = |r: &DumpedRule| r.comment.starts_with(&prefix);
    let anchor = nft::chain_info(sock, NFPROTO_INET, TABLE, &nft::anchor_name(&prefix))?;
    let Some(checks) = nft::chain_info(sock, NFPROTO_INET, TABLE, CHECKS)? else {
        return Ok(Seen {
            anchor,
            ..Seen::default()
        });
    };
    let postrouting = nft::rules(sock, NFPROTO_INET, TABLE, POSTROUTING)?;
    let mut seen = Seen {
        checks: Some(checks),
        total: nft::own_rules(checks.uses, CHECKS, &postrouting),
        postrouting,
        anchor,
        mine: Vec::new(),
    };
    if let Some(a) = anchor {
        let found = nft::anchored(sock, NFPROTO_INET, TABLE, a, &[CHECKS], mine)?;
        seen.mine = found.into_iter().map(|(_, handle)| handle).collect();
    } else if !seen.marked() {
        let all = nft::rules(sock, NFPROTO_INET, TABLE, CHECKS)?;
        seen.total = all.len();
        seen.mine = all.iter().filter(|r| mine(r)).map(|r| r.handle).collect();
    }
    Ok(seen)
}

/// The ADD transaction, given what was read: the skeleton ensured, the
/// attachment's previous rules replaced by its current ones after a fresh
/// anchor. A table that was marked (or is made here) stays marked; its
/// `postrouting` rules are deleted by handle and `masq_checks` made
/// exclusively, so that a writer in between fails the transaction instead of
/// leaving unanchored rules under the mark.
///
/// Where the skeleton is there as our ADD leaves it, it is not written again
/// (the reference rewrites it on every ADD): declaring an existing chain or
/// flushing one costs the commit an RCU grace period, about as long as a
/// whole ADD.
pub fn add_tx(plan: &Plan, seen: &Seen) -> Tx {
    let prefix = plan_instance(plan);
    let mut tx = Tx::new();
    if seen.checks.is_none() || !seen.intact() {
        skeleton(&mut tx, seen);
    }
    for &stale in &seen.mine {
        tx.delete_rule(NFPROTO_INET, TABLE, CHECKS, stale);
    }
    let anchor = nft::anchor_name(&prefix);
    tx.anchor(NFPROTO_INET, TABLE, &anchor, seen.anchor.is_some());
    let text = comment(&plan.network, &plan.ifname, &plan.container_id);
    for ip in &plan.addresses {
        let v6 = ip.addr().is_ipv6();
        let host = IpNet::from(ip.addr());
        let mut exprs = match_nfproto(v6);
        exprs.extend(match_addr(Field::Saddr, host, true));
        exprs.extend(match_addr(Field::Daddr, ip.trunc(), false));
        exprs.push(nft::masquerade());
        tx.rule(NFPROTO_INET, TABLE, CHECKS, &exprs, Some(&text));
    }
    tx
}

/// The table, its chains and `postrouting`'s rules, (re)written.
fn skeleton(tx: &mut Tx, seen: &Seen) {
    let marked = seen.checks.is_none() || seen.marked();
    tx.table(NFPROTO_INET, TABLE, TABLE_COMMENT);
    match seen.checks {
        None => tx.new_chain(NFPROTO_INET, TABLE, CHECKS),
        Some(_) => tx.chain(NFPROTO_INET, TABLE, CHECKS, None),
    }
    tx.chain(
        NFPROTO_INET,
        TABLE,
        POSTROUTING,
        Some(("nat", HOOK_POSTROUTING, PRIO_SRCNAT)),
    );
    if marked && seen.checks.is_some() {
        for r in &seen.postrouting {
            tx.delete_rule(NFPROTO_INET, TABLE, POSTROUTING, r.handle);
        }
    } else {
        tx.flush(NFPROTO_INET, TABLE, POSTROUTING);
    }
    for (v6, net) in MULTICAST {
        let mut exprs = match_nfproto(v6);
        exprs.extend(match_addr(Field::Daddr, net, true));
        exprs.push(nft::ret());
        tx.rule(NFPROTO_INET, TABLE, POSTROUTING, &exprs, None);
    }
    let mark = marked.then_some(MARK);
    tx.rule(NFPROTO_INET, TABLE, POSTROUTING, &[nft::goto(CHECKS)], mark);
}

/// The caller holds the lock.
pub fn add(plan: &Plan) -> Result<()> {
    nft::commit_fresh(|sock| Ok(Some(add_tx(plan, &seen(sock, plan)?))))
}

/// The DEL transaction, given what was read: none when the attachment has
/// neither rules nor anchor; the table goes with the last rule of `masq_checks`.
pub fn del_tx(seen: &Seen, anchor: &str) -> Option<Tx> {
    if seen.mine.is_empty() && seen.anchor.is_none() {
        return None;
    }
    let mut tx = Tx::new();
    if seen.checks.is_some() && seen.total <= seen.mine.len() {
        tx.delete_table(NFPROTO_INET, TABLE);
        return Some(tx);
    }
    for &handle in &seen.mine {
        tx.delete_rule(NFPROTO_INET, TABLE, CHECKS, handle);
    }
    if seen.anchor.is_some() {
        tx.delete_chain(NFPROTO_INET, TABLE, anchor);
    }
    Some(tx)
}

/// Deletes the attachment's rules. The caller holds the lock.
pub fn del(plan: &Plan) -> Result<()> {
    let anchor = nft::anchor_name(&plan_instance(plan));
    nft::commit_fresh(|sock| Ok(del_tx(&seen(sock, plan)?, &anchor)))
}

/// The transaction removing the rules of `existing` that `gone` picks, with
/// the anchors (among the table's `chains`) of the attachments they were:
/// none when it picks none, the whole table when it picks them all.
fn removal(
    existing: &[DumpedRule],
    chains: &[String],
    gone: impl Fn(&DumpedRule) -> bool,
) -> Option<Tx> {
    let gone: Vec<_> = existing.iter().filter(|r| gone(r)).collect();
    if gone.is_empty() {
        return None;
    }
    let mut tx = Tx::new();
    if gone.len() == existing.len() {
        tx.delete_table(NFPROTO_INET, TABLE);
        return Some(tx);
    }
    let mut anchors: Vec<String> = Vec::new();
    for r in gone {
        tx.delete_rule(NFPROTO_INET, TABLE, CHECKS, r.handle);
        let anchor = r.comment.get(..33).map(nft::anchor_name);
        if let Some(a) = anchor.filter(|a| chains.contains(a) && !anchors.contains(a)) {
            anchors.push(a);
        }
    }
    for a in anchors {
        tx.delete_chain(NFPROTO_INET, TABLE, &a);
    }
    Some(tx)
}

/// CHECK over the number of the attachment's rules found: one per address of
/// the plan, as ADD writes them.
pub fn check_found(plan: &Plan, found: usize) -> Result<()> {
    let wanted = plan.addresses.len();
    if found < wanted {
        return Err(Error::Mismatch {
            owner: "ipMasq",
            detail: format!("{found} of {wanted} rules found in table {TABLE}"),
        });
    }
    Ok(())
}

/// CHECK over the rules now in `masq_checks`.
pub fn check_rules(plan: &Plan, existing: &[DumpedRule]) -> Result<()> {
    let prefix = plan_instance(plan);
    let found = existing
        .iter()
        .filter(|r| r.comment.starts_with(&prefix))
        .count();
    check_found(plan, found)
}

/// CHECK: read only, no lock.
pub fn check(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    check_found(plan, seen(&mut sock, plan)?.mine.len())
}

/// Whether a rule's comment is of an attachment of `network` not in `keep`.
/// Only the instance it starts with, `<h(net)>-<h(ifname:cid)>`, is read:
/// the comment is cut at 128 characters, and a long network name or
/// container ID would cut the rest. A comment of another form is never stale.
fn stale(comment: &str, network: &str, keep: &[Kept]) -> bool {
    // An entry without ifname keeps every interface of its container, and
    // the hash cannot say which container a rule is of: collect nothing.
    if keep.iter().any(|k| k.ifname.is_empty()) {
        return false;
    }
    let Some(rest) = comment.strip_prefix(&format!("{}-", h(network))) else {
        return false;
    };
    let Some(attachment) = rest.get(..16) else {
        return false;
    };
    !keep
        .iter()
        .any(|k| h(&format!("{}:{}", k.ifname, k.container_id)) == attachment)
}

/// The GC transaction, given the rules now in `masq_checks` and the table's
/// chains: the rules of `network`'s attachments not in `keep`, with their
/// anchors; none when there are none, and the table goes with the last of
/// them (as a DEL).
pub fn gc_tx(
    network: &str,
    keep: &[Kept],
    existing: &[DumpedRule],
    chains: &[String],
) -> Option<Tx> {
    removal(existing, chains, |r| stale(&r.comment, network, keep))
}

/// GC: removes the rules of `network`'s attachments not in `keep` (it reads
/// the whole table: which are stale is known only from the rules). The
/// caller holds the lock.
pub fn gc(network: &str, keep: &[Kept]) -> Result<()> {
    let mut sock = nft::open()?;
    let existing = nft::rules(&mut sock, NFPROTO_INET, TABLE, CHECKS)?;
    let chains = nft::chains(&mut sock, NFPROTO_INET, TABLE)?;
    match gc_tx(network, keep, &existing, &chains) {
        Some(tx) => tx.commit(&mut sock),
        None => Ok(()),
    }
}

/// One attachment's rules as found in `masq_checks`: its owner as the
/// comment names it and the sources its rules masquerade.
#[derive(Debug, Clone, PartialEq)]
pub struct Masqueraded {
    pub network: String,
    pub container_id: String,
    pub ifname: String,
    /// `<h(net)>-<h(ifname:cid)>`, what its rules' comments start with.
    pub instance: String,
    pub sources: Vec<IpAddr>,
}

/// The owner a rule's comment names, when it names it whole: the instance it
/// starts with must be that owner's (a comment cut at 128 characters, or of
/// another form, names none).
fn owner(comment: &str) -> Option<(String, String, String)> {
    let (inst, rest) = comment.split_once(", net: ")?;
    let (rest, container_id) = rest.rsplit_once(", id: ")?;
    let (network, ifname) = rest.rsplit_once(", if: ")?;
    (instance(network, ifname, container_id) == inst).then(|| {
        (
            network.to_string(),
            container_id.to_string(),
            ifname.to_string(),
        )
    })
}

/// Every attachment among the rules of `masq_checks`, grouped by owner (table order).
pub fn masqueraded(rules: &[DumpedRule]) -> Vec<Masqueraded> {
    let mut out: Vec<Masqueraded> = Vec::new();
    for r in rules {
        let Some((network, container_id, ifname)) = owner(&r.comment) else {
            continue;
        };
        let at = match out.iter().position(|m| {
            m.network == network && m.container_id == container_id && m.ifname == ifname
        }) {
            Some(at) => at,
            None => {
                out.push(Masqueraded {
                    instance: instance(&network, &ifname, &container_id),
                    network,
                    container_id,
                    ifname,
                    sources: Vec::new(),
                });
                out.len() - 1
            }
        };
        let sources = &mut out[at].sources;
        if let Some(ip) = r.saddr.filter(|ip| !sources.contains(ip)) {
            sources.push(ip);
        }
    }
    out
}

/// What [`masqueraded`] finds on this node (read only: no lock; none without
/// nf_tables or the table).
pub fn read() -> Result<Vec<Masqueraded>> {
    if !crate::netlink::nfnl::available() {
        return Ok(Vec::new());
    }
    let mut sock = nft::open()?;
    Ok(masqueraded(&nft::rules(
        &mut sock,
        NFPROTO_INET,
        TABLE,
        CHECKS,
    )?))
}

#[cfg(test)]
#[path = "nftables_tests.rs"]
mod tests;
