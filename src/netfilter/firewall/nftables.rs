//! The firewall's nftables form (no reference one exists): table
//! `inet cni_firewall`, a forward chain jumping to an admin chain first, then
//! per-address accept rules commented with the container ID
//! (`container_comment`).

use super::Plan;
use crate::netfilter::nft::{
    self, DumpedRule, Field, HOOK_FORWARD, NFPROTO_INET, PRIO_FILTER, Tx, match_addr,
    match_ct_established_related, match_nfproto,
};
use crate::netfilter::{Error, Result};
use ipnet::IpNet;
use std::net::IpAddr;

pub const TABLE: &str = "cni_firewall";
const FORWARD: &str = "forward";
const ADMIN: &str = "admin";

/// The ADD transaction, given the rules now in the forward chain.
pub fn add_tx(plan: &Plan, stale: &[DumpedRule]) -> Tx {
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let container_id = comment.as_str();
    let mut tx = Tx::new();
    tx.table(NFPROTO_INET, TABLE, "CNI firewall plugin");
    tx.chain(NFPROTO_INET, TABLE, ADMIN, None);
    tx.chain(
        NFPROTO_INET,
        TABLE,
        FORWARD,
        Some(("filter", HOOK_FORWARD, PRIO_FILTER)),
    );
    if stale.is_empty() {
        tx.rule(NFPROTO_INET, TABLE, FORWARD, &[nft::jump(ADMIN)], None);
    }
    for r in stale.iter().filter(|r| r.comment == container_id) {
        tx.delete_rule(NFPROTO_INET, TABLE, FORWARD, r.handle);
    }
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

/// The caller holds the lock.
pub fn add(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    let stale = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD)?;
    add_tx(plan, &stale).commit(&mut sock)
}

/// The DEL transaction, given the forward chain's rules and whether the
/// admin chain is empty: none when the container has no rules; the table
/// goes when only the admin jump is left and the admin chain is empty.
pub fn del_tx(plan: &Plan, rules: &[DumpedRule], admin_empty: bool) -> Option<Tx> {
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let mine: Vec<_> = rules.iter().filter(|r| r.comment == comment).collect();
    if mine.is_empty() {
        return None;
    }
    let mut tx = Tx::new();
    if admin_empty && rules.len() == mine.len() + 1 {
        tx.delete_table(NFPROTO_INET, TABLE);
    } else {
        for r in mine {
            tx.delete_rule(NFPROTO_INET, TABLE, FORWARD, r.handle);
        }
    }
    Some(tx)
}

/// Deletes the container's rules. The caller holds the lock.
pub fn del(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    let rules = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD)?;
    let comment = crate::netfilter::container_comment(&plan.container_id);
    if !rules.iter().any(|r| r.comment == comment) {
        return Ok(());
    }
    let admin_empty = nft::rules(&mut sock, NFPROTO_INET, TABLE, ADMIN)?.is_empty();
    match del_tx(plan, &rules, admin_empty) {
        Some(tx) => tx.commit(&mut sock),
        None => Ok(()),
    }
}

pub fn check(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let found = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD)?
        .iter()
        .filter(|r| r.comment == comment)
        .count();
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
mod tests {
    use super::*;

    #[test]
    fn accepted_groups_by_container() {
        let rule = |comment: &str, saddr: Option<&str>| DumpedRule {
            handle: 1,
            comment: comment.into(),
            jumps: Vec::new(),
            iifname: None,
            saddr: saddr.map(|s| s.parse().expect("ip")),
        };
        let rules = [
            rule("", None),
            rule("a", None),
            rule("a", Some("10.0.0.2")),
            rule("b", Some("10.0.0.3")),
            rule("a", Some("fd00::2")),
        ];
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert_eq!(
            accepted(&rules),
            vec![
                Accepted {
                    container_id: "a".into(),
                    addresses: vec![ip("10.0.0.2"), ip("fd00::2")],
                },
                Accepted {
                    container_id: "b".into(),
                    addresses: vec![ip("10.0.0.3")],
                },
            ]
        );
    }
}
