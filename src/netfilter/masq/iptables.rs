//! ipMasq's iptables form: per container, a `CNI-<hash>` chain in `nat` that
//! accepts traffic to its own network and masquerades the rest (not multicast),
//! entered from POSTROUTING by source address; the reference's names and comments.
//!
//! One `iptables-restore` per family, and no `iptables-save` in the common
//! cases: an ADD creates the chain with `-N`, which fails (and falls back to
//! reading the table) if it exists; with iptables-nft, the chain and its jumps
//! are read over nf_tables netlink, so a repeated ADD and a DEL need no save either.

use super::Plan;
use crate::netfilter::iptables::{Batch, Flavour, Saved, comment_container, jumps};
use crate::netfilter::{
    Error, Family, Result, attachment_comment, by_family, chain_name, each_parallel, go_quote, nft,
    xtnft,
};
use ipnet::IpNet;
use std::net::IpAddr;

fn multicast(family: Family) -> &'static str {
    match family {
        Family::V4 => "224.0.0.0/4",
        Family::V6 => "ff00::/8",
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_string()).collect()
}

/// What is known of the container's chain without `iptables-save`.
pub enum State {
    /// iptables-legacy, or netlink did not answer: nothing.
    Unread,
    /// nf_tables netlink says the chain does not exist (so no jump to it does).
    Absent,
    /// The chain exists; these are the `-s <host>` (and comment) of the
    /// POSTROUTING rules jumping to it.
    Present(Vec<(IpAddr, String)>),
    /// The chain exists and a jump to it is not of our form: read the table.
    Unclear,
}

/// `expected`: the hosts (and comment) whose jumps a DEL expects; when the
/// chain's use count is exactly theirs, POSTROUTING (a rule per container) is
/// not dumped: a jump that differs fails the restore, and the table is read.
fn state(
    flavour: Flavour,
    family: Family,
    chain: &str,
    expected: Option<(&[IpAddr], &str)>,
) -> State {
    if !flavour.is_nft_based(family) {
        return State::Unread;
    }
    let f = nft::nfproto(family);
    let Ok(mut sock) = nft::open() else {
        return State::Unread;
    };
    // Only POSTROUTING jumps to the container's chain.
    match nft::jumps_to(&mut sock, f, "nat", chain) {
        Ok(None) => return State::Absent,
        Ok(Some(0)) => return State::Present(Vec::new()),
        Ok(Some(used)) => {
            if let Some((hosts, comment)) = expected
                && !hosts.is_empty()
                && used as usize == hosts.len()
            {
                let known = hosts.iter().map(|h| (*h, comment.to_string()));
                return State::Present(known.collect());
            }
        }
        Err(_) => return State::Unread,
    }
    let Ok(rules) = nft::rules(&mut sock, f, "nat", "POSTROUTING") else {
        return State::Unclear;
    };
    let mut jumping = Vec::new();
    for rule in rules
        .into_iter()
        .filter(|r| r.jumps.iter().any(|j| j == chain))
    {
        match rule.saddr {
            Some(host) if rule.jumps.len() == 1 => jumping.push((host, rule.comment)),
            _ => return State::Unclear,
        }
    }
    State::Present(jumping)
}

/// The chain's rules: ACCEPT to each own network, MASQUERADE the rest.
fn chain_rules(batch: &mut Batch, family: Family, chain: &str, mine: &[&IpNet], comment: &str) {
    for ip in mine {
        batch.append(
            chain,
            &strings(&[
                "-d",
                &ip.to_string(),
                "-j",
                "ACCEPT",
                "-m",
                "comment",
                "--comment",
                comment,
            ]),
        );
    }
    batch.append(
        chain,
        &strings(&[
            "!",
            "-d",
            multicast(family),
            "-j",
            "MASQUERADE",
            "-m",
            "comment",
            "--comment",
            comment,
        ]),
    );
}

/// POSTROUTING's entry into the chain for one of the container's addresses.
fn jump_rule(host: IpAddr, chain: &str, comment: &str) -> Vec<String> {
    let mut rule = strings(&["-s", &host.to_string(), "-j", chain]);
    if !comment.is_empty() {
        rule.extend(strings(&["-m", "comment", "--comment", comment]));
    }
    rule
}

/// The batch of an ADD whose state is known without a save, if it is.
fn quick_add(
    family: Family,
    chain: &str,
    mine: &[&IpNet],
    comment: &str,
    state: &State,
) -> Option<Batch> {
    let mut batch = Batch::new(family, "nat");
    let jumping: Vec<IpAddr> = match state {
        // `-N` fails if the chain exists after all (legacy, or made meanwhile).
        State::Unread | State::Absent => {
            batch.new_chain(chain);
            Vec::new()
        }
        // The chain is ours alone: declaring it rewrites it whole.
        State::Present(known) => {
            batch.reset_chain(chain);
            known.iter().map(|(host, _)| *host).collect()
        }
        State::Unclear => return None,
    };
    chain_rules(&mut batch, family, chain, mine, comment);
    for ip in mine {
        if !jumping.contains(&ip.addr()) {
            batch.append("POSTROUTING", &jump_rule(ip.addr(), chain, comment));
        }
    }
    Some(batch)
}

/// The chain and comment of the plan's attachment.
fn names(plan: &Plan) -> (String, String) {
    (
        chain_name("", &plan.network, &plan.container_id),
        attachment_comment(&plan.network, &plan.container_id),
    )
}

fn of_family(plan: &Plan, family: Family) -> Vec<&IpNet> {
    plan.addresses
        .iter()
        .filter(|ip| Family::of(ip.addr()) == family)
        .collect()
}

/// The batch of an ADD from what nf_tables netlink showed, if that is enough.
pub fn known_add_batch(plan: &Plan, family: Family, state: &State) -> Option<Batch> {
    let (chain, comment) = names(plan);
    quick_add(family, &chain, &of_family(plan, family), &comment, state)
}

/// The batch of an ADD from the family's saved `nat` table: the chain
/// rewritten whole, a jump added for each address without one.
pub fn add_batch(plan: &Plan, family: Family, saved: &Saved) -> Batch {
    let (chain, comment) = names(plan);
    let mine = of_family(plan, family);
    let mut batch = Batch::new(family, "nat");
    batch.reset_chain(&chain);
    chain_rules(&mut batch, family, &chain, &mine, &comment);
    for ip in mine {
        let host = ip.addr();
        let bits = if family == Family::V4 { 32 } else { 128 };
        // Append-unique: a repeated ADD adds no second jump.
        let exists = saved
            .rules_in("POSTROUTING", |s| {
                jumps(s, &chain) && s.contains(&format!("-s {host}/{bits} "))
            })
            .next()
            .is_some();
        if !exists {
            batch.append("POSTROUTING", &jump_rule(host, &chain, &comment));
        }
    }
    batch
}

/// Masquerades traffic of the plan's addresses (as allocated) with the
/// flavour's tools. Needs no lock (see `masq::add`).
pub fn add(flavour: Flavour, plan: &Plan) -> Result<()> {
    let (chain, _) = names(plan);
    each_parallel(&by_family(&plan.addresses), |(family, _)| {
        let family = *family;
        // iptables-nft: the same rules over netlink, no process (on failure
        // nothing was changed, and the restore below reports why).
        if xtnft::applies(flavour, family) && super::xtnft::add(plan, family).is_ok() {
            return Ok(());
        }
        let state = state(flavour, family, &chain, None);
        // The restore is atomic: if the state was not as read, fall back.
        if let Some(batch) = known_add_batch(plan, family, &state)
            && flavour.apply(&batch).is_ok()
        {
            return Ok(());
        }
        let saved = flavour.save(family, "nat")?;
        flavour.apply(&add_batch(plan, family, &saved))
    })
}

/// The batch of a DEL when nf_tables netlink showed the chain and its jumps:
/// each jump deleted by its spec (the restore fails, and the table is read,
/// if one changed meanwhile).
pub fn quick_del(plan: &Plan, family: Family, jumping: &[(IpAddr, String)]) -> Batch {
    let (chain, _) = names(plan);
    let mut batch = Batch::new(family, "nat");
    for (host, comment) in jumping {
        batch.delete("POSTROUTING", &jump_rule(*host, &chain, comment));
    }
    batch.flush_and_delete_chain(&chain);
    batch
}

/// The batch of a DEL from the family's saved `nat` table.
pub fn del_batch(plan: &Plan, family: Family, saved: &Saved) -> Batch {
    let (chain, _) = names(plan);
    let mut batch = Batch::new(family, "nat");
    for spec in saved.rules_in("POSTROUTING", |s| jumps(s, &chain)) {
        batch.delete_saved("POSTROUTING", spec);
    }
    if saved.has_chain(&chain) {
        batch.flush_and_delete_chain(&chain);
    }
    batch
}

/// Removes the container's masquerading in every family, found by chain name,
/// so it works without the container's addresses (netns already gone). The
/// caller holds the lock.
pub fn del(flavour: Flavour, plan: &Plan) -> Result<()> {
    let (chain, comment) = names(plan);
    each_parallel(&[Family::V4, Family::V6], |&family| {
        if xtnft::applies(flavour, family) && super::xtnft::del(plan, family).is_ok() {
            return Ok(());
        }
        let hosts: Vec<IpAddr> = of_family(plan, family).iter().map(|ip| ip.addr()).collect();
        match state(flavour, family, &chain, Some((&hosts, &comment))) {
            State::Absent => return Ok(()),
            State::Present(jumping) => {
                if flavour.apply(&quick_del(plan, family, &jumping)).is_ok() {
                    return Ok(());
                }
            }
            State::Unread | State::Unclear => {}
        }
        let Some(saved) = flavour.save_existing(family, "nat")? else {
            // No ip6tables here: nothing of that family can exist.
            return Ok(());
        };
        flavour.apply(&del_batch(plan, family, &saved))
    })
}

/// The value of `flag` in a printed rule spec, and whether `!` negates it.
fn option<'a>(spec: &'a str, flag: &str) -> Option<(bool, &'a str)> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let at = words.iter().position(|w| *w == flag)?;
    let negated = at > 0 && words[at - 1] == "!";
    words.get(at + 1).map(|v| (negated, *v))
}

fn mismatch(detail: String) -> Error {
    Error::Mismatch {
        owner: "ipMasq",
        detail,
    }
}

/// An address option's value as a network, whether printed by iptables-save
/// (`10.0.0.5/32`, `10.0.0.0/16`) or as ADD wrote it (`10.0.0.5`, `10.0.0.5/16`).
fn net_value(spec: &str, flag: &str) -> Option<(bool, IpNet)> {
    let (negated, v) = option(spec, flag)?;
    let net = v
        .parse::<IpNet>()
        .ok()
        .or_else(|| v.parse::<IpAddr>().ok().map(IpNet::from))?;
    Some((negated, net.trunc()))
}

/// CHECK over the family's saved `nat` table: the attachment's chain accepts
/// each own network and masquerades the rest, and POSTROUTING jumps to it
/// from each of the plan's addresses.
pub fn check_saved(plan: &Plan, family: Family, saved: &Saved) -> Result<()> {
    let (chain, _) = names(plan);
    if !saved.has_chain(&chain) {
        return Err(mismatch(format!("chain {chain} is missing")));
    }
    let has =
        |chain: &str, pred: &dyn Fn(&str) -> bool| saved.rules_in(chain, pred).next().is_some();
    let target = |s: &str, t: &str| option(s, "-j") == Some((false, t));
    for ip in of_family(plan, family) {
        let own = ip.trunc();
        if !has(&chain, &|s| {
            net_value(s, "-d") == Some((false, own)) && target(s, "ACCEPT")
        }) {
            return Err(mismatch(format!("chain {chain} does not accept {own}")));
        }
        let host = IpNet::from(ip.addr());
        if !has("POSTROUTING", &|s| {
            jumps(s, &chain) && net_value(s, "-s") == Some((false, host))
        }) {
            return Err(mismatch(format!(
                "no POSTROUTING jump from {} to {chain}",
                ip.addr()
            )));
        }
    }
    let multicast: Option<IpNet> = multicast(family).parse().ok();
    if !has(&chain, &|s| {
        net_value(s, "-d").map(|(n, v)| (n, Some(v))) == Some((true, multicast))
            && target(s, "MASQUERADE")
    }) {
        return Err(mismatch(format!("chain {chain} has no MASQUERADE rule")));
    }
    Ok(())
}

/// CHECK: what ADD wrote, in each family of the plan's addresses (read
/// only). With iptables-nft, over netlink and reading only the attachment's
/// own objects; the table is saved only when netlink did not answer.
pub fn check(flavour: Flavour, plan: &Plan) -> Result<()> {
    for (family, _) in by_family(&plan.addresses) {
        if xtnft::applies(flavour, family) {
            match super::xtnft::check(plan, family) {
                Ok(()) => continue,
                Err(e @ Error::Mismatch { .. }) => return Err(e),
                Err(_) => {}
            }
        }
        check_saved(plan, family, &flavour.save(family, "nat")?)?;
    }
    Ok(())
}

/// Whether `chain` has the form of the reference's ipMasq chains: `CNI-` and 24 hex digits.
fn masq_chain(chain: &str) -> bool {
    chain.strip_prefix("CNI-").is_some_and(|hash| {
        hash.len() == 24
            && hash
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

/// The GC batch of one family from its saved `nat` table: the chains and
/// POSTROUTING jumps of `network`'s attachments whose container is not in
/// `keep`, found by the `name: "<net>" id: "<cid>"` comment of a rule in (or
/// jumping to) a chain that is the one the reference names for them.
pub fn gc_batch(network: &str, keep: &[String], family: Family, saved: &Saved) -> Batch {
    let prefix = format!("name: {} id: ", go_quote(network));
    let mut stale: Vec<String> = Vec::new();
    for (chain, spec) in &saved.rules {
        let target = match chain.as_str() {
            "POSTROUTING" => option(spec, "-j").map_or("", |(_, t)| t),
            other => other,
        };
        if !masq_chain(target) {
            continue;
        }
        let Some(id) = comment_container(spec, &prefix) else {
            continue;
        };
        if chain_name("", network, &id) == target && !keep.contains(&id) && !stale.contains(&id) {
            stale.push(id);
        }
    }
    let mut batch = Batch::new(family, "nat");
    for id in stale {
        if shared(saved, &chain_name("", network, &id), &prefix, &id) {
            continue;
        }
        batch.extend(del_batch(&Plan::new(network, &id, "", &[]), family, saved));
    }
    batch
}

/// Whether a rule in `chain`, or a POSTROUTING jump to it, is of another
/// attachment: network and container names run together in the hash, so
/// network `a` with container `bc` shares its chain with `ab` and `c`.
/// GC leaves such a chain alone (a DEL removes it, as the reference's).
fn shared(saved: &Saved, chain: &str, prefix: &str, id: &str) -> bool {
    saved.rules.iter().any(|(c, spec)| {
        let about = c == chain || (c == "POSTROUTING" && jumps(spec, chain));
        about && comment_container(spec, prefix).as_deref() != Some(id)
    })
}

/// GC: removes the masquerading of `network`'s attachments whose container
/// is not in `keep`, one restore per family. The caller holds the lock.
pub fn gc(flavour: Flavour, network: &str, keep: &[String]) -> Result<()> {
    each_parallel(&[Family::V4, Family::V6], |&family| {
        let Some(saved) = xtnft::saved(flavour, family, "nat")? else {
            return Ok(());
        };
        flavour.apply(&gc_batch(network, keep, family, &saved))
    })
}

/// One attachment's masquerading as read from a saved `nat` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Masqueraded {
    pub network: String,
    pub container_id: String,
    pub chain: String,
    /// The sources POSTROUTING sends into the chain (the container's addresses).
    pub sources: Vec<IpAddr>,
}

/// The network and container of a saved rule's `name: "<net>" id: "<cid>"` comment.
fn comment_owner(spec: &str) -> Option<(String, String)> {
    const START: &str = "--comment \"name: \\\"";
    let rest = &spec[spec.find(START)? + START.len()..];
    let (network, rest) = rest.split_once("\\\" id: \\\"")?;
    let (id, _) = rest.split_once("\\\"")?;
    Some((network.to_string(), id.to_string()))
}

/// Every attachment's masquerading in a saved `nat` table: a `CNI-<hash>`
/// chain whose rules or POSTROUTING jumps carry a comment naming the
/// network and container the chain's name is the hash of.
pub fn masqueraded(saved: &Saved) -> Vec<Masqueraded> {
    let mut out: Vec<Masqueraded> = Vec::new();
    for (chain, spec) in &saved.rules {
        let target = match chain.as_str() {
            "POSTROUTING" => option(spec, "-j").map_or("", |(_, t)| t),
            other => other,
        };
        if !masq_chain(target) {
            continue;
        }
        let Some((network, id)) = comment_owner(spec) else {
            continue;
        };
        if chain_name("", &network, &id) != target {
            continue;
        }
        let source = (chain == "POSTROUTING")
            .then(|| net_value(spec, "-s").map(|(_, n)| n.addr()))
            .flatten();
        let at = match out
            .iter()
            .position(|m| m.network == network && m.container_id == id)
        {
            Some(at) => at,
            None => {
                out.push(Masqueraded {
                    network,
                    container_id: id,
                    chain: target.to_string(),
                    sources: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[at].sources.extend(source);
    }
    out
}

/// What [`masqueraded`] finds in each family's `nat` table on this node, as
/// the flavour's tools show it (read only: no lock; a family without its
/// tools or table has none).
pub fn read(flavour: Flavour) -> Result<Vec<(Family, Masqueraded)>> {
    let mut out = Vec::new();
    for family in [Family::V4, Family::V6] {
        // Another nftables user's nat table: no plugin writes there, and no
        // iptables-save can show it.
        if flavour.nat_foreign(family) {
            continue;
        }
        if let Some(saved) = xtnft::saved(flavour, family, "nat")? {
            out.extend(masqueraded(&saved).into_iter().map(|m| (family, m)));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "iptables_tests.rs"]
mod tests;
