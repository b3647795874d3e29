//! The firewall plugin's rules: the `ingressPolicy` value, the iptables form
//! (`iptables.rs`, the reference's), the firewalld form (`firewalld.rs`, the
//! reference's, over D-Bus) and the nftables form (`nftables.rs`). The
//! iptables form's add/del/check are the module's own; the others are under
//! `firewalld::` and `nftables::`.

pub mod firewalld;
pub mod iptables;
pub mod nftables;

pub use iptables::{add, check, del};

use crate::netfilter::{Error, Result};

/// `ingressPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngressPolicy {
    Open,
    SameBridge,
    Isolated,
}

impl IngressPolicy {
    pub fn parse(s: &str) -> Result<IngressPolicy> {
        match s {
            "" | "open" => Ok(IngressPolicy::Open),
            "same-bridge" => Ok(IngressPolicy::SameBridge),
            "isolated" => Ok(IngressPolicy::Isolated),
            other => Err(Error::InvalidConfig(format!(
                "unknown ingressPolicy {other:?}"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            IngressPolicy::Open => "open",
            IngressPolicy::SameBridge => "same-bridge",
            IngressPolicy::Isolated => "isolated",
        }
    }
}
