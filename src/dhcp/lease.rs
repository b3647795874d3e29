//! A lease as the daemon keeps it (in memory and on disk) and the CNI result
//! it gives, built as the reference builds it (plugins/ipam/dhcp/lease.go).

use super::wire::{self, code};
use super::{Error, Result};
use crate::cni::result::{Dns, IpConfig, NetResult, Route};
use ipnet::{IpNet, Ipv4Net};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

/// Lease time when the ACK has no option 51 (the reference's 60 minutes).
pub const DEFAULT_LEASE_SECS: u32 = 3600;
/// Route scope "link" (RT_SCOPE_LINK) for classless routes without a router.
pub const SCOPE_LINK: i64 = 253;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub address: Ipv4Addr,
    /// Option 54 (server identifier); the reply's source when absent.
    pub server: Ipv4Addr,
    /// Unix seconds when the ACK came.
    pub acquired: u64,
    /// Option 51 (default 3600 when absent).
    pub lease_secs: u32,
    /// Option 58 (default lease/2).
    pub renew_secs: u32,
    /// Option 59 (default 85% of the lease, as the reference).
    pub rebind_secs: u32,
    /// Every option of the ACK, raw (repeated instances joined), serialized as hex strings.
    #[serde(with = "hex_options")]
    pub options: BTreeMap<u8, Vec<u8>>,
}

fn u32_option(options: &BTreeMap<u8, Vec<u8>>, c: u8) -> Option<u32> {
    match options.get(&c)?.as_slice() {
        [a, b, c, d] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// A list of IPv4 addresses (option 3, 6); None unless a non-empty multiple of 4 bytes.
fn ip_list(value: &[u8]) -> Option<Vec<Ipv4Addr>> {
    if value.is_empty() || !value.len().is_multiple_of(4) {
        return None;
    }
    Some(
        value
            .chunks_exact(4)
            .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]))
            .collect(),
    )
}

impl Lease {
    /// The lease an ACK gives, acquired at `now` (unix seconds); `source` is the
    /// reply's sender, the server when the ACK has no option 54.
    pub fn from_ack(ack: &wire::Message, source: Ipv4Addr, now: u64) -> Lease {
        let mut options = BTreeMap::new();
        for (c, value) in &ack.options {
            options
                .entry(*c)
                .or_insert_with(Vec::new)
                .extend_from_slice(value);
        }
        let lease_secs = u32_option(&options, code::LEASE_TIME).unwrap_or(DEFAULT_LEASE_SECS);
        let default_rebind = (u64::from(lease_secs) * 85 / 100) as u32;
        Lease {
            address: ack.yiaddr,
            server: ack.server_id().unwrap_or(source),
            acquired: now,
            lease_secs,
            renew_secs: u32_option(&options, code::RENEWAL_TIME).unwrap_or(lease_secs / 2),
            rebind_secs: u32_option(&options, code::REBINDING_TIME).unwrap_or(default_rebind),
            options,
        }
    }

    pub fn renew_at(&self) -> u64 {
        self.acquired.saturating_add(u64::from(self.renew_secs))
    }

    pub fn rebind_at(&self) -> u64 {
        self.acquired.saturating_add(u64::from(self.rebind_secs))
    }

    pub fn expires_at(&self) -> u64 {
        self.acquired.saturating_add(u64::from(self.lease_secs))
    }

    /// The address with the prefix of option 1.
    pub fn address_net(&self) -> Result<Ipv4Net> {
        let mask = match self.options.get(&code::SUBNET_MASK).map(Vec::as_slice) {
            Some([a, b, c, d]) => u32::from_be_bytes([*a, *b, *c, *d]),
            Some(other) => {
                return Err(Error::Incomplete(format!(
                    "the subnet mask (option 1) in the DHCPACK for {} is {} bytes, not 4",
                    self.address,
                    other.len()
                )));
            }
            None => {
                return Err(Error::Incomplete(format!(
                    "the DHCPACK for {} has no subnet mask (option 1)",
                    self.address
                )));
            }
        };
        let prefix = mask.leading_ones();
        if mask.checked_shl(prefix).unwrap_or(0) != 0 {
            return Err(Error::Incomplete(format!(
                "the subnet mask {} in the DHCPACK for {} is not contiguous",
                Ipv4Addr::from(mask),
                self.address
            )));
        }
        Ipv4Net::new(self.address, prefix as u8)
            .map_err(|_| Error::Incomplete(format!("subnet mask of {} out of range", self.address)))
    }

    /// Option 3, in the server's order.
    pub fn routers(&self) -> Vec<Ipv4Addr> {
        self.options
            .get(&code::ROUTER)
            .and_then(|v| ip_list(v))
            .unwrap_or_default()
    }

    /// Routes as the reference builds them: option 121 when present and valid
    /// (RFC 3442 says it replaces 33 and the router), else option 33 (classful
    /// destinations) and a default route via the first router.
    pub fn routes(&self) -> Vec<Route> {
        if let Some(routes) = self
            .options
            .get(&code::CLASSLESS_ROUTES)
            .and_then(|v| classless_routes(v))
            .filter(|r| !r.is_empty())
        {
            return routes;
        }
        let mut routes = Vec::new();
        if let Some(v) = self.options.get(&code::STATIC_ROUTES) {
            routes.extend(static_routes(v));
        }
        if let Some(gw) = self.routers().first() {
            routes.push(Route::new(
                IpNet::V4(Ipv4Net::default()),
                Some(IpAddr::V4(*gw)),
            ));
        }
        routes
    }

    /// DNS from options 6 (servers), 15 (domain) and 119 (search list).
    pub fn dns(&self) -> Dns {
        let nameservers = self
            .options
            .get(&code::DNS_SERVERS)
            .and_then(|v| ip_list(v))
            .unwrap_or_default()
            .iter()
            .map(Ipv4Addr::to_string)
            .collect();
        let domain = self
            .options
            .get(&code::DOMAIN_NAME)
            .and_then(|v| domain_name(v))
            .unwrap_or_default();
        let search = self
            .options
            .get(&code::DOMAIN_SEARCH)
            .and_then(|v| domain_search(v))
            .unwrap_or_default();
        Dns {
            nameservers,
            domain,
            search,
            options: Vec::new(),
        }
    }

    /// The CNI result as the reference builds it: one IP (address/mask, error
    /// Incomplete if no mask), gateway = first router, the routes of `routes`
    /// with `priority` as every route's metric, and DNS from 6, 15 and 119.
    pub fn to_result(&self, priority: Option<u32>) -> Result<NetResult> {
        let address = self.address_net()?;
        let mut routes = self.routes();
        if let Some(p) = priority {
            routes.iter_mut().for_each(|r| r.priority = i64::from(p));
        }
        Ok(NetResult {
            cni_version: String::new(),
            interfaces: Vec::new(),
            ips: vec![IpConfig {
                interface: None,
                address: IpNet::V4(address),
                gateway: self.routers().first().map(|gw| IpAddr::V4(*gw)),
            }],
            routes,
            dns: self.dns(),
        })
    }
}

/// Option 121 (RFC 3442): width, the significant octets of the destination,
/// the router. Router 0.0.0.0 means on-link: no gateway, scope link. None when
/// malformed (the reference then ignores it, as here).
pub fn classless_routes(mut v: &[u8]) -> Option<Vec<Route>> {
    let mut routes = Vec::new();
    while let [width, rest @ ..] = v {
        if *width > 32 {
            return None;
        }
        let significant = usize::from(width.div_ceil(8));
        let dst = rest.get(..significant)?;
        let gw = rest.get(significant..significant + 4)?;
        let mut octets = [0u8; 4];
        octets[..significant].copy_from_slice(dst);
        let dst = Ipv4Net::new(Ipv4Addr::from(octets), *width).ok()?.trunc();
        let gw = Ipv4Addr::new(gw[0], gw[1], gw[2], gw[3]);
        let mut route = Route::new(IpNet::V4(dst), None);
        if gw.is_unspecified() {
            route.scope = Some(SCOPE_LINK);
        } else {
            route.gw = Some(IpAddr::V4(gw));
        }
        routes.push(route);
        v = &rest[significant + 4..];
    }
    Some(routes)
}

/// Option 33: (destination, router) pairs, the destination's prefix its class
/// (A /8, B /16, C /24, as Go's DefaultMask); class D/E destinations have no
/// class mask and are skipped (Go would return a route without a mask).
pub fn static_routes(v: &[u8]) -> Vec<Route> {
    v.chunks_exact(8)
        .filter_map(|c| {
            let dst = Ipv4Addr::new(c[0], c[1], c[2], c[3]);
            let prefix = match c[0] {
                0..=127 => 8,
                128..=191 => 16,
                192..=223 => 24,
                _ => return None,
            };
            let net = Ipv4Net::new(dst, prefix).ok()?.trunc();
            let gw = Ipv4Addr::new(c[4], c[5], c[6], c[7]);
            Some(Route::new(IpNet::V4(net), Some(IpAddr::V4(gw))))
        })
        .collect()
}

/// A printable label: what a resolv.conf line can carry.
fn label_ok(label: &[u8]) -> bool {
    !label.is_empty() && label.iter().all(|b| b.is_ascii_graphic() && *b != b'.')
}

/// Option 15: a domain name, NUL padding and a final dot cut.
fn domain_name(v: &[u8]) -> Option<String> {
    let end = v.iter().position(|b| *b == 0).unwrap_or(v.len());
    let name = std::str::from_utf8(&v[..end]).ok()?.trim_end_matches('.');
    (!name.is_empty() && name.split('.').all(|l| label_ok(l.as_bytes()))).then(|| name.into())
}

/// Option 119 (RFC 3397): names in RFC 1035 form, compression pointers being
/// offsets into the option. None when malformed.
pub fn domain_search(v: &[u8]) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut at = 0;
    while at < v.len() {
        let (name, next) = read_name(v, at)?;
        names.push(name);
        at = next;
    }
    Some(names)
}

/// The name at `start` and the offset just after it.
fn read_name(v: &[u8], start: usize) -> Option<(String, usize)> {
    let mut labels: Vec<&[u8]> = Vec::new();
    let (mut at, mut after, mut len) = (start, None, 0usize);
    // Pointers must go backwards, so following them ends.
    let mut limit = start;
    loop {
        let b = *v.get(at)?;
        match b & 0xc0 {
            0x00 if b == 0 => {
                let end = after.unwrap_or(at + 1);
                let name = labels
                    .iter()
                    .map(|l| String::from_utf8_lossy(l))
                    .collect::<Vec<_>>()
                    .join(".");
                return (!name.is_empty()).then_some((name, end));
            }
            0x00 => {
                let label = v.get(at + 1..at + 1 + usize::from(b))?;
                if !label_ok(label) {
                    return None;
                }
                len += label.len() + 1;
                if len > 255 {
                    return None;
                }
                labels.push(label);
                at += 1 + usize::from(b);
            }
            0xc0 => {
                let target = usize::from(u16::from_be_bytes([b & 0x3f, *v.get(at + 1)?]));
                if target >= limit {
                    return None;
                }
                after.get_or_insert(at + 2);
                limit = target;
                at = target;
            }
            _ => return None,
        }
    }
}

/// The options map as `{"code": "hex"}`.
mod hex_options {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(map: &BTreeMap<u8, Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(map.iter().map(|(c, v)| {
            let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
            (c, hex)
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u8, Vec<u8>>, D::Error> {
        let raw = BTreeMap::<u8, String>::deserialize(d)?;
        raw.into_iter()
            .map(|(c, hex)| {
                let digits = hex.as_bytes();
                if digits.len() % 2 != 0 {
                    return Err(D::Error::custom(format!(
                        "option {c}: odd number of hex digits"
                    )));
                }
                digits
                    .chunks_exact(2)
                    .map(|pair| {
                        std::str::from_utf8(pair)
                            .ok()
                            .and_then(|p| u8::from_str_radix(p, 16).ok())
                            .ok_or_else(|| D::Error::custom(format!("option {c}: not hex")))
                    })
                    .collect::<Result<Vec<u8>, _>>()
                    .map(|bytes| (c, bytes))
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
