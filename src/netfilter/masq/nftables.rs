//! The nftables form of ipMasq (`inet cni_plugins_masquerade`), as the reference.

use super::Plan;
use crate::digest::sha512_hex;
use crate::netfilter::nft::{
    self, DumpedRule, Field, HOOK_POSTROUTING, NFPROTO_INET, PRIO_SRCNAT, Tx, match_addr,
    match_nfproto,
};
use crate::netfilter::{Error, Kept, Result};
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const TABLE: &str = "cni_plugins_masquerade";
const TABLE_COMMENT: &str = "Masquerading for plugins from github.com/containernetworking/plugins";
const CHECKS: &str = "masq_checks";
const POSTROUTING: &str = "postrouting";
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

/// The ADD transaction, given the rules now in `masq_checks`: the skeleton
/// ensured, the attachment's previous rules replaced.
pub fn add_tx(plan: &Plan, existing: &[DumpedRule]) -> Tx {
    let (network, ifname, container_id) = (&plan.network, &plan.ifname, &plan.container_id);
    let prefix = instance(network, ifname, container_id);
    let mut tx = Tx::new();
    tx.table(NFPROTO_INET, TABLE, TABLE_COMMENT);
    tx.chain(NFPROTO_INET, TABLE, CHECKS, None);
    tx.chain(
        NFPROTO_INET,
        TABLE,
        POSTROUTING,
        Some(("nat", HOOK_POSTROUTING, PRIO_SRCNAT)),
    );
    tx.flush(NFPROTO_INET, TABLE, POSTROUTING);
    for (v6, net) in MULTICAST {
        let mut exprs = match_nfproto(v6);
        exprs.extend(match_addr(Field::Daddr, net, true));
        exprs.push(nft::ret());
        tx.rule(NFPROTO_INET, TABLE, POSTROUTING, &exprs, None);
    }
    tx.rule(NFPROTO_INET, TABLE, POSTROUTING, &[nft::goto(CHECKS)], None);
    for stale in existing.iter().filter(|r| r.comment.starts_with(&prefix)) {
        tx.delete_rule(NFPROTO_INET, TABLE, CHECKS, stale.handle);
    }
    let text = comment(network, ifname, container_id);
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

/// The caller holds the lock.
pub fn add(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    let existing = nft::rules(&mut sock, NFPROTO_INET, TABLE, CHECKS)?;
    add_tx(plan, &existing).commit(&mut sock)
}

/// The DEL transaction, given the rules now in `masq_checks`: none when the
/// attachment has none; the table goes with the last of them.
pub fn del_tx(plan: &Plan, existing: &[DumpedRule]) -> Option<Tx> {
    let prefix = instance(&plan.network, &plan.ifname, &plan.container_id);
    removal(existing, |r| r.comment.starts_with(&prefix))
}

/// The transaction removing the rules of `existing` that `gone` picks: none
/// when it picks none, the whole table when it picks them all.
fn removal(existing: &[DumpedRule], gone: impl Fn(&DumpedRule) -> bool) -> Option<Tx> {
    let gone: Vec<_> = existing.iter().filter(|r| gone(r)).collect();
    if gone.is_empty() {
        return None;
    }
    let mut tx = Tx::new();
    if gone.len() == existing.len() {
        tx.delete_table(NFPROTO_INET, TABLE);
    } else {
        for r in gone {
            tx.delete_rule(NFPROTO_INET, TABLE, CHECKS, r.handle);
        }
    }
    Some(tx)
}

/// Deletes the attachment's rules. The caller holds the lock.
pub fn del(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    let existing = nft::rules(&mut sock, NFPROTO_INET, TABLE, CHECKS)?;
    match del_tx(plan, &existing) {
        Some(tx) => tx.commit(&mut sock),
        None => Ok(()),
    }
}

/// CHECK over the rules now in `masq_checks`: one of the attachment's per
/// address of the plan, as ADD writes them.
pub fn check_rules(plan: &Plan, existing: &[DumpedRule]) -> Result<()> {
    let prefix = instance(&plan.network, &plan.ifname, &plan.container_id);
    let found = existing
        .iter()
        .filter(|r| r.comment.starts_with(&prefix))
        .count();
    let wanted = plan.addresses.len();
    if found < wanted {
        return Err(Error::Mismatch {
            owner: "ipMasq",
            detail: format!("{found} of {wanted} rules found in table {TABLE}"),
        });
    }
    Ok(())
}

/// CHECK: read only, no lock.
pub fn check(plan: &Plan) -> Result<()> {
    let mut sock = nft::open()?;
    check_rules(plan, &nft::rules(&mut sock, NFPROTO_INET, TABLE, CHECKS)?)
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

/// The GC transaction, given the rules now in `masq_checks`: the rules of
/// `network`'s attachments not in `keep`; none when there
/// are none, and the table goes with the last of them (as a DEL).
pub fn gc_tx(network: &str, keep: &[Kept], existing: &[DumpedRule]) -> Option<Tx> {
    removal(existing, |r| stale(&r.comment, network, keep))
}

/// GC: removes the rules of `network`'s attachments not in `keep`. The caller holds the lock.
pub fn gc(network: &str, keep: &[Kept]) -> Result<()> {
    let mut sock = nft::open()?;
    let existing = nft::rules(&mut sock, NFPROTO_INET, TABLE, CHECKS)?;
    match gc_tx(network, keep, &existing) {
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
mod tests {
    use super::*;

    #[test]
    fn multicast_ranges_are_the_references() {
        let nets: Vec<(bool, String)> = MULTICAST
            .iter()
            .map(|(v6, net)| (*v6, net.to_string()))
            .collect();
        assert_eq!(
            nets,
            [(false, "224.0.0.0/4".into()), (true, "ff00::/8".into())]
        );
    }

    fn rule(handle: u64, comment: String) -> DumpedRule {
        DumpedRule {
            handle,
            comment,
            jumps: Vec::new(),
            iifname: None,
            saddr: None,
        }
    }

    #[test]
    fn check_counts_the_attachments_rules() {
        let p = Plan::new(
            "mynet",
            "ctr1",
            "eth0",
            &[
                "10.88.0.5/16".parse().expect("net"),
                "fd00::5/64".parse().expect("net"),
            ],
        );
        let mine = |h| rule(h, comment("mynet", "eth0", "ctr1"));
        check_rules(&p, &[mine(1), mine(2)]).expect("both");
        let e = check_rules(&p, &[mine(1), rule(2, comment("mynet", "eth0", "ctr2"))])
            .expect_err("one missing")
            .to_string();
        assert!(
            e.contains("1 of 2 rules found in table cni_plugins_masquerade"),
            "{e}"
        );
    }

    fn kept(cid: &str, ifname: &str) -> Kept {
        Kept {
            container_id: cid.into(),
            ifname: ifname.into(),
        }
    }

    /// Stale: this network, an attachment not kept, whatever the comment's cut.
    #[test]
    fn gc_tells_attachments_apart_by_their_instance() {
        let keep = [kept("ctr1", "eth0")];
        assert!(!stale(&comment("mynet", "eth0", "ctr1"), "mynet", &keep));
        assert!(stale(&comment("mynet", "eth0", "old"), "mynet", &keep));
        // The runtime lists every attachment it keeps: an unlisted interface
        // of a kept container is stale.
        assert!(stale(&comment("mynet", "eth1", "ctr1"), "mynet", &keep));
        assert!(!stale(&comment("other", "eth0", "old"), "mynet", &keep));
        let long = "c".repeat(200);
        let cut = comment("mynet", "eth0", &long);
        assert_eq!(cut.chars().count(), 128);
        assert!(!stale(&cut, "mynet", &[kept(&long, "eth0")]));
        assert!(stale(&cut, "mynet", &keep));
        // A network name long enough to cut off the interface and ID.
        let net = "n".repeat(100);
        let cut = comment(&net, "eth0", "old");
        assert!(!cut.contains(", id: "));
        assert!(stale(&cut, &net, &keep));
        assert!(!stale(&cut, &net, &[kept("old", "eth0")]));
        assert!(!stale("unreadable", "mynet", &keep));
        // An entry without ifname keeps all of its container's interfaces,
        // which the hashed comment cannot tell: nothing is collected.
        let no_ifname = [kept("ctr1", "")];
        assert!(!stale(
            &comment("mynet", "eth1", "ctr1"),
            "mynet",
            &no_ifname
        ));
        assert!(!stale(
            &comment("mynet", "eth0", "old"),
            "mynet",
            &no_ifname
        ));
    }

    #[test]
    fn masqueraded_names_whole_owners_and_their_sources() {
        let with = |comment: String, saddr: Option<&str>| DumpedRule {
            saddr: saddr.map(|s| s.parse().expect("ip")),
            ..rule(1, comment)
        };
        let long = "c".repeat(200);
        let rules = [
            with(comment("mynet", "eth0", "ctr1"), Some("10.88.0.5")),
            with(comment("my, if: net", "eth1", "ctr2"), Some("10.88.0.6")),
            with(comment("mynet", "eth0", "ctr1"), Some("fd00::5")),
            with(comment("mynet", "eth0", "ctr1"), Some("10.88.0.5")),
            // Cut: its owner cannot be told.
            with(comment("mynet", "eth0", &long), Some("10.88.0.7")),
            with("net: x, if: eth0, id: y".into(), None),
            with(
                "0000000000000000-0000000000000000, net: x, if: eth0, id: y".into(),
                None,
            ),
        ];
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert_eq!(
            masqueraded(&rules),
            vec![
                Masqueraded {
                    network: "mynet".into(),
                    container_id: "ctr1".into(),
                    ifname: "eth0".into(),
                    instance: instance("mynet", "eth0", "ctr1"),
                    sources: vec![ip("10.88.0.5"), ip("fd00::5")],
                },
                Masqueraded {
                    network: "my, if: net".into(),
                    container_id: "ctr2".into(),
                    ifname: "eth1".into(),
                    instance: instance("my, if: net", "eth1", "ctr2"),
                    sources: vec![ip("10.88.0.6")],
                },
            ]
        );
    }
}
