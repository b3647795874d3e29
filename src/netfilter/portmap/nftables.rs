//! portmap's nftables form (`ip cni_hostport` / `ip6 cni_hostport`), as the
//! reference, but for two choices: nft-syntax conditions gate the container's
//! own DNAT rules (the reference puts the last ADD's in the shared base
//! chains), and host-IP rules go to the head of `hostports`, where a wildcard
//! on the same port cannot shadow them.

use super::{Family, Plan, Target};
use crate::netfilter::nft::{
    self, Field, HOOK_OUTPUT, HOOK_POSTROUTING, HOOK_PREROUTING, PRIO_DSTNAT, PRIO_SRCNAT, Tx,
    match_addr, match_dport, match_fib_daddr_local, nfproto,
};
use crate::netfilter::{Error, Result};
use ipnet::IpNet;
use std::net::IpAddr;

pub const TABLE: &str = "cni_hostport";
const TABLE_COMMENT: &str = "CNI portmap plugin";
const HOSTPORTS: &str = "hostports";
const HOSTIP_HOSTPORTS: &str = "hostip_hostports";
const HOSTPORTS_ALL: &str = "hostports_all";
const MASQUERADING: &str = "masquerading";
/// The chains holding per-container rules (comment: `container_comment`).
const PER_CONTAINER: [&str; 3] = [HOSTPORTS, HOSTIP_HOSTPORTS, MASQUERADING];

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

/// The container's rules now in the per-container chains: (chain, handle).
fn existing(
    sock: &mut crate::netlink::nfnl::NfSocket,
    family: Family,
    container_id: &str,
) -> Result<(Vec<(&'static str, u64)>, usize)> {
    let comment = crate::netfilter::container_comment(container_id);
    let mut mine = Vec::new();
    let mut total = 0;
    for chain in PER_CONTAINER {
        let rules = nft::rules(sock, nfproto(family), TABLE, chain)?;
        total += rules.len();
        mine.extend(
            rules
                .iter()
                .filter(|r| r.comment == comment)
                .map(|r| (chain, r.handle)),
        );
    }
    Ok((mine, total))
}

/// One transaction per family: the skeleton ensured, the container's previous
/// rules (a repeated ADD) replaced by its current ones. The caller holds the lock.
pub fn add(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    for target in &plan.targets {
        let family = Family::of(target.address.addr());
        if plan.mappings_for(family).is_empty() {
            continue;
        }
        let have = nft::chains(&mut sock, nfproto(family), TABLE)?;
        let (previous, _) = existing(&mut sock, family, &plan.container_id)?;
        add_tx(plan, target, &have, &previous)?.commit(&mut sock)?;
    }
    Ok(())
}

/// The ADD transaction of the target's family, given the table's chains
/// (`have`) and the container's rules now in it (`previous`, chain and handle).
pub fn add_tx(
    plan: &Plan,
    target: &Target,
    have: &[String],
    previous: &[(&'static str, u64)],
) -> Result<Tx> {
    let family = Family::of(target.address.addr());
    let mappings = plan.mappings_for(family);
    // The configuration was validated at load; parsed again here so that a
    // condition can never be dropped on the way to the kernel.
    let conditions = nft::parse_conditions(plan.conditions(family), family == Family::V6)?;
    let f = nfproto(family);
    let comment = crate::netfilter::container_comment(&plan.container_id);
    let mut tx = Tx::new();
    // The skeleton (table, chains, jumps) is written once; rewriting base
    // chains on every ADD would re-register their hooks each time.
    if !have.iter().any(|c| c == HOSTPORTS_ALL) {
        tx.table(f, TABLE, TABLE_COMMENT);
        for chain in [HOSTPORTS, HOSTIP_HOSTPORTS, HOSTPORTS_ALL] {
            tx.chain(f, TABLE, chain, None);
        }
        tx.chain(
            f,
            TABLE,
            "prerouting",
            Some(("nat", HOOK_PREROUTING, PRIO_DSTNAT)),
        );
        tx.chain(f, TABLE, "output", Some(("nat", HOOK_OUTPUT, PRIO_DSTNAT)));
        tx.flush(f, TABLE, HOSTPORTS_ALL);
        tx.rule(
            f,
            TABLE,
            HOSTPORTS_ALL,
            &[nft::jump(HOSTIP_HOSTPORTS)],
            None,
        );
        tx.rule(f, TABLE, HOSTPORTS_ALL, &[nft::jump(HOSTPORTS)], None);
        for base in ["prerouting", "output"] {
            tx.flush(f, TABLE, base);
            let mut exprs = match_fib_daddr_local();
            exprs.push(nft::jump(HOSTPORTS_ALL));
            tx.rule(f, TABLE, base, &exprs, None);
        }
    }
    if plan.snat && !have.iter().any(|c| c == MASQUERADING) {
        tx.chain(
            f,
            TABLE,
            MASQUERADING,
            Some(("nat", HOOK_POSTROUTING, PRIO_SRCNAT)),
        );
    }
    // A second ADD of the same attachment leaves one set of rules.
    for &(chain, handle) in previous {
        tx.delete_rule(f, TABLE, chain, handle);
    }
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

/// The DEL transaction of a family, given the container's rules (chain and
/// handle) and how many rules the per-container chains hold: none without
/// rules of the container; the table goes with the last rule.
pub fn del_tx(family: Family, mine: &[(&'static str, u64)], total: usize) -> Option<Tx> {
    if mine.is_empty() {
        return None;
    }
    let f = nfproto(family);
    let mut tx = Tx::new();
    if mine.len() == total {
        tx.delete_table(f, TABLE);
    } else {
        for &(chain, handle) in mine {
            tx.delete_rule(f, TABLE, chain, handle);
        }
    }
    Some(tx)
}

/// Deletes the container's rules per family. The caller holds the lock.
pub fn del(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    for family in plan.del_families() {
        let (mine, total) = existing(&mut sock, family, &plan.container_id)?;
        if let Some(tx) = del_tx(family, &mine, total) {
            tx.commit(&mut sock)?;
        }
    }
    Ok(())
}

/// GC: the `stale` containers' rules deleted as DEL deletes one's, in one
/// transaction per family. The caller holds the lock.
pub fn gc(stale: &[String]) -> Result<()> {
    if stale.is_empty() {
        return Ok(());
    }
    let mut sock = nft::open()?;
    for family in [Family::V4, Family::V6] {
        let mut all = Vec::new();
        let mut total = 0;
        for id in stale {
            let (mine, in_chains) = existing(&mut sock, family, id)?;
            all.extend(mine);
            total = in_chains;
        }
        if let Some(tx) = del_tx(family, &all, total) {
            tx.commit(&mut sock)?;
        }
    }
    Ok(())
}

/// CHECK: a DNAT rule per mapping of the family (in `hostports`, or in
/// `hostip_hostports` for host-IP ones) and the
/// masquerade rules, as the reference counts them.
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
        let mut count = |chains: &[&str]| -> Result<usize> {
            let mut n = 0;
            for chain in chains {
                n += nft::rules(&mut sock, f, TABLE, chain)?
                    .iter()
                    .filter(|r| r.comment == comment)
                    .count();
            }
            Ok(n)
        };
        let found = count(&[HOSTPORTS, HOSTIP_HOSTPORTS])?;
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
            let found = count(&[MASQUERADING])?;
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
mod tests {
    use super::*;

    #[test]
    fn hostported_groups_by_container_without_localhost() {
        let rule = |comment: &str, saddr: Option<&str>| nft::DumpedRule {
            handle: 1,
            comment: comment.into(),
            jumps: Vec::new(),
            iifname: None,
            saddr: saddr.map(|s| s.parse().expect("ip")),
        };
        let rules = [
            rule("a", None),
            rule("b", Some("10.0.0.3")),
            rule("a", Some("10.0.0.2")),
            rule("a", Some("127.0.0.1")),
            rule("", Some("10.0.0.9")),
        ];
        let got = hostported(&rules);
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert_eq!(
            got,
            vec![
                Hostported {
                    container_id: "a".into(),
                    saddrs: vec![ip("10.0.0.2")],
                },
                Hostported {
                    container_id: "b".into(),
                    saddrs: vec![ip("10.0.0.3")],
                },
            ]
        );
    }
}
