//! static IPAM: the addresses, routes and DNS of the config (or of the runtime's
//! overrides), returned as they are. No state, so DEL has nothing to undo.

use crate::cni::result::{Dns, IpConfig, Route};
use crate::cni::{CniResult, Error, Invocation, NetResult, Plugin};
use crate::ipam::check_addresses_per_family;
use crate::quote::quoted;
use ipnet::IpNet;
use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;

pub struct Static;

impl Plugin for Static {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let mut result = NetResult::new();
        result.ips = conf
            .addresses
            .iter()
            .map(|a| IpConfig {
                interface: None,
                address: a.address,
                gateway: a.gateway,
            })
            .collect();
        result.routes = conf.routes;
        result.dns = conf.dns;
        Ok(result)
    }

    /// Nothing to release: success whatever the config, as the reference.
    fn del(&self, _inv: &Invocation) -> CniResult<()> {
        Ok(())
    }

    /// Every configured address must be in prevResult, with its gateway if one is set.
    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let prev = inv
            .conf
            .prev_result()?
            .ok_or_else(|| Error::invalid_config("Required prevResult missing"))?;
        for want in &conf.addresses {
            let found = prev
                .ips
                .iter()
                .find(|ip| ip.address.addr() == want.address.addr());
            match found {
                None => {
                    return Err(Error::internal(format!(
                        "static: Failed to find address {} on interface {}",
                        want.address, inv.env.ifname
                    )));
                }
                Some(ip) if want.gateway.is_some() && ip.gateway != want.gateway => {
                    return Err(Error::internal(format!(
                        "static: Failed to match addr {} on interface {}",
                        want.address.addr(),
                        inv.env.ifname
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename = "Address", rename_all = "camelCase")]
struct AddressKeys {
    #[serde(default)]
    address: Option<String>,
    #[serde(default)]
    gateway: Option<IpAddr>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "IPAMConfig", rename_all = "camelCase")]
struct IpamKeys {
    #[serde(default)]
    addresses: Option<Vec<AddressKeys>>,
    #[serde(default)]
    routes: Option<Vec<Route>>,
    #[serde(default)]
    dns: Option<Dns>,
}

#[derive(Debug, Deserialize)]
#[serde(rename = "Net", rename_all = "camelCase")]
pub(crate) struct Keys {
    ipam: Option<IpamKeys>,
}

#[derive(Debug, Clone, PartialEq)]
struct Address {
    address: IpNet,
    gateway: Option<IpAddr>,
}

#[derive(Debug)]
struct Conf {
    addresses: Vec<Address>,
    routes: Vec<Route>,
    dns: Dns,
}

impl Conf {
    /// Address sources in increasing priority, as the reference: the config, CNI_ARGS
    /// `IP` (appended) and `GATEWAY` (set on the address whose subnet holds it),
    /// `args.cni.ips` (replaces), `runtimeConfig.ips` (replaces).
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let keys: Keys = inv.conf.plugin_keys()?;
        let ipam = keys
            .ipam
            .ok_or_else(|| Error::invalid_config("IPAM config missing 'ipam' key"))?;
        let mut addresses = Vec::new();
        for (i, a) in ipam.addresses.unwrap_or_default().into_iter().enumerate() {
            let text = a.address.unwrap_or_default();
            // The reference's words; the details name the key.
            let address = parse_cidr(&text).map_err(|e| {
                Error::invalid_config(format!(
                    "the 'address' field is expected to be in CIDR notation, got: '{text}'"
                ))
                .with_details(format!("key ipam.addresses[{i}].address"))
                .with_source(e)
            })?;
            addresses.push(Address {
                address,
                gateway: a.gateway,
            });
        }
        if let Some(ips) = inv.cni_args.get("IP") {
            for item in ips.split(',').map(str::trim) {
                let address = parse_cidr(item)
                    .map_err(|e| Error::invalid_env(e.to_string()).with_source(e))?;
                addresses.push(Address {
                    address,
                    gateway: None,
                });
            }
        }
        if let Some(gateways) = inv.cni_args.get("GATEWAY") {
            for item in gateways.split(',').map(str::trim) {
                let gw: IpAddr = item
                    .parse()
                    .map_err(|_| Error::invalid_env(format!("invalid gateway address: {item}")))?;
                for a in addresses.iter_mut().filter(|a| a.address.contains(&gw)) {
                    a.gateway = Some(gw);
                }
            }
        }
        for (section, ips) in [
            ("args.cni", inv.conf.args_cni::<Vec<String>>("ips")?),
            (
                "runtimeConfig",
                inv.conf.runtime_config::<Vec<String>>("ips")?,
            ),
        ] {
            let Some(ips) = ips.filter(|v| !v.is_empty()) else {
                continue;
            };
            addresses = ips
                .iter()
                .map(|s| {
                    parse_cidr(s)
                        .map(|address| Address {
                            address,
                            gateway: None,
                        })
                        .map_err(|e| {
                            Error::invalid_config(format!(
                                "an entry in the 'ips' field of {section} is NOT in CIDR notation, got {s}", s = quoted(&s)
                            ))
                            .with_source(e)
                        })
                })
                .collect::<CniResult<_>>()?;
        }
        for a in &addresses {
            if let Some(gw) = a.gateway
                && gw.is_ipv4() != a.address.addr().is_ipv4()
            {
                return Err(Error::invalid_config(format!(
                    "gateway {gw} is not of the family of address {}",
                    a.address
                )));
            }
        }
        check_addresses_per_family(
            inv.conf.cni_version(),
            addresses.iter().map(|a| a.address.addr()),
        )?;
        Ok(Conf {
            addresses,
            routes: ipam.routes.unwrap_or_default(),
            dns: ipam.dns.unwrap_or_default(),
        })
    }
}

/// A text that is not `ip/prefix`; the parser's complaint is the source.
#[derive(Debug)]
struct InvalidCidr {
    text: String,
    cause: Box<dyn std::error::Error + Send + Sync>,
}

impl fmt::Display for InvalidCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid CIDR {}", quoted(&self.text))
    }
}

impl std::error::Error for InvalidCidr {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.cause.as_ref())
    }
}

/// `ip/prefix`, keeping the host bits; an IPv4-mapped IPv6 form counts as IPv4.
fn parse_cidr(s: &str) -> Result<IpNet, InvalidCidr> {
    let invalid = |cause: Box<dyn std::error::Error + Send + Sync>| InvalidCidr {
        text: s.to_string(),
        cause,
    };
    let net: IpNet = s
        .parse()
        .map_err(|e: ipnet::AddrParseError| invalid(e.into()))?;
    Ok(match net {
        IpNet::V6(v6) => match (v6.addr().to_ipv4_mapped(), v6.prefix_len()) {
            (Some(v4), len) if len >= 96 => IpNet::new(IpAddr::V4(v4), len - 96)
                .map_err(|e: ipnet::PrefixLenError| invalid(e.into()))?,
            _ => net,
        },
        IpNet::V4(_) => net,
    })
}

#[cfg(test)]
#[path = "static_ipam_tests.rs"]
mod tests;
