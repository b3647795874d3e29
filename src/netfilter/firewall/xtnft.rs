//! The firewall's iptables rules where iptables is the nf_tables flavour:
//! the rules `iptables.rs` writes with `iptables-restore` (CNI-FORWARD, the
//! admin chain, the isolation stages, two accept rules per address), as data,
//! in one nf_tables batch per family without any process and without
//! `iptables-save`. The address rules live in the shared CNI-FORWARD (they
//! name no chain of their own), so ADD, DEL and CHECK read that one chain by
//! name; FORWARD's jump to it is known by CNI-FORWARD's use count, never by
//! reading FORWARD; the isolation stages (a few rules per bridge) are read
//! when the policy needs them.

use super::iptables::{ADMIN_COMMENT, FORWARD_CHAIN, FORWARD_COMMENT, STAGE1, STAGE2, printed};
use super::{IngressPolicy, Known, Plan, Remembered};
use crate::netfilter::xtnft::{self, Batch, Dumped, Match, Rule, Target};
use crate::netfilter::{Error, Family, Result};
use crate::netlink::nfnl::NfSocket;
use crate::quote::quoted;
use ipnet::IpNet;

const TABLE: &str = "filter";
const FORWARD: &str = "FORWARD";

/// The two accept rules of one container address (as a host prefix).
pub fn address_rules(ip: &IpNet) -> [Rule; 2] {
    let host = IpNet::from(ip.addr());
    [
        Rule::to(Target::Accept)
            .dst(host, false)
            .with(Match::RelatedEstablished),
        Rule::to(Target::Accept).src(host, false),
    ]
}

fn jump(chain: &str, comment: &str) -> Rule {
    Rule::to(Target::Jump(chain.to_string())).comment(comment)
}

/// A chain as read: None when it does not exist.
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// Its rules, in order.
    pub rules: Vec<Dumped>,
    /// Rules elsewhere that jump to it (its use count less its own rules).
    pub jumped: bool,
}

/// What an ADD (or CHECK) found by name before writing.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// FORWARD exists (else it is created, with the table).
    pub forward: bool,
    pub cni_forward: Option<Read>,
    pub admin: bool,
    /// The isolation stages, when the policy needs them.
    pub stages: [Option<Read>; 2],
}

fn has(read: &Option<Read>, family: Family, rule: &Rule) -> bool {
    read.as_ref()
        .is_some_and(|r| r.rules.iter().any(|d| d.is(rule, family)))
}

fn has_but_comment(read: &Option<Read>, family: Family, rule: &Rule) -> bool {
    read.as_ref()
        .is_some_and(|r| r.rules.iter().any(|d| d.is_but_comment(rule, family)))
}

/// The isolation stages for the plan's bridge where missing (as
/// `iptables::ensure_isolation`: rules recognised whatever their comment).
fn isolation(batch: &mut Batch, plan: &Plan, family: Family, found: &Found) -> Result<()> {
    let bridge = plan.bridge.as_str();
    if plan.policy == IngressPolicy::Open || bridge.is_empty() {
        return Ok(());
    }
    let comment = format!(
        "CNI firewall plugin rules (ingressPolicy: {})",
        plan.policy.name()
    );
    let [one, two] = &found.stages;
    for (read, chain) in [(one, STAGE1), (two, STAGE2)] {
        if read.is_none() {
            batch.new_chain(chain);
        }
    }
    if !one.as_ref().is_some_and(|r| r.jumped) {
        if !found.forward {
            batch.builtin_chain(FORWARD)?;
        }
        batch.insert_first(FORWARD, &jump(STAGE1, &comment))?;
    }
    let leave = Rule::to(Target::Jump(STAGE2.into()))
        .in_iface(bridge, false)
        .out_iface(bridge, true)
        .comment(&comment);
    if !has_but_comment(one, family, &leave) {
        batch.insert_first(STAGE1, &leave)?;
    }
    let within = Rule::to(Target::Drop)
        .in_iface(bridge, false)
        .out_iface(bridge, false)
        .comment(&comment);
    if plan.policy == IngressPolicy::Isolated && !has_but_comment(one, family, &within) {
        batch.insert_first(STAGE1, &within)?;
    }
    let enter = Rule::to(Target::Drop)
        .out_iface(bridge, false)
        .comment(&comment);
    if !has_but_comment(two, family, &enter) {
        batch.insert_first(STAGE2, &enter)?;
    }
    let ret = Rule::to(Target::Return);
    for (read, chain) in [(one, STAGE1), (two, STAGE2)] {
        let last_returns = read
            .as_ref()
            .and_then(|r| r.rules.last())
            .is_some_and(|d| d.is(&ret, family));
        if !last_returns {
            batch.append(chain, &ret)?;
        }
    }
    Ok(())
}

/// The ADD batch of one family: CNI-FORWARD, the admin chain and their jumps
/// where missing, the isolation stages, each address's rules unless there.
pub fn add_batch(plan: &Plan, family: Family, mine: &[&IpNet], found: &Found) -> Result<Batch> {
    let admin = plan.admin_chain.as_str();
    let admin_jumped = found
        .cni_forward
        .as_ref()
        .is_some_and(|r| r.rules.iter().any(|d| d.jumps_to(admin)));
    let there = |_: &IpNet, _: usize, rule: &Rule| held(&found.cni_forward, family, rule);
    Ok(build(plan, family, mine, found, admin_jumped, &there)?.0)
}

/// Where an ADD appended each address's two rules: the indices of their
/// messages in its batch (None: the rule was there, with its handle if known).
type Appended = Vec<(IpNet, [std::result::Result<usize, Option<u64>>; 2])>;

/// The handle of the rule of CNI-FORWARD (as read) that is `rule`.
fn held(read: &Option<Read>, family: Family, rule: &Rule) -> Option<Option<u64>> {
    read.as_ref()
        .and_then(|r| r.rules.iter().find(|d| d.is(rule, family)))
        .map(|d| Some(d.handle))
}

/// Whether an address's rule (given the address and the rule's index among
/// its two) is there: Some, with its handle if known.
type There<'a> = dyn Fn(&IpNet, usize, &Rule) -> Option<Option<u64>> + 'a;

/// [`add_batch`] given whether CNI-FORWARD jumps to the admin chain and
/// which address rules are there.
fn build(
    plan: &Plan,
    family: Family,
    mine: &[&IpNet],
    found: &Found,
    admin_jumped: bool,
    there: &There,
) -> Result<(Batch, Appended)> {
    let admin = plan.admin_chain.as_str();
    let mut batch = Batch::new(family, TABLE);
    let cni = &found.cni_forward;
    if cni.is_none() {
        batch.new_chain(FORWARD_CHAIN);
    }
    if !found.admin {
        batch.new_chain(admin);
    }
    if !cni.as_ref().is_some_and(|r| r.jumped) {
        if !found.forward {
            batch.builtin_chain(FORWARD)?;
        }
        batch.insert_first(FORWARD, &jump(FORWARD_CHAIN, FORWARD_COMMENT))?;
    }
    if !admin_jumped {
        batch.insert_first(FORWARD_CHAIN, &jump(admin, ADMIN_COMMENT))?;
    }
    isolation(&mut batch, plan, family, found)?;
    let mut appended = Vec::new();
    for ip in mine {
        let mut at = [Err(None), Err(None)];
        for (i, (slot, rule)) in at.iter_mut().zip(address_rules(ip)).enumerate() {
            *slot = match there(ip, i, &rule) {
                Some(handle) => Err(handle),
                None => {
                    let index = batch.len();
                    batch.append(FORWARD_CHAIN, &rule)?;
                    Ok(index)
                }
            };
        }
        appended.push((**ip, at));
    }
    Ok((batch, appended))
}

/// Whether FORWARD (a rule or two per writer, none per pod) jumps to
/// CNI-FORWARD.
fn forward_jumps_to_cni(sock: &mut NfSocket, family: Family) -> Result<bool> {
    Ok(xtnft::chain_rules(sock, family, TABLE, FORWARD)?
        .iter()
        .any(|d| d.jumps_to(FORWARD_CHAIN)))
}

/// A chain's rules and whether anything jumps to it; None when absent.
fn read(sock: &mut NfSocket, family: Family, chain: &str) -> Result<Option<Read>> {
    let Some(used) = xtnft::chain_use(sock, family, TABLE, chain)? else {
        return Ok(None);
    };
    let rules = xtnft::chain_rules(sock, family, TABLE, chain)?;
    let jumped = used as usize > rules.len();
    Ok(Some(Read { rules, jumped }))
}

fn find(sock: &mut NfSocket, plan: &Plan, family: Family, stages: bool) -> Result<Found> {
    let mut found = Found {
        forward: xtnft::exists(sock, family, TABLE, FORWARD)?,
        cni_forward: read(sock, family, FORWARD_CHAIN)?,
        admin: xtnft::exists(sock, family, TABLE, &plan.admin_chain)?,
        ..Found::default()
    };
    if stages && plan.policy != IngressPolicy::Open && !plan.bridge.is_empty() {
        found.stages = [read(sock, family, STAGE1)?, read(sock, family, STAGE2)?];
    }
    Ok(found)
}

/// ADD in one family.
pub fn add(plan: &Plan, family: Family, mine: &[&IpNet]) -> Result<()> {
    let mut sock = xtnft::open()?;
    let found = find(&mut sock, plan, family, true)?;
    add_batch(plan, family, mine, &found)?.commit(&mut sock)
}

/// The isolation stages alone in one family (the firewalld target's).
pub fn isolate(plan: &Plan, family: Family) -> Result<()> {
    let mut sock = xtnft::open()?;
    let found = Found {
        forward: xtnft::exists(&mut sock, family, TABLE, FORWARD)?,
        stages: [
            read(&mut sock, family, STAGE1)?,
            read(&mut sock, family, STAGE2)?,
        ],
        ..Found::default()
    };
    let mut batch = Batch::new(family, TABLE);
    isolation(&mut batch, plan, family, &found)?;
    batch.commit(&mut sock)
}

/// The handles of CNI-FORWARD's rules that are an address rule of `mine`.
pub fn del_handles(rules: &[Dumped], family: Family, mine: &[&IpNet]) -> Vec<u64> {
    let ours: Vec<Rule> = mine.iter().flat_map(|ip| address_rules(ip)).collect();
    rules
        .iter()
        .filter(|d| ours.iter().any(|r| d.is(r, family)))
        .map(|d| d.handle)
        .collect()
}

/// DEL of `mine` (one family's addresses): their rules, wherever in
/// CNI-FORWARD, deleted by handle; the chains and jumps stay.
pub fn del(family: Family, mine: &[&IpNet]) -> Result<()> {
    let mut sock = xtnft::open()?;
    let rules = xtnft::chain_rules(&mut sock, family, TABLE, FORWARD_CHAIN)?;
    let mut batch = Batch::new(family, TABLE);
    for handle in del_handles(&rules, family, mine) {
        batch.delete_rule(FORWARD_CHAIN, handle);
    }
    batch.commit(&mut sock)
}

/// The remembered handles of `ip`'s two rules, when CNI-FORWARD still holds
/// them there (a GET of each, no dump).
fn at_handles(
    sock: &mut NfSocket,
    family: Family,
    ip: &IpNet,
    known: &[Remembered],
) -> Result<Option<[u64; 2]>> {
    let Some((_, handles)) = known.iter().find(|(addr, _)| *addr == ip.addr()) else {
        return Ok(None);
    };
    for (rule, handle) in address_rules(ip).iter().zip(handles) {
        match xtnft::rule_at(sock, family, TABLE, FORWARD_CHAIN, *handle)? {
            Some(d) if d.is(rule, family) => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(*handles))
}

/// ADD in one family reading nothing that grows with the node's pods:
/// chains by name, FORWARD (a rule or two per writer, none per pod) for its
/// jump to CNI-FORWARD, the admin chain's use count less its own rules for
/// the jump to it (a jump to it from elsewhere counts too), the isolation
/// stages (a few rules per bridge), and the address rules at their
/// remembered handles. CNI-FORWARD itself is read only for an attachment
/// that is not `known.fresh` (a repeated ADD, or one of unknown provenance)
/// whose rules are not at their handles. The handles of `mine`'s rules, as
/// the kernel echoes them, are returned to be remembered.
pub fn add_remembering(
    plan: &Plan,
    family: Family,
    mine: &[&IpNet],
    known: &Known,
) -> Result<Vec<Remembered>> {
    let mut sock = xtnft::open()?;
    let s = &mut sock;
    let admin = plan.admin_chain.as_str();
    let forward = xtnft::exists(s, family, TABLE, FORWARD)?;
    let cni = xtnft::chain_use(s, family, TABLE, FORWARD_CHAIN)?.is_some();
    let mut hits = Vec::new();
    if cni {
        for ip in mine {
            if let Some(h) = at_handles(s, family, ip, &known.handles)? {
                hits.push((ip.addr(), h));
            }
        }
    }
    let dumped = if cni && !known.fresh && hits.len() < mine.len() {
        Some(xtnft::chain_rules(s, family, TABLE, FORWARD_CHAIN)?)
    } else {
        None
    };
    let jumped = cni && forward && forward_jumps_to_cni(s, family)?;
    let admin_use = xtnft::chain_use(s, family, TABLE, admin)?;
    let admin_jumped = match (&dumped, admin_use) {
        (Some(rules), _) => rules.iter().any(|d| d.jumps_to(admin)),
        (None, Some(used)) if cni => {
            used as usize > xtnft::chain_rules(s, family, TABLE, admin)?.len()
        }
        (None, _) => false,
    };
    let mut found = Found {
        forward,
        cni_forward: cni.then(|| Read {
            rules: dumped.unwrap_or_default(),
            jumped,
        }),
        admin: admin_use.is_some(),
        ..Found::default()
    };
    if plan.policy != IngressPolicy::Open && !plan.bridge.is_empty() {
        found.stages = [read(s, family, STAGE1)?, read(s, family, STAGE2)?];
    }
    let there = |ip: &IpNet, i: usize, rule: &Rule| match hits
        .iter()
        .find(|(addr, _)| *addr == ip.addr())
    {
        Some((_, h)) => h.get(i).map(|h| Some(*h)),
        None => held(&found.cni_forward, family, rule),
    };
    let (batch, appended) = build(plan, family, mine, &found, admin_jumped, &there)?;
    let echo: Vec<usize> = appended
        .iter()
        .flat_map(|(_, at)| at.iter().filter_map(|a| a.as_ref().ok().copied()))
        .collect();
    let echoed = batch.commit_echoed(s, &echo)?;
    let handle = |a: &std::result::Result<usize, Option<u64>>| match a {
        Ok(index) => echo
            .iter()
            .position(|i| i == index)
            .and_then(|p| echoed.get(p).copied().flatten()),
        Err(known) => *known,
    };
    Ok(appended
        .iter()
        .filter_map(|(ip, [d, s])| Some((ip.addr(), [handle(d)?, handle(s)?])))
        .collect())
}

/// DEL of `mine` in one family: by their remembered handles when CNI-FORWARD
/// still holds the rules there (GETs, no dump), else as [`del`] (rules
/// another writer made, or moved).
pub fn del_remembering(family: Family, mine: &[&IpNet], known: &[Remembered]) -> Result<()> {
    let mut sock = xtnft::open()?;
    let mut handles = Vec::new();
    for ip in mine {
        match at_handles(&mut sock, family, ip, known)? {
            Some(h) => handles.extend(h),
            None => return del(family, mine),
        }
    }
    let mut batch = Batch::new(family, TABLE);
    for handle in handles {
        batch.delete_rule(FORWARD_CHAIN, handle);
    }
    batch.commit(&mut sock)
}

fn mismatch(detail: String) -> Error {
    Error::Mismatch {
        owner: "firewall",
        detail,
    }
}

/// CHECK in one family: CNI-FORWARD jumped to and jumping to the admin
/// chain, each address's rules there (the legacy check's verdicts). With
/// every address's rules at their remembered handles, it reads what ADD
/// reads (FORWARD, the admin chain's use count, GETs), never CNI-FORWARD.
pub fn check(plan: &Plan, family: Family, mine: &[&IpNet], known: &[Remembered]) -> Result<()> {
    let mut sock = xtnft::open()?;
    if let Some(verdict) = check_at_handles(&mut sock, plan, family, mine, known)? {
        return verdict;
    }
    let found = find(&mut sock, plan, family, false)?;
    let cni = &found.cni_forward;
    let admin = plan.admin_chain.as_str();
    let set_up = cni
        .as_ref()
        .is_some_and(|r| r.jumped && r.rules.iter().any(|d| d.jumps_to(admin)));
    if !set_up {
        return Err(mismatch(format!("{FORWARD_CHAIN} is not set up")));
    }
    for ip in mine {
        for (rule, text) in address_rules(ip).iter().zip(printed(ip)) {
            if !has(cni, family, rule) {
                return Err(mismatch(format!(
                    "rule {text} is missing",
                    text = quoted(&text)
                )));
            }
        }
    }
    Ok(())
}

/// CHECK by the remembered handles: None when an address's rules are not at
/// them (no handles, or rules the reference wrote), for the full read.
fn check_at_handles(
    s: &mut NfSocket,
    plan: &Plan,
    family: Family,
    mine: &[&IpNet],
    known: &[Remembered],
) -> Result<Option<Result<()>>> {
    if known.is_empty() || xtnft::chain_use(s, family, TABLE, FORWARD_CHAIN)?.is_none() {
        return Ok(None);
    }
    for ip in mine {
        if at_handles(s, family, ip, known)?.is_none() {
            return Ok(None);
        }
    }
    let admin = plan.admin_chain.as_str();
    let jumped = xtnft::exists(s, family, TABLE, FORWARD)? && forward_jumps_to_cni(s, family)?;
    let admin_jumped = read(s, family, admin)?.is_some_and(|r| r.jumped);
    if !jumped || !admin_jumped {
        return Ok(Some(Err(mismatch(format!(
            "{FORWARD_CHAIN} is not set up"
        )))));
    }
    Ok(Some(Ok(())))
}
