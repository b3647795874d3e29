//! The doctor's one judging engine: read this first.
//!
//! Each kind of state (a module beside this one) only lists what it sees as
//! [`Object`]s: who the object may belong to ([`Owner`]: the cached
//! attachments it matched, and whom it names), what says it is in use (its
//! addresses, evidence of its own), how old it is, and how to tell whether
//! it is still there and how to remove it. Everything else is decided here,
//! the same way for every kind:
//!
//! - an object that any of its attachments not known dead holds is kept; so
//!   is one an unreadable cache entry may own (doubt keeps);
//! - one whose attachment is dead is listed: that DEL removes it;
//! - one no cache entry names is ownerless: listed only once old enough (a
//!   file's mtime, or for kernel objects, which carry no time, the runs that
//!   have seen it) and while nothing says it is in use (an address a live
//!   namespace holds, the kind's own evidence);
//! - the fix re-judges right before it removes: gone already is fixed; an
//!   owner that a cache entry names now, or an address a namespace holds
//!   now, keeps it; then it removes and looks again.
//!
//! Attachments themselves are judged alive, dead, unknown or fresh in
//! `node`; repairs of live attachments are `repair`'s.

use super::Finding;
use super::node::{Cached, Node, State};
use anyhow::Result;
use std::net::IpAddr;
use std::path::PathBuf;

/// What a dead owner's DEL does to the object.
pub const BY_DEL: &str = "removed by the DEL of its dead attachment";

/// Whom an object names: an empty part is any (or, for the container, nobody).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Named {
    pub network: String,
    pub container_id: String,
    pub ifname: String,
}

impl Named {
    pub fn new(network: &str, container_id: &str, ifname: &str) -> Named {
        Named {
            network: network.into(),
            container_id: container_id.into(),
            ifname: ifname.into(),
        }
    }

    /// The attachment a cache entry is of.
    pub fn of(e: &crate::libcni::cache::Entry) -> Named {
        Named::new(&e.network_name, &e.container_id, &e.ifname)
    }

    /// Nobody can be named (a link, an address): judged by evidence alone.
    pub fn nobody() -> Named {
        Named::default()
    }
}

/// Whom an object may belong to.
#[derive(Debug, Clone, Default)]
pub struct Owner {
    /// The cached attachments the kind matched (indices into the node's).
    pub candidates: Vec<usize>,
    /// Whom the object names, re-checked against the cache at fix time.
    pub named: Named,
}

impl Owner {
    /// The attachments the node has of `named` (empty parts match any).
    pub fn of(node: &Node, named: Named) -> Owner {
        Owner {
            candidates: node.matching(&named),
            named,
        }
    }

    /// The attachments whose cached result holds the address; it names nobody.
    pub fn holding(node: &Node, ip: IpAddr) -> Owner {
        Owner {
            candidates: node.holding(ip),
            named: Named::nobody(),
        }
    }
}

/// How an object's age is known.
#[derive(Debug, Clone)]
pub enum Age {
    /// A file: its mtime (a link is not followed).
    File(PathBuf),
    /// A kernel object: since when runs have seen it ownerless, under its id.
    Sighted,
}

/// Which names the report gives a dead-owned object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// The object's own.
    Object,
    /// The dead attachment's network, container and interface.
    Entry,
    /// The dead attachment's network, the object's container and interface.
    EntryNetwork,
}

/// Whether the object is still there.
pub type Present = Box<dyn Fn(&Node) -> Result<bool>>;
/// Removes the object (the plugin's own code for it).
pub type Remove = Box<dyn Fn(&Node) -> Result<()>>;

/// One piece of state a kind sees.
pub struct Object {
    pub kind: &'static str,
    /// Stable: the key of its sightings.
    pub id: String,
    /// What the report calls it.
    pub label: String,
    pub owner: Owner,
    /// The names the report gives it when ownerless.
    pub names: Named,
    pub label_when_dead: Label,
    pub age: Age,
    /// Addresses it serves: held by a live namespace, it is in use.
    pub addresses: Vec<IpAddr>,
    /// The kind's own evidence of use (a filter redirecting to it, its host link).
    pub busy: bool,
    /// What removing an ownerless one does.
    pub action: &'static str,
    /// What the report says a dead owner's DEL does (default [`BY_DEL`]).
    pub dead_action: Option<&'static str>,
    pub present: Present,
    pub remove: Remove,
}

impl Object {
    /// A kernel object (a chain, rules, a link, a zone source), known by its
    /// label; its age is counted by sightings under that label.
    pub fn kernel(
        kind: &'static str,
        label: String,
        owner: Owner,
        action: &'static str,
        present: Present,
        remove: Remove,
    ) -> Object {
        Object {
            kind,
            id: label.clone(),
            label,
            names: owner.named.clone(),
            owner,
            label_when_dead: Label::Entry,
            age: Age::Sighted,
            addresses: Vec::new(),
            busy: false,
            action,
            dead_action: None,
            present,
            remove,
        }
    }

    /// A plugin's state file: there while its path is (a link counts), removed
    /// as a file (a link itself, never its target); owned as `owner` says.
    pub fn file(kind: &'static str, path: PathBuf, owner: Owner, action: &'static str) -> Object {
        let (p1, p2) = (path.clone(), path.clone());
        Object {
            kind,
            id: path.display().to_string(),
            label: path.display().to_string(),
            names: owner.named.clone(),
            owner,
            label_when_dead: Label::Entry,
            age: Age::File(path),
            addresses: Vec::new(),
            busy: false,
            action,
            dead_action: None,
            present: Box::new(move |_| Ok(std::fs::symlink_metadata(&p1).is_ok())),
            remove: Box::new(move |_| super::node::remove_file(&p2).map(drop)),
        }
    }
}

/// The engine's verdict on one object.
enum Verdict<'a> {
    Keep,
    Dead(&'a Cached),
    Ownerless,
}

fn judge<'a>(node: &'a Node, o: &Object) -> Result<Verdict<'a>> {
    let owners = o
        .owner
        .candidates
        .iter()
        .filter_map(|&i| node.attachments.get(i));
    let mut dead = None;
    for a in owners {
        if a.state != State::Dead {
            return Ok(Verdict::Keep);
        }
        dead = dead.or(Some(a));
    }
    if node.in_doubt(&o.owner.named.container_id) {
        return Ok(Verdict::Keep);
    }
    let old = match &o.age {
        Age::File(path) => node.old_file(path)?,
        Age::Sighted if dead.is_some() => true,
        Age::Sighted => node.settled(&format!("{} {}", o.kind, o.id)),
    };
    if !old || o.addresses.iter().any(|ip| node.ip_in_use(*ip)) {
        return Ok(Verdict::Keep);
    }
    match dead {
        Some(a) => Ok(Verdict::Dead(a)),
        None if o.busy => Ok(Verdict::Keep),
        None => Ok(Verdict::Ownerless),
    }
}

/// The findings of a kind's objects.
pub fn findings(node: &Node, objects: Vec<Object>, out: &mut Vec<Finding>) -> Result<()> {
    for o in objects {
        let (names, action) = match judge(node, &o)? {
            Verdict::Keep => continue,
            Verdict::Ownerless => (o.names.clone(), o.action),
            Verdict::Dead(a) => {
                let e = &a.entry;
                let names = match o.label_when_dead {
                    Label::Object => o.names.clone(),
                    Label::Entry => Named::of(e),
                    Label::EntryNetwork => Named {
                        network: e.network_name.clone(),
                        ..o.names.clone()
                    },
                };
                (names, o.dead_action.unwrap_or(BY_DEL))
            }
        };
        let finding = Finding::new(o.kind, &names, &o.label, action);
        out.push(finding.fix(move |node| fix(node, &o)));
    }
    Ok(())
}

/// The fix protocol: gone is fixed; judged again (a cache entry naming the
/// owner now, an address held now) before the kind removes it; looked at
/// again after.
fn fix(node: &Node, o: &Object) -> Result<bool> {
    if !(o.present)(node)? {
        return Ok(true);
    }
    let n = &o.owner.named;
    let named = !n.container_id.is_empty() && node.named_now(n)?;
    if named || node.in_use_now(&o.addresses) {
        return Ok(false);
    }
    if let Age::File(path) = &o.age
        && !super::node::old_enough(path, node.min_age, std::time::SystemTime::now())?
    {
        // Written since it was judged: an ADD in flight.
        return Ok(false);
    }
    (o.remove)(node)?;
    Ok(!(o.present)(node)?)
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
