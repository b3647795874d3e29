//! `-m comment --comment TEXT`: `xt_comment_info`, revision 0.

use super::matching;
use crate::netfilter::nft::Expr;
use crate::netfilter::{Error, Result};

// linux/netfilter/xt_comment.h
const XT_MAX_COMMENT_LEN: usize = 256;

/// The comment match; iptables refuses a comment of 256 bytes or more (it
/// must fit with its NUL), and so does this.
pub fn expr(text: &str) -> Result<Expr> {
    if text.len() >= XT_MAX_COMMENT_LEN {
        return Err(Error::InvalidConfig(format!(
            "comment of {} bytes: iptables takes at most {}",
            text.len(),
            XT_MAX_COMMENT_LEN - 1
        )));
    }
    let mut info = text.as_bytes().to_vec();
    info.resize(XT_MAX_COMMENT_LEN, 0);
    Ok(matching("comment", 0, info))
}
