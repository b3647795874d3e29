//! `-m multiport --destination-ports P,Q,...`: `xt_multiport_v1`, revision 1.

use super::matching;
use crate::netfilter::nft::Expr;
use crate::netfilter::{Error, Result};

// linux/netfilter/xt_multiport.h
const XT_MULTIPORT_DESTINATION: u8 = 1;
const XT_MULTI_PORTS: usize = 15;

pub fn expr(ports: &[u16]) -> Result<Expr> {
    if ports.is_empty() || ports.len() > XT_MULTI_PORTS {
        return Err(Error::InvalidConfig(format!(
            "multiport takes 1 to {XT_MULTI_PORTS} ports, not {}",
            ports.len()
        )));
    }
    // flags, count, ports[15] (host order), pflags[15], invert
    // At most XT_MULTI_PORTS (15), checked above.
    let count = u8::try_from(ports.len()).unwrap_or(u8::MAX);
    let mut info = vec![XT_MULTIPORT_DESTINATION, count];
    let mut all = [0u16; XT_MULTI_PORTS];
    all[..ports.len()].copy_from_slice(ports);
    for p in all {
        info.extend_from_slice(&p.to_ne_bytes());
    }
    info.extend_from_slice(&[0; XT_MULTI_PORTS]);
    info.push(0);
    Ok(matching("multiport", 1, info))
}
