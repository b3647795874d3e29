//! firewall (chained): lets the container's addresses through FORWARD in the
//! reference's `CNI-FORWARD` chain, with an admin chain and optional bridge
//! isolation. Its output is prevResult, unchanged.

use crate::cni::result::NetResult;
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::netfilter::Backend;
use crate::netfilter::firewall::{self as rules, IngressPolicy};
use ipnet::IpNet;
use serde::Deserialize;

pub struct Firewall;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Keys {
    backend: String,
    #[serde(rename = "iptablesAdminChainName")]
    admin_chain: String,
    #[serde(rename = "firewalldZone")]
    firewalld_zone: String,
    #[serde(rename = "ingressPolicy")]
    ingress_policy: String,
}

struct Conf {
    admin_chain: String,
    policy: IngressPolicy,
    /// None: detect (iptables when its tools are there, else nftables).
    backend: Option<Backend>,
}

fn load(inv: &Invocation) -> CniResult<Conf> {
    let k: Keys = inv.conf.plugin_keys()?;
    let backend = match k.backend.as_str() {
        "" => None,
        "iptables" => Some(Backend::Iptables),
        "nftables" => Some(Backend::Nftables),
        // No D-Bus client in this build, and no firewalld on these machines to test one.
        "firewalld" => {
            return Err(Error::invalid_config(
                "the firewalld backend is not supported by cni-multi; use \"iptables\" or \"nftables\"",
            ));
        }
        other => {
            return Err(Error::invalid_config(format!(
                "unknown firewall backend {other:?}"
            )));
        }
    };
    let _ = k.firewalld_zone;
    let admin_chain = if k.admin_chain.is_empty() {
        "CNI-ADMIN".to_string()
    } else {
        k.admin_chain
    };
    let valid = admin_chain.len() <= 28
        && admin_chain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(Error::invalid_config(format!(
            "invalid iptablesAdminChainName {admin_chain:?}"
        )));
    }
    let policy = IngressPolicy::parse(&k.ingress_policy)?;
    if policy != IngressPolicy::Open && backend == Some(Backend::Nftables) {
        return Err(Error::invalid_config(
            "ingressPolicy other than \"open\" needs the iptables backend",
        ));
    }
    Ok(Conf {
        admin_chain,
        policy,
        backend,
    })
}

/// DEL's reading of the config. The reference's DEL refuses only an unknown
/// ingressPolicy; any other config ADD refuses (a backend or admin chain name
/// it does not take) made no rules, so there is nothing to delete (said on stderr).
fn del_conf(inv: &Invocation) -> CniResult<Option<Conf>> {
    match load(inv) {
        Ok(conf) => Ok(Some(conf)),
        Err(e) => {
            let k: Keys = inv.conf.plugin_keys()?;
            IngressPolicy::parse(&k.ingress_policy)?;
            eprintln!("firewall: nothing to delete for a config ADD refuses: {e}");
            Ok(None)
        }
    }
}

fn prev(inv: &Invocation) -> CniResult<NetResult> {
    inv.conf
        .container_prev_result()?
        .ok_or_else(|| Error::invalid_config("missing prevResult from earlier plugin"))
}

fn addresses(prev: &NetResult) -> Vec<IpNet> {
    prev.ips.iter().map(|ip| ip.address).collect()
}

impl Conf {
    fn backend(&self) -> CniResult<Backend> {
        match self.backend {
            Some(b) => Ok(b),
            None => Ok(Backend::detect()?),
        }
    }
}

impl Plugin for Firewall {
    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = load(inv)?;
        let prev = prev(inv)?;
        let ips = addresses(&prev);
        if ips.is_empty() {
            return Ok(prev);
        }
        match conf.backend()? {
            Backend::Iptables => {
                // The bridge is the first interface of the main plugin's result.
                let bridge = prev
                    .interfaces
                    .first()
                    .map(|i| i.name.clone())
                    .unwrap_or_default();
                rules::add(&ips, &conf.admin_chain, conf.policy, &bridge)?;
            }
            Backend::Nftables => {
                if conf.policy != IngressPolicy::Open {
                    return Err(Error::invalid_config(
                        "ingressPolicy other than \"open\" needs the iptables backend",
                    ));
                }
                let _lock = crate::netfilter::lock()?;
                rules::nftables::add(&inv.env.container_id, &ips)?;
            }
        }
        Ok(prev)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let Some(conf) = del_conf(inv)? else {
            return Ok(());
        };
        match conf.backend() {
            Ok(Backend::Iptables) => {
                // The iptables rules carry only addresses: they need prevResult.
                match inv.conf.container_prev_result()? {
                    Some(prev) => Ok(rules::del(&addresses(&prev), &conf.admin_chain)?),
                    None => Ok(()),
                }
            }
            Ok(Backend::Nftables) => {
                let _lock = crate::netfilter::lock()?;
                Ok(rules::nftables::del(&inv.env.container_id)?)
            }
            // No usable backend: no rules of ours can exist.
            Err(_) => Ok(()),
        }
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = load(inv)?;
        let ips = addresses(&prev(inv)?);
        match conf.backend()? {
            Backend::Iptables => Ok(rules::check(&ips, &conf.admin_chain)?),
            Backend::Nftables => Ok(rules::nftables::check(&inv.env.container_id, &ips)?),
        }
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        let conf = load(inv)?;
        let usable = match conf.backend {
            Some(Backend::Iptables) => {
                crate::netfilter::iptables::usable(crate::netfilter::Family::V4)
            }
            Some(Backend::Nftables) => crate::netlink::nfnl::available(),
            None => Backend::detect().is_ok(),
        };
        if usable {
            Ok(())
        } else {
            Err(Error::new(
                Code::NotAvailable,
                "firewall: its netfilter backend is not usable",
            ))
        }
    }
}
