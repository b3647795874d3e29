//! IPAM: address ranges, the host-local allocator and its on-disk store.

pub mod allocator;
pub mod range;
pub mod store;

use std::net::IpAddr;

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
