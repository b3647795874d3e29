//! Choosing this node's subnet, in flannel's order
//! (`pkg/subnet/etcd/local_manager.go` tryAcquireLease, allocateSubnet):
//!
//! 1. a lease whose PublicIP is ours and that still fits the config is
//!    reused; one that no longer fits is deleted;
//! 2. else the subnet subnet.env names (FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET),
//!    if it fits and no lease holds it;
//! 3. else one picked at random among the first 100 free subnets from
//!    SubnetMin to SubnetMax (IPv6 picked the same way, independently).
//!
//! Pure: the leases come in, a decision goes out; the caller does the etcd
//! writes (and retries on a lost create race). Unlike flannel, a subnet is
//! free only when no lease overlaps it in either family (flannel compares
//! subnet.env's subnet for equality, IPv4 only), and leases of ours being
//! deleted no longer count as held. Work and memory are in the number of
//! leases plus 100, whatever the network's size.

use super::config::{NetworkConfig, Span};
use super::lease::{LeaseAttrs, LeaseError, parse_subnet_key};
use ipnet::{Ipv4Net, Ipv6Net};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// flannel collects at most this many free subnets to pick from.
const CANDIDATES: usize = 100;

/// A key under `<prefix>/subnets/`.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub subnet: Ipv4Net,
    pub ipv6_subnet: Option<Ipv6Net>,
    /// The value as flannel reads it; one it cannot read still holds its subnets.
    pub attrs: Result<LeaseAttrs, LeaseError>,
    /// An etcd lease is attached; false for a reservation.
    pub leased: bool,
}

impl Held {
    /// A key and value as listed; None for a key that names no subnet.
    pub fn from_kv(key: &str, value: &[u8], leased: bool) -> Option<Held> {
        let (subnet, ipv6_subnet) = parse_subnet_key(key)?;
        Some(Held {
            subnet,
            ipv6_subnet,
            attrs: LeaseAttrs::parse(value),
            leased,
        })
    }
}

/// The subnets the last subnet.env named (network addresses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Previous {
    pub subnet: Option<Ipv4Net>,
    pub ipv6_subnet: Option<Ipv6Net>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// `held[index]` is ours and fits: write our attrs to its key again. A
    /// reservation (no etcd lease) stays one.
    Reuse {
        index: usize,
        subnet: Ipv4Net,
        ipv6_subnet: Option<Ipv6Net>,
        reservation: bool,
    },
    /// Create the key (only if absent): subnet.env's subnet, or a new one.
    Create {
        subnet: Ipv4Net,
        ipv6_subnet: Option<Ipv6Net>,
        from_previous: bool,
    },
}

impl Choice {
    pub fn subnets(&self) -> (Ipv4Net, Option<Ipv6Net>) {
        match *self {
            Choice::Reuse {
                subnet,
                ipv6_subnet,
                ..
            }
            | Choice::Create {
                subnet,
                ipv6_subnet,
                ..
            } => (subnet, ipv6_subnet),
        }
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (subnet, ipv6) = self.subnets();
        let v6 = ipv6.map(|n| format!(" and {n}")).unwrap_or_default();
        match self {
            Choice::Reuse { reservation, .. } => {
                let what = if *reservation { "reservation" } else { "lease" };
                write!(f, "reuse: the {what} of {subnet}{v6} names our PublicIP")
            }
            Choice::Create {
                from_previous: true,
                ..
            } => write!(f, "previous: {subnet}{v6}, from the subnet file, is free"),
            Choice::Create { .. } => write!(f, "new: picked {subnet}{v6}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub choice: Choice,
    /// Indexes of leases with our PublicIP that no longer fit the config:
    /// flannel deletes them before creating another.
    pub delete: Vec<usize>,
    /// Further leases with our PublicIP that fit too, left alone (two nodes
    /// share a PublicIP, or a node lost track): worth a warning.
    pub duplicates: Vec<usize>,
}

/// No free subnet in one family's range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfSubnets {
    /// "IPv4" or "IPv6".
    pub family: &'static str,
    /// Subnets from SubnetMin to SubnetMax, all taken.
    pub total: u128,
    pub subnet_len: u8,
    pub first: String,
    pub last: String,
    /// Leases overlapping the range.
    pub leases: usize,
}

impl fmt::Display for OutOfSubnets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "out of subnets: {used}/{total} {family} subnets (/{len}, {first} to {last}) used, by {leases} lease(s)",
            used = self.total,
            total = self.total,
            family = self.family,
            len = self.subnet_len,
            first = self.first,
            last = self.last,
            leases = self.leases,
        )
    }
}

impl std::error::Error for OutOfSubnets {}

/// Whether a subnet pair is one the config hands out: the right length, on
/// a boundary, from SubnetMin to SubnetMax, and IPv6 exactly when enabled.
pub fn fits(config: &NetworkConfig, subnet: Ipv4Net, ipv6_subnet: Option<Ipv6Net>) -> bool {
    let v4 = subnet.prefix_len() == config.subnet_len
        && subnet.addr() == subnet.network()
        && (config.subnet_min..=config.subnet_max).contains(&subnet.addr());
    let v6 = match (&config.ipv6, ipv6_subnet) {
        (None, None) => true,
        (Some(c), Some(sn6)) => {
            sn6.prefix_len() == c.subnet_len
                && sn6.addr() == sn6.network()
                && (c.subnet_min..=c.subnet_max).contains(&sn6.addr())
        }
        _ => false,
    };
    v4 && v6
}

/// Decides this node's subnet. `pick(n)` chooses one of `n` (> 0) free
/// subnets: the daemon passes a random index, tests a fixed one; it is
/// called once for IPv4 and, when enabled, once for IPv6.
pub fn choose(
    config: &NetworkConfig,
    held: &[Held],
    public_ip: Ipv4Addr,
    previous: &Previous,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Result<Decision, OutOfSubnets> {
    let mut delete = Vec::new();
    let mut duplicates = Vec::new();
    let mut reuse = None;
    for (i, h) in held.iter().enumerate() {
        if !h.attrs.as_ref().is_ok_and(|a| a.public_ip == public_ip) {
            continue;
        }
        if !fits(config, h.subnet, h.ipv6_subnet) {
            delete.push(i);
        } else if reuse.is_none() {
            reuse = Some(i);
        } else {
            duplicates.push(i);
        }
    }
    if let Some(index) = reuse {
        let h = &held[index];
        return Ok(Decision {
            choice: Choice::Reuse {
                index,
                subnet: h.subnet,
                ipv6_subnet: h.ipv6_subnet,
                reservation: !h.leased,
            },
            delete,
            duplicates,
        });
    }
    let others = || {
        held.iter()
            .enumerate()
            .filter(|(i, _)| !delete.contains(i))
            .map(|(_, h)| h)
    };
    let mut taken4: Vec<(u128, u128)> = others().map(|h| block4(h.subnet)).collect();
    let mut taken6: Vec<(u128, u128)> =
        others().filter_map(|h| h.ipv6_subnet.map(block6)).collect();
    taken4.sort_unstable();
    taken6.sort_unstable();

    if let Some(subnet) = previous.subnet
        && fits(config, subnet, previous.ipv6_subnet)
        && !overlaps(&taken4, block4(subnet))
        && !previous
            .ipv6_subnet
            .is_some_and(|sn6| overlaps(&taken6, block6(sn6)))
    {
        return Ok(Decision {
            choice: Choice::Create {
                subnet,
                ipv6_subnet: previous.ipv6_subnet,
                from_previous: true,
            },
            delete,
            duplicates,
        });
    }

    let span = config.span_v4();
    let range = (
        u128::from(u32::from(config.subnet_min)),
        u128::from(u32::from(config.subnet_max)),
    );
    let v4 = pick_free(span, range, &taken4, pick).map_err(|(total, leases)| OutOfSubnets {
        family: "IPv4",
        total,
        subnet_len: config.subnet_len,
        first: config.subnet_min.to_string(),
        last: config.subnet_max.to_string(),
        leases,
    })?;
    let subnet = Ipv4Net::new(Ipv4Addr::from(v4 as u32), config.subnet_len)
        .map_err(|_| internal_out_of("IPv4"))?;
    let ipv6_subnet = match &config.ipv6 {
        None => None,
        Some(c) => {
            let range = (u128::from(c.subnet_min), u128::from(c.subnet_max));
            let v6 = pick_free(c.span(), range, &taken6, pick).map_err(|(total, leases)| {
                OutOfSubnets {
                    family: "IPv6",
                    total,
                    subnet_len: c.subnet_len,
                    first: c.subnet_min.to_string(),
                    last: c.subnet_max.to_string(),
                    leases,
                }
            })?;
            Some(
                Ipv6Net::new(Ipv6Addr::from(v6), c.subnet_len)
                    .map_err(|_| internal_out_of("IPv6"))?,
            )
        }
    };
    Ok(Decision {
        choice: Choice::Create {
            subnet,
            ipv6_subnet,
            from_previous: false,
        },
        delete,
        duplicates,
    })
}

/// Unreachable with a checked config (lengths come from it); an error, not a panic.
fn internal_out_of(family: &'static str) -> OutOfSubnets {
    OutOfSubnets {
        family,
        total: 0,
        subnet_len: 0,
        first: String::new(),
        last: String::new(),
        leases: 0,
    }
}

/// A subnet's first and last address (of its network, whatever the key wrote).
fn block4(n: Ipv4Net) -> (u128, u128) {
    (
        u128::from(u32::from(n.network())),
        u128::from(u32::from(n.broadcast())),
    )
}

fn block6(n: Ipv6Net) -> (u128, u128) {
    (u128::from(n.network()), u128::from(n.broadcast()))
}

fn overlaps(taken: &[(u128, u128)], (start, end): (u128, u128)) -> bool {
    taken.iter().any(|&(s, e)| s <= end && start <= e)
}

/// Up to [`CANDIDATES`] free subnet starts from `min` to `max` in steps of
/// the span's subnet, jumping over each taken block whole (so a /8 of /30s
/// with a /9 taken costs one step, not millions); one picked. Err: the
/// range's size in subnets, and how many blocks lie in it.
fn pick_free(
    span: Span,
    (min, max): (u128, u128),
    taken: &[(u128, u128)],
    pick: &mut dyn FnMut(usize) -> usize,
) -> Result<u128, (u128, usize)> {
    let step = span.step;
    let mut free = Vec::new();
    let (mut c, mut i) = (min, 0);
    while c <= max && free.len() < CANDIDATES {
        while taken.get(i).is_some_and(|&(_, e)| e < c) {
            i += 1;
        }
        let end = c + (step - 1);
        match taken.get(i) {
            // Sorted by start: if this one starts past the subnet, all later do.
            Some(&(s, e)) if s <= end => {
                // The first subnet boundary past the taken block.
                let Some(past) = e.checked_add(1) else { break };
                let Some(next) = past.checked_next_multiple_of(step) else {
                    break;
                };
                c = next;
            }
            _ => {
                free.push(c);
                let Some(next) = c.checked_add(step) else {
                    break;
                };
                c = next;
            }
        }
    }
    if free.is_empty() {
        let total = if max >= min {
            (max - min) / step + 1
        } else {
            0
        };
        let leases = taken
            .iter()
            .filter(|&&(s, e)| s <= max + (step - 1) && min <= e)
            .count();
        return Err((total, leases));
    }
    Ok(free[pick(free.len()) % free.len()])
}

#[cfg(test)]
#[path = "alloc_tests.rs"]
mod tests;
