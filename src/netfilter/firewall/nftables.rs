//! The firewall's nftables form (no reference one exists): table
//! `inet cni_firewall`, a forward chain jumping to an admin chain first, then
//! per-address accept rules commented with the container ID.

use crate::netfilter::nft::{
    self, Field, HOOK_FORWARD, NFPROTO_INET, PRIO_FILTER, Tx, match_addr,
    match_ct_established_related, match_nfproto,
};
use crate::netfilter::{Error, Result};
use ipnet::IpNet;

pub const TABLE: &str = "cni_firewall";
const FORWARD: &str = "forward";
const ADMIN: &str = "admin";

pub fn add(container_id: &str, ips: &[IpNet]) -> Result<()> {
    let mut sock = nft::open()?;
    let stale = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD)?;
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
    for ip in ips {
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
    tx.commit(&mut sock)
}

/// Deletes the container's rules; the table goes when only the admin jump
/// is left and the admin chain is empty.
pub fn del(container_id: &str) -> Result<()> {
    let mut sock = nft::open()?;
    let rules = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD)?;
    let mine: Vec<_> = rules.iter().filter(|r| r.comment == container_id).collect();
    if mine.is_empty() {
        return Ok(());
    }
    let admin_empty = nft::rules(&mut sock, NFPROTO_INET, TABLE, ADMIN)?.is_empty();
    let mut tx = Tx::new();
    if admin_empty && rules.len() == mine.len() + 1 {
        tx.delete_table(NFPROTO_INET, TABLE);
    } else {
        for r in mine {
            tx.delete_rule(NFPROTO_INET, TABLE, FORWARD, r.handle);
        }
    }
    tx.commit(&mut sock)
}

pub fn check(container_id: &str, ips: &[IpNet]) -> Result<()> {
    let mut sock = nft::open()?;
    let found = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD)?
        .iter()
        .filter(|r| r.comment == container_id)
        .count();
    if found != 2 * ips.len() {
        return Err(Error::Mismatch {
            owner: "firewall",
            detail: format!("{found} of {} rules found in table {TABLE}", 2 * ips.len()),
        });
    }
    Ok(())
}
