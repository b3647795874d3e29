//! `-j DNAT --to-destination ADDR:PORT`: `nf_nat_range2`, revision 2, in
//! both families.

use super::target;
use crate::netfilter::nft::Expr;
use std::net::IpAddr;

use crate::netlink::uapi::nf_nat::{NF_NAT_RANGE_MAP_IPS, NF_NAT_RANGE_PROTO_SPECIFIED};

pub fn expr(addr: IpAddr, port: u16) -> Expr {
    let mut inet = [0u8; 16];
    match addr {
        IpAddr::V4(v4) => inet[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => inet.copy_from_slice(&v6.octets()),
    }
    let mut info = (NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED)
        .to_ne_bytes()
        .to_vec();
    // min_addr, max_addr
    info.extend_from_slice(&inet);
    info.extend_from_slice(&inet);
    // min_proto, max_proto (network order), base_proto
    info.extend_from_slice(&port.to_be_bytes());
    info.extend_from_slice(&port.to_be_bytes());
    info.extend_from_slice(&[0, 0]);
    target("DNAT", 2, info)
}
