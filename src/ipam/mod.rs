//! IPAM: address ranges, the host-local allocator and its on-disk store.

pub mod allocator;
pub mod index;
pub mod range;
pub mod store;

use crate::cni::version;
use std::fmt;
use std::net::IpAddr;

/// Why the IPAM layer could not give or keep an address.
#[derive(Debug)]
pub enum Error {
    /// A range or range set that cannot be allocated from (a config problem).
    InvalidRange(String),
    /// No address to give: the requested one is taken or outside, or none is left.
    Unavailable(String),
    /// The on-disk store (the io::Error names the file).
    Store(std::io::Error),
    /// More addresses per family than the config's version can carry.
    TooManyAddresses {
        cni_version: String,
    },
    Version(version::ParseError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidRange(msg) | Error::Unavailable(msg) => f.write_str(msg),
            Error::Store(e) => write!(f, "{e}"),
            Error::TooManyAddresses { cni_version } => write!(
                f,
                "CNI version {cni_version} does not support more than 1 address per family"
            ),
            Error::Version(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Store(e) => Some(e),
            Error::Version(e) => Some(e),
            _ => None,
        }
    }
}

/// An IP as a number, so v4 and v6 share the arithmetic.
pub fn ip_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The IP of the same family as `like` with this numeric value.
pub fn u128_to_ip(n: u128, like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::from(n as u32)),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::from(n)),
    }
}

/// The next address (wrapping within the family).
pub fn next_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(u32::from(v4).wrapping_add(1).into()),
        IpAddr::V6(v6) => IpAddr::V6(u128::from(v6).wrapping_add(1).into()),
    }
}

/// Go's `ip[/prefix]` argument form (args.cni.ips, runtimeConfig.ips): the IP only.
pub fn parse_requested_ip(s: &str) -> Option<IpAddr> {
    let ip = s.split_once('/').map_or(s, |(ip, _)| ip);
    ip.parse().ok()
}

/// Spec 0.2.0 and older carry one address per family: more needs `cniVersion` >= 0.3.0.
pub fn check_addresses_per_family(
    cni_version: &str,
    ips: impl IntoIterator<Item = IpAddr>,
) -> Result<(), Error> {
    let (v4, v6) = ips.into_iter().fold((0, 0), |(v4, v6), ip| match ip {
        IpAddr::V4(_) => (v4 + 1, v6),
        IpAddr::V6(_) => (v4, v6 + 1),
    });
    let carries_lists = version::compare(version::effective(cni_version), "0.3.0")
        .map_err(Error::Version)?
        != std::cmp::Ordering::Less;
    if (v4 > 1 || v6 > 1) && !carries_lists {
        return Err(Error::TooManyAddresses {
            cni_version: cni_version.to_string(),
        });
    }
    Ok(())
}
