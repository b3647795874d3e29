//! ipMasq's iptables form: per container, a `CNI-<hash>` chain in `nat` that
//! accepts traffic to its own network and masquerades the rest (not multicast),
//! entered from POSTROUTING by source address; the reference's names and comments.

use crate::netfilter::iptables::{self, Batch, jumps};
use crate::netfilter::{Family, Result, attachment_comment, by_family, chain_name, lock};
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
pub fn setup(network: &str, container_id: &str, ips: &[IpNet]) -> Result<()> {
    let chain = chain_name("", network, container_id);
    let comment = attachment_comment(network, container_id);
    let _lock = lock()?;
    for (family, mine) in by_family(ips) {
        let saved = iptables::save(family, "nat")?;
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
        iptables::apply(&batch)?;
    }
    Ok(())
}

/// Removes the container's masquerading in every family, found by chain name,
/// so it works without the container's addresses (netns already gone).
pub fn teardown(network: &str, container_id: &str) -> Result<()> {
    let chain = chain_name("", network, container_id);
    let _lock = lock()?;
    for family in [Family::V4, Family::V6] {
        if iptables::surely_absent(family, "nat", std::slice::from_ref(&chain)) {
            continue;
        }
        let Some(saved) = iptables::save_existing(family, "nat")? else {
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
        iptables::apply(&batch)?;
    }
    Ok(())
}
