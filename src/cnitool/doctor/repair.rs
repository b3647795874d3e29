//! `repair`: a live attachment whose netfilter state is gone (a firewalld
//! reload, `iptables -t nat -F`, `nft flush ruleset`). How is the plugin
//! table's to say (`entry::Repair`): portmap and firewall are asked with their
//! own CHECK (prevResult the cached result) and repaired with their own ADD,
//! which rewrites its chains; the masquerading of bridge and ptp is checked
//! and added as their ADD writes it. Plugins run through
//! the runtime, so another implementation's state is repaired by that one.
//!
//! A repair never races a DEL: libcni's DEL removes the cache entry only
//! after every plugin's DEL, so a half-deleted attachment looks alive with
//! its rules gone. One is repaired only when no DEL of it was begun since it
//! was cached (every DEL of ours marks itself, `cni::deleting`), when its
//! state was seen missing twice `--repair-after` apart with its cache entry
//! unchanged, and undone when the entry changed or a DEL began meanwhile.

use super::Finding;
use super::engine::Named;
use super::node::{Cached, Node, State};
use crate::cni::env::Command;
use crate::libcni::conf::{NetworkList, PluginConf};
use crate::libcni::{Implementation, RuntimeConf};
use crate::netfilter::iptables::{Flavour, Saved};
use crate::netfilter::masq::{self, Masquerade, Plan};
use crate::netfilter::{Backend, Choice, Family, Kernel, chain_name};
use crate::plugins::Repair;
use crate::plugins::footprint::Footprint;
use anyhow::Result;
use ipnet::IpNet;
use serde_json::Value;
use std::cell::OnceCell;
use std::time::SystemTime;

pub const KIND: &str = "repair";
const READD: &str = "re-add with the plugin's ADD";
const MASQ: &str = "add the masquerading its ADD wrote";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let nat = Nat::default();
    let iptables_here = OnceCell::new();
    let live = node.attachments.iter().enumerate();
    for (i, a) in live.filter(|(_, a)| a.state == State::Alive) {
        let (Some(list), Some(result)) = (&a.list, a.entry.result.as_ref()) else {
            continue;
        };
        let Some(cached) = Fingerprint::of(&a.path) else {
            continue;
        };
        if cached.del_begun(a) {
            continue;
        }
        let families = families(&a.entry.nets());
        for (j, plugin) in list.plugins.iter().enumerate() {
            // Rules this process cannot see (no iptables tools here, as in
            // the doctor's image) are not judged missing.
            let footprint = Footprint::of(plugin);
            let unseen = !iptables_here.get_or_init(|| super::chains::usable(Flavour::Default));
            let what = &plugin.plugin_type;
            let (object, action) = match footprint.repair {
                Repair::OwnVerbs { nat: Some(_) } if footprint.iptables && unseen => continue,
                Repair::OwnVerbs {
                    nat: Some((from, prefix)),
                } if footprint.iptables && nat.has(&families, from, prefix, &list.name, a) => {
                    continue;
                }
                Repair::OwnVerbs { .. } if check(node, a, list, plugin, result).is_err() => {
                    (format!("{what} rules"), READD)
                }
                Repair::Masquerading if unseen && auto_masq(&footprint) => continue,
                Repair::Masquerading => match masq_plan(a, list, plugin)? {
                    Some((Backend::Iptables(_), _))
                        if nat.has(&families, "POSTROUTING", "", &list.name, a) =>
                    {
                        continue;
                    }
                    Some((backend, plan)) if masq::check(backend, &plan).is_err() => {
                        (format!("{what} masquerading"), MASQ)
                    }
                    _ => continue,
                },
                _ => continue,
            };
            node.repair_seen(&cached.key(j));
            out.push(
                Finding::new(KIND, &Named::of(&a.entry), &object, action)
                    .fix(move |node| repair(node, i, j, cached)),
            );
        }
    }
    Ok(())
}

/// Each family's `nat` table read once (iptables), so a live attachment whose
/// chain is there and jumped to needs no CHECK of its own: on a node of a
/// thousand pods, a CHECK each reads the whole table a thousand times. Only
/// one that looks missing is CHECKed.
#[derive(Default)]
struct Nat(OnceCell<[(Family, Option<Saved>); 2]>);

impl Nat {
    /// Whether every family of the attachment's addresses has its
    /// per-container chain (`CNI-<prefix><hash>`) jumped to from `from`.
    fn has(&self, families: &[Family], from: &str, prefix: &str, net: &str, a: &Cached) -> bool {
        let chain = chain_name(prefix, net, &a.entry.container_id);
        let tables = self.0.get_or_init(|| Flavour::Default.nat_tables());
        let jumped = |s: &Saved| s.has_chain(&chain) && s.jumps_to(from, &chain);
        let has = |f: &Family| {
            tables
                .iter()
                .any(|(t, s)| t == f && s.as_ref().is_some_and(jumped))
        };
        !families.is_empty() && families.iter().all(has)
    }
}

/// The families of a cached result's addresses.
fn families(nets: &[IpNet]) -> Vec<Family> {
    let mut out = Vec::new();
    if nets.iter().any(|n| n.addr().is_ipv4()) {
        out.push(Family::V4);
    }
    if nets.iter().any(|n| n.addr().is_ipv6()) {
        out.push(Family::V6);
    }
    out
}

/// What a cache entry was when it was judged: a rewrite (a new ADD) or its
/// removal (a DEL's end) shows as a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    modified: SystemTime,
    len: u64,
    ino: u64,
}

impl Fingerprint {
    fn of(path: &std::path::Path) -> Option<Fingerprint> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Fingerprint {
            modified: m.modified().ok()?,
            len: m.len(),
            ino: m.ino(),
        })
    }

    /// The key its sightings are kept under: a changed entry starts over.
    fn key(&self, plugin: usize) -> String {
        let at = self
            .modified
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!(
            "{KIND} {} {} {} {plugin}",
            self.ino,
            at.as_nanos(),
            self.len
        )
    }

    /// Whether a DEL of the attachment began since it was cached.
    fn del_begun(&self, a: &Cached) -> bool {
        let e = &a.entry;
        crate::cni::deleting::marked(&e.network_name, &e.container_id, &e.ifname)
            .is_some_and(|at| at >= self.modified)
    }

    /// Whether the entry is as it was judged and no DEL of it has begun.
    fn holds(&self, a: &Cached) -> bool {
        Fingerprint::of(&a.path) == Some(*self) && !self.del_begun(a)
    }
}

/// Repairs plugin `j` of attachment `i` unless the attachment changed or a
/// DEL of it began (then what a repair added is taken back); true when the
/// state checks out afterwards.
fn repair(node: &Node, i: usize, j: usize, cached: Fingerprint) -> Result<bool> {
    let a = &node.attachments[i];
    let e = &a.entry;
    let Some(list) = &a.list else {
        return Ok(false);
    };
    let (Some(result), Some(plugin)) = (e.result.as_ref(), list.plugins.get(j)) else {
        return Ok(false);
    };
    if !cached.holds(a) {
        return Ok(false);
    }
    let rt = RuntimeConf::of_cached(e, &a.netns);
    if let Some((backend, plan)) = masq_plan(a, list, plugin)? {
        if masq::check(backend, &plan).is_ok() {
            return Ok(true);
        }
        masq::add(backend, &plan)?;
        if !cached.holds(a) {
            masq::del(backend, &plan)?;
            return Ok(false);
        }
        return Ok(masq::check(backend, &plan).is_ok());
    }
    if check(node, a, list, plugin, result).is_ok() {
        return Ok(true);
    }
    node.runtime.plugin_verb(
        list,
        plugin,
        Command::Add,
        &rt,
        result,
        Implementation::OnCniPath,
    )?;
    if !cached.holds(a) {
        // A DEL began while we added: what we added would outlive it.
        node.runtime.plugin_verb(
            list,
            plugin,
            Command::Del,
            &rt,
            result,
            Implementation::OnCniPath,
        )?;
        return Ok(false);
    }
    Ok(check(node, a, list, plugin, result).is_ok())
}

fn check(
    node: &Node,
    a: &Cached,
    list: &NetworkList,
    plugin: &PluginConf,
    result: &Value,
) -> crate::cni::CniResult<()> {
    let rt = RuntimeConf::of_cached(&a.entry, &a.netns);
    // Our CHECK reads the rules the reference writes as its own (and does not
    // share the reference portmap's CHECK failing every IPv4-only pod).
    node.runtime.plugin_verb(
        list,
        plugin,
        Command::Check,
        &rt,
        result,
        Implementation::Ours,
    )
}

/// Whether masquerading's backend is left to the host's tools (which the
/// ADD saw and this process may not).
fn auto_masq(f: &Footprint) -> bool {
    f.masquerade == Masquerade::On(Choice::Detect)
}

/// The masquerading plan of a bridge or ptp plugin with ipMasq (None for any
/// other plugin, or when its ADD wrote none).
fn masq_plan(
    a: &Cached,
    list: &NetworkList,
    plugin: &PluginConf,
) -> Result<Option<(Backend, Plan)>> {
    let masquerade = Footprint::of(plugin).masquerade;
    let e = &a.entry;
    Ok(masquerade.plan(&Kernel, &list.name, &e.container_id, &e.ifname, &e.nets())?)
}
