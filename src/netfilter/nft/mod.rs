//! The nftables backend without the `nft` binary: tables, chains and rules
//! encoded as nf_tables netlink messages and committed in one transaction.
//! One job a file: `expr` (expression builders: payload, cmp, bitwise, meta,
//! fib, immediate, nat, masq), `conditions` (portmap's nft-syntax conditions
//! parsed into expressions), `tx` (transactions), `dump` (reading tables and
//! rules back), `anchor` (one attachment's rules in shared chains, found
//! without reading the chains). The kernel's constants are in `netlink::uapi`.
// nf_tables messages mix u8/u16/u32/i32 fields: a silent `as` could truncate
// or wrap a value on its way to the kernel, so each conversion says what it does.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless
)]

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

// Kernel constants come from `netlink::uapi`, one module per header; the
// rule builders' own names for hooks and priorities are aliases of them.
use crate::netlink::uapi::if_flags::IFNAMSIZ;
use crate::netlink::uapi::netfilter::{NF_ACCEPT, NF_DROP};
pub use crate::netlink::uapi::netfilter::{
    NF_INET_FORWARD as HOOK_FORWARD, NF_INET_LOCAL_OUT as HOOK_OUTPUT,
    NF_INET_POST_ROUTING as HOOK_POSTROUTING, NF_INET_PRE_ROUTING as HOOK_PREROUTING,
    NFPROTO_BRIDGE, NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6,
};
pub use crate::netlink::uapi::netfilter_ipv4::{
    NF_IP_PRI_FILTER as PRIO_FILTER, NF_IP_PRI_NAT_DST as PRIO_DSTNAT,
    NF_IP_PRI_NAT_SRC as PRIO_SRCNAT,
};
pub(crate) use crate::netlink::uapi::nf_tables::*;
pub(crate) use crate::netlink::uapi::nfnetlink::NFNL_SUBSYS_NFTABLES;
use crate::netlink::uapi::rtnetlink::RTN_LOCAL;

// libnftnl/udata.h (NFTNL_UDATA_*_COMMENT), not a kernel header.
/// Comments live in userdata as TLV type 0 (tables and rules alike).
const UDATA_COMMENT: u8 = 0;

/// The nfnetlink family (NFPROTO_*) of an address family's tables.
pub fn nfproto(family: crate::netlink::addr::Family) -> u8 {
    match family {
        crate::netlink::addr::Family::V4 => NFPROTO_IPV4,
        crate::netlink::addr::Family::V6 => NFPROTO_IPV6,
    }
}

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn udata_comment(comment: &str) -> Vec<u8> {
    let mut text = comment.as_bytes().to_vec();
    text.push(0);
    text.truncate(usize::from(u8::MAX));
    // At most 255 bytes after the cut, so the length fits its byte.
    let len = u8::try_from(text.len()).unwrap_or(u8::MAX);
    let mut out = vec![UDATA_COMMENT, len];
    out.extend_from_slice(&text);
    out
}

/// One nfnetlink socket for all the reads and the commit of an operation.
pub fn open() -> Result<NfSocket> {
    Ok(NfSocket::open()?)
}

#[cfg(test)]
mod tests;
