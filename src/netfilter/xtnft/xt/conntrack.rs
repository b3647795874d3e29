//! `-m conntrack --ctstate RELATED,ESTABLISHED`: `xt_conntrack_mtinfo3`,
//! revision 3.

use super::matching;
use crate::netfilter::nft::Expr;
use crate::netlink::uapi::nf_conntrack_common::{
    NF_CT_STATE_ESTABLISHED_BIT, NF_CT_STATE_RELATED_BIT,
};

// linux/netfilter/xt_conntrack.h
const XT_CONNTRACK_STATE: u16 = 1 << 0;
// XT_CONNTRACK_STATE_BIT(IP_CT_*)
const ESTABLISHED: u16 = NF_CT_STATE_ESTABLISHED_BIT;
const RELATED: u16 = NF_CT_STATE_RELATED_BIT;

pub fn related_established() -> Expr {
    // Eight `nf_inet_addr`s (addresses and masks of the four tuples),
    // expires_min, expires_max, l4proto and four ports: all unset.
    let mut info = vec![0u8; 8 * 16 + 4 + 4 + 2 + 4 * 2];
    for v in [XT_CONNTRACK_STATE, 0, RELATED | ESTABLISHED, 0] {
        // match_flags, invert_flags, state_mask, status_mask
        info.extend_from_slice(&v.to_ne_bytes());
    }
    // The four ports' upper bounds.
    info.extend_from_slice(&[0; 4 * 2]);
    matching("conntrack", 3, info)
}
