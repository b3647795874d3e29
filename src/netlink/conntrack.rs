//! Conntrack entries over nfnetlink: portmap drops stale UDP flows to a newly
//! mapped host port, so they are not stuck with their pre-DNAT translation.

use super::Result;
use super::nfnl::NfSocket;
use super::wire::{self, Body};

const NFNL_SUBSYS_CTNETLINK: u16 = 1;
const IPCTNL_MSG_CT_GET: u16 = 1;
const IPCTNL_MSG_CT_DELETE: u16 = 2;
const CTA_TUPLE_ORIG: u16 = 1;
const CTA_TUPLE_PROTO: u16 = 2;
const CTA_PROTO_NUM: u16 = 1;
const CTA_PROTO_DST_PORT: u16 = 3;

/// Whether an entry's original tuple is `protocol` to `port` (public for the fuzz targets).
pub fn matches(entry: &[u8], protocol: u8, port: u16) -> Option<&[u8]> {
    let orig = wire::find(entry, CTA_TUPLE_ORIG)?;
    let proto = wire::find(orig, CTA_TUPLE_PROTO)?;
    let num = *wire::find(proto, CTA_PROTO_NUM)?.first()?;
    let dport = wire::find(proto, CTA_PROTO_DST_PORT)?;
    let dport = u16::from_be_bytes(dport.get(..2)?.try_into().ok()?);
    (num == protocol && dport == port).then_some(orig)
}

/// Deletes the entries of `family` (NFPROTO_*) for `protocol` to any of `ports`;
/// returns how many went. Entries that vanish meanwhile are not errors.
pub fn delete_by_dport(family: u8, protocol: u8, ports: &[u16]) -> Result<usize> {
    if ports.is_empty() {
        return Ok(0);
    }
    let mut sock = NfSocket::open()?;
    let entries = sock.dump_of(
        NFNL_SUBSYS_CTNETLINK,
        IPCTNL_MSG_CT_GET,
        family,
        Body::default(),
    )?;
    let mut deleted = 0;
    for entry in &entries {
        let Some(orig) = ports.iter().find_map(|p| matches(entry, protocol, *p)) else {
            continue;
        };
        let attrs = Body::default()
            .attr(CTA_TUPLE_ORIG | wire::NESTED, orig)
            .into_bytes();
        match sock.request(NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_DELETE, family, &attrs) {
            Ok(()) => deleted += 1,
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(deleted)
}
