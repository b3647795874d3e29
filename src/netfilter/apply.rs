//! The seam between what a plugin decides and the node's netfilter. A
//! plugin turns its config and the attachment into data (the backend, from a
//! [`super::Choice`] decoded once, and an operation such as `masq::Op::Add` of
//! a `masq::Plan`) and hands them to an [`Apply`]. [`Kernel`] applies them to
//! this node: iptables rules in one `iptables-restore` per family (legacy), or
//! as one nf_tables netlink batch per family where iptables is the nf_tables
//! flavour, nftables rules as one netlink transaction; a backend's module
//! reads what it must by name first and builds that write with its pure
//! builders (`testdata/netfilter/` pins those). In unit tests a [`Fake`]
//! stands in: it records what would have been applied, needs no root, and
//! says which backends are usable and which fail.

use super::{Backend, Result, masq};

/// Where the netfilter operations of a plugin go.
pub trait Apply: Sync {
    /// Whether `backend`'s rules can be written (and so may exist) here.
    fn usable(&self, backend: Backend) -> bool;

    /// Runs one masquerading operation in `backend`.
    fn masq(&self, backend: Backend, op: &masq::Op) -> Result<()>;
}

/// This node's netfilter.
pub struct Kernel;

impl Apply for Kernel {
    fn usable(&self, backend: Backend) -> bool {
        backend.usable()
    }

    fn masq(&self, backend: Backend, op: &masq::Op) -> Result<()> {
        masq::run(backend, op)
    }
}

/// A netfilter that records what it is asked to apply, for unit tests.
#[cfg(test)]
pub struct Fake {
    /// The backends `usable` says are.
    pub usable: Vec<Backend>,
    /// A backend whose every operation fails as iptables does on a kernel
    /// without its tables (what `Choice::instead` looks for).
    pub broken: Option<Backend>,
    /// What was applied, in order (a failed operation too).
    pub applied: std::sync::Mutex<Vec<(Backend, masq::Op)>>,
}

#[cfg(test)]
impl Fake {
    /// A node where `usable` can take rules.
    pub fn with(usable: &[Backend]) -> Fake {
        Fake {
            usable: usable.to_vec(),
            broken: None,
            applied: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// What was applied so far.
    pub fn applied(&self) -> Vec<(Backend, masq::Op)> {
        self.applied
            .lock()
            .map(|a| a.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }
}

#[cfg(test)]
impl Apply for Fake {
    fn usable(&self, backend: Backend) -> bool {
        self.usable.contains(&backend)
    }

    fn masq(&self, backend: Backend, op: &masq::Op) -> Result<()> {
        match self.applied.lock() {
            Ok(mut a) => a.push((backend, op.clone())),
            Err(e) => e.into_inner().push((backend, op.clone())),
        }
        if self.broken == Some(backend) {
            return Err(super::Error::NoTable {
                tool: "iptables-save".into(),
                table: "nat".into(),
            });
        }
        Ok(())
    }
}
