//! The seam between what a plugin decides and the node's netfilter. A
//! plugin turns its config and the attachment into data (the backend, from a
//! [`super::Choice`] decoded once, and an operation such as `masq::Op::Add` of
//! a `masq::Plan`, `portmap::Op` or `firewall::Op`) and hands them to an
//! [`Apply`], one method per layer, each dispatched by that layer's `run`. [`Kernel`] applies them to
//! this node: iptables rules in one `iptables-restore` per family (legacy), or
//! as one nf_tables netlink batch per family where iptables is the nf_tables
//! flavour, nftables rules as one netlink transaction; a backend's module
//! reads what it must by name first and builds that write with its pure
//! builders (`testdata/netfilter/` pins those). In unit tests a [`Fake`]
//! stands in: it records what would have been applied, needs no root, and
//! says which backends are usable and which fail.

use super::firewall::{self, Remembered};
use super::{Backend, Family, Result, masq, portmap};

/// Where the netfilter operations of a plugin go.
pub trait Apply: Sync {
    /// Whether `backend`'s rules can be written (and so may exist) here.
    fn usable(&self, backend: Backend) -> bool;

    /// Whether `backend`'s rules may exist here: iptables' tools are
    /// installed (its `nat` table may be another nftables user's), or
    /// nf_tables answers. Where portmap's DEL and GC look.
    fn installed(&self, backend: Backend) -> bool;

    /// Whether firewalld runs (owns its name on the system bus): the
    /// firewall's choice when no backend is configured.
    fn firewalld(&self) -> bool;

    /// Runs one masquerading operation in `backend`.
    fn masq(&self, backend: Backend, op: &masq::Op) -> Result<()>;

    /// Runs one portmap operation in `backend`.
    fn portmap(&self, backend: Backend, op: &portmap::Op) -> Result<()>;

    /// Runs one firewall operation on `target`: the handles to remember of
    /// the rules an ADD wrote over iptables-nft (none otherwise).
    fn firewall(&self, target: firewall::Target, op: &firewall::Op) -> Result<Vec<Remembered>>;
}

/// This node's netfilter.
pub struct Kernel;

impl Apply for Kernel {
    fn usable(&self, backend: Backend) -> bool {
        backend.usable()
    }

    fn installed(&self, backend: Backend) -> bool {
        match backend {
            Backend::Iptables(flavour) => flavour.usable(Family::V4),
            Backend::Nftables => crate::netlink::nfnl::available(),
        }
    }

    fn firewalld(&self) -> bool {
        firewall::firewalld::running()
    }

    fn masq(&self, backend: Backend, op: &masq::Op) -> Result<()> {
        masq::run(backend, op)
    }

    fn portmap(&self, backend: Backend, op: &portmap::Op) -> Result<()> {
        portmap::run(backend, op)
    }

    fn firewall(&self, target: firewall::Target, op: &firewall::Op) -> Result<Vec<Remembered>> {
        firewall::run(target, op)
    }
}

/// A netfilter that records what it is asked to apply, for unit tests.
#[cfg(test)]
pub struct Fake {
    /// The backends `usable` says are.
    pub usable: Vec<Backend>,
    /// The backends `installed` says are (`with` makes them the usable ones;
    /// iptables' tools can be installed while its `nat` table is another
    /// nftables user's).
    pub installed: Vec<Backend>,
    /// A backend whose every operation fails as iptables does on a kernel
    /// without its tables (what `Choice::instead` looks for).
    pub broken: Option<Backend>,
    /// Whether firewalld runs.
    pub firewalld: bool,
    /// The handles a firewall ADD returns.
    pub handles: Vec<Remembered>,
    /// What was applied, in order (a failed operation too), per layer.
    pub applied: std::sync::Mutex<Vec<(Backend, masq::Op)>>,
    pub portmap: std::sync::Mutex<Vec<(Backend, portmap::Op)>>,
    pub firewall: std::sync::Mutex<Vec<(firewall::Target, firewall::Op)>>,
}

#[cfg(test)]
impl Fake {
    /// A node where `usable` can take rules.
    pub fn with(usable: &[Backend]) -> Fake {
        Fake {
            usable: usable.to_vec(),
            installed: usable.to_vec(),
            broken: None,
            firewalld: false,
            handles: Vec::new(),
            applied: std::sync::Mutex::new(Vec::new()),
            portmap: std::sync::Mutex::new(Vec::new()),
            firewall: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The masquerading applied so far.
    pub fn applied(&self) -> Vec<(Backend, masq::Op)> {
        read(&self.applied)
    }

    /// The portmap operations applied so far.
    pub fn portmap_applied(&self) -> Vec<(Backend, portmap::Op)> {
        read(&self.portmap)
    }

    /// The firewall operations applied so far.
    pub fn firewall_applied(&self) -> Vec<(firewall::Target, firewall::Op)> {
        read(&self.firewall)
    }

    /// Records `op` and fails it where `backend` is the broken one.
    fn record<T>(
        &self,
        log: &std::sync::Mutex<Vec<T>>,
        op: T,
        backend: Option<Backend>,
    ) -> Result<()> {
        match log.lock() {
            Ok(mut a) => a.push(op),
            Err(e) => e.into_inner().push(op),
        }
        if backend.is_some() && self.broken == backend {
            return Err(super::Error::NoTable {
                tool: "iptables-save".into(),
                table: "nat".into(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
fn read<T: Clone>(log: &std::sync::Mutex<Vec<T>>) -> Vec<T> {
    log.lock()
        .map(|a| a.clone())
        .unwrap_or_else(|e| e.into_inner().clone())
}

#[cfg(test)]
impl Apply for Fake {
    fn usable(&self, backend: Backend) -> bool {
        self.usable.contains(&backend)
    }

    fn installed(&self, backend: Backend) -> bool {
        self.installed.contains(&backend)
    }

    fn firewalld(&self) -> bool {
        self.firewalld
    }

    fn masq(&self, backend: Backend, op: &masq::Op) -> Result<()> {
        self.record(&self.applied, (backend, op.clone()), Some(backend))
    }

    fn portmap(&self, backend: Backend, op: &portmap::Op) -> Result<()> {
        self.record(&self.portmap, (backend, op.clone()), Some(backend))
    }

    fn firewall(&self, target: firewall::Target, op: &firewall::Op) -> Result<Vec<Remembered>> {
        let backend = match target {
            firewall::Target::Rules(b) => Some(b),
            firewall::Target::Firewalld => None,
        };
        self.record(&self.firewall, (target, op.clone()), backend)?;
        Ok(match op {
            firewall::Op::Add { .. } => self.handles.clone(),
            _ => Vec::new(),
        })
    }
}
