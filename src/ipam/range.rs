//! Ranges and range sets as host-local reads them, with the reference's defaults
//! and validation.

use super::{Error, ip_to_u128, next_ip, u128_to_ip};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename = "allocator.Range")]
pub struct Range {
    #[serde(
        rename = "rangeStart",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub range_start: Option<IpAddr>,
    #[serde(rename = "rangeEnd", default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<IpAddr>,
    pub subnet: IpNet,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}

/// A range after `canonicalize`: every bound known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonRange {
    pub subnet: IpNet,
    pub start: IpAddr,
    pub end: IpAddr,
    pub gateway: IpAddr,
}

impl Range {
    /// Fills the defaults (gateway and start = network+1, end = broadcast-1 for v4
    /// or the last address for v6) and checks the bounds, as the reference does.
    pub fn canonicalize(&self) -> Result<CanonRange, Error> {
        let subnet = self.subnet;
        if subnet.prefix_len() > subnet.max_prefix_len() - 2 {
            return Err(Error::InvalidRange(format!(
                "Network {subnet} too small to allocate from"
            )));
        }
        if subnet.addr() != subnet.network() {
            return Err(Error::InvalidRange(format!(
                "network has host bits set. For a subnet mask of length {} the network address is {}",
                subnet.prefix_len(),
                subnet.network()
            )));
        }
        let same_family = |ip: IpAddr| ip.is_ipv4() == subnet.addr().is_ipv4();
        let first = next_ip(subnet.network());
        let gateway = self.gateway.unwrap_or(first);
        if !same_family(gateway) {
            return Err(Error::InvalidRange(format!(
                "gateway {gateway} is not in the family of {subnet}"
            )));
        }
        let start = self.range_start.unwrap_or(first);
        if !same_family(start) || !subnet.contains(&start) {
            return Err(Error::InvalidRange(format!(
                "RangeStart {start} not in network {subnet}"
            )));
        }
        let end = match self.range_end {
            Some(end) => end,
            None => {
                let last = ip_to_u128(subnet.broadcast());
                let last = if subnet.addr().is_ipv4() {
                    last - 1
                } else {
                    last
                };
                u128_to_ip(last, subnet.addr())
            }
        };
        if !same_family(end) || !subnet.contains(&end) {
            return Err(Error::InvalidRange(format!(
                "RangeEnd {end} not in network {subnet}"
            )));
        }
        // The reference checks the start against a given end (its Contains):
        // an inverted range is refused with the start's message. (Found by fuzzing.)
        if ip_to_u128(start) > ip_to_u128(end) {
            return Err(Error::InvalidRange(format!(
                "RangeStart {start} not in network {subnet}"
            )));
        }
        Ok(CanonRange {
            subnet,
            start,
            end,
            gateway,
        })
    }
}

impl CanonRange {
    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.subnet.addr().is_ipv4()
            && self.subnet.contains(&ip)
            && ip_to_u128(ip) >= ip_to_u128(self.start)
            && ip_to_u128(ip) <= ip_to_u128(self.end)
    }

    pub fn overlaps(&self, other: &CanonRange) -> bool {
        self.contains(other.start)
            || self.contains(other.end)
            || other.contains(self.start)
            || other.contains(self.end)
    }

    pub fn is_ipv4(&self) -> bool {
        self.subnet.addr().is_ipv4()
    }
}

impl std::fmt::Display for CanonRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// A set of ranges of one family; one address is allocated per set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSet(pub Vec<CanonRange>);

impl RangeSet {
    pub fn canonicalize(ranges: &[Range]) -> Result<RangeSet, Error> {
        if ranges.is_empty() {
            return Err(Error::InvalidRange("empty range set".into()));
        }
        let canon = ranges
            .iter()
            .map(Range::canonicalize)
            .collect::<Result<Vec<_>, _>>()?;
        if canon.iter().any(|r| r.is_ipv4() != canon[0].is_ipv4()) {
            return Err(Error::InvalidRange("mixed address families".into()));
        }
        for (i, a) in canon.iter().enumerate() {
            if let Some(b) = canon[i + 1..].iter().find(|b| a.overlaps(b)) {
                return Err(Error::InvalidRange(format!("subnets {a} and {b} overlap")));
            }
        }
        Ok(RangeSet(canon))
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.range_for(ip).is_some()
    }

    pub fn range_for(&self, ip: IpAddr) -> Option<&CanonRange> {
        self.0.iter().find(|r| r.contains(ip))
    }

    pub fn overlaps(&self, other: &RangeSet) -> bool {
        self.0.iter().any(|a| other.0.iter().any(|b| a.overlaps(b)))
    }

    pub fn is_ipv4(&self) -> bool {
        self.0.first().is_some_and(CanonRange::is_ipv4)
    }
}

impl std::fmt::Display for RangeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        write!(f, "{}", parts.join(","))
    }
}

#[cfg(test)]
#[path = "range_tests.rs"]
mod tests;
