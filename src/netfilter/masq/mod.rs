//! ipMasq for bridge and ptp: the `ipMasq` / `ipMasqBackend` keys and the
//! backend choice here, the rules of each backend in `iptables.rs` (the
//! reference's `CNI-<hash>` chains) and `nftables.rs`.

pub mod iptables;
pub mod nftables;

use crate::netfilter::{Backend, Result, lock};
use ipnet::IpNet;

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
        match Backend::choose(self.backend.as_deref())? {
            Backend::Iptables => iptables::setup(network, container_id, ips),
            Backend::Nftables => {
                let _lock = lock()?;
                nftables::setup(network, container_id, ifname, ips)
            }
        }
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
                let _ = self.del(network, container_id, ifname);
                Err(e)
            }
            (Err(e), Err(_)) => Err(e),
        }
    }

    /// Always attempted when enabled, even without the container's addresses;
    /// without `ipMasqBackend`, in every backend usable here.
    pub fn del(&self, network: &str, container_id: &str, ifname: &str) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let configured = match self.backend.as_deref().filter(|b| !b.is_empty()) {
            Some(b) => Some(Backend::parse(b)?),
            None => None,
        };
        for backend in Backend::for_del(configured) {
            match backend {
                Backend::Iptables => iptables::teardown(network, container_id)?,
                Backend::Nftables => {
                    let _lock = lock()?;
                    nftables::teardown(network, container_id, ifname)?;
                }
            }
        }
        Ok(())
    }
}
