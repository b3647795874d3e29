//! `-j MARK --set-xmark VALUE/MASK`: `xt_mark_tginfo2`, revision 2.

use super::target;
use crate::netfilter::nft::Expr;

pub fn set_xmark(value: u32, mask: u32) -> Expr {
    let mut info = value.to_ne_bytes().to_vec();
    info.extend_from_slice(&mask.to_ne_bytes());
    target("MARK", 2, info)
}
