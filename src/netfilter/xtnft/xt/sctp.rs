//! `-p sctp --dport PORT`: iptables-nft has no native form for sctp's
//! match, so it is `xt_sctp_info`, revision 0.

use super::matching;
use crate::netfilter::nft::Expr;

// linux/netfilter/xt_sctp.h
const XT_SCTP_DEST_PORTS: u32 = 0x02;
const XT_NUM_SCTP_FLAGS: usize = 4;

pub fn dport(port: u16) -> Expr {
    let mut info = Vec::with_capacity(296);
    // dpts[2] (min, max), spts[2]: a single destination port, any source.
    for v in [port, port, 0, 0] {
        info.extend_from_slice(&v.to_ne_bytes());
    }
    // chunkmap[64], chunk_match_type: no chunk matching.
    info.extend_from_slice(&[0; 64 * 4 + 4]);
    // flag_info[4]: iptables' init marks each unused (chunktype 0xff).
    for _ in 0..XT_NUM_SCTP_FLAGS {
        info.extend_from_slice(&[0xff, 0, 0]);
    }
    // flag_count, flags, invflags
    for v in [0, XT_SCTP_DEST_PORTS, 0] {
        info.extend_from_slice(&v.to_ne_bytes());
    }
    matching("sctp", 0, info)
}
