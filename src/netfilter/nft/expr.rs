//! nf_tables expressions, built as `nft` sends them.

use super::*;
use crate::netlink::uapi::nf_nat::NF_NAT_RANGE_PROTO_SPECIFIED;

/// One expression: name and its attributes.
#[derive(Debug, Clone)]
pub struct Expr {
    pub(crate) name: &'static str,
    pub(crate) data: Body,
}

pub(crate) fn expr(name: &'static str, data: Body) -> Expr {
    Expr { name, data }
}

pub(super) fn data_value(bytes: &[u8]) -> Body {
    Body::default().attr(NFTA_DATA_VALUE, bytes)
}

/// Header fields the rules match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Saddr,
    Daddr,
}

pub(crate) fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    }
}

pub(super) fn load_addr(field: Field, v6: bool) -> Expr {
    let (offset, len) = match (field, v6) {
        (Field::Saddr, false) => (12, 4),
        (Field::Daddr, false) => (16, 4),
        (Field::Saddr, true) => (8, 16),
        (Field::Daddr, true) => (24, 16),
    };
    expr(
        "payload",
        Body::default()
            .attr(NFTA_PAYLOAD_DREG, &be32(NFT_REG_1))
            .attr(NFTA_PAYLOAD_BASE, &be32(NFT_PAYLOAD_NETWORK_HEADER))
            .attr(NFTA_PAYLOAD_OFFSET, &be32(offset))
            .attr(NFTA_PAYLOAD_LEN, &be32(len)),
    )
}

pub(crate) fn cmp(op_eq: bool, value: &[u8]) -> Expr {
    let value = value.to_vec();
    expr(
        "cmp",
        Body::default()
            .attr(NFTA_CMP_SREG, &be32(NFT_REG_1))
            .attr(
                NFTA_CMP_OP,
                &be32(if op_eq { NFT_CMP_EQ } else { NFT_CMP_NEQ }),
            )
            .nest(NFTA_CMP_DATA | NESTED, |_| data_value(&value)),
    )
}

pub(crate) fn bitwise_mask(len: u32, mask: &[u8]) -> Expr {
    let mask = mask.to_vec();
    let zero = vec![0u8; mask.len()];
    expr(
        "bitwise",
        Body::default()
            .attr(NFTA_BITWISE_SREG, &be32(NFT_REG_1))
            .attr(NFTA_BITWISE_DREG, &be32(NFT_REG_1))
            .attr(NFTA_BITWISE_LEN, &be32(len))
            .nest(NFTA_BITWISE_MASK | NESTED, |_| data_value(&mask))
            .nest(NFTA_BITWISE_XOR | NESTED, |_| data_value(&zero)),
    )
}

/// `ip[6] saddr|daddr == ip` or `!= net` (a network compares under its mask).
pub fn match_addr(field: Field, net: IpNet, equal: bool) -> Vec<Expr> {
    let v6 = net.addr().is_ipv6();
    let mut out = vec![load_addr(field, v6)];
    let full = if v6 { 128 } else { 32 };
    if net.prefix_len() < full {
        let len = if v6 { 16 } else { 4 };
        out.push(bitwise_mask(len, &ip_bytes(net.netmask())));
        out.push(cmp(equal, &ip_bytes(net.network())));
    } else {
        out.push(cmp(equal, &ip_bytes(net.addr())));
    }
    out
}

/// `meta nfproto ipv4|ipv6` (needed in `inet` tables before `ip`/`ip6` matches).
pub fn match_nfproto(v6: bool) -> Vec<Expr> {
    vec![
        expr(
            "meta",
            Body::default()
                .attr(NFTA_META_DREG, &be32(NFT_REG_1))
                .attr(NFTA_META_KEY, &be32(NFT_META_NFPROTO)),
        ),
        cmp(true, &[if v6 { NFPROTO_IPV6 } else { NFPROTO_IPV4 }]),
    ]
}

/// `<proto> dport <port>`.
pub fn match_dport(protocol: u8, port: u16) -> Vec<Expr> {
    vec![
        meta_load(NFT_META_L4PROTO),
        cmp(true, &[protocol]),
        transport_load(2, 2),
        cmp(true, &port.to_be_bytes()),
    ]
}

/// `fib daddr type local`.
pub fn match_fib_daddr_local() -> Vec<Expr> {
    vec![
        expr(
            "fib",
            Body::default()
                .attr(NFTA_FIB_DREG, &be32(NFT_REG_1))
                .attr(NFTA_FIB_RESULT, &be32(NFT_FIB_RESULT_ADDRTYPE))
                .attr(NFTA_FIB_FLAGS, &be32(NFTA_FIB_F_DADDR)),
        ),
        cmp(true, &u32::from(RTN_LOCAL).to_ne_bytes()),
    ]
}

pub(super) fn verdict(code: i32, chain: Option<&str>) -> Expr {
    let chain = chain.map(String::from);
    expr(
        "immediate",
        Body::default()
            .attr(NFTA_IMMEDIATE_DREG, &be32(NFT_REG_VERDICT))
            .nest(NFTA_IMMEDIATE_DATA | NESTED, |d| {
                d.nest(NFTA_DATA_VERDICT | NESTED, |v| {
                    let v = v.attr(NFTA_VERDICT_CODE, &code.to_be_bytes());
                    match &chain {
                        Some(c) => v.str(NFTA_VERDICT_CHAIN, c),
                        None => v,
                    }
                })
            }),
    )
}

/// `iifname "<name>"`, as `nft` sends it.
pub fn match_iifname(name: &str) -> Vec<Expr> {
    let mut value = name.as_bytes().to_vec();
    value.resize(IFNAMSIZ.max(value.len() + 1), 0);
    vec![meta_load(NFT_META_IIFNAME), cmp(true, &value)]
}

/// `ether saddr <mac>` (bridge family: the link-layer header is Ethernet).
pub fn match_ether_saddr(mac: [u8; 6]) -> Vec<Expr> {
    vec![
        expr(
            "payload",
            Body::default()
                .attr(NFTA_PAYLOAD_DREG, &be32(NFT_REG_1))
                .attr(NFTA_PAYLOAD_BASE, &be32(NFT_PAYLOAD_LL_HEADER))
                .attr(NFTA_PAYLOAD_OFFSET, &be32(6)) // after the destination
                .attr(NFTA_PAYLOAD_LEN, &be32(6)),
        ),
        cmp(true, &mac),
    ]
}

/// `ct state established,related`.
pub fn match_ct_established_related() -> Vec<Expr> {
    use crate::netlink::uapi::nf_conntrack_common::{
        NF_CT_STATE_ESTABLISHED_BIT as ESTABLISHED, NF_CT_STATE_RELATED_BIT as RELATED,
    };
    vec![
        expr(
            "ct",
            Body::default()
                .attr(NFTA_CT_DREG, &be32(NFT_REG_1))
                .attr(NFTA_CT_KEY, &be32(NFT_CT_STATE)),
        ),
        bitwise_mask(4, &u32::from(ESTABLISHED | RELATED).to_ne_bytes()),
        cmp(false, &0u32.to_ne_bytes()),
    ]
}

pub fn accept() -> Expr {
    verdict(NF_ACCEPT, None)
}

pub fn drop() -> Expr {
    verdict(NF_DROP, None)
}

pub fn jump(chain: &str) -> Expr {
    verdict(NFT_JUMP, Some(chain))
}

pub fn goto(chain: &str) -> Expr {
    verdict(NFT_GOTO, Some(chain))
}

pub fn ret() -> Expr {
    verdict(NFT_RETURN, None)
}

pub fn masquerade() -> Expr {
    expr("masq", Body::default())
}

/// `dnat to <ip>:<port>`.
pub fn dnat(ip: IpAddr, port: u16) -> Vec<Expr> {
    let family = if ip.is_ipv6() {
        NFPROTO_IPV6
    } else {
        NFPROTO_IPV4
    };
    let addr = ip_bytes(ip);
    vec![
        expr(
            "immediate",
            Body::default()
                .attr(NFTA_IMMEDIATE_DREG, &be32(NFT_REG_1))
                .nest(NFTA_IMMEDIATE_DATA | NESTED, |_| data_value(&addr)),
        ),
        expr(
            "immediate",
            Body::default()
                .attr(NFTA_IMMEDIATE_DREG, &be32(NFT_REG_2))
                .nest(NFTA_IMMEDIATE_DATA | NESTED, |_| {
                    data_value(&port.to_be_bytes())
                }),
        ),
        expr(
            "nat",
            Body::default()
                .attr(NFTA_NAT_TYPE, &be32(NFT_NAT_DNAT))
                .attr(NFTA_NAT_FAMILY, &be32(u32::from(family)))
                .attr(NFTA_NAT_REG_ADDR_MIN, &be32(NFT_REG_1))
                .attr(NFTA_NAT_REG_PROTO_MIN, &be32(NFT_REG_2))
                .attr(NFTA_NAT_FLAGS, &be32(NF_NAT_RANGE_PROTO_SPECIFIED)),
        ),
    ]
}

/// A meta key loaded into register 1 (attributes in the order `nft` sends them).
pub(crate) fn meta_load(key: u32) -> Expr {
    expr(
        "meta",
        Body::default()
            .attr(NFTA_META_KEY, &be32(key))
            .attr(NFTA_META_DREG, &be32(NFT_REG_1)),
    )
}

pub(crate) fn transport_load(offset: u32, len: u32) -> Expr {
    expr(
        "payload",
        Body::default()
            .attr(NFTA_PAYLOAD_DREG, &be32(NFT_REG_1))
            .attr(NFTA_PAYLOAD_BASE, &be32(NFT_PAYLOAD_TRANSPORT_HEADER))
            .attr(NFTA_PAYLOAD_OFFSET, &be32(offset))
            .attr(NFTA_PAYLOAD_LEN, &be32(len)),
    )
}
