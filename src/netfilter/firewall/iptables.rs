//! The firewall's iptables form (table `filter`): `CNI-FORWARD` entered from
//! FORWARD, an admin chain for operators, per-address accept rules, and the
//! optional bridge isolation stages; the reference's names, comments and order.

use super::{IngressPolicy, Known, Plan, Remembered};
use crate::netfilter::iptables::{Batch, Flavour, Saved, jumps};
use crate::netfilter::{Error, Family, Result, by_family, xtnft};
use crate::quote::quoted;
use ipnet::IpNet;

pub const FORWARD_CHAIN: &str = "CNI-FORWARD";
pub(super) const FORWARD_COMMENT: &str = "CNI firewall plugin rules";
pub(super) const ADMIN_COMMENT: &str = "CNI firewall plugin admin overrides";
pub(super) const STAGE1: &str = "CNI-ISOLATION-STAGE-1";
pub(super) const STAGE2: &str = "CNI-ISOLATION-STAGE-2";

fn s(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_string()).collect()
}

/// The two accept rules of one container address (as a host prefix).
fn address_rules(ip: &IpNet) -> [Vec<String>; 2] {
    let host = host_prefix(ip);
    [
        s(&[
            "-d",
            &host,
            "-m",
            "conntrack",
            "--ctstate",
            "RELATED,ESTABLISHED",
            "-j",
            "ACCEPT",
        ]),
        s(&["-s", &host, "-j", "ACCEPT"]),
    ]
}

fn host_prefix(ip: &IpNet) -> String {
    let bits = if ip.addr().is_ipv4() { 32 } else { 128 };
    format!("{}/{bits}", ip.addr())
}

/// How iptables-save prints our address rules (to find them again).
pub(super) fn printed(ip: &IpNet) -> [String; 2] {
    let host = host_prefix(ip);
    [
        format!("-d {host} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"),
        format!("-s {host} -j ACCEPT"),
    ]
}

fn ensure_base(batch: &mut Batch, saved: &mut Saved, admin: &str) {
    batch.ensure_chain(saved, FORWARD_CHAIN);
    batch.ensure_chain(saved, admin);
    if !saved.jumps_to("FORWARD", FORWARD_CHAIN) {
        batch.insert(
            "FORWARD",
            1,
            &s(&[
                "-m",
                "comment",
                "--comment",
                FORWARD_COMMENT,
                "-j",
                FORWARD_CHAIN,
            ]),
        );
    }
    if !saved.jumps_to(FORWARD_CHAIN, admin) {
        batch.insert(
            FORWARD_CHAIN,
            1,
            &s(&["-m", "comment", "--comment", ADMIN_COMMENT, "-j", admin]),
        );
    }
}

/// Isolation stages for `bridge`, created once per bridge and never removed (as the reference).
fn ensure_isolation(batch: &mut Batch, saved: &mut Saved, policy: IngressPolicy, bridge: &str) {
    if policy == IngressPolicy::Open || bridge.is_empty() {
        return;
    }
    let comment = format!(
        "CNI firewall plugin rules (ingressPolicy: {})",
        policy.name()
    );
    batch.ensure_chain(saved, STAGE1);
    batch.ensure_chain(saved, STAGE2);
    if !saved.jumps_to("FORWARD", STAGE1) {
        batch.insert(
            "FORWARD",
            1,
            &s(&["-m", "comment", "--comment", &comment, "-j", STAGE1]),
        );
    }
    let i_br = format!("-i {bridge} ");
    let o_br = format!("-o {bridge} ");
    let has =
        |chain: &str, needle: &dyn Fn(&str) -> bool| saved.rules_in(chain, needle).next().is_some();
    if !has(STAGE1, &|r| {
        r.contains(&i_br) && r.contains(&format!("! -o {bridge} ")) && jumps(r, STAGE2)
    }) {
        batch.insert(
            STAGE1,
            1,
            &s(&[
                "-i",
                bridge,
                "!",
                "-o",
                bridge,
                "-m",
                "comment",
                "--comment",
                &comment,
                "-j",
                STAGE2,
            ]),
        );
    }
    if policy == IngressPolicy::Isolated
        && !has(STAGE1, &|r| {
            r.contains(&i_br) && r.contains(&o_br) && r.ends_with("-j DROP")
        })
    {
        batch.insert(
            STAGE1,
            1,
            &s(&[
                "-i",
                bridge,
                "-o",
                bridge,
                "-m",
                "comment",
                "--comment",
                &comment,
                "-j",
                "DROP",
            ]),
        );
    }
    if !has(STAGE2, &|r| r.starts_with(&o_br) && r.ends_with("-j DROP")) {
        batch.insert(
            STAGE2,
            1,
            &s(&[
                "-o",
                bridge,
                "-m",
                "comment",
                "--comment",
                &comment,
                "-j",
                "DROP",
            ]),
        );
    }
    for chain in [STAGE1, STAGE2] {
        let last_is_return = saved
            .rules
            .iter()
            .rev()
            .find(|(c, _)| c == chain)
            .is_some_and(|(_, r)| r == "-j RETURN");
        if !last_is_return {
            batch.append(chain, &s(&["-j", "RETURN"]));
        }
    }
}

/// The ADD batch of one family, from its saved `filter` table.
pub fn add_batch(plan: &Plan, family: Family, mine: &[&IpNet], saved: &Saved) -> Batch {
    let mut saved = saved.clone();
    let mut batch = Batch::new(family, "filter");
    ensure_base(&mut batch, &mut saved, &plan.admin_chain);
    ensure_isolation(&mut batch, &mut saved, plan.policy, &plan.bridge);
    for ip in mine {
        for (rule, text) in address_rules(ip).iter().zip(printed(ip)) {
            if saved
                .rules_in(FORWARD_CHAIN, |r| r == text)
                .next()
                .is_none()
            {
                batch.append(FORWARD_CHAIN, rule);
            }
        }
    }
    batch
}

/// ADD: accept the container's addresses in CNI-FORWARD (one restore per
/// family). The caller holds the lock.
pub fn add(flavour: Flavour, plan: &Plan) -> Result<()> {
    add_known(flavour, plan, &Known::default()).map(drop)
}

/// [`add`] given what is known of the attachment's earlier ADD; the handles
/// of the rules written over netlink.
pub fn add_known(flavour: Flavour, plan: &Plan, known: &Known) -> Result<Vec<Remembered>> {
    let mut remembered = Vec::new();
    for (family, mine) in by_family(&plan.addresses) {
        // iptables-nft: over netlink, no process (on failure nothing was
        // changed, and the restore below reports why).
        if xtnft::applies(flavour, family)
            && let Ok(handles) = super::xtnft::add_remembering(plan, family, &mine, known)
        {
            remembered.extend(handles);
            continue;
        }
        let saved = flavour.save(family, "filter")?;
        flavour.apply(&add_batch(plan, family, &mine, &saved))?;
    }
    Ok(remembered)
}

/// The isolation stages' batch of one family, from its saved `filter` table.
pub fn isolate_batch(plan: &Plan, family: Family, saved: &Saved) -> Batch {
    let mut saved = saved.clone();
    let mut batch = Batch::new(family, "filter");
    ensure_isolation(&mut batch, &mut saved, plan.policy, &plan.bridge);
    batch
}

/// The isolation stages alone, for the families of the plan's addresses:
/// what the reference writes with iptables whatever its backend (firewalld
/// included). The caller holds the lock.
pub fn isolate(flavour: Flavour, plan: &Plan) -> Result<()> {
    if plan.policy == IngressPolicy::Open {
        return Ok(());
    }
    for (family, _) in by_family(&plan.addresses) {
        if xtnft::applies(flavour, family) && super::xtnft::isolate(plan, family).is_ok() {
            continue;
        }
        let saved = flavour.save(family, "filter")?;
        flavour.apply(&isolate_batch(plan, family, &saved))?;
    }
    Ok(())
}

/// The DEL batch of one family, from its saved `filter` table.
pub fn del_batch(family: Family, mine: &[&IpNet], saved: &Saved) -> Batch {
    let mut batch = Batch::new(family, "filter");
    let ours: Vec<String> = mine.iter().flat_map(|ip| printed(ip)).collect();
    for spec in saved.rules_in(FORWARD_CHAIN, |r| ours.iter().any(|o| o == r)) {
        batch.delete_saved(FORWARD_CHAIN, spec);
    }
    batch
}

/// DEL: removes the address rules. CNI-FORWARD, the admin chain and their
/// jumps stay, as the reference leaves them: another implementation's ADD
/// (the reference's, one iptables call per rule) may be between creating
/// CNI-FORWARD and appending to it, with no lock of ours to tell. The caller
/// holds the lock.
pub fn del(flavour: Flavour, plan: &Plan) -> Result<()> {
    del_addresses(flavour, &plan.addresses)
}

/// The DEL batch of one family when the rules are taken to be there: each
/// deleted by its spec (the restore fails, and the table is read, if one is
/// not).
pub fn known_del_batch(family: Family, mine: &[&IpNet]) -> Batch {
    let mut batch = Batch::new(family, "filter");
    for ip in mine {
        for rule in address_rules(ip) {
            batch.delete(FORWARD_CHAIN, &rule);
        }
    }
    batch
}

/// The address rules of `addresses` removed, one restore per family (DEL's
/// of one container, GC's of every stale one). With iptables-nft over
/// netlink; else first by their specs, which needs no `iptables-save` when
/// they are all there (the common DEL), then from the saved table. The
/// caller holds the lock.
pub fn del_addresses(flavour: Flavour, addresses: &[IpNet]) -> Result<()> {
    del_known(flavour, addresses, &[])
}

/// [`del_addresses`] given the handles remembered at ADD (rules still at
/// them are deleted by handle, over iptables-nft, without reading the chain).
pub fn del_known(flavour: Flavour, addresses: &[IpNet], known: &[Remembered]) -> Result<()> {
    for (family, mine) in by_family(addresses) {
        if xtnft::applies(flavour, family)
            && super::xtnft::del_remembering(family, &mine, known).is_ok()
        {
            continue;
        }
        if flavour.apply(&known_del_batch(family, &mine)).is_ok() {
            continue;
        }
        let Some(saved) = flavour.save_existing(family, "filter")? else {
            continue;
        };
        flavour.apply(&del_batch(family, &mine, &saved))?;
    }
    Ok(())
}

/// CHECK: the chains and each address's rules are there (on iptables-nft,
/// found by the handles ADD remembered where they still hold them).
pub fn check(flavour: Flavour, plan: &Plan, known: &[Remembered]) -> Result<()> {
    let admin = plan.admin_chain.as_str();
    for (family, mine) in by_family(&plan.addresses) {
        if xtnft::applies(flavour, family) {
            match super::xtnft::check(plan, family, &mine, known) {
                Ok(()) => continue,
                Err(e @ Error::Mismatch { .. }) => return Err(e),
                Err(_) => {}
            }
        }
        let saved = flavour.save(family, "filter")?;
        if !saved.jumps_to("FORWARD", FORWARD_CHAIN) || !saved.jumps_to(FORWARD_CHAIN, admin) {
            return Err(Error::Mismatch {
                owner: "firewall",
                detail: format!("{FORWARD_CHAIN} is not set up"),
            });
        }
        for ip in mine {
            for text in printed(ip) {
                if saved
                    .rules_in(FORWARD_CHAIN, |r| r == text)
                    .next()
                    .is_none()
                {
                    return Err(Error::Mismatch {
                        owner: "firewall",
                        detail: format!("rule {text} is missing", text = quoted(&text)),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The container addresses (host prefixes) a saved `filter` table's
/// CNI-FORWARD accepts with either of the rules ADD writes, in table order.
pub fn accepted(saved: &Saved) -> Vec<IpNet> {
    let mut out: Vec<IpNet> = Vec::new();
    for spec in saved.rules_in(FORWARD_CHAIN, |_| true) {
        let words: Vec<&str> = spec.split_whitespace().collect();
        let Some(net) = words
            .get(1)
            .filter(|_| matches!(words.first(), Some(&"-d") | Some(&"-s")))
            .and_then(|w| w.parse::<IpNet>().ok())
        else {
            continue;
        };
        if net.prefix_len() == net.max_prefix_len()
            && printed(&net).iter().any(|p| p == spec)
            && !out.contains(&net)
        {
            out.push(net);
        }
    }
    out
}

/// What [`accepted`] finds in each family's `filter` table on this node, as
/// the flavour's tools show it (read only: no lock; a family without its
/// tools or table has none).
pub fn read(flavour: Flavour) -> Result<Vec<IpNet>> {
    let mut out = Vec::new();
    for family in [Family::V4, Family::V6] {
        if let Some(saved) = xtnft::saved(flavour, family, "filter")? {
            out.extend(accepted(&saved));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "iptables_tests.rs"]
mod tests;
