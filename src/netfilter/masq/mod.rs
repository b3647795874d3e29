//! ipMasq for bridge and ptp: the `ipMasq` / `ipMasqBackend` keys decoded
//! once into a [`Masquerade`] and the backend choice here, the rules of each
//! backend in `iptables.rs` (the reference's `CNI-<hash>` chains; `xtnft.rs`
//! the same rules over netlink on iptables-nft) and `nftables.rs`.
//!
//! A [`Masquerade`] hands each operation as an [`Op`] to an [`Apply`] (on a
//! node, `run` of it here). The verbs are `add`, `del`, `check` and `gc` of
//! a [`Plan`] (`gc` of a network and the containers to keep), the netfilter
//! lock taken here and nowhere below (`check` only reads: no lock). bridge's and ptp's CHECK do
//! not look at ipMasq, as in the reference; their GC (the reference has
//! none) removes a network's stale attachments: iptables chains are named by
//! a hash of network and container, so they are told apart by the
//! `name: "<net>" id: "<cid>"` comment of their rules and jumps (a kept
//! container keeps its chain); nftables rules start with a hash of the
//! network and one of the interface and container, so exactly the listed
//! attachments are kept.

pub mod iptables;
pub mod nftables;
pub mod xtnft;

use crate::netfilter::{Apply, Backend, Choice, Kept, Result, lock};
use ipnet::IpNet;

/// Everything one attachment's masquerading depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub network: String,
    pub container_id: String,
    pub ifname: String,
    /// The container's addresses as allocated (empty for a DEL).
    pub addresses: Vec<IpNet>,
}

impl Plan {
    pub fn new(network: &str, container_id: &str, ifname: &str, addresses: &[IpNet]) -> Plan {
        Plan {
            network: network.to_string(),
            container_id: container_id.to_string(),
            ifname: ifname.to_string(),
            addresses: addresses.to_vec(),
        }
    }
}

/// One masquerading operation, as data: what [`Apply::masq`] is handed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Masquerade traffic from the plan's addresses.
    Add(Plan),
    /// Remove the attachment's masquerading, found without its addresses.
    Del(Plan),
    /// Whether the attachment's masquerading is as ADD wrote it (read only).
    Check(Plan),
    /// Remove the masquerading of `network`'s attachments not in `keep`.
    Gc { network: String, keep: Vec<Kept> },
}

/// Runs `op` in `backend` on this node (what [`crate::netfilter::Kernel`] does).
pub fn run(backend: Backend, op: &Op) -> Result<()> {
    match op {
        Op::Add(plan) => add(backend, plan),
        Op::Del(plan) => del(backend, plan),
        Op::Check(plan) => check(backend, plan),
        Op::Gc { network, keep } => gc(backend, network, keep),
    }
}

/// Masquerades traffic from the plan's addresses.
pub fn add(backend: Backend, plan: &Plan) -> Result<()> {
    match backend {
        // Without the lock, as the reference: the container's own chain and
        // its jumps from the built-in POSTROUTING are all an ADD writes, so
        // no other attachment's ADD, DEL or GC reads or writes them, and each
        // restore commits atomically (iptables-nft retries a commit another
        // one overtook; iptables-legacy waits for the xtables lock). Under
        // the lock, parallel ADDs queued behind each other's restore.
        Backend::Iptables(flavour) => iptables::add(flavour, plan),
        // The shared table goes with its last rule (DEL), so an ADD must not
        // run between a DEL's read and its commit.
        Backend::Nftables => {
            let _lock = lock()?;
            nftables::add(plan)
        }
    }
}

/// Removes the attachment's masquerading, found without its addresses.
pub fn del(backend: Backend, plan: &Plan) -> Result<()> {
    let _lock = lock()?;
    match backend {
        Backend::Iptables(flavour) => iptables::del(flavour, plan),
        Backend::Nftables => nftables::del(plan),
    }
}

/// Whether the attachment's masquerading is as its ADD wrote it (read only: no lock).
pub fn check(backend: Backend, plan: &Plan) -> Result<()> {
    match backend {
        Backend::Iptables(flavour) => iptables::check(flavour, plan),
        Backend::Nftables => nftables::check(plan),
    }
}

/// Removes the masquerading of `network`'s attachments not in `keep`.
pub fn gc(backend: Backend, network: &str, keep: &[Kept]) -> Result<()> {
    let _lock = lock()?;
    match backend {
        Backend::Iptables(flavour) => iptables::gc(flavour, network, &Kept::containers(keep)),
        Backend::Nftables => nftables::gc(network, keep),
    }
}

/// bridge's and ptp's masquerading, their `ipMasq` and `ipMasqBackend`
/// decoded once: off, or on in the configured backend (or, with none, the
/// one ADD detects; DEL and GC clean every one usable here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Masquerade {
    #[default]
    Off,
    On(Choice),
}

impl Masquerade {
    /// The keys as ADD (and CHECK, GC and validation) takes them: an unknown
    /// backend is refused, whether masquerading is on or not.
    pub fn from_keys(on: bool, backend: Option<&str>) -> Result<Masquerade> {
        let choice = Choice::parse(backend)?;
        Ok(if on {
            Masquerade::On(choice)
        } else {
            Masquerade::Off
        })
    }

    /// The keys as DEL takes them, which takes what ADD refuses: an unknown
    /// backend counts as unset (the reference's DEL tears down both backends
    /// whatever the key says).
    pub fn for_del(on: bool, backend: Option<&str>) -> Masquerade {
        match on {
            true => Masquerade::On(Choice::parse(backend).unwrap_or(Choice::Detect)),
            false => Masquerade::Off,
        }
    }

    pub fn is_on(self) -> bool {
        self != Masquerade::Off
    }

    /// The backend and plan an ADD with these addresses writes; None when it
    /// writes nothing (masquerading off, no addresses).
    pub fn plan(
        self,
        nf: &dyn Apply,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
    ) -> Result<Option<(Backend, Plan)>> {
        let Masquerade::On(choice) = self else {
            return Ok(None);
        };
        if ips.is_empty() {
            return Ok(None);
        }
        let plan = Plan::new(network, container_id, ifname, ips);
        Ok(Some((choice.backend(nf)?, plan)))
    }

    /// Masquerades the attachment's addresses; where iptables was only
    /// detected and turns out unusable, in nftables instead.
    pub fn add(
        self,
        nf: &dyn Apply,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
    ) -> Result<()> {
        let Some((backend, plan)) = self.plan(nf, network, container_id, ifname, ips)? else {
            return Ok(());
        };
        let op = Op::Add(plan);
        nf.masq(backend, &op).or_else(|e| {
            let Masquerade::On(choice) = self else {
                return Err(e);
            };
            match choice.instead(nf, backend, &e) {
                Some(other) => nf.masq(other, &op),
                None => Err(e),
            }
        })
    }

    /// Runs `work` while this attachment's rules are added on a thread of
    /// their own, in this thread's namespace (their restore, an exec, mostly
    /// waits on the kernel); both have ended when this returns. When `work`
    /// fails, rules that were added are removed again; when only the rules
    /// fail, theirs is the error.
    pub fn add_during<E: From<super::Error>>(
        self,
        nf: &dyn Apply,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
        work: impl FnOnce() -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        // No thread when there is nothing to masquerade.
        if !self.is_on() || ips.is_empty() {
            return work();
        }
        let (worked, added) = std::thread::scope(|scope| {
            let adding = scope.spawn(|| self.add(nf, network, container_id, ifname, ips));
            let worked = work();
            // A panic stays a panic, as if the rules had been added here.
            let added = adding
                .join()
                .unwrap_or_else(|payload| std::panic::resume_unwind(payload));
            (worked, added)
        });
        match (worked, added) {
            (Ok(()), added) => added.map_err(E::from),
            (Err(e), Ok(())) => {
                let _ = self.del(nf, network, container_id, ifname, ips);
                Err(e)
            }
            (Err(e), Err(_)) => Err(e),
        }
    }

    /// GC when on: as DEL, in the configured backend or else in every one
    /// usable here (ADD may have detected either).
    pub fn gc(self, nf: &dyn Apply, network: &str, keep: Vec<Kept>) -> Result<()> {
        let Masquerade::On(choice) = self else {
            return Ok(());
        };
        let op = Op::Gc {
            network: network.to_string(),
            keep,
        };
        choice
            .for_del(nf)
            .into_iter()
            .try_for_each(|backend| nf.masq(backend, &op))
    }

    /// Always attempted when on, even without the container's addresses
    /// (`ips`, from prevResult where there is one: they spare reading every
    /// container's jump); without `ipMasqBackend`, in every backend usable here.
    pub fn del(
        self,
        nf: &dyn Apply,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
    ) -> Result<()> {
        let Masquerade::On(choice) = self else {
            return Ok(());
        };
        let op = Op::Del(Plan::new(network, container_id, ifname, ips));
        choice
            .for_del(nf)
            .into_iter()
            .try_for_each(|backend| nf.masq(backend, &op))
    }
}

#[cfg(test)]
mod tests;
