//! ipMasq's iptables rules where iptables is the nf_tables flavour: the
//! rules `iptables.rs` writes with `iptables-restore`, as data, written and
//! deleted in one nf_tables batch per family without any process. ADD looks
//! up the container's chain and POSTROUTING by name; DEL reads the
//! container's own chain and finds POSTROUTING's jumps to it by handle.

use super::Plan;
use crate::netfilter::xtnft::{self, Batch, Match, Rule, Target};
use crate::netfilter::{Family, Result, attachment_comment, chain_name, nft};
use ipnet::IpNet;
use std::net::IpAddr;

const TABLE: &str = "nat";
const POSTROUTING: &str = "POSTROUTING";

fn multicast(family: Family) -> IpNet {
    match family {
        Family::V4 => IpNet::V4(ipnet::Ipv4Net::new([224, 0, 0, 0].into(), 4).unwrap_or_default()),
        Family::V6 => IpNet::V6(
            ipnet::Ipv6Net::new([0xff00, 0, 0, 0, 0, 0, 0, 0].into(), 8).unwrap_or_default(),
        ),
    }
}

/// The container chain's rules: ACCEPT to each own network, MASQUERADE
/// the rest but multicast.
pub fn chain_rules(family: Family, mine: &[&IpNet], comment: &str) -> Vec<Rule> {
    let mut rules: Vec<Rule> = mine
        .iter()
        .map(|ip| {
            Rule::to(Target::Accept)
                .dst(ip.trunc(), false)
                .comment(comment)
        })
        .collect();
    rules.push(
        Rule::to(Target::Masquerade)
            .dst(multicast(family), true)
            .comment(comment),
    );
    rules
}

/// POSTROUTING's entry into the chain for one of the container's addresses.
pub fn jump_rule(host: IpAddr, chain: &str, comment: &str) -> Rule {
    let rule = Rule::to(Target::Jump(chain.to_string())).src(IpNet::from(host), false);
    if comment.is_empty() {
        rule
    } else {
        rule.with(Match::Comment(comment.to_string()))
    }
}

fn of_family(plan: &Plan, family: Family) -> Vec<&IpNet> {
    plan.addresses
        .iter()
        .filter(|ip| Family::of(ip.addr()) == family)
        .collect()
}

/// What an ADD found by name before writing.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// The container's chain exists (a repeated ADD).
    pub chain: bool,
    /// POSTROUTING exists (else it is created, with the table).
    pub postrouting: bool,
    /// The addresses POSTROUTING already jumps to the chain from.
    pub jumping: Vec<IpAddr>,
}

/// The ADD batch of one family: the chain created (or, there already,
/// rewritten) and a jump added for each address without one, as
/// `iptables::add_batch` writes them.
pub fn add_batch(plan: &Plan, family: Family, found: &Found) -> Result<Batch> {
    let chain = chain_name("", &plan.network, &plan.container_id);
    let comment = attachment_comment(&plan.network, &plan.container_id);
    let mine = of_family(plan, family);
    let mut batch = Batch::new(family, TABLE);
    if found.chain {
        // The chain is ours alone: rewritten whole.
        batch.flush(&chain);
    } else {
        // Fails the commit if another writer made it meanwhile.
        batch.new_chain(&chain);
    }
    for rule in chain_rules(family, &mine, &comment) {
        batch.append(&chain, &rule)?;
    }
    for ip in mine {
        if !found.jumping.contains(&ip.addr()) {
            // Made where iptables-nft makes a built-in chain: at its first rule.
            if !found.postrouting {
                batch.builtin_chain(POSTROUTING)?;
            }
            batch.append(POSTROUTING, &jump_rule(ip.addr(), &chain, &comment))?;
        }
    }
    Ok(batch)
}

/// ADD in one family: the container's chain and POSTROUTING looked up by
/// name; POSTROUTING is read only when the chain exists (a repeated ADD).
pub fn add(plan: &Plan, family: Family) -> Result<()> {
    let chain = chain_name("", &plan.network, &plan.container_id);
    let mut sock = xtnft::open()?;
    let mut found = Found {
        chain: xtnft::exists(&mut sock, family, TABLE, &chain)?,
        postrouting: xtnft::exists(&mut sock, family, TABLE, POSTROUTING)?,
        ..Found::default()
    };
    if found.chain {
        for rule in xtnft::chain_rules(&mut sock, family, TABLE, POSTROUTING)? {
            if rule.jumps_to(&chain) {
                found.jumping.extend(nft::saddr_match(&rule.attrs));
            }
        }
    }
    add_batch(plan, family, &found)?.commit(&mut sock)
}

/// The DEL batch of one family: POSTROUTING's rules `jumps` (by handle),
/// then the container's chain flushed and deleted.
pub fn del_batch(plan: &Plan, family: Family, jumps: &[u64]) -> Batch {
    let chain = chain_name("", &plan.network, &plan.container_id);
    let mut batch = Batch::new(family, TABLE);
    for handle in jumps {
        batch.delete_rule(POSTROUTING, *handle);
    }
    batch.flush(&chain);
    batch.delete_chain(&chain);
    batch
}

/// DEL in one family, by the chain's name: its own rules read, its jumps from
/// POSTROUTING found by handle (see `xtnft::jumps_into`). Nothing to do when
/// the chain does not exist (no jump to it can).
pub fn del(plan: &Plan, family: Family) -> Result<()> {
    let chain = chain_name("", &plan.network, &plan.container_id);
    let mut sock = xtnft::open()?;
    let Some(used) = xtnft::chain_use(&mut sock, family, TABLE, &chain)? else {
        return Ok(());
    };
    let own = xtnft::chain_rules(&mut sock, family, TABLE, &chain)?;
    let count = (used as usize).saturating_sub(own.len());
    let jumps = xtnft::jumps_into(&mut sock, family, TABLE, (POSTROUTING, &chain), &own, count)?;
    del_batch(plan, family, &jumps).commit(&mut sock)
}

fn mismatch(detail: String) -> crate::netfilter::Error {
    crate::netfilter::Error::Mismatch {
        owner: "ipMasq",
        detail,
    }
}

/// CHECK in one family, reading only the attachment's own objects: its
/// chain by name (its rules: an accept per own network, the masquerade),
/// and POSTROUTING's jumps to it by the chain's use count and handle (see
/// `xtnft::jumps_into`), never POSTROUTING itself when they are where ADD
/// puts them. The verdicts of `iptables::check_saved`, comments aside.
pub fn check(plan: &Plan, family: Family) -> Result<()> {
    let chain = chain_name("", &plan.network, &plan.container_id);
    let comment = attachment_comment(&plan.network, &plan.container_id);
    let mine = of_family(plan, family);
    let mut sock = xtnft::open()?;
    let Some(used) = xtnft::chain_use(&mut sock, family, TABLE, &chain)? else {
        return Err(mismatch(format!("chain {chain} is missing")));
    };
    let own = xtnft::chain_rules(&mut sock, family, TABLE, &chain)?;
    let wanted = chain_rules(family, &mine, &comment);
    for (ip, rule) in mine.iter().zip(&wanted) {
        if !own.iter().any(|r| r.is_but_comment(rule, family)) {
            return Err(mismatch(format!(
                "chain {chain} does not accept {}",
                ip.trunc()
            )));
        }
    }
    if let Some(masq) = wanted.last()
        && !own.iter().any(|r| r.is_but_comment(masq, family))
    {
        return Err(mismatch(format!("chain {chain} has no MASQUERADE rule")));
    }
    let count = (used as usize).saturating_sub(own.len());
    // A jump gone leaves the use count short: nothing more to read.
    let jumps = if count < mine.len() {
        Vec::new()
    } else {
        xtnft::jump_rules_into(&mut sock, family, TABLE, (POSTROUTING, &chain), &own, count)?
    };
    for ip in mine {
        let jump = jump_rule(ip.addr(), &chain, &comment);
        if !jumps.iter().any(|r| r.is_but_comment(&jump, family)) {
            return Err(mismatch(format!(
                "no POSTROUTING jump from {} to {chain}",
                ip.addr()
            )));
        }
    }
    Ok(())
}
