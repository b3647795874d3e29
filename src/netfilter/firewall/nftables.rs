//! The firewall's nftables form (no reference one exists): table
//! `inet cni_firewall`, a forward chain jumping to an admin chain first, then
//! per-address accept rules commented with the container ID
//! (`container_comment`). ADD, DEL and CHECK find a container's rules by its
//! anchor (`nft::anchor`), never by reading the forward chain; only a
//! container ADD recorded without anchor (an older cni-multi's) has them
//! looked for there.

use super::Plan;
use crate::netfilter::nft::{
    self, ChainInfo, DumpedRule, Field, HOOK_FORWARD, NFPROTO_INET, PRIO_FILTER, Tx, match_addr,
    match_ct_established_related, match_nfproto,
};
use crate::netfilter::{Error, Result};
use crate::netlink::nfnl::NfSocket;
use ipnet::IpNet;
use std::net::IpAddr;

pub const TABLE: &str = "cni_firewall";
const FORWARD: &str = "forward";
const ADMIN: &str = "admin";

/// What an ADD, DEL or CHECK read of the table.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The forward chain is there.
    pub forward: bool,
    /// How many rules the forward chain holds (a base chain: its use count).
    pub total: usize,
    /// The container's anchor, when there is one.
    pub anchor: Option<ChainInfo>,
    /// The handles of the container's rules.
    pub mine: Vec<u64>,
}

/// Reads what the container has: its anchor and the rules after it, or
/// (`recorded` and no anchor) the forward chain's rules with its comment.
fn seen(sock: &mut NfSocket, plan: &Plan, recorded: bool) -> Result<Seen> {
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let mine = |r: &DumpedRule| r.comment == comment;
    let anchor = nft::chain_info(sock, NFPROTO_INET, TABLE, &nft::anchor_name(&comment))?;
    let Some(forward) = nft::chain_info(sock, NFPROTO_INET, TABLE, FORWARD)? else {
        return Ok(Seen {
            anchor,
            ..Seen::default()
        });
    };
    let mut seen = Seen {
        forward: true,
        total: forward.uses as usize,
        anchor,
        mine: Vec::new(),
    };
    if let Some(a) = anchor {
        let found = nft::anchored(sock, NFPROTO_INET, TABLE, a, &[FORWARD], mine)?;
        seen.mine = found.into_iter().map(|(_, handle)| handle).collect();
    } else if recorded {
        let all = nft::rules(sock, NFPROTO_INET, TABLE, FORWARD)?;
        seen.total = all.len();
        seen.mine = all.iter().filter(|r| mine(r)).map(|r| r.handle).collect();
    }
    Ok(seen)
}

/// The ADD transaction, given what was read. The table and chains are
/// declared only while the forward chain is missing or empty: declaring an
/// existing chain costs the commit an RCU grace period, about as long as a
/// whole ADD.
pub fn add_tx(plan: &Plan, seen: &Seen) -> Tx {
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let container_id = comment.as_str();
    let mut tx = Tx::new();
    if !seen.forward || seen.total == 0 {
        tx.table(NFPROTO_INET, TABLE, "CNI firewall plugin");
        tx.chain(NFPROTO_INET, TABLE, ADMIN, None);
        tx.chain(
            NFPROTO_INET,
            TABLE,
            FORWARD,
            Some(("filter", HOOK_FORWARD, PRIO_FILTER)),
        );
        tx.rule(NFPROTO_INET, TABLE, FORWARD, &[nft::jump(ADMIN)], None);
    }
    for &stale in &seen.mine {
        tx.delete_rule(NFPROTO_INET, TABLE, FORWARD, stale);
    }
    let anchor = nft::anchor_name(&comment);
    tx.anchor(NFPROTO_INET, TABLE, &anchor, seen.anchor.is_some());
    for ip in &plan.addresses {
        let v6 = ip.addr().is_ipv6();
        let host = IpNet::from(ip.addr());
        let mut to = match_nfproto(v6);
        to.extend(match_addr(Field::Daddr, host, true));
        to.extend(match_ct_established_related());
        to.push(nft::accept());
        tx.rule(NFPROTO_INET, TABLE, FORWARD, &to, Some(container_id));
        let mut from = match_nfproto(v6);
        from.extend(match_addr(Field::Saddr, host, true));
        from.push(nft::accept());
        tx.rule(NFPROTO_INET, TABLE, FORWARD, &from, Some(container_id));
    }
    tx
}

/// The caller holds the lock. A repeated ADD replaces the rules after the
/// anchor; rules an older version wrote for the same container are left to
/// its DEL, which reads the chain for them.
pub fn add(plan: &Plan) -> Result<()> {
    nft::commit_fresh(|sock| Ok(Some(add_tx(plan, &seen(sock, plan, false)?))))
}

/// The DEL transaction, given what was read and whether the admin chain is
/// empty: none when the container has neither rules nor anchor; the table
/// goes when only the admin jump is left and the admin chain is empty.
pub fn del_tx(plan: &Plan, seen: &Seen, admin_empty: bool) -> Option<Tx> {
    if seen.mine.is_empty() && seen.anchor.is_none() {
        return None;
    }
    let mut tx = Tx::new();
    if admin_empty && seen.total <= seen.mine.len() + 1 {
        tx.delete_table(NFPROTO_INET, TABLE);
        return Some(tx);
    }
    for &handle in &seen.mine {
        tx.delete_rule(NFPROTO_INET, TABLE, FORWARD, handle);
    }
    if seen.anchor.is_some() {
        let comment = crate::netfilter::container_comment(&plan.container_id);
        tx.delete_chain(NFPROTO_INET, TABLE, &nft::anchor_name(&comment));
    }
    Some(tx)
}

/// Deletes the container's rules. `recorded`: ADD recorded the attachment
/// (an older version's rules, without anchor, may be there; not known:
/// true). The caller holds the lock.
pub fn del(plan: &Plan, recorded: bool) -> Result<()> {
    nft::commit_fresh(|sock| {
        let seen = seen(sock, plan, recorded)?;
        if seen.mine.is_empty() && seen.anchor.is_none() {
            return Ok(None);
        }
        // The admin chain holds the admin's own rules, not a rule per pod.
        let admin_empty = nft::rules(sock, NFPROTO_INET, TABLE, ADMIN)?.is_empty();
        Ok(del_tx(plan, &seen, admin_empty))
    })
}

pub fn check(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    let found = seen(&mut sock, plan, true)?.mine.len();
    let wanted = 2 * plan.addresses.len();
    if found != wanted {
        return Err(Error::Mismatch {
            owner: "firewall",
            detail: format!("{found} of {wanted} rules found in table {TABLE}"),
        });
    }
    Ok(())
}

/// One container's accept rules as found in the forward chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The rules' comment: the container ID (they name no network), or a
    /// long one's token (`container_comment`).
    pub container_id: String,
    /// The addresses its `saddr` rules let out.
    pub addresses: Vec<IpAddr>,
}

/// Every container's rules among the forward chain's, grouped by comment
/// (table order; the admin jump has none).
pub fn accepted(rules: &[DumpedRule]) -> Vec<Accepted> {
    let mut out: Vec<Accepted> = Vec::new();
    for r in rules.iter().filter(|r| !r.comment.is_empty()) {
        let at = match out.iter().position(|a| a.container_id == r.comment) {
            Some(at) => at,
            None => {
                out.push(Accepted {
                    container_id: r.comment.clone(),
                    addresses: Vec::new(),
                });
                out.len() - 1
            }
        };
        let addresses = &mut out[at].addresses;
        if let Some(ip) = r.saddr.filter(|ip| !addresses.contains(ip)) {
            addresses.push(ip);
        }
    }
    out
}

/// What [`accepted`] finds on this node (read only: no lock; none without
/// nf_tables or the table).
pub fn read() -> Result<Vec<Accepted>> {
    if !crate::netlink::nfnl::available() {
        return Ok(Vec::new());
    }
    let mut sock = nft::open()?;
    Ok(accepted(&nft::rules(
        &mut sock,
        NFPROTO_INET,
        TABLE,
        FORWARD,
    )?))
}

#[cfg(test)]
#[path = "nftables_tests.rs"]
mod tests;
