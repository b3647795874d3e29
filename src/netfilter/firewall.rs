//! The firewall plugin's iptables rules (table `filter`): `CNI-FORWARD` entered
//! from FORWARD, an admin chain for operators, per-address accept rules, and the
//! optional bridge isolation stages; the reference's names, comments and order.

use super::iptables::{self, Batch, Saved, jumps};
use super::lock;
use crate::cni::{CniResult, Error};
use ipnet::IpNet;

pub const FORWARD_CHAIN: &str = "CNI-FORWARD";
const FORWARD_COMMENT: &str = "CNI firewall plugin rules";
const ADMIN_COMMENT: &str = "CNI firewall plugin admin overrides";
const STAGE1: &str = "CNI-ISOLATION-STAGE-1";
const STAGE2: &str = "CNI-ISOLATION-STAGE-2";

/// `ingressPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngressPolicy {
    Open,
    SameBridge,
    Isolated,
}

impl IngressPolicy {
    pub fn parse(s: &str) -> CniResult<IngressPolicy> {
        match s {
            "" | "open" => Ok(IngressPolicy::Open),
            "same-bridge" => Ok(IngressPolicy::SameBridge),
            "isolated" => Ok(IngressPolicy::Isolated),
            other => Err(Error::invalid_config(format!(
                "unknown ingressPolicy {other:?}"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            IngressPolicy::Open => "open",
            IngressPolicy::SameBridge => "same-bridge",
            IngressPolicy::Isolated => "isolated",
        }
    }
}

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
fn printed(ip: &IpNet) -> [String; 2] {
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

/// ADD: accept the container's addresses in CNI-FORWARD (one restore per family).
pub fn add(ips: &[IpNet], admin: &str, policy: IngressPolicy, bridge: &str) -> CniResult<()> {
    let _lock = lock()?;
    for (family, mine) in super::by_family(ips) {
        let mut saved = iptables::save(family, "filter").map_err(Error::internal)?;
        let mut batch = Batch::new(family, "filter");
        ensure_base(&mut batch, &mut saved, admin);
        ensure_isolation(&mut batch, &mut saved, policy, bridge);
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
        iptables::apply(&batch).map_err(Error::internal)?;
    }
    Ok(())
}

/// DEL: removes the address rules; when CNI-FORWARD is left with only the admin
/// jump and the admin chain is empty, the chains and FORWARD's jump go too.
pub fn del(ips: &[IpNet], admin: &str) -> CniResult<()> {
    let _lock = lock()?;
    for (family, mine) in super::by_family(ips) {
        let Some(saved) = iptables::save_existing(family, "filter").map_err(Error::internal)?
        else {
            continue;
        };
        let mut batch = Batch::new(family, "filter");
        let ours: Vec<String> = mine.iter().flat_map(|ip| printed(ip)).collect();
        let mut deleted = 0;
        for spec in saved.rules_in(FORWARD_CHAIN, |r| ours.iter().any(|o| o == r)) {
            batch.delete_saved(FORWARD_CHAIN, spec);
            deleted += 1;
        }
        let remaining = saved.rules_in(FORWARD_CHAIN, |_| true).count() - deleted;
        let admin_jumps = saved.rules_in(FORWARD_CHAIN, |r| jumps(r, admin)).count();
        let admin_empty = saved.rules_in(admin, |_| true).next().is_none();
        if saved.has_chain(FORWARD_CHAIN) && remaining == admin_jumps && admin_empty {
            for spec in saved.rules_in("FORWARD", |r| jumps(r, FORWARD_CHAIN)) {
                batch.delete_saved("FORWARD", spec);
            }
            for spec in saved.rules_in(FORWARD_CHAIN, |r| jumps(r, admin)) {
                batch.delete_saved(FORWARD_CHAIN, spec);
            }
            // Emptied with -D: delete without flushing (see Batch::delete_chain).
            batch.delete_chain(FORWARD_CHAIN);
            if saved.has_chain(admin) {
                batch.delete_chain(admin);
            }
        }
        iptables::apply(&batch).map_err(Error::internal)?;
    }
    Ok(())
}

/// CHECK: the chains and each address's rules are there.
pub fn check(ips: &[IpNet], admin: &str) -> CniResult<()> {
    for (family, mine) in super::by_family(ips) {
        let saved = iptables::save(family, "filter").map_err(Error::internal)?;
        if !saved.jumps_to("FORWARD", FORWARD_CHAIN) || !saved.jumps_to(FORWARD_CHAIN, admin) {
            return Err(Error::internal(format!(
                "firewall: {FORWARD_CHAIN} is not set up"
            )));
        }
        for ip in mine {
            for text in printed(ip) {
                if saved
                    .rules_in(FORWARD_CHAIN, |r| r == text)
                    .next()
                    .is_none()
                {
                    return Err(Error::internal(format!(
                        "firewall: rule {text:?} is missing"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The firewall's nftables form (no reference one exists): table
/// `inet cni_firewall`, a forward chain jumping to an admin chain first, then
/// per-address accept rules commented with the container ID.
pub mod nftables {
    use super::super::nft::{
        self, Field, HOOK_FORWARD, NFPROTO_INET, PRIO_FILTER, Tx, match_addr,
        match_ct_established_related, match_nfproto,
    };
    use crate::cni::{CniResult, Error};
    use ipnet::IpNet;

    pub const TABLE: &str = "cni_firewall";
    const FORWARD: &str = "forward";
    const ADMIN: &str = "admin";

    fn map_err(e: String) -> Error {
        Error::internal(format!("nftables: {e}"))
    }

    pub fn add(container_id: &str, ips: &[IpNet]) -> CniResult<()> {
        let mut sock = nft::open().map_err(map_err)?;
        let stale = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD).map_err(map_err)?;
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
        tx.commit(&mut sock).map_err(map_err)
    }

    /// Deletes the container's rules; the table goes when only the admin jump
    /// is left and the admin chain is empty.
    pub fn del(container_id: &str) -> CniResult<()> {
        let mut sock = nft::open().map_err(map_err)?;
        let rules = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD).map_err(map_err)?;
        let mine: Vec<_> = rules.iter().filter(|r| r.comment == container_id).collect();
        if mine.is_empty() {
            return Ok(());
        }
        let admin_empty = nft::rules(&mut sock, NFPROTO_INET, TABLE, ADMIN)
            .map_err(map_err)?
            .is_empty();
        let mut tx = Tx::new();
        if admin_empty && rules.len() == mine.len() + 1 {
            tx.delete_table(NFPROTO_INET, TABLE);
        } else {
            for r in mine {
                tx.delete_rule(NFPROTO_INET, TABLE, FORWARD, r.handle);
            }
        }
        tx.commit(&mut sock).map_err(map_err)
    }

    pub fn check(container_id: &str, ips: &[IpNet]) -> CniResult<()> {
        let mut sock = nft::open().map_err(map_err)?;
        let found = nft::rules(&mut sock, NFPROTO_INET, TABLE, FORWARD)
            .map_err(map_err)?
            .iter()
            .filter(|r| r.comment == container_id)
            .count();
        if found != 2 * ips.len() {
            return Err(Error::internal(format!(
                "firewall: {found} of {} rules found in table {TABLE}",
                2 * ips.len()
            )));
        }
        Ok(())
    }
}
