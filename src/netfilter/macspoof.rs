//! bridge's `macspoofchk`: frames entering the bridge from a container's host
//! veth pass only with the container's own source MAC. The reference's layout
//! (`pkg/link/spoofcheck.go`): table `bridge nat`, base chain `PREROUTING`
//! (filter, prerouting, priority -300, policy accept) holding one
//! `iifname "<veth>" jump cni-br-iface-<id>` per attachment; that chain jumps
//! to `cni-br-iface-<id>-mac`, which returns for `ether saddr <mac>` and drops
//! the rest. `<id>` is `<containerID>-<ifname>`, every rule is commented
//! `macspoofchk-<id>`.
//!
//! The reference needs two `nft` runs to set up (a chain can only be flushed
//! once it exists); one nf_tables transaction can make a chain and flush it,
//! so here setup is one transaction, and so is teardown.
//!
//! Teardown looks the attachment's chains up by name and reads its iface
//! chain (one rule), never PREROUTING or the table's chain list, whose size
//! grows with every attachment: an ADD (ours, and the reference's second
//! `nft` run alike) adds the PREROUTING jump right before the iface chain's
//! rule, so the kernel gives the jump the handle before that rule's; the
//! iface chain's use count says whether other jumps to it exist (a repeated
//! ADD's), and only then is PREROUTING read.

use super::nft::{self, HOOK_PREROUTING, NFPROTO_BRIDGE, Tx};
use super::{Error, Result, lock};
use crate::netlink::nfnl::NfSocket;

pub const TABLE: &str = "nat";
pub const PREROUTING: &str = "PREROUTING";
const PRIORITY: i32 = -300;
const CHAIN_PREFIX: &str = "cni-br-iface-";
const MAC_SUFFIX: &str = "-mac";
const COMMENT_PREFIX: &str = "macspoofchk-";
/// The longest nf_tables object name (NFT_NAME_MAXLEN less its NUL).
const MAX_NAME: usize = 255;

/// The chains and comment of one attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Names {
    iface_chain: String,
    mac_chain: String,
    comment: String,
}

impl Names {
    /// None when the chain names would pass the kernel's limit (container IDs
    /// may be up to 1024 bytes): such an attachment can have no chains.
    fn of(container_id: &str, ifname: &str) -> Option<Names> {
        Names::of_id(&format!("{container_id}-{ifname}"))
    }

    fn of_id(id: &str) -> Option<Names> {
        let iface_chain = format!("{CHAIN_PREFIX}{id}");
        let mac_chain = format!("{iface_chain}{MAC_SUFFIX}");
        (mac_chain.len() <= MAX_NAME).then(|| Names {
            iface_chain,
            mac_chain,
            comment: format!("{COMMENT_PREFIX}{id}"),
        })
    }
}

/// What a setup found in the table before writing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Found {
    /// The base chain is there: it is not declared again.
    prerouting: bool,
    /// The attachment's chains are there (a repeated ADD): declared and
    /// flushed, as the reference does on every ADD; else made exclusively.
    chains: bool,
}

/// The rules of an ADD, in the reference's order. Declaring a chain that
/// exists or flushing one costs the commit an RCU grace period (about as
/// long as a whole ADD), so only what is missing is made.
fn setup_tx(names: &Names, host_iface: &str, mac: [u8; 6], found: Found) -> Tx {
    let f = NFPROTO_BRIDGE;
    let comment = Some(names.comment.as_str());
    let mut tx = Tx::new();
    if !found.prerouting {
        tx.plain_table(f, TABLE);
        tx.accepting_base_chain(f, TABLE, PREROUTING, ("filter", HOOK_PREROUTING, PRIORITY));
    }
    if found.chains {
        tx.chain(f, TABLE, &names.iface_chain, None);
        tx.chain(f, TABLE, &names.mac_chain, None);
        tx.flush(f, TABLE, &names.iface_chain);
        tx.flush(f, TABLE, &names.mac_chain);
    } else {
        tx.new_chain(f, TABLE, &names.iface_chain);
        tx.new_chain(f, TABLE, &names.mac_chain);
    }
    let mut jump = nft::match_iifname(host_iface);
    jump.push(nft::jump(&names.iface_chain));
    tx.rule(f, TABLE, PREROUTING, &jump, comment);
    let to_mac = [nft::jump(&names.mac_chain)];
    tx.rule(f, TABLE, &names.iface_chain, &to_mac, comment);
    let mut own_mac = nft::match_ether_saddr(mac);
    own_mac.push(nft::ret());
    tx.rule(f, TABLE, &names.mac_chain, &own_mac, comment);
    tx.rule(f, TABLE, &names.mac_chain, &[nft::drop()], comment);
    tx
}

/// Installs the check for the container end with `mac` whose host end is
/// `host_iface`. Until `keep()`, dropping the returned guard removes it again
/// (a later step of ADD failed).
pub fn setup(container_id: &str, ifname: &str, host_iface: &str, mac: [u8; 6]) -> Result<Guard> {
    let names = Names::of(container_id, ifname).ok_or_else(|| {
        Error::InvalidConfig(format!(
            "macspoofchk: container ID and interface name make a chain name longer than \
             {MAX_NAME} bytes"
        ))
    })?;
    let _lock = lock()?;
    nft::commit_fresh(|sock| {
        let f = NFPROTO_BRIDGE;
        let found = Found {
            prerouting: nft::chain_info(sock, f, TABLE, PREROUTING)?.is_some(),
            chains: nft::chain_info(sock, f, TABLE, &names.iface_chain)?.is_some()
                || nft::chain_info(sock, f, TABLE, &names.mac_chain)?.is_some(),
        };
        Ok(Some(setup_tx(&names, host_iface, mac, found)))
    })?;
    Ok(Guard { names: Some(names) })
}

/// Removes a setup unless kept.
#[must_use]
pub struct Guard {
    names: Option<Names>,
}

impl Guard {
    pub fn keep(mut self) {
        self.names = None;
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(names) = self.names.take() {
            // The ADD is failing already; its error is the one to report.
            let _ = lock().and_then(|_lock| remove_by_name(&names));
        }
    }
}

/// Adds to `tx` the removal of the attachments' PREROUTING rules (by comment,
/// or jumping to their chain) and of both their chains, where present.
fn removal(tx: &mut Tx, names: &[Names], rules: &[nft::DumpedRule], chains: &[String]) {
    let f = NFPROTO_BRIDGE;
    for r in rules.iter().filter(|r| {
        names
            .iter()
            .any(|n| r.comment == n.comment || r.jumps.contains(&n.iface_chain))
    }) {
        tx.delete_rule(f, TABLE, PREROUTING, r.handle);
    }
    for n in names {
        // Emptied first: kernels before recursive chain deletion refuse a
        // chain with rules, and the iface chain's jump holds the mac chain.
        for chain in [&n.iface_chain, &n.mac_chain] {
            if chains.contains(chain) {
                tx.flush(f, TABLE, chain);
            }
        }
        for chain in [&n.iface_chain, &n.mac_chain] {
            if chains.contains(chain) {
                tx.delete_chain(f, TABLE, chain);
            }
        }
    }
}

/// Removes one attachment's PREROUTING jumps and chains, found by name.
fn remove_by_name(names: &Names) -> Result<()> {
    nft::commit_fresh(|sock| {
        let f = NFPROTO_BRIDGE;
        let iface = nft::chain_info(sock, f, TABLE, &names.iface_chain)?;
        let mac = nft::chain_info(sock, f, TABLE, &names.mac_chain)?;
        let chains: Vec<String> = [(&iface, &names.iface_chain), (&mac, &names.mac_chain)]
            .into_iter()
            .filter(|(info, _)| info.is_some())
            .map(|(_, name)| name.clone())
            .collect();
        if chains.is_empty() {
            return Ok(None);
        }
        let mut jumps = Vec::new();
        if let Some(info) = iface {
            let own = nft::rules(sock, f, TABLE, &names.iface_chain)?;
            let referrers = (info.uses as usize).saturating_sub(own.len());
            let theirs = |r: &nft::DumpedRule| r.jumps.contains(&names.iface_chain);
            let before = own.first().and_then(|r| r.handle.checked_sub(1));
            if let Some(handle) = before.filter(|_| referrers > 0) {
                jumps.extend(nft::rule_at(sock, f, TABLE, PREROUTING, handle)?.filter(theirs));
            }
            if jumps.len() < referrers {
                jumps = nft::rules(sock, f, TABLE, PREROUTING)?;
            }
        }
        let mut tx = Tx::new();
        removal(&mut tx, std::slice::from_ref(names), &jumps, &chains);
        Ok(Some(tx))
    })
}

/// The PREROUTING rules and the chain names of the table (none when missing).
fn state(sock: &mut NfSocket) -> Result<(Vec<nft::DumpedRule>, Vec<String>)> {
    let rules = nft::rules(sock, NFPROTO_BRIDGE, TABLE, PREROUTING)?;
    let chains = nft::chains(sock, NFPROTO_BRIDGE, TABLE)?;
    Ok((rules, chains))
}

/// DEL: removes the attachment's rules and chains; already gone is success.
pub fn teardown(container_id: &str, ifname: &str) -> Result<()> {
    let Some(names) = Names::of(container_id, ifname) else {
        return Ok(());
    };
    let _lock = lock()?;
    remove_by_name(&names)
}

/// GC: removes the attachments whose ID (`<containerID>-<ifname>`) is not in
/// `valid`. The rules do not name their network, so `owned` decides from the
/// host interface of an attachment's PREROUTING rule whether this network may
/// remove it (e.g.: a port of its bridge, or gone); chains that no PREROUTING
/// rule jumps to filter nothing and go when their ID is not valid.
pub fn gc(valid: &[(&str, &str)], mut owned: impl FnMut(&str) -> bool) -> Result<()> {
    let valid: Vec<Names> = valid
        .iter()
        .filter_map(|(cid, ifname)| Names::of(cid, ifname))
        .collect();
    let is_valid = |n: &Names| valid.iter().any(|v| v.iface_chain == n.iface_chain);
    let _lock = lock()?;
    let mut sock = nft::open()?;
    let (rules, chains) = state(&mut sock)?;
    let mut stale: Vec<Names> = Vec::new();
    let mut attached: Vec<&str> = Vec::new();
    for r in &rules {
        let Some(names) = r
            .comment
            .strip_prefix(COMMENT_PREFIX)
            .and_then(Names::of_id)
        else {
            continue;
        };
        attached.extend(r.jumps.iter().map(String::as_str));
        let mine = r.iifname.as_deref().is_none_or(&mut owned);
        if !is_valid(&names) && mine && !stale.contains(&names) {
            stale.push(names);
        }
    }
    // Chains without a PREROUTING jump: a pair whose mac chain is there too.
    for chain in &chains {
        let Some(names) = chain.strip_prefix(CHAIN_PREFIX).and_then(Names::of_id) else {
            continue;
        };
        let orphan = !attached.contains(&chain.as_str()) && chains.contains(&names.mac_chain);
        if orphan && !is_valid(&names) && !stale.contains(&names) {
            stale.push(names);
        }
    }
    if stale.is_empty() {
        return Ok(());
    }
    let mut tx = Tx::new();
    removal(&mut tx, &stale, &rules, &chains);
    tx.commit(&mut sock)
}

/// One attachment's chains as found in `bridge nat`.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// `<containerID>-<ifname>`.
    pub id: String,
    /// Its `cni-br-iface-<id>` chain.
    pub chain: String,
    /// The host interface its PREROUTING jump matches (None: no jump).
    pub iifname: Option<String>,
}

/// Every attachment's chains from the PREROUTING rules and chain names of
/// `bridge nat`: a commented jump, or a chain pair no rule jumps to.
pub fn checked(rules: &[nft::DumpedRule], chains: &[String]) -> Vec<Checked> {
    let mut out: Vec<Checked> = Vec::new();
    for r in rules {
        let Some(id) = r.comment.strip_prefix(COMMENT_PREFIX) else {
            continue;
        };
        let Some(names) = Names::of_id(id) else {
            continue;
        };
        if !out.iter().any(|c| c.chain == names.iface_chain) {
            out.push(Checked {
                id: id.to_string(),
                chain: names.iface_chain,
                iifname: r.iifname.clone(),
            });
        }
    }
    for chain in chains {
        let Some(id) = chain.strip_prefix(CHAIN_PREFIX) else {
            continue;
        };
        let Some(names) = Names::of_id(id) else {
            continue;
        };
        if chains.contains(&names.mac_chain) && !out.iter().any(|c| &c.chain == chain) {
            out.push(Checked {
                id: id.to_string(),
                chain: chain.clone(),
                iifname: None,
            });
        }
    }
    out
}

/// What [`checked`] finds on this node (read only: no lock; none without
/// nf_tables or the table).
pub fn read() -> Result<Vec<Checked>> {
    if !crate::netlink::nfnl::available() {
        return Ok(Vec::new());
    }
    let mut sock = nft::open()?;
    let (rules, chains) = state(&mut sock)?;
    Ok(checked(&rules, &chains))
}

/// Removes the chains and PREROUTING rules of one attachment by its ID
/// (`<containerID>-<ifname>`), as DEL does; already gone is success.
pub fn teardown_id(id: &str) -> Result<()> {
    let Some(names) = Names::of_id(id) else {
        return Ok(());
    };
    let _lock = lock()?;
    remove_by_name(&names)
}

#[cfg(test)]
#[path = "macspoof_tests.rs"]
mod tests;
