//! From linux/ip.h: IPv4 per-interface settings (`net.ipv4.conf.<if>.*`),
//! by their devconf id.

pub const IPV4_DEVCONF_ARP_NOTIFY: u16 = 22;
pub const IPV4_DEVCONF_ROUTE_LOCALNET: u16 = 26;
