//! The nftables backend without the `nft` binary: tables, chains and rules
//! encoded as nf_tables netlink messages and committed in one transaction.
//! One job a file: `expr` (expression builders: payload, cmp, bitwise, meta,
//! fib, immediate, nat, masq), `conditions` (portmap's nft-syntax conditions
//! parsed into expressions), `tx` (transactions), `dump` (reading tables and
//! rules back), `anchor` (one attachment's rules in shared chains, found
//! without reading the chains). The constants are `linux/netfilter/nf_tables.h`'s unless
//! a comment names another header.

use super::Result;

mod anchor;
mod conditions;
mod dump;
mod expr;
mod tx;

use crate::netlink::nfnl::{NLM_F_APPEND, NLM_F_CREATE, NfMsg, NfSocket};
use crate::netlink::wire::{self, Body, NESTED};
pub use anchor::*;
pub use conditions::*;
pub use dump::*;
pub use expr::*;
use ipnet::IpNet;
use std::net::IpAddr;
pub use tx::*;

use crate::netlink::uapi::nf_tables::{
    NFT_META_IIFNAME, NFT_META_NFPROTO, NFTA_META_DREG, NFTA_META_KEY,
};
pub(crate) use crate::netlink::uapi::nfnetlink::NFNL_SUBSYS_NFTABLES;
// linux/netfilter/nf_tables.h
const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_DELTABLE: u16 = 2;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_GETCHAIN: u16 = 4;
const NFT_MSG_DELCHAIN: u16 = 5;
const NFT_MSG_NEWRULE: u16 = 6;
pub(crate) const NFT_MSG_GETRULE: u16 = 7;
const NFT_MSG_DELRULE: u16 = 8;
const NFT_MSG_GETSET: u16 = 10;

// linux/netfilter/nf_tables.h
const NFTA_TABLE_NAME: u16 = 1;
const NFTA_TABLE_FLAGS: u16 = 2;
const NFTA_TABLE_USERDATA: u16 = 6;
const NFTA_CHAIN_TABLE: u16 = 1;
const NFTA_CHAIN_NAME: u16 = 3;
const NFTA_CHAIN_HOOK: u16 = 4;
const NFTA_CHAIN_POLICY: u16 = 5;
const NFTA_CHAIN_USE: u16 = 6;
const NFTA_CHAIN_TYPE: u16 = 7;
const NFTA_HOOK_HOOKNUM: u16 = 1;
const NFTA_HOOK_PRIORITY: u16 = 2;
pub(crate) const NFTA_RULE_TABLE: u16 = 1;
const NFTA_SET_TABLE: u16 = 1;
pub(crate) const NFTA_RULE_CHAIN: u16 = 2;
pub(crate) const NFTA_RULE_HANDLE: u16 = 3;
pub(crate) const NFTA_RULE_EXPRESSIONS: u16 = 4;
pub(crate) const NFTA_RULE_USERDATA: u16 = 7;
pub(crate) const NFTA_LIST_ELEM: u16 = 1;
pub(crate) const NFTA_EXPR_NAME: u16 = 1;
pub(crate) const NFTA_EXPR_DATA: u16 = 2;
pub(crate) const NFTA_DATA_VALUE: u16 = 1;
pub(crate) const NFTA_DATA_VERDICT: u16 = 2;
pub(crate) const NFTA_VERDICT_CODE: u16 = 1;
pub(crate) const NFTA_VERDICT_CHAIN: u16 = 2;
// libnftnl/udata.h (NFTNL_UDATA_*_COMMENT), not a kernel header.
/// Comments live in userdata as TLV type 0 (tables and rules alike).
const UDATA_COMMENT: u8 = 0;

// linux/netfilter/nf_tables.h: NFT_REG_*
const REG_VERDICT: u32 = 0;
const REG_1: u32 = 1;
const REG_2: u32 = 2;

// linux/netfilter/nf_tables.h
const NFTA_CMP_DATA: u16 = 3;
// linux/if.h
/// Interface names are compared as the kernel stores them: NUL-padded to IFNAMSIZ.
const IFNAMSIZ: usize = 16;

// linux/netfilter.h
pub const NFPROTO_INET: u8 = 1;
pub const NFPROTO_IPV4: u8 = 2;
pub const NFPROTO_BRIDGE: u8 = 7;
pub const NFPROTO_IPV6: u8 = 10;

/// The nfnetlink family (NFPROTO_*) of an address family's tables.
pub fn nfproto(family: crate::netlink::addr::Family) -> u8 {
    match family {
        crate::netlink::addr::Family::V4 => NFPROTO_IPV4,
        crate::netlink::addr::Family::V6 => NFPROTO_IPV6,
    }
}

// linux/netfilter.h: NF_INET_*
pub const HOOK_PREROUTING: u32 = 0;
pub const HOOK_FORWARD: u32 = 2;
pub const HOOK_OUTPUT: u32 = 3;
pub const HOOK_POSTROUTING: u32 = 4;
// linux/netfilter_ipv4.h: NF_IP_PRI_FILTER, NF_IP_PRI_NAT_DST, NF_IP_PRI_NAT_SRC
pub const PRIO_FILTER: i32 = 0;
pub const PRIO_DSTNAT: i32 = -100;
pub const PRIO_SRCNAT: i32 = 100;

// linux/rtnetlink.h
const RTN_LOCAL: u32 = 2;
// linux/netfilter.h
const NF_DROP: i32 = 0;
const NF_ACCEPT: i32 = 1;
// linux/netfilter/nf_tables.h
const NFT_JUMP: i32 = -3;
const NFT_GOTO: i32 = -4;
const NFT_RETURN: i32 = -5;

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn udata_comment(comment: &str) -> Vec<u8> {
    let mut text = comment.as_bytes().to_vec();
    text.push(0);
    text.truncate(255);
    let mut out = vec![UDATA_COMMENT, text.len() as u8];
    out.extend_from_slice(&text);
    out
}

/// One nfnetlink socket for all the reads and the commit of an operation.
pub fn open() -> Result<NfSocket> {
    Ok(NfSocket::open()?)
}

#[cfg(test)]
mod tests;
