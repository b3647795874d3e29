//! ipMasq for bridge and ptp: the `ipMasq` / `ipMasqBackend` keys and the
//! backend choice here, the rules of each backend in `iptables.rs` (the
//! reference's `CNI-<hash>` chains) and `nftables.rs`.
//!
//! The verbs are `add`, `del`, `check` and `gc` of a [`Plan`] (`gc` of a
//! network and the containers to keep), the netfilter lock taken here and
//! nowhere below (`check` only reads: no lock). bridge's and ptp's CHECK do
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

use crate::netfilter::{Backend, Kept, Result, lock};
use ipnet::IpNet;

/// Everything one attachment's masquerading depends on.
#[derive(Debug, Clone)]
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

/// Masquerades traffic from the plan's addresses.
pub fn add(backend: Backend, plan: &Plan) -> Result<()> {
    match backend {
        // Without the lock, as the reference: the container's own chain and
        // its jumps from the built-in POSTROUTING are all an ADD writes, so
        // no other attachment's ADD, DEL or GC reads or writes them, and each
        // restore commits atomically (iptables-nft retries a commit another
        // one overtook; iptables-legacy waits for the xtables lock). Under
        // the lock, parallel ADDs queued behind each other's restore.
        Backend::Iptables => iptables::add(plan),
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
        Backend::Iptables => iptables::del(plan),
        Backend::Nftables => nftables::del(plan),
    }
}

/// Whether the attachment's masquerading is as its ADD wrote it (read only: no lock).
pub fn check(backend: Backend, plan: &Plan) -> Result<()> {
    match backend {
        Backend::Iptables => iptables::check(plan),
        Backend::Nftables => nftables::check(plan),
    }
}

/// Removes the masquerading of `network`'s attachments not in `keep`.
pub fn gc(backend: Backend, network: &str, keep: &[Kept]) -> Result<()> {
    let _lock = lock()?;
    match backend {
        Backend::Iptables => iptables::gc(network, &Kept::containers(keep)),
        Backend::Nftables => nftables::gc(network, keep),
    }
}

/// The `ipMasq` / `ipMasqBackend` keys of bridge and ptp.
#[derive(Debug, Clone, Default)]
pub struct IpMasq {
    enabled: bool,
    backend: Option<String>,
}

impl IpMasq {
    pub fn new(enabled: bool, backend: Option<String>) -> Result<IpMasq> {
        if let Some(b) = backend.as_deref().filter(|b| !b.is_empty()) {
            Backend::parse(b)?;
        }
        Ok(IpMasq { enabled, backend })
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// For DEL, which takes what ADD refuses: an unknown backend counts as
    /// unset (the reference's DEL tears down both backends whatever the key says).
    pub fn for_del(enabled: bool, backend: Option<String>) -> IpMasq {
        IpMasq::new(enabled, backend.clone()).unwrap_or(IpMasq {
            enabled,
            backend: None,
        })
    }

    pub fn add(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
    ) -> Result<()> {
        if !self.enabled || ips.is_empty() {
            return Ok(());
        }
        let backend = Backend::choose(self.backend.as_deref())?;
        let plan = Plan::new(network, container_id, ifname, ips);
        add(backend, &plan).or_else(
            |e| match Backend::instead(self.configured()?, backend, &e) {
                Some(other) => add(other, &plan),
                None => Err(e),
            },
        )
    }

    /// The backend and plan an ADD with these addresses writes; None when it
    /// writes nothing (masquerading off, no addresses).
    pub fn plan(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
    ) -> Result<Option<(Backend, Plan)>> {
        if !self.enabled || ips.is_empty() {
            return Ok(None);
        }
        let backend = Backend::choose(self.backend.as_deref())?;
        Ok(Some((
            backend,
            Plan::new(network, container_id, ifname, ips),
        )))
    }

    /// Runs `work` while this attachment's rules are added on a thread of
    /// their own, in this thread's namespace (their restore, an exec, mostly
    /// waits on the kernel); both have ended when this returns. When `work`
    /// fails, rules that were added are removed again; when only the rules
    /// fail, theirs is the error.
    pub fn add_during<E: From<super::Error>>(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
        work: impl FnOnce() -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        // No thread when there is nothing to masquerade.
        if !self.enabled || ips.is_empty() {
            return work();
        }
        let (worked, added) = std::thread::scope(|scope| {
            let adding = scope.spawn(|| self.add(network, container_id, ifname, ips));
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
                let _ = self.del(network, container_id, ifname, ips);
                Err(e)
            }
            (Err(e), Err(_)) => Err(e),
        }
    }

    /// GC when enabled: as DEL, in the configured backend or else in every
    /// one usable here (ADD may have detected either).
    pub fn gc(&self, network: &str, keep: &[Kept]) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        Backend::for_del(self.configured()?)
            .into_iter()
            .try_for_each(|backend| gc(backend, network, keep))
    }

    fn configured(&self) -> Result<Option<Backend>> {
        self.backend
            .as_deref()
            .filter(|b| !b.is_empty())
            .map(Backend::parse)
            .transpose()
    }

    /// Always attempted when enabled, even without the container's addresses
    /// (`ips`, from prevResult where there is one: they spare reading every
    /// container's jump); without `ipMasqBackend`, in every backend usable here.
    pub fn del(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
        ips: &[IpNet],
    ) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let plan = Plan::new(network, container_id, ifname, ips);
        Backend::for_del(self.configured()?)
            .into_iter()
            .try_for_each(|backend| del(backend, &plan))
    }
}
