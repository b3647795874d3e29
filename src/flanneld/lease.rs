//! A subnet lease as flannel stores it in etcd: the key
//! `<prefix>/subnets/10.5.72.0-24` (dual-stack `10.5.72.0-24&fc00::-64`,
//! `pkg/subnet/subnet.go` MakeSubnetKey/ParseSubnetKey) and the value, the
//! `LeaseAttrs` JSON of `pkg/lease/lease.go`, written byte for byte as Go's
//! `encoding/json` writes it and read as leniently as it reads it.

use crate::cni::json::{self, Json, fold_eq};
use ipnet::{Ipv4Net, Ipv6Net};
use std::fmt::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// A lease value flannel would not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseError(pub String);

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "subnet lease: {}", self.0)
    }
}

impl std::error::Error for LeaseError {}

fn err<T>(msg: impl Into<String>) -> Result<T, LeaseError> {
    Err(LeaseError(msg.into()))
}

/// The key's last part: `10.5.72.0-24`, or `10.5.72.0-24&fc00::-64` (the IPv6
/// address in Go's compressed form, as `Ipv6Addr` prints it: RFC 5952).
pub fn subnet_key(subnet: Ipv4Net, ipv6_subnet: Option<Ipv6Net>) -> String {
    let mut key = format!("{}-{}", subnet.addr(), subnet.prefix_len());
    if let Some(sn6) = ipv6_subnet {
        let _ = write!(key, "&{}-{}", sn6.addr(), sn6.prefix_len());
    }
    key
}

/// flannel's key pattern, unanchored at the start as in `subnetRegex` (so a
/// whole etcd key or its last part both parse; unescaped dots included).
const KEY_PATTERN: &str = r"(\d+\.\d+.\d+.\d+)-(\d+)(?:&([a-f\d:]+)-(\d+))?$";

fn key_regex() -> Option<&'static regex_lite::Regex> {
    static RE: OnceLock<Option<regex_lite::Regex>> = OnceLock::new();
    RE.get_or_init(|| regex_lite::Regex::new(KEY_PATTERN).ok())
        .as_ref()
}

/// The subnets a key names, as flannel's ParseSubnetKey finds them; None for
/// a key that is not a subnet (flannel skips those). The prefix lengths are
/// bounded as Go's `ParseUint(.., 5)` and `(.., 7)` bound them (below 32 and
/// 128); an address off its prefix's boundary is kept as written, so it
/// never equals a subnet this daemon makes (see `alloc`).
pub fn parse_subnet_key(key: &str) -> Option<(Ipv4Net, Option<Ipv6Net>)> {
    let caps = key_regex()?.captures(key)?;
    let len = |i: usize, max: u8| -> Option<u8> {
        let s = caps.get(i)?.as_str();
        let n: u8 = s.parse().ok()?;
        (n <= max).then_some(n)
    };
    let ip: Ipv4Addr = caps.get(1)?.as_str().parse().ok()?;
    let v4 = Ipv4Net::new(ip, len(2, 31)?).ok()?;
    let v6 = match caps.get(3) {
        None => None,
        Some(m) => {
            let ip: Ipv6Addr = m.as_str().parse().ok()?;
            Some(Ipv6Net::new(ip, len(4, 127)?).ok()?)
        }
    };
    Some((v4, v6))
}

/// flannel's `LeaseAttrs`. `backend_data` and `backend_v6_data` are kept as
/// the JSON they are (each backend has its own); [`VxlanData`] reads vxlan's.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseAttrs {
    /// Always written; 0.0.0.0 when a lease has none.
    pub public_ip: Ipv4Addr,
    /// Written as `null` when None.
    pub public_ipv6: Option<Ipv6Addr>,
    /// Omitted when empty.
    pub backend_type: String,
    pub backend_data: Option<Json>,
    pub backend_v6_data: Option<Json>,
}

/// vxlan's `BackendData`: `{"VNI":1,"VtepMAC":"c6:d2:32:6f:8f:44"}`
/// (`pkg/backend/vxlan/vxlan_network.go` vxlanLeaseAttrs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VxlanData {
    pub vni: u32,
    pub vtep_mac: [u8; 6],
}

impl LeaseAttrs {
    /// A vxlan node's attrs (`pkg/backend/vxlan/vxlan.go` newSubnetAttrs): the
    /// IPv6 device, when there is one, has its own MAC in `BackendV6Data`.
    pub fn vxlan(
        public_ip: Ipv4Addr,
        data: VxlanData,
        ipv6: Option<(Ipv6Addr, VxlanData)>,
    ) -> LeaseAttrs {
        LeaseAttrs {
            public_ip,
            public_ipv6: ipv6.map(|(ip, _)| ip),
            backend_type: "vxlan".to_string(),
            backend_data: Some(data.to_json()),
            backend_v6_data: ipv6.map(|(_, d)| d.to_json()),
        }
    }

    /// A host-gw node's attrs: no backend data (`pkg/backend/hostgw/hostgw.go`).
    pub fn host_gw(public_ip: Ipv4Addr, public_ipv6: Option<Ipv6Addr>) -> LeaseAttrs {
        LeaseAttrs {
            public_ip,
            public_ipv6,
            backend_type: "host-gw".to_string(),
            backend_data: None,
            backend_v6_data: None,
        }
    }

    /// The value as Go's `json.Marshal(attrs)` writes it: fields in struct
    /// order, `PublicIPv6` null when unset, empty ones omitted.
    pub fn to_json(&self) -> String {
        let mut out = format!("{{\"PublicIP\":\"{}\",\"PublicIPv6\":", self.public_ip);
        match self.public_ipv6 {
            Some(ip) => {
                let _ = write!(out, "\"{ip}\"");
            }
            None => out.push_str("null"),
        }
        if !self.backend_type.is_empty() {
            out.push_str(",\"BackendType\":");
            go_string(&mut out, &self.backend_type);
        }
        for (name, data) in [
            ("BackendData", &self.backend_data),
            ("BackendV6Data", &self.backend_v6_data),
        ] {
            if let Some(data) = data {
                let _ = write!(out, ",\"{name}\":");
                go_json(&mut out, data);
            }
        }
        out.push('}');
        out
    }

    /// Reads a lease value as Go's `json.Unmarshal` into `LeaseAttrs` does:
    /// keys case-insensitive, every entry of a key decoded in order (the last
    /// wins), unknown keys ignored, `null` an error for `PublicIP` (flannel's
    /// IPv4 type refuses it) and None for `PublicIPv6`.
    pub fn parse(bytes: &[u8]) -> Result<LeaseAttrs, LeaseError> {
        let doc = json::parse(bytes).or_else(|e| err(format!("not JSON: {e}")))?;
        let obj: &[(String, Json)] = match &doc {
            Json::Object(entries) => entries,
            Json::Null => &[],
            _ => return err("not a JSON object"),
        };
        let mut attrs = LeaseAttrs {
            public_ip: Ipv4Addr::UNSPECIFIED,
            public_ipv6: None,
            backend_type: String::new(),
            backend_data: None,
            backend_v6_data: None,
        };
        for (key, value) in obj {
            let is = |name: &str| key == name || fold_eq(key, name);
            if is("PublicIP") {
                attrs.public_ip = match value.as_str().and_then(parse_ipv4) {
                    Some(ip) => ip,
                    None => {
                        return err(format!("PublicIP is not an IPv4 address: {}", brief(value)));
                    }
                };
            } else if is("PublicIPv6") {
                attrs.public_ipv6 = match value {
                    Json::Null => None,
                    _ => match value.as_str().and_then(parse_ipv6) {
                        Some(ip) => Some(ip),
                        None => {
                            return err(format!(
                                "PublicIPv6 is not an IP address: {}",
                                brief(value)
                            ));
                        }
                    },
                };
            } else if is("BackendType") {
                match value {
                    Json::Null => {}
                    Json::String(s) => attrs.backend_type = s.clone(),
                    _ => return err(format!("BackendType is not a string: {}", brief(value))),
                }
            } else if is("BackendData") {
                attrs.backend_data = Some(value.clone());
            } else if is("BackendV6Data") {
                attrs.backend_v6_data = Some(value.clone());
            }
        }
        Ok(attrs)
    }

    /// vxlan's data for the IPv4 side.
    pub fn vxlan_data(&self) -> Result<VxlanData, LeaseError> {
        VxlanData::parse(self.backend_data.as_ref(), "BackendData")
    }

    /// vxlan's data for the IPv6 side.
    pub fn vxlan_v6_data(&self) -> Result<VxlanData, LeaseError> {
        VxlanData::parse(self.backend_v6_data.as_ref(), "BackendV6Data")
    }
}

impl VxlanData {
    fn to_json(self) -> Json {
        Json::Object(vec![
            ("VNI".to_string(), Json::Number(self.vni.into())),
            (
                "VtepMAC".to_string(),
                Json::String(format_mac(self.vtep_mac)),
            ),
        ])
    }

    /// Reads vxlan's data as flannel does; a missing or unreadable `VtepMAC`
    /// is an error here (flannel would program a neighbour without one).
    fn parse(data: Option<&Json>, name: &str) -> Result<VxlanData, LeaseError> {
        let obj: &[(String, Json)] = match data {
            Some(Json::Object(entries)) => entries,
            None | Some(Json::Null) => return err(format!("{name} is missing")),
            Some(other) => return err(format!("{name} is not an object: {}", brief(other))),
        };
        let (mut vni, mut mac) = (0, None);
        for (key, value) in obj {
            if key == "VNI" || fold_eq(key, "VNI") {
                match value {
                    Json::Null => {}
                    Json::Number(n) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
                        Some(n) => vni = n,
                        None => return err(format!("{name}.VNI is out of range: {n}")),
                    },
                    _ => return err(format!("{name}.VNI is not a number: {}", brief(value))),
                }
            } else if key == "VtepMAC" || fold_eq(key, "VtepMAC") {
                match value.as_str().and_then(parse_mac) {
                    Some(m) => mac = Some(m),
                    None => return err(format!("{name}.VtepMAC is not a MAC: {}", brief(value))),
                }
            }
        }
        match mac {
            Some(vtep_mac) => Ok(VxlanData { vni, vtep_mac }),
            None => err(format!("{name} has no VtepMAC")),
        }
    }
}

/// Go's `net.HardwareAddr.String()`: lower-case, colon-separated.
pub fn format_mac(mac: [u8; 6]) -> String {
    let hex: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    hex.join(":")
}

/// A 6-byte MAC in `net.ParseMAC`'s colon or hyphen form (either case).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let sep = if s.contains('-') { '-' } else { ':' };
    let mut out = [0u8; 6];
    let mut parts = s.split(sep);
    for byte in &mut out {
        let part = parts.next()?;
        // from_str_radix alone would take "+f".
        if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// flannel's ParseIP4: any form Go's ParseIP reads that is IPv4 (also an
/// IPv4-mapped IPv6 address).
fn parse_ipv4(s: &str) -> Option<Ipv4Addr> {
    match s.parse::<IpAddr>().ok()? {
        IpAddr::V4(ip) => Some(ip),
        IpAddr::V6(ip) => ip.to_ipv4_mapped(),
    }
}

/// flannel's ParseIP6: Go's ParseIP, an IPv4 address becoming IPv4-mapped.
fn parse_ipv6(s: &str) -> Option<Ipv6Addr> {
    match s.parse::<IpAddr>().ok()? {
        IpAddr::V4(ip) => Some(ip.to_ipv6_mapped()),
        IpAddr::V6(ip) => Some(ip),
    }
}

/// A value for a message: short, control characters escaped.
fn brief(v: &Json) -> String {
    let mut out = String::new();
    go_json(&mut out, v);
    out.chars()
        .take(80)
        .flat_map(char::escape_default)
        .collect()
}

/// `v` as Go's encoder writes a RawMessage: compact, strings escaped as Go
/// escapes them.
fn go_json(out: &mut String, v: &Json) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Json::String(s) => go_string(out, s),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(out, item);
            }
            out.push(']');
        }
        Json::Object(entries) => {
            out.push('{');
            for (i, (k, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_string(out, k);
                out.push(':');
                go_json(out, item);
            }
            out.push('}');
        }
    }
}

/// A JSON string as Go's `encoding/json` writes it (HTML-safe: `<`, `>`, `&`,
/// U+2028 and U+2029 as `\u` escapes).
fn go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
