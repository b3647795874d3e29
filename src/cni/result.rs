//! Result types of every spec version, the reference's conversions between them,
//! and printing in the reference's exact shape.

use crate::cni::error::{Code, Error};
use crate::cni::json;
use crate::cni::version::{self, Family};
use crate::quote::quoted;
use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::net::IpAddr;

/// The current (1.1.0) result. Plugins build this; the dispatcher prints it at the
/// config's version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetResult {
    #[serde(rename = "cniVersion", default)]
    pub cni_version: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub interfaces: Vec<Interface>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ips: Vec<IpConfig>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub routes: Vec<Route>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Dns::is_empty"
    )]
    pub dns: Dns,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac: String,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub mtu: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sandbox: String,
    #[serde(
        rename = "socketPath",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub socket_path: String,
    #[serde(rename = "pciID", default, skip_serializing_if = "String::is_empty")]
    pub pci_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
    /// Address with its prefix; host bits are kept (`10.22.0.5/16`).
    pub address: IpNet,
    #[serde(
        default,
        deserialize_with = "optional_ip",
        skip_serializing_if = "Option::is_none"
    )]
    pub gateway: Option<IpAddr>,
}

/// A route; the same type serves every version, in the reference's key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename = "types.Route")]
pub struct Route {
    pub dst: IpNet,
    #[serde(
        default,
        deserialize_with = "optional_ip",
        skip_serializing_if = "Option::is_none"
    )]
    pub gw: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub mtu: i64,
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub advmss: i64,
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub priority: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<i64>,
}

impl Route {
    pub fn new(dst: IpNet, gw: Option<IpAddr>) -> Self {
        Route {
            dst,
            gw,
            mtu: 0,
            advmss: 0,
            priority: 0,
            table: None,
            scope: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename = "types.DNS")]
pub struct Dns {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nameservers: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub domain: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub search: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub options: Vec<String>,
}

impl Dns {
    pub fn is_empty(&self) -> bool {
        self.nameservers.is_empty()
            && self.domain.is_empty()
            && self.search.is_empty()
            && self.options.is_empty()
    }
}

/// 0.3.0 / 0.3.1 / 0.4.0 result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Result040 {
    #[serde(rename = "cniVersion", default)]
    pub cni_version: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub interfaces: Vec<Interface040>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ips: Vec<IpConfig040>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub routes: Vec<Route>,
    /// Always printed at these versions, `{}` when empty.
    #[serde(default, deserialize_with = "null_default")]
    pub dns: Dns,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface040 {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sandbox: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig040 {
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
    pub address: IpNet,
    #[serde(
        default,
        deserialize_with = "optional_ip",
        skip_serializing_if = "Option::is_none"
    )]
    pub gateway: Option<IpAddr>,
}

/// 0.1.0 / 0.2.0 result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Result020 {
    #[serde(rename = "cniVersion", default)]
    pub cni_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip4: Option<IpConfig020>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip6: Option<IpConfig020>,
    #[serde(default, deserialize_with = "null_default")]
    pub dns: Dns,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig020 {
    pub ip: IpNet,
    #[serde(
        default,
        deserialize_with = "optional_ip",
        skip_serializing_if = "Option::is_none"
    )]
    pub gateway: Option<IpAddr>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub routes: Vec<Route>,
}

/// A result in one version's layout.
#[derive(Debug, Clone, PartialEq)]
pub enum Versioned {
    V020(Result020),
    V040(Result040),
    V100(NetResult),
}

/// A result that cannot be read in the layout asked for (the reference's texts).
#[derive(Debug)]
pub enum ParseError {
    UnsupportedVersion(String),
    NotAnObject,
    Json(json::Error),
    /// The result's own version belongs to another layout.
    OtherLayout {
        supported: String,
        found: String,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::UnsupportedVersion(v) => {
                write!(f, "unsupported CNI result version {v}", v = quoted(&v))
            }
            ParseError::NotAnObject => f.write_str("result is not a JSON object"),
            ParseError::Json(e) => write!(f, "{e}"),
            ParseError::OtherLayout { supported, found } => write!(
                f,
                "result type supports {supported} but unmarshalled CNIVersion is {found}",
                found = quoted(&found)
            ),
        }
    }
}

impl std::error::Error for ParseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ParseError::Json(e) => Some(e),
            _ => None,
        }
    }
}

impl Versioned {
    pub fn version(&self) -> &str {
        match self {
            Versioned::V020(r) => &r.cni_version,
            Versioned::V040(r) => &r.cni_version,
            Versioned::V100(r) => &r.cni_version,
        }
    }

    /// Parses a result as the reference does for `prevResult`: with the given
    /// (config) version's layout, stamping that version when the result has none,
    /// and refusing a result whose own version belongs to another layout.
    pub fn parse(mut value: serde_json::Value, as_version: &str) -> Result<Versioned, ParseError> {
        let as_version = version::effective(as_version);
        let family = Family::of(as_version)
            .ok_or_else(|| ParseError::UnsupportedVersion(as_version.to_string()))?;
        let obj = value.as_object_mut().ok_or(ParseError::NotAnObject)?;
        let stamped =
            crate::cni::json::map_field(obj, "cniVersion").is_none_or(|v| v.as_str() == Some(""));
        if stamped {
            obj.insert("cniVersion".into(), as_version.into());
        }
        let parsed = match family {
            Family::V020 => json::from_value(value).map(Versioned::V020),
            Family::V040 => json::from_value(value).map(Versioned::V040),
            Family::V100 => json::from_value(value).map(Versioned::V100),
        }
        .map_err(ParseError::Json)?;
        if !family.versions().contains(&parsed.version()) {
            return Err(ParseError::OtherLayout {
                supported: version::go_quoted_list(family.versions()),
                found: parsed.version().to_string(),
            });
        }
        Ok(parsed)
    }

    /// Parses a plugin's output as libcni does: with the result's own
    /// `cniVersion`, or `fallback` (the config's) when it has none.
    pub fn parse_own(value: serde_json::Value, fallback: &str) -> Result<Versioned, ParseError> {
        let own = value
            .as_object()
            .and_then(|o| json::map_field(o, "cniVersion"))
            .and_then(serde_json::Value::as_str)
            .filter(|v| !v.is_empty())
            .unwrap_or(fallback)
            .to_string();
        Versioned::parse(value, &own)
    }

    /// Converts to another version following libcni's conversion registry.
    pub fn convert(self, to: &str) -> Result<Versioned, Error> {
        let to = version::effective(to);
        let target = Family::of(to).ok_or_else(|| {
            Error::new(
                Code::IncompatibleVersion,
                format!("unsupported CNI result version {to}", to = quoted(&to)),
            )
        })?;
        let converted = match (self, target) {
            (Versioned::V020(r), Family::V020) => Versioned::V020(r),
            (Versioned::V040(r), Family::V040) => Versioned::V040(r),
            (Versioned::V100(r), Family::V100) => Versioned::V100(r),
            (Versioned::V020(r), Family::V040) => Versioned::V040(v020_to_v040(r)),
            (Versioned::V020(r), Family::V100) => Versioned::V100(v040_to_v100(v020_to_v040(r))),
            (Versioned::V040(r), Family::V020) => Versioned::V020(v040_to_v020(r)?),
            (Versioned::V040(r), Family::V100) => Versioned::V100(v040_to_v100(r)),
            (Versioned::V100(r), Family::V040) => Versioned::V040(v100_to_v040(r)),
            (Versioned::V100(r), Family::V020) => Versioned::V020(v040_to_v020(v100_to_v040(r))?),
        };
        Ok(converted.with_version(to))
    }

    fn with_version(mut self, to: &str) -> Versioned {
        let v = match &mut self {
            Versioned::V020(r) => &mut r.cni_version,
            Versioned::V040(r) => &mut r.cni_version,
            Versioned::V100(r) => &mut r.cni_version,
        };
        *v = to.to_string();
        self
    }

    /// The current (1.1.0) form.
    pub fn into_current(self) -> Result<NetResult, Error> {
        match self.convert(version::CURRENT)? {
            Versioned::V100(r) => Ok(r),
            _ => Err(Error::internal(
                "result conversion to current version failed",
            )),
        }
    }

    /// The bytes a plugin prints: 4-space indent, no trailing newline; 1.x keys sorted.
    pub fn to_json(&self) -> String {
        match self {
            Versioned::V020(r) => to_pretty_json(r),
            Versioned::V040(r) => to_pretty_json(r),
            Versioned::V100(r) => {
                // The reference re-marshals 1.x results through a map: keys sorted.
                let sorted = serde_json::to_value(r).unwrap_or_default();
                to_pretty_json(&sorted)
            }
        }
    }
}

impl NetResult {
    pub fn new() -> Self {
        NetResult {
            cni_version: version::CURRENT.to_string(),
            ..Default::default()
        }
    }

    /// Prints this result at the config's version.
    pub fn render(&self, cni_version: &str) -> Result<String, Error> {
        let printed = Versioned::V100(self.clone())
            .convert(cni_version)
            .map_err(|e| e.context("failed to convert result"))?;
        Ok(printed.to_json())
    }
}

fn v020_to_v040(r: Result020) -> Result040 {
    let mut ips = Vec::new();
    let mut routes = Vec::new();
    for (ver, cfg) in [("4", r.ip4), ("6", r.ip6)] {
        if let Some(cfg) = cfg {
            ips.push(IpConfig040 {
                version: ver.to_string(),
                interface: None,
                address: cfg.ip,
                gateway: cfg.gateway,
            });
            routes.extend(cfg.routes);
        }
    }
    Result040 {
        cni_version: r.cni_version,
        interfaces: Vec::new(),
        ips,
        routes,
        dns: r.dns,
    }
}

fn v040_to_v020(r: Result040) -> Result<Result020, Error> {
    let first = |ver: &str| {
        r.ips
            .iter()
            .find(|ip| ip.version == ver)
            .map(|ip| IpConfig020 {
                ip: ip.address,
                gateway: ip.gateway,
                routes: Vec::new(),
            })
    };
    let mut ip4 = first("4");
    let mut ip6 = first("6");
    if ip4.is_none() && ip6.is_none() {
        return Err(Error::internal("cannot convert: no valid IP addresses"));
    }
    for route in &r.routes {
        // Only dst and gw survive, and only into a family that has an IP.
        let slim = Route::new(route.dst, route.gw);
        let target = if route.dst.addr().is_ipv4() {
            ip4.as_mut()
        } else {
            ip6.as_mut()
        };
        if let Some(cfg) = target {
            cfg.routes.push(slim);
        }
    }
    Ok(Result020 {
        cni_version: r.cni_version,
        ip4,
        ip6,
        dns: r.dns,
    })
}

fn v040_to_v100(r: Result040) -> NetResult {
    NetResult {
        cni_version: r.cni_version,
        interfaces: r
            .interfaces
            .into_iter()
            .map(|i| Interface {
                name: i.name,
                mac: i.mac,
                sandbox: i.sandbox,
                ..Default::default()
            })
            .collect(),
        ips: r
            .ips
            .into_iter()
            .map(|ip| IpConfig {
                interface: ip.interface,
                address: ip.address,
                gateway: ip.gateway,
            })
            .collect(),
        routes: r.routes,
        dns: r.dns,
    }
}

fn v100_to_v040(r: NetResult) -> Result040 {
    Result040 {
        cni_version: r.cni_version,
        interfaces: r
            .interfaces
            .into_iter()
            .map(|i| Interface040 {
                name: i.name,
                mac: i.mac,
                sandbox: i.sandbox,
            })
            .collect(),
        ips: r
            .ips
            .into_iter()
            .map(|ip| IpConfig040 {
                version: if ip.address.addr().is_ipv4() {
                    "4"
                } else {
                    "6"
                }
                .to_string(),
                interface: ip.interface,
                address: ip.address,
                gateway: ip.gateway,
            })
            .collect(),
        routes: r.routes,
        dns: r.dns,
    }
}

/// JSON as Go's `json.MarshalIndent(v, "", "    ")`: 4 spaces, HTML-safe escapes,
/// no trailing newline.
pub fn to_pretty_json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    if value.serialize(&mut ser).is_err() {
        return "{}".to_string();
    }
    let text = String::from_utf8(out).unwrap_or_default();
    go_escape(&text)
}

/// Go escapes `<`, `>`, `&`, U+2028 and U+2029 in JSON strings; outside strings
/// these characters never occur in JSON, so a plain replace is exact.
pub fn go_escape(json: &str) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// Go decodes `null` into a zero value; serde would refuse it.
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Go's `net.IP` decodes `""` (and `null`) as no address.
fn optional_ip<'de, D>(d: D) -> Result<Option<IpAddr>, D::Error>
where
    D: Deserializer<'de>,
{
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => s
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("invalid IP address: {s}"))),
    }
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
