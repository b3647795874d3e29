//! The reference's allocation rules: per range set, a requested IP or the next free
//! one round-robin after `last_reserved_ip.<set>`, skipping gateways.

use super::range::RangeSet;
use super::store::DiskStore;
use super::{Error, ip_to_u128, next_ip};
use ipnet::IpNet;
use std::net::IpAddr;

/// One allocated address with its range's gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub address: IpNet,
    pub gateway: IpAddr,
}

/// Allocates one address from `set` (index `set_index`) for the attachment.
pub fn allocate(
    store: &DiskStore,
    set: &RangeSet,
    set_index: usize,
    id: &str,
    ifname: &str,
    requested: Option<IpAddr>,
) -> Result<Allocation, Error> {
    if let Some(ip) = requested {
        let range = set
            .range_for(ip)
            .ok_or_else(|| Error::Unavailable(format!("{ip} not in range set {set}")))?;
        if ip == range.gateway {
            return Err(Error::Unavailable(format!(
                "requested ip {ip} is subnet's gateway"
            )));
        }
        if !store
            .reserve(id, ifname, ip, set_index)
            .map_err(Error::Store)?
        {
            return Err(Error::Unavailable(format!(
                "requested IP address {ip} is not available in range set {set}"
            )));
        }
        return Ok(Allocation {
            address: with_prefix(ip, range.subnet.prefix_len()),
            gateway: range.gateway,
        });
    }
    let held = store.get_by_id(id, ifname).map_err(Error::Store)?;
    if let Some(ip) = held.iter().find(|ip| set.contains(**ip)) {
        return Err(Error::Unavailable(format!(
            "{ip} has been allocated to {id}, duplicate allocation is not allowed"
        )));
    }
    for (ip, range_idx) in Candidates::new(set, store.last_reserved_ip(set_index)) {
        if store
            .reserve(id, ifname, ip, set_index)
            .map_err(Error::Store)?
        {
            let range = &set.0[range_idx];
            return Ok(Allocation {
                address: with_prefix(ip, range.subnet.prefix_len()),
                gateway: range.gateway,
            });
        }
    }
    Err(Error::Unavailable(format!(
        "no IP addresses available in range set: {set}"
    )))
}

fn with_prefix(ip: IpAddr, prefix: u8) -> IpNet {
    // The prefix comes from a valid subnet of the same family.
    IpNet::new(ip, prefix).unwrap_or_else(|_| IpNet::from(ip))
}

/// Every allocatable address of the set once, starting after the last reserved
/// IP (when it lies in the set) and wrapping across ranges; gateways skipped.
pub struct Candidates<'a> {
    set: &'a RangeSet,
    range_idx: usize,
    cur: Option<IpAddr>,
    start: Option<IpAddr>,
    done: bool,
}

impl<'a> Candidates<'a> {
    pub fn new(set: &'a RangeSet, last_reserved: Option<IpAddr>) -> Self {
        let resume =
            last_reserved.and_then(|ip| set.0.iter().position(|r| r.contains(ip)).map(|i| (i, ip)));
        match resume {
            Some((range_idx, ip)) => Candidates {
                set,
                range_idx,
                cur: Some(ip),
                start: None,
                done: false,
            },
            None => Candidates {
                set,
                range_idx: 0,
                cur: None,
                start: set.0.first().map(|r| r.start),
                done: set.0.is_empty(),
            },
        }
    }
}

impl Iterator for Candidates<'_> {
    /// The address and the index of its range.
    type Item = (IpAddr, usize);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let range = &self.set.0[self.range_idx];
            let Some(cur) = self.cur else {
                // First step from a fresh start: the range start is inclusive.
                self.cur = Some(range.start);
                self.start = Some(range.start);
                if range.start == range.gateway {
                    continue;
                }
                return Some((range.start, self.range_idx));
            };
            let next = if ip_to_u128(cur) >= ip_to_u128(range.end) {
                self.range_idx = (self.range_idx + 1) % self.set.0.len();
                self.set.0[self.range_idx].start
            } else {
                next_ip(cur)
            };
            self.cur = Some(next);
            match self.start {
                None => self.start = Some(next),
                Some(start) if start == next => {
                    self.done = true;
                    return None;
                }
                Some(_) => {}
            }
            if next == self.set.0[self.range_idx].gateway {
                continue;
            }
            return Some((next, self.range_idx));
        }
    }
}

#[cfg(test)]
#[path = "allocator_tests.rs"]
mod tests;
