//! `-j MASQUERADE`, revision 0: IPv4's `nf_nat_ipv4_multi_range_compat` with
//! one empty range, IPv6's empty `nf_nat_range`.

use super::target;
use crate::netfilter::Family;
use crate::netfilter::nft::Expr;

pub fn expr(family: Family) -> Expr {
    let info = match family {
        // rangesize 1, then flags, min_ip, max_ip, min, max of range[0]
        Family::V4 => {
            let mut info = 1u32.to_ne_bytes().to_vec();
            info.extend_from_slice(&[0; 4 + 4 + 4 + 2 + 2]);
            info
        }
        // flags, min_addr, max_addr, min_proto, max_proto
        Family::V6 => vec![0; 4 + 16 + 16 + 2 + 2],
    };
    target("MASQUERADE", 0, info)
}
