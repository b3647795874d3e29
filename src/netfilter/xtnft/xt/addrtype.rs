//! `-m addrtype --dst-type LOCAL`: `xt_addrtype_info_v1`, revision 1.

use super::matching;
use crate::netfilter::nft::Expr;

// linux/netfilter/xt_addrtype.h
const XT_ADDRTYPE_LOCAL: u16 = 1 << 2;

pub fn dst_local() -> Expr {
    // source, dest, flags
    let mut info = 0u16.to_ne_bytes().to_vec();
    info.extend_from_slice(&XT_ADDRTYPE_LOCAL.to_ne_bytes());
    info.extend_from_slice(&0u32.to_ne_bytes());
    matching("addrtype", 1, info)
}
