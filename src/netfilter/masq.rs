//! ipMasq for bridge and ptp: per container, a `CNI-<hash>` chain in `nat` that
//! accepts traffic to its own network and masquerades the rest (not multicast),
//! entered from POSTROUTING by source address; the reference's names and comments.

use super::iptables::{self, Batch, jumps};
use super::{Backend, Family, attachment_comment, chain_name, lock};
use crate::cni::{CniResult, Error};
use ipnet::IpNet;

fn multicast(family: Family) -> &'static str {
    match family {
        Family::V4 => "224.0.0.0/4",
        Family::V6 => "ff00::/8",
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_string()).collect()
}

/// Masquerades traffic of `ips` (the container's addresses as allocated).
pub fn setup(backend: Backend, network: &str, container_id: &str, ips: &[IpNet]) -> CniResult<()> {
    if backend != Backend::Iptables {
        return Err(Error::invalid_config(
            "ipMasq: only the iptables backend is available",
        ));
    }
    let chain = chain_name("", network, container_id);
    let comment = attachment_comment(network, container_id);
    let _lock = lock()?;
    for (family, mine) in super::by_family(ips) {
        let saved = iptables::save(family, "nat").map_err(Error::internal)?;
        let mut batch = Batch::new(family, "nat");
        // The chain is ours alone: declaring it rewrites it whole.
        batch.reset_chain(&chain);
        for ip in &mine {
            batch.append(
                &chain,
                &strings(&[
                    "-d",
                    &ip.to_string(),
                    "-j",
                    "ACCEPT",
                    "-m",
                    "comment",
                    "--comment",
                    &comment,
                ]),
            );
        }
        batch.append(
            &chain,
            &strings(&[
                "!",
                "-d",
                multicast(family),
                "-j",
                "MASQUERADE",
                "-m",
                "comment",
                "--comment",
                &comment,
            ]),
        );
        for ip in &mine {
            let host = ip.addr().to_string();
            let bits = if family == Family::V4 { 32 } else { 128 };
            let exists = saved
                .rules_in("POSTROUTING", |s| {
                    jumps(s, &chain) && s.contains(&format!("-s {host}/{bits} "))
                })
                .next()
                .is_some();
            if !exists {
                batch.append(
                    "POSTROUTING",
                    &strings(&[
                        "-s",
                        &host,
                        "-j",
                        &chain,
                        "-m",
                        "comment",
                        "--comment",
                        &comment,
                    ]),
                );
            }
        }
        iptables::apply(&batch).map_err(Error::internal)?;
    }
    Ok(())
}

/// Removes the container's masquerading in every family, found by chain name,
/// so it works without the container's addresses (netns already gone).
pub fn teardown(backend: Backend, network: &str, container_id: &str) -> CniResult<()> {
    if backend != Backend::Iptables {
        return Ok(());
    }
    let chain = chain_name("", network, container_id);
    let _lock = lock()?;
    for family in [Family::V4, Family::V6] {
        if iptables::surely_absent(family, "nat", std::slice::from_ref(&chain)) {
            continue;
        }
        let Some(saved) = iptables::save_existing(family, "nat").map_err(Error::internal)? else {
            // No ip6tables here: nothing of that family can exist.
            continue;
        };
        let mut batch = Batch::new(family, "nat");
        for spec in saved.rules_in("POSTROUTING", |s| jumps(s, &chain)) {
            batch.delete_saved("POSTROUTING", spec);
        }
        if saved.has_chain(&chain) {
            batch.flush_and_delete_chain(&chain);
        }
        iptables::apply(&batch).map_err(Error::internal)?;
    }
    Ok(())
}

/// The `ipMasq` / `ipMasqBackend` keys of bridge and ptp.
#[derive(Debug, Clone, Default)]
pub struct IpMasq {
    enabled: bool,
    backend: Option<String>,
}

impl IpMasq {
    pub fn new(enabled: bool, backend: Option<String>) -> CniResult<IpMasq> {
        if let Some(b) = backend.as_deref().filter(|b| !b.is_empty()) {
            Backend::parse(b)?;
        }
        Ok(IpMasq { enabled, backend })
    }

    pub fn add(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
    ) -> CniResult<()> {
        if !self.enabled || ips.is_empty() {
            return Ok(());
        }
        match Backend::choose(self.backend.as_deref())? {
            Backend::Iptables => setup(Backend::Iptables, network, container_id, ips),
            Backend::Nftables => {
                let _lock = lock()?;
                nftables::setup(network, container_id, ifname, ips)
            }
        }
    }

    /// Always attempted when enabled, even without the container's addresses.
    pub fn del(&self, network: &str, container_id: &str, ifname: &str) -> CniResult<()> {
        if !self.enabled {
            return Ok(());
        }
        match Backend::choose(self.backend.as_deref()) {
            Ok(Backend::Iptables) => teardown(Backend::Iptables, network, container_id),
            Ok(Backend::Nftables) => {
                let _lock = lock()?;
                nftables::teardown(network, container_id, ifname)
            }
            // No usable backend: no rules of ours can exist.
            Err(_) => Ok(()),
        }
    }
}

/// The nftables form of ipMasq (`inet cni_plugins_masquerade`), as the reference.
pub mod nftables {
    use super::super::nft::{
        self, Field, HOOK_POSTROUTING, NFPROTO_INET, PRIO_SRCNAT, Tx, match_addr, match_nfproto,
    };
    use crate::cni::{CniResult, Error};
    use crate::digest::sha512_hex;
    use ipnet::IpNet;

    pub const TABLE: &str = "cni_plugins_masquerade";
    const TABLE_COMMENT: &str =
        "Masquerading for plugins from github.com/containernetworking/plugins";
    const CHECKS: &str = "masq_checks";
    const POSTROUTING: &str = "postrouting";

    fn h(s: &str) -> String {
        sha512_hex(s.as_bytes())[..16].to_string()
    }

    /// `<h(net)>-<h(ifname:cid)>`: what every rule of one attachment starts with.
    pub fn instance(network: &str, ifname: &str, container_id: &str) -> String {
        format!("{}-{}", h(network), h(&format!("{ifname}:{container_id}")))
    }

    fn comment(network: &str, ifname: &str, container_id: &str) -> String {
        let c = format!(
            "{}, net: {network}, if: {ifname}, id: {container_id}",
            instance(network, ifname, container_id)
        )
        .replace('"', "");
        c.chars().take(128).collect()
    }

    fn map_err(e: String) -> Error {
        Error::internal(format!("nftables: {e}"))
    }

    pub fn setup(network: &str, container_id: &str, ifname: &str, ips: &[IpNet]) -> CniResult<()> {
        let mut sock = nft::open().map_err(map_err)?;
        let prefix = instance(network, ifname, container_id);
        let existing = nft::rules(&mut sock, NFPROTO_INET, TABLE, CHECKS).map_err(map_err)?;
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
        for (v6, multicast) in [(false, "224.0.0.0/4"), (true, "ff00::/8")] {
            let net: IpNet = multicast
                .parse()
                .map_err(|_| map_err("bad multicast net".into()))?;
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
        for ip in ips {
            let v6 = ip.addr().is_ipv6();
            let host = IpNet::from(ip.addr());
            let mut exprs = match_nfproto(v6);
            exprs.extend(match_addr(Field::Saddr, host, true));
            exprs.extend(match_addr(Field::Daddr, ip.trunc(), false));
            exprs.push(nft::masquerade());
            tx.rule(NFPROTO_INET, TABLE, CHECKS, &exprs, Some(&text));
        }
        tx.commit(&mut sock).map_err(map_err)
    }

    /// Deletes the attachment's rules; the table goes with the last of them.
    pub fn teardown(network: &str, container_id: &str, ifname: &str) -> CniResult<()> {
        let mut sock = nft::open().map_err(map_err)?;
        let prefix = instance(network, ifname, container_id);
        let existing = nft::rules(&mut sock, NFPROTO_INET, TABLE, CHECKS).map_err(map_err)?;
        let mine: Vec<_> = existing
            .iter()
            .filter(|r| r.comment.starts_with(&prefix))
            .collect();
        if mine.is_empty() {
            return Ok(());
        }
        let mut tx = Tx::new();
        if mine.len() == existing.len() {
            tx.delete_table(NFPROTO_INET, TABLE);
        } else {
            for r in mine {
                tx.delete_rule(NFPROTO_INET, TABLE, CHECKS, r.handle);
            }
        }
        tx.commit(&mut sock).map_err(map_err)
    }
}
