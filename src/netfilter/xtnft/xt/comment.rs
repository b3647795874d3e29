//! `-m comment --comment TEXT`: `xt_comment_info`, revision 0.

use super::matching;
use crate::netfilter::nft::Expr;

// linux/netfilter/xt_comment.h
const XT_MAX_COMMENT_LEN: usize = 256;

/// The comment match. iptables keeps a longer comment's first 255 bytes
/// (its option parser copies into the 256-byte field and ends it with a
/// NUL), and so does this.
pub fn expr(text: &str) -> Expr {
    let mut info = text.as_bytes().to_vec();
    info.truncate(XT_MAX_COMMENT_LEN - 1);
    info.resize(XT_MAX_COMMENT_LEN, 0);
    matching("comment", 0, info)
}
