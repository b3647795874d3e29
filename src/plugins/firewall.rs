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
struct Keys {
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
}

fn load(inv: &Invocation) -> CniResult<Conf> {
    let k: Keys = inv.conf.plugin_keys()?;
    match k.backend.as_str() {
        "" | "iptables" => {}
        // No D-Bus client in this build, and no firewalld on these machines to test one.
        "firewalld" => {
            return Err(Error::invalid_config(
                "the firewalld backend is not supported by cni-multi; use \"iptables\"",
            ));
        }
        other => {
            return Err(Error::invalid_config(format!(
                "unknown firewall backend {other:?}"
            )));
        }
    }
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
    Ok(Conf {
        admin_chain,
        policy: IngressPolicy::parse(&k.ingress_policy)?,
    })
}

fn prev(inv: &Invocation) -> CniResult<NetResult> {
    inv.conf
        .prev_result()?
        .ok_or_else(|| Error::invalid_config("missing prevResult from earlier plugin"))
}

fn addresses(prev: &NetResult) -> Vec<IpNet> {
    prev.ips.iter().map(|ip| ip.address).collect()
}

impl Plugin for Firewall {
    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = load(inv)?;
        let prev = prev(inv)?;
        let ips = addresses(&prev);
        if !ips.is_empty() {
            Backend::detect()?;
            // The bridge is the first interface of the main plugin's result.
            let bridge = prev
                .interfaces
                .first()
                .map(|i| i.name.clone())
                .unwrap_or_default();
            rules::add(&ips, &conf.admin_chain, conf.policy, &bridge)?;
        }
        Ok(prev)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let conf = load(inv)?;
        // The rules carry only addresses: without prevResult nothing can be found.
        let Some(prev) = inv.conf.prev_result()? else {
            return Ok(());
        };
        if Backend::detect().is_err() {
            return Ok(());
        }
        rules::del(&addresses(&prev), &conf.admin_chain)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = load(inv)?;
        rules::check(&addresses(&prev(inv)?), &conf.admin_chain)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        load(inv)?;
        Backend::detect()
            .map(drop)
            .map_err(|e| Error::new(Code::NotAvailable, e.msg))
    }
}
