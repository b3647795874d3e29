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

fn family_of(ip: &IpNet) -> Family {
    Family::of(ip.addr())
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
    for family in [Family::V4, Family::V6] {
        let mine: Vec<&IpNet> = ips.iter().filter(|ip| family_of(ip) == family).collect();
        if mine.is_empty() {
            continue;
        }
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
        let Ok(saved) = iptables::save(family, "nat") else {
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

    pub fn add(&self, network: &str, container_id: &str, ips: &[IpNet]) -> CniResult<()> {
        if !self.enabled || ips.is_empty() {
            return Ok(());
        }
        setup(
            Backend::choose(self.backend.as_deref())?,
            network,
            container_id,
            ips,
        )
    }

    /// Always attempted when enabled, even without the container's addresses.
    pub fn del(&self, network: &str, container_id: &str) -> CniResult<()> {
        if !self.enabled {
            return Ok(());
        }
        match Backend::choose(self.backend.as_deref()) {
            Ok(backend) => teardown(backend, network, container_id),
            // No usable backend: no rules of ours can exist.
            Err(_) => Ok(()),
        }
    }
}
