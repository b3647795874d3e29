//! `<prefix>/config`: the network flanneld hands out subnets of, read as
//! flannel reads it (`pkg/subnet/config.go` ParseConfig and
//! CheckNetworkConfig; `pkg/backend/vxlan/vxlan.go` parseVXLANConfig).
//!
//! Go's `encoding/json` rules hold: keys match field names case-insensitively
//! (`network`, `vni`), every entry of a duplicated key is decoded in document
//! order and the last wins, unknown keys are ignored, and `null` leaves a plain
//! field as it was but is an error for an address (flannel's IP types reject
//! it). Where flannel's behaviour is accidental this decides otherwise, each
//! said where it happens: an absent Backend is vxlan, IPv6-only and
//! SubnetMin above SubnetMax are refused.

use crate::cni::json::{self, Json, fold_eq};
use crate::quote::quoted;
use ipnet::{Ipv4Net, Ipv6Net};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A config flannel would refuse, or one this daemon cannot run; the message
/// names the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "flannel network config: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

type Result<T> = std::result::Result<T, ConfigError>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(ConfigError(msg.into()))
}

/// The network config with flannel's defaults applied and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkConfig {
    pub network: Ipv4Net,
    pub subnet_len: u8,
    /// The first and last subnet handed out (their network addresses).
    pub subnet_min: Ipv4Addr,
    pub subnet_max: Ipv4Addr,
    /// `EnableIPv6`: the IPv6 side, all of it checked as the IPv4 one.
    pub ipv6: Option<Ipv6Config>,
    pub enable_nftables: bool,
    pub backend: Backend,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ipv6Config {
    pub network: Ipv6Net,
    pub subnet_len: u8,
    pub subnet_min: Ipv6Addr,
    pub subnet_max: Ipv6Addr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    Vxlan {
        vni: u32,
        /// 0: the kernel's default (8472).
        port: u16,
        /// None: the external interface's MTU.
        mtu: Option<u32>,
        gbp: bool,
        learning: bool,
        direct_routing: bool,
    },
    HostGw,
}

impl Backend {
    /// The `BackendType` of this node's lease.
    pub fn type_name(&self) -> &'static str {
        match self {
            Backend::Vxlan { .. } => "vxlan",
            Backend::HostGw => "host-gw",
        }
    }
}

/// flannel's `defaultVNI`.
const DEFAULT_VNI: u32 = 1;
/// VXLAN network identifiers are 24 bits.
const MAX_VNI: i64 = (1 << 24) - 1;

/// Parses and checks `<prefix>/config`.
pub fn parse(bytes: &[u8]) -> Result<NetworkConfig> {
    let doc = json::parse(bytes).or_else(|e| err(format!("not JSON: {e}")))?;
    let obj: &[(String, Json)] = match &doc {
        Json::Object(entries) => entries,
        // Go decodes null into the zero Config: no Network.
        Json::Null => &[],
        _ => return err("not a JSON object"),
    };
    if !boolean(obj, "EnableIPv4", true)? {
        // flannel's subnet keys need an IPv4 subnet (`pkg/subnet/subnet.go`
        // subnetRegex), so an IPv6-only network cannot be stored in etcd.
        return err(
            "EnableIPv4 false (IPv6 only) cannot be used with etcd: flannel's subnet keys need an IPv4 subnet",
        );
    }
    let (network, subnet_len, subnet_min, subnet_max) = ipv4_side(obj)?;
    let ipv6 = if boolean(obj, "EnableIPv6", false)? {
        Some(ipv6_side(obj)?)
    } else {
        None
    };
    Ok(NetworkConfig {
        network,
        subnet_len,
        subnet_min,
        subnet_max,
        ipv6,
        enable_nftables: boolean(obj, "EnableNFTables", false)?,
        backend: backend(last(obj, "Backend"))?,
    })
}

/// Every value whose key names field `name`, in document order.
fn values<'a>(obj: &'a [(String, Json)], name: &'a str) -> impl Iterator<Item = &'a Json> {
    obj.iter()
        .filter(move |(k, _)| k == name || fold_eq(k, name))
        .map(|(_, v)| v)
}

/// The last value for `name`, null included (a raw field keeps whatever came last).
fn last<'a>(obj: &'a [(String, Json)], name: &'a str) -> Option<&'a Json> {
    values(obj, name).last()
}

/// A plain field: each entry decoded in turn, null keeping the value before.
fn plain<T>(
    obj: &[(String, Json)],
    name: &str,
    default: T,
    decode: impl Fn(&Json) -> Option<T>,
    what: &str,
) -> Result<T> {
    let mut out = default;
    for v in values(obj, name) {
        if v.is_null() {
            continue;
        }
        match decode(v) {
            Some(x) => out = x,
            None => return err(format!("{name} must be {what}, not {}", show(v))),
        }
    }
    Ok(out)
}

fn boolean(obj: &[(String, Json)], name: &str, default: bool) -> Result<bool> {
    plain(
        obj,
        name,
        default,
        |v| match v {
            Json::Bool(b) => Some(*b),
            _ => None,
        },
        "true or false",
    )
}

/// An integer field (Go `int`/`uint`: a number without fraction or exponent).
fn integer(obj: &[(String, Json)], name: &str, default: i64) -> Result<i64> {
    plain(
        obj,
        name,
        default,
        |v| match v {
            Json::Number(n) => n.as_i64(),
            _ => None,
        },
        "an integer",
    )
}

/// An address field: flannel's IP types decode `null` as an error, and
/// every entry is decoded (a bad one fails even when a later one is good).
fn address<T>(
    obj: &[(String, Json)],
    name: &str,
    decode: impl Fn(&str) -> Option<T>,
    what: &str,
) -> Result<Option<T>> {
    let mut out = None;
    for v in values(obj, name) {
        match v.as_str().and_then(&decode) {
            Some(x) => out = Some(x),
            None => return err(format!("{name} must be {what}, not {}", show(v))),
        }
    }
    Ok(out)
}

/// A short rendering of a value for messages, without control characters.
fn show(v: &Json) -> String {
    let text = match v {
        Json::Null => "null".to_string(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => format!("{s}", s = quoted(&s)),
        Json::Array(_) => "an array".to_string(),
        Json::Object(_) => "an object".to_string(),
    };
    text.chars().take(80).collect()
}

fn ipv4_side(obj: &[(String, Json)]) -> Result<(Ipv4Net, u8, Ipv4Addr, Ipv4Addr)> {
    let network = address(
        obj,
        "Network",
        |s| s.parse::<Ipv4Net>().ok().map(|n| n.trunc()),
        "an IPv4 CIDR",
    )?;
    // flannel's Empty(): no Network, or 0.0.0.0/0.
    let Some(network) = network.filter(|n| n.prefix_len() != 0) else {
        return err("Network is missing: define an IPv4 CIDR such as \"10.5.0.0/16\"");
    };
    let prefix = network.prefix_len();
    let subnet_len = match integer(obj, "SubnetLen", 0)? {
        n if n < 0 => return err(format!("SubnetLen {n} is negative")),
        // flannel's defaults: /24 for a network of /22 or larger, else a
        // quarter of it; under /28 no four /30 subnets fit.
        0 if prefix > 28 => {
            return err(format!(
                "Network {network} is too small: the smallest is a /28"
            ));
        }
        0 if prefix <= 22 => 24,
        0 => prefix + 2,
        n if n > 30 => return err(format!("SubnetLen {n} is too long: at most 30")),
        n if n < i64::from(prefix) + 2 => {
            return err(format!(
                "SubnetLen {n} is too short for Network {network}: at least {} (four subnets)",
                prefix + 2
            ));
        }
        n => n as u8,
    };
    let span = Span::v4(network, subnet_len);
    let v4 = |s: &str| s.parse::<Ipv4Addr>().ok();
    let min = address(obj, "SubnetMin", v4, "an IPv4 address")?.map(u32::from);
    let max = address(obj, "SubnetMax", v4, "an IPv4 address")?.map(u32::from);
    let (min, max) = span.bounds(
        min.map(u128::from),
        max.map(u128::from),
        "SubnetMin",
        "SubnetMax",
        &|x| Ipv4Addr::from(x as u32).to_string(),
    )?;
    Ok((
        network,
        subnet_len,
        Ipv4Addr::from(min as u32),
        Ipv4Addr::from(max as u32),
    ))
}

fn ipv6_side(obj: &[(String, Json)]) -> Result<Ipv6Config> {
    let network = address(
        obj,
        "IPv6Network",
        |s| s.parse::<Ipv6Net>().ok().map(|n| n.trunc()),
        "an IPv6 CIDR",
    )?;
    let Some(network) = network.filter(|n| n.prefix_len() != 0) else {
        return err("IPv6Network is missing (EnableIPv6 is true): define an IPv6 CIDR");
    };
    // Go prints these as IPv4 (net.IP.String), which flannel's subnet key
    // pattern cannot read back.
    let compat: Ipv6Net =
        Ipv6Net::new(Ipv6Addr::UNSPECIFIED, 80).or_else(|e| err(format!("internal: {e}")))?;
    if compat.contains(&network.network()) {
        return err(format!(
            "IPv6Network {network} lies in ::/80 (IPv4-compatible or -mapped addresses)"
        ));
    }
    let prefix = network.prefix_len();
    let subnet_len = match integer(obj, "IPv6SubnetLen", 0)? {
        n if n < 0 => return err(format!("IPv6SubnetLen {n} is negative")),
        0 if prefix > 124 => {
            return err(format!(
                "IPv6Network {network} is too small: the smallest is a /124"
            ));
        }
        0 if prefix <= 62 => 64,
        0 => prefix + 2,
        n if n > 126 => return err(format!("IPv6SubnetLen {n} is too long: at most 126")),
        n if n < i64::from(prefix) + 2 => {
            return err(format!(
                "IPv6SubnetLen {n} is too short for IPv6Network {network}: at least {} (four subnets)",
                prefix + 2
            ));
        }
        n => n as u8,
    };
    let span = Span::v6(network, subnet_len);
    // Pointers in flannel: null resets them to unset.
    let v6 = |name: &str| -> Result<Option<u128>> {
        let mut out = None;
        for v in values(obj, name) {
            out = match v {
                Json::Null => None,
                Json::String(s) => match s.parse::<Ipv6Addr>() {
                    Ok(a) => Some(u128::from(a)),
                    Err(_) => {
                        return err(format!("{name} must be an IPv6 address, not {}", show(v)));
                    }
                },
                _ => return err(format!("{name} must be an IPv6 address, not {}", show(v))),
            };
        }
        Ok(out)
    };
    let (min, max) = span.bounds(
        v6("IPv6SubnetMin")?,
        v6("IPv6SubnetMax")?,
        "IPv6SubnetMin",
        "IPv6SubnetMax",
        &|x| Ipv6Addr::from(x).to_string(),
    )?;
    Ok(Ipv6Config {
        network,
        subnet_len,
        subnet_min: Ipv6Addr::from(min),
        subnet_max: Ipv6Addr::from(max),
    })
}

/// A network cut into subnets of one length, as integers of either family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The network's first address and its size (both < 2^128: a /0 is refused).
    pub start: u128,
    pub size: u128,
    /// One subnet's size.
    pub step: u128,
}

impl Span {
    pub fn v4(network: Ipv4Net, subnet_len: u8) -> Span {
        Span {
            start: u128::from(u32::from(network.network())),
            size: 1u128 << (32 - network.prefix_len().min(32)),
            step: 1u128 << (32 - subnet_len.min(32)),
        }
    }

    pub fn v6(network: Ipv6Net, subnet_len: u8) -> Span {
        let shift = |len: u8| 128 - u32::from(len.clamp(1, 128));
        Span {
            start: u128::from(network.network()),
            size: 1u128 << shift(network.prefix_len()),
            step: 1u128 << shift(subnet_len),
        }
    }

    fn contains(&self, x: u128) -> bool {
        x >= self.start && x - self.start < self.size
    }

    /// SubnetMin and SubnetMax, defaulted (the second subnet, the last one;
    /// an unset or zero address is flannel's "unset") and checked.
    fn bounds(
        &self,
        min: Option<u128>,
        max: Option<u128>,
        min_key: &str,
        max_key: &str,
        show: &dyn Fn(u128) -> String,
    ) -> Result<(u128, u128)> {
        let check = |x: u128, key: &str| -> Result<u128> {
            if !self.contains(x) {
                return err(format!("{key} {} is not in the network", show(x)));
            }
            if !(x - self.start).is_multiple_of(self.step) {
                return err(format!(
                    "{key} {} is not on a subnet boundary (subnets of {} addresses)",
                    show(x),
                    self.step
                ));
            }
            Ok(x)
        };
        let min = match min.filter(|&x| x != 0) {
            None => self.start + self.step,
            Some(x) => check(x, min_key)?,
        };
        let max = match max.filter(|&x| x != 0) {
            None => self.start + (self.size - self.step),
            Some(x) => check(x, max_key)?,
        };
        // flannel takes this and then finds no subnet; say why instead.
        if min > max {
            return err(format!(
                "{min_key} {} is above {max_key} {}",
                show(min),
                show(max)
            ));
        }
        Ok((min, max))
    }
}

impl NetworkConfig {
    /// The IPv4 subnets handed out, as integers.
    pub fn span_v4(&self) -> Span {
        Span::v4(self.network, self.subnet_len)
    }
}

impl Ipv6Config {
    pub fn span(&self) -> Span {
        Span::v6(self.network, self.subnet_len)
    }
}

/// `Backend`: flannel's raw object, its `Type` lower-cased (flannel's
/// backend manager does). Absent, null or without a Type it is vxlan, which
/// flannel's documentation names the default (its code says udp, which this
/// daemon does not have).
fn backend(raw: Option<&Json>) -> Result<Backend> {
    let obj: &[(String, Json)] = match raw {
        None | Some(Json::Null) => &[],
        Some(Json::Object(entries)) => entries,
        Some(other) => return err(format!("Backend must be an object, not {}", show(other))),
    };
    let kind = plain(
        obj,
        "Type",
        String::new(),
        |v| v.as_str().map(str::to_string),
        "a string",
    )
    .map_err(|e| ConfigError(format!("Backend.{}", e.0)))?;
    match kind.to_lowercase().as_str() {
        "" | "vxlan" => vxlan(obj).map_err(|e| ConfigError(format!("Backend.{}", e.0))),
        "host-gw" => Ok(Backend::HostGw),
        other => err(format!(
            "Backend.Type {other} is not supported by cni-multi flanneld (vxlan or host-gw)",
            other = quoted(&other)
        )),
    }
}

/// The vxlan backend's keys (flannel's `VXLANConfig`, tags `vni`, `port`,
/// `mtu`, `gbp`, `learning`, `directRouting`, matched case-insensitively).
fn vxlan(obj: &[(String, Json)]) -> Result<Backend> {
    let vni = integer(obj, "VNI", i64::from(DEFAULT_VNI))?;
    if !(0..=MAX_VNI).contains(&vni) {
        return err(format!("VNI {vni} is out of range (0 to {MAX_VNI})"));
    }
    let port = integer(obj, "Port", 0)?;
    let port = u16::try_from(port).or_else(|_| err(format!("Port {port} is out of range")))?;
    // 0, as absent: the external interface's MTU (flannel would make a
    // device of MTU -50).
    let mtu = match integer(obj, "MTU", 0)? {
        0 => None,
        n => Some(u32::try_from(n).or_else(|_| err(format!("MTU {n} is out of range")))?),
    };
    Ok(Backend::Vxlan {
        vni: vni as u32,
        port,
        mtu,
        gbp: boolean(obj, "GBP", false)?,
        learning: boolean(obj, "Learning", false)?,
        direct_routing: boolean(obj, "DirectRouting", false)?,
    })
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
