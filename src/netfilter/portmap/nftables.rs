//! portmap's nftables form (`ip cni_hostport` / `ip6 cni_hostport`), as the
//! reference (a rule per mapping in the shared `hostports` or
//! `hostip_hostports`, masquerading in `masquerading`, each commented with
//! the container ID), but for two choices: nft-syntax conditions gate the
//! container's own DNAT rules (the reference puts the last ADD's in the shared
//! base chains), and host-IP rules go to the head of `hostports`, where a
//! wildcard on the same port cannot shadow them.
//!
//! ADD, DEL and CHECK find a container's rules by its anchor (`nft::anchor`),
//! never by reading the shared chains, while the table is marked as ours:
//! `prerouting`'s rule carries [`MARK`], written when our ADD made the table.
//! The reference's ADD rewrites `prerouting` without it; from then on a
//! container without anchor has its rules looked for in the shared chains,
//! until the table goes with its last rule. So has a container ADD recorded
//! without anchor (an older cni-multi's).

use super::{Family, Plan, Target};
use crate::netfilter::nft::{
    self, ChainInfo, DumpedRule, Field, HOOK_OUTPUT, HOOK_POSTROUTING, HOOK_PREROUTING,
    PRIO_DSTNAT, PRIO_SRCNAT, Tx, match_addr, match_dport, match_fib_daddr_local, nfproto,
};
use crate::netfilter::{Error, Result};
use crate::netlink::nfnl::NfSocket;
use ipnet::IpNet;
use std::net::IpAddr;

pub const TABLE: &str = "cni_hostport";
const TABLE_COMMENT: &str = "CNI portmap plugin";
const HOSTPORTS: &str = "hostports";
const HOSTIP_HOSTPORTS: &str = "hostip_hostports";
const HOSTPORTS_ALL: &str = "hostports_all";
const MASQUERADING: &str = "masquerading";
const PREROUTING: &str = "prerouting";
const OUTPUT: &str = "output";
/// The chains holding per-container rules (comment: `container_comment`).
const PER_CONTAINER: [&str; 3] = [HOSTPORTS, HOSTIP_HOSTPORTS, MASQUERADING];
/// The comment of `prerouting`'s rule while every per-container rule is anchored.
pub const MARK: &str = "cni-multi: hostports anchored";

fn protocol_number(p: &str) -> u8 {
    match p {
        "udp" => 17,
        "sctp" => 132,
        _ => 6,
    }
}

fn host(ip: IpAddr) -> IpNet {
    IpNet::from(ip)
}

/// What one family's table looked like to an operation.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// `hostports` is there: some ADD made the table.
    pub made: bool,
    /// Our skeleton (`hostports_all` and the jumps to it) is there.
    pub skeleton: bool,
    pub masquerading: bool,
    /// `prerouting`'s rule carries [`MARK`].
    pub marked: bool,
    /// How many rules the per-container chains hold.
    pub total: usize,
    /// The per-container chains' rules, once dumped.
    pub(crate) dumped: Option<Vec<(&'static str, DumpedRule)>>,
}

/// What one container has in a family's table.
#[derive(Debug, Clone, Default)]
pub struct Mine {
    pub anchor: Option<ChainInfo>,
    /// (chain, handle) of each of its rules.
    pub rules: Vec<(&'static str, u64)>,
}

/// Reads a family's table: the chains by name, the few rules of the chains
/// that jump to the per-container ones; those are not dumped.
fn table(sock: &mut NfSocket, f: u8) -> Result<Table> {
    let Some(hostports) = nft::chain_info(sock, f, TABLE, HOSTPORTS)? else {
        return Ok(Table::default());
    };
    let hostip = nft::chain_info(sock, f, TABLE, HOSTIP_HOSTPORTS)?;
    let masquerading = nft::chain_info(sock, f, TABLE, MASQUERADING)?;
    let skeleton = nft::chain_info(sock, f, TABLE, HOSTPORTS_ALL)?.is_some();
    let prerouting = nft::rules(sock, f, TABLE, PREROUTING)?;
    let mut jumping = nft::rules(sock, f, TABLE, OUTPUT)?;
    jumping.extend(nft::rules(sock, f, TABLE, HOSTPORTS_ALL)?);
    jumping.extend(prerouting.iter().cloned());
    let own = |c: Option<ChainInfo>, name| c.map_or(0, |c| nft::own_rules(c.uses, name, &jumping));
    Ok(Table {
        made: true,
        skeleton,
        masquerading: masquerading.is_some(),
        marked: prerouting.iter().any(|r| r.comment == MARK),
        total: own(Some(hostports), HOSTPORTS)
            + own(hostip, HOSTIP_HOSTPORTS)
            + own(masquerading, MASQUERADING),
        dumped: None,
    })
}

/// The container's anchor and rules. Without an anchor its rules are looked
/// for in the per-container chains (dumped once per table) unless the table
/// is marked and ADD did not record the attachment: then it has none.
fn mine(
    sock: &mut NfSocket,
    f: u8,
    table: &mut Table,
    comment: &str,
    recorded: bool,
) -> Result<Mine> {
    let anchor = nft::chain_info(sock, f, TABLE, &nft::anchor_name(comment))?;
    if let Some(a) = anchor {
        let rules = nft::anchored(sock, f, TABLE, a, &PER_CONTAINER, |r| r.comment == comment)?;
        return Ok(Mine { anchor, rules });
    }
    if !table.made || (table.marked && !recorded) {
        return Ok(Mine::default());
    }
    if table.dumped.is_none() {
        let mut all = Vec::new();
        for chain in PER_CONTAINER {
            all.extend(
                nft::rules(sock, f, TABLE, chain)?
                    .into_iter()
                    .map(|r| (chain, r)),
            );
        }
        table.total = all.len();
        table.dumped = Some(all);
    }
    let rules = table
        .dumped
        .iter()
        .flatten()
        .filter(|(_, r)| r.comment == comment)
        .map(|(chain, r)| (*chain, r.handle))
        .collect();
    Ok(Mine { anchor, rules })
}

/// One transaction per family: the skeleton ensured, the container's
/// previous rules (a repeated ADD) replaced by its current ones after a
/// fresh anchor. The caller holds the lock.
pub fn add(plan: &Plan) -> Result<()> {
    let comment = crate::netfilter::container_comment(&plan.container_id);
    for target in &plan.targets {
        let family = Family::of(target.address.addr());
        if plan.mappings_for(family).is_empty() {
            continue;
        }
        let f = nfproto(family);
        nft::commit_fresh(|sock| {
            let mut t = table(sock, f)?;
            let m = mine(sock, f, &mut t, &comment, false)?;
            add_tx(plan, target, &t, &m).map(Some)
        })?;
    }
    Ok(())
}

/// The ADD transaction of the target's family, given the table and what the
/// container has in it.
pub fn add_tx(plan: &Plan, target: &Target, table: &Table, previous: &Mine) -> Result<Tx> {
    let family = Family::of(target.address.addr());
    let mappings = plan.mappings_for(family);
    // The configuration was validated at load; parsed again here so that a
    // condition can never be dropped on the way to the kernel.
    let conditions = nft::parse_conditions(plan.conditions(family), family)?;
    let f = nfproto(family);
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let mut tx = Tx::new();
    // The skeleton (table, chains, jumps) is written once; rewriting base
    // chains on every ADD would re-register their hooks each time. A table
    // made here is marked; `hostports` is made exclusively, so that a table
    // another writer made meanwhile fails the transaction instead.
    if !table.skeleton {
        tx.table(f, TABLE, TABLE_COMMENT);
        if table.made {
            tx.chain(f, TABLE, HOSTPORTS, None);
        } else {
            tx.new_chain(f, TABLE, HOSTPORTS);
        }
        for chain in [HOSTIP_HOSTPORTS, HOSTPORTS_ALL] {
            tx.chain(f, TABLE, chain, None);
        }
        tx.chain(
            f,
            TABLE,
            PREROUTING,
            Some(("nat", HOOK_PREROUTING, PRIO_DSTNAT)),
        );
        tx.chain(f, TABLE, OUTPUT, Some(("nat", HOOK_OUTPUT, PRIO_DSTNAT)));
        tx.flush(f, TABLE, HOSTPORTS_ALL);
        tx.rule(
            f,
            TABLE,
            HOSTPORTS_ALL,
            &[nft::jump(HOSTIP_HOSTPORTS)],
            None,
        );
        tx.rule(f, TABLE, HOSTPORTS_ALL, &[nft::jump(HOSTPORTS)], None);
        for base in [PREROUTING, OUTPUT] {
            tx.flush(f, TABLE, base);
            let mut exprs = match_fib_daddr_local();
            exprs.push(nft::jump(HOSTPORTS_ALL));
            let mark = (base == PREROUTING && !table.made).then_some(MARK);
            tx.rule(f, TABLE, base, &exprs, mark);
        }
    }
    if plan.snat && !table.masquerading {
        tx.chain(
            f,
            TABLE,
            MASQUERADING,
            Some(("nat", HOOK_POSTROUTING, PRIO_SRCNAT)),
        );
    }
    // A second ADD of the same attachment leaves one set of rules.
    for &(chain, handle) in &previous.rules {
        tx.delete_rule(f, TABLE, chain, handle);
    }
    tx.anchor(
        f,
        TABLE,
        &nft::anchor_name(&comment),
        previous.anchor.is_some(),
    );
    let cip = target.address.addr();
    for m in mappings {
        // The conditions gate this container's mappings only (the reference
        // puts them in the shared base chains, where the last ADD's win
        // for every container).
        let mut exprs = conditions.clone();
        let host_ip = m.host_ip.filter(|ip| !ip.is_unspecified());
        if let Some(ip) = host_ip {
            exprs.extend(match_addr(Field::Daddr, host(ip), true));
        }
        exprs.extend(match_dport(protocol_number(&m.protocol), m.host_port));
        exprs.extend(nft::dnat(cip, m.container_port));
        // hostIP mappings go to `hostip_hostports`, which `hostports_all`
        // consults first: a wildcard mapping of the same port, in
        // `hostports`, must not shadow them.
        let chain = if host_ip.is_some() {
            HOSTIP_HOSTPORTS
        } else {
            HOSTPORTS
        };
        tx.rule(f, TABLE, chain, &exprs, Some(&comment));
    }
    if plan.snat {
        let mut hairpin = Vec::new();
        if !plan.masq_all {
            hairpin.extend(match_addr(Field::Saddr, host(cip), true));
        }
        hairpin.extend(match_addr(Field::Daddr, host(cip), true));
        hairpin.push(nft::masquerade());
        tx.rule(f, TABLE, MASQUERADING, &hairpin, Some(&comment));
        if family == Family::V4 && !plan.masq_all {
            let localhost: IpAddr = [127, 0, 0, 1].into();
            let mut exprs = match_addr(Field::Saddr, host(localhost), true);
            exprs.extend(match_addr(Field::Daddr, host(cip), true));
            exprs.push(nft::masquerade());
            tx.rule(f, TABLE, MASQUERADING, &exprs, Some(&comment));
        }
    }
    Ok(tx)
}

/// The DEL transaction of a family, given the table and the containers'
/// rules and anchors (`mine`, with each anchor's name): none when they have
/// neither; the table goes with the last rule of the per-container chains.
pub fn del_tx(family: Family, table: &Table, mine: &[(String, Mine)]) -> Option<Tx> {
    let rules: Vec<(&str, u64)> = mine.iter().flat_map(|(_, m)| m.rules.clone()).collect();
    let anchors: Vec<&str> = mine
        .iter()
        .filter(|(_, m)| m.anchor.is_some())
        .map(|(name, _)| name.as_str())
        .collect();
    if rules.is_empty() && anchors.is_empty() {
        return None;
    }
    let f = nfproto(family);
    let mut tx = Tx::new();
    if table.made && table.total <= rules.len() {
        tx.delete_table(f, TABLE);
        return Some(tx);
    }
    for (chain, handle) in rules {
        tx.delete_rule(f, TABLE, chain, handle);
    }
    for anchor in anchors {
        tx.delete_chain(f, TABLE, anchor);
    }
    Some(tx)
}

/// Deletes the containers' rules in one family's table, in one transaction.
fn del_family(family: Family, comments: &[String], recorded: bool) -> Result<()> {
    let f = nfproto(family);
    nft::commit_fresh(|sock| {
        let mut t = table(sock, f)?;
        let mut all = Vec::new();
        for comment in comments {
            let m = mine(sock, f, &mut t, comment, recorded)?;
            all.push((nft::anchor_name(comment), m));
        }
        Ok(del_tx(family, &t, &all))
    })
}

/// Deletes the container's rules per family. `recorded`: ADD recorded the
/// attachment (rules of an older version, without anchor, may be there; not
/// known: true). The caller holds the lock.
pub fn del(plan: &Plan, recorded: bool) -> Result<()> {
    let comment = crate::netfilter::container_comment(&plan.container_id);
    for family in plan.del_families() {
        del_family(family, std::slice::from_ref(&comment), recorded)?;
    }
    Ok(())
}

/// GC: the `stale` containers' rules deleted as DEL deletes one's, in one
/// transaction per family (their records were read: they may have rules
/// without anchor, looked for in one read of the shared chains). The caller
/// holds the lock.
pub fn gc(stale: &[String]) -> Result<()> {
    if stale.is_empty() {
        return Ok(());
    }
    let comments: Vec<String> = stale
        .iter()
        .map(|id| crate::netfilter::container_comment(id))
        .collect();
    for family in [Family::V4, Family::V6] {
        del_family(family, &comments, true)?;
    }
    Ok(())
}

/// CHECK: a DNAT rule per mapping of the family (in `hostports`, or in
/// `hostip_hostports` for host-IP ones) and the masquerade rules, as the
/// reference counts them.
pub fn check(plan: &Plan) -> Result<()> {
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let mut sock = nft::open()?;
    for target in &plan.targets {
        let family = Family::of(target.address.addr());
        let wanted = plan.mappings_for(family).len();
        if wanted == 0 {
            continue;
        }
        let f = nfproto(family);
        let mut t = table(&mut sock, f)?;
        let m = mine(&mut sock, f, &mut t, &comment, true)?;
        let count = |chains: &[&str]| m.rules.iter().filter(|(c, _)| chains.contains(c)).count();
        let found = count(&[HOSTPORTS, HOSTIP_HOSTPORTS]);
        if found < wanted {
            return Err(Error::Mismatch {
                owner: "portmap",
                detail: format!("{found} of {wanted} mappings found in table {TABLE}"),
            });
        }
        if plan.snat {
            let masq = if family == Family::V4 && !plan.masq_all {
                2
            } else {
                1
            };
            let found = count(&[MASQUERADING]);
            if found < masq {
                return Err(Error::Mismatch {
                    owner: "portmap",
                    detail: format!("{found} of {masq} masquerade rules found in table {TABLE}"),
                });
            }
        }
    }
    Ok(())
}

/// One container's rules as found in a family's `cni_hostport` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Hostported {
    /// The rules' comment: the container ID (they name no network), or a
    /// long one's token (`container_comment`).
    pub container_id: String,
    /// The container addresses its rules match (hairpin masquerading; the
    /// localhost one left out).
    pub saddrs: Vec<IpAddr>,
}

/// Every container's rules among the rules of one family's per-container
/// chains, grouped by comment (table order).
pub fn hostported(rules: &[nft::DumpedRule]) -> Vec<Hostported> {
    let mut out: Vec<Hostported> = Vec::new();
    for r in rules.iter().filter(|r| !r.comment.is_empty()) {
        let at = match out.iter().position(|h| h.container_id == r.comment) {
            Some(at) => at,
            None => {
                out.push(Hostported {
                    container_id: r.comment.clone(),
                    saddrs: Vec::new(),
                });
                out.len() - 1
            }
        };
        let saddrs = &mut out[at].saddrs;
        if let Some(ip) = r
            .saddr
            .filter(|ip| !ip.is_loopback() && !saddrs.contains(ip))
        {
            saddrs.push(ip);
        }
    }
    out
}

/// What [`hostported`] finds in each family's table on this node (read
/// only: no lock; none without nf_tables or the table).
pub fn read() -> Result<Vec<(Family, Hostported)>> {
    if !crate::netlink::nfnl::available() {
        return Ok(Vec::new());
    }
    let mut sock = nft::open()?;
    let mut out = Vec::new();
    for family in [Family::V4, Family::V6] {
        let mut rules = Vec::new();
        for chain in PER_CONTAINER {
            rules.extend(nft::rules(&mut sock, nfproto(family), TABLE, chain)?);
        }
        out.extend(hostported(&rules).into_iter().map(|h| (family, h)));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "nftables_tests.rs"]
mod tests;
