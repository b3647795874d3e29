//! xtables matches and targets inside nf_tables rules (nft_compat): one
//! module per extension, each the info blob iptables-nft 1.8 sends for it at
//! the revision it picks; the blobs are the kernel's structs
//! (`linux/netfilter/xt_*.h`, `nf_nat.h`), padded to 8 bytes (XT_ALIGN) as
//! iptables pads them.

pub mod addrtype;
pub mod comment;
pub mod conntrack;
pub mod dnat;
pub mod mark;
pub mod masquerade;
pub mod multiport;
pub mod sctp;

use crate::netfilter::nft::{Expr, expr};
use crate::netlink::wire::Body;

// NFTA_MATCH_* and NFTA_TARGET_* are numbered alike.
use crate::netlink::uapi::nf_tables::{
    NFTA_MATCH_INFO as NFTA_XT_INFO, NFTA_MATCH_NAME as NFTA_XT_NAME, NFTA_MATCH_REV as NFTA_XT_REV,
};

/// `info` zero-padded to XT_ALIGN (8 bytes), as iptables allocates it.
fn aligned(mut info: Vec<u8>) -> Vec<u8> {
    info.resize(info.len().div_ceil(8) * 8, 0);
    info
}

fn xt(kind: &'static str, name: &str, revision: u32, info: Vec<u8>) -> Expr {
    expr(
        kind,
        Body::default()
            .str(NFTA_XT_NAME, name)
            .attr(NFTA_XT_REV, &revision.to_be_bytes())
            .attr(NFTA_XT_INFO, &aligned(info)),
    )
}

/// An xtables match expression.
pub(super) fn matching(name: &str, revision: u32, info: Vec<u8>) -> Expr {
    xt("match", name, revision, info)
}

/// An xtables target expression.
pub(super) fn target(name: &str, revision: u32, info: Vec<u8>) -> Expr {
    xt("target", name, revision, info)
}
