//! Conntrack entries over nfnetlink: portmap drops stale UDP flows to a newly
//! mapped host port, so they are not stuck with their pre-DNAT translation.
//!
//! First a filtered flush: one DELETE carrying CTA_FILTER (the original
//! tuple's protocol and destination port), which newer kernels run as an
//! in-kernel walk that skips empty hash buckets: ~0.2 ms where any dump walks
//! every bucket under its lock (~10 ms for 262,144 buckets), with or without
//! entries to find. It matches every conntrack zone, as the reference's
//! deletes do (it sends each dumped entry back whole, zone included).
//!
//! Kernels that do not flush by filter read the DELETE as a tuple delete and
//! refuse the partial tuple (EINVAL/EOPNOTSUPP), never flushing more; there
//! the kernel filters a dump instead (CTA_FILTER, Linux >= 5.8): only the
//! entries to drop cross the socket, each then deleted by its exact tuple in
//! its zone.

use super::Result;
use super::nfnl::NfSocket;
use super::uapi::nfnetlink::NFNL_SUBSYS_CTNETLINK;
use super::uapi::nfnetlink_conntrack::{
    CTA_FILTER, CTA_FILTER_ORIG_FLAGS, CTA_PROTO_DST_PORT, CTA_PROTO_NUM, CTA_TUPLE_ORIG,
    CTA_TUPLE_PROTO, CTA_ZONE, IPCTNL_MSG_CT_DELETE, IPCTNL_MSG_CT_GET,
};
use super::wire::{self, Body};
use nix::libc;

// Not in a uapi header: the kernel's net/netfilter/nf_internals.h (stable ABI).
const CTA_FILTER_F_CTA_PROTO_NUM: u32 = 1 << 3;
const CTA_FILTER_F_CTA_PROTO_DST_PORT: u32 = 1 << 5;

/// Whether an entry's original tuple is `protocol` to `port` (public for the fuzz targets).
pub fn matches(entry: &[u8], protocol: u8, port: u16) -> Option<&[u8]> {
    let orig = wire::find(entry, CTA_TUPLE_ORIG)?;
    let proto = wire::find(orig, CTA_TUPLE_PROTO)?;
    let num = *wire::find(proto, CTA_PROTO_NUM)?.first()?;
    let dport = wire::find(proto, CTA_PROTO_DST_PORT)?;
    let dport = u16::from_be_bytes(dport.get(..2)?.try_into().ok()?);
    (num == protocol && dport == port).then_some(orig)
}

/// The attributes of a dump the kernel narrows to the entries whose original
/// tuple is `protocol` to `port`; the family is the request's nfgenmsg.
fn filter_attrs(protocol: u8, port: u16) -> Body {
    Body::default()
        .nest(CTA_TUPLE_ORIG | wire::NESTED, |t| {
            t.nest(CTA_TUPLE_PROTO | wire::NESTED, |p| {
                p.u8(CTA_PROTO_NUM, protocol)
                    .attr(CTA_PROTO_DST_PORT, &port.to_be_bytes())
            })
        })
        .nest(CTA_FILTER | wire::NESTED, |f| {
            f.u32(
                CTA_FILTER_ORIG_FLAGS,
                CTA_FILTER_F_CTA_PROTO_NUM | CTA_FILTER_F_CTA_PROTO_DST_PORT,
            )
        })
}

/// How the entries to delete are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dump {
    /// One filtered flush per port; `Filtered` where the kernel refuses it.
    Flush,
    /// One dump per port, filtered in the kernel; the whole table where the
    /// kernel refuses the filter.
    Filtered,
    /// The whole table of the family (the fallback; tests compare the two).
    Full,
}

/// What a deletion did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deleted {
    pub deleted: usize,
    /// Entries the kernel sent: the matching ones when it filtered.
    pub received: usize,
    /// Whether the filtered dumps were answered (a kernel before 5.8 ignores
    /// the filter and sends every entry: `received` tells).
    pub filtered: bool,
    /// The namespace had no conntrack entry at all, so nothing was dumped.
    pub table_empty: bool,
    /// The kernel flushed by filter: nothing was dumped, and the number of
    /// entries deleted is not known (`deleted` stays 0).
    pub flushed: bool,
}

/// Whether the calling thread's namespace has no conntrack entry (of any
/// family or zone). A dump walks every bucket of the host-wide hash table
/// (262,144 on a 24 GB machine: milliseconds) however few entries there
/// are, so an empty table is worth one small read. Unknown is not empty.
fn table_empty() -> bool {
    // /proc/sys/net answers for the opening thread's namespace.
    std::fs::read_to_string("/proc/sys/net/netfilter/nf_conntrack_count")
        .is_ok_and(|n| n.trim() == "0")
}

/// Deletes the entries of `family` (NFPROTO_*) for `protocol` to any of `ports`.
/// Entries that vanish meanwhile are not errors.
pub fn delete_by_dport(family: u8, protocol: u8, ports: &[u16]) -> Result<Deleted> {
    delete_by_dport_with(Dump::Flush, family, protocol, ports)
}

/// As `delete_by_dport`, choosing the dump (public for tests: both ways delete the same).
pub fn delete_by_dport_with(how: Dump, family: u8, protocol: u8, ports: &[u16]) -> Result<Deleted> {
    let mut ports = ports.to_vec();
    ports.sort_unstable();
    ports.dedup();
    if ports.is_empty() {
        return Ok(Deleted::default());
    }
    if table_empty() {
        return Ok(Deleted {
            table_empty: true,
            ..Deleted::default()
        });
    }
    let mut sock = NfSocket::open()?;
    if how == Dump::Flush {
        match flush(&mut sock, family, protocol, &ports) {
            Ok(()) => {
                return Ok(Deleted {
                    flushed: true,
                    filtered: true,
                    ..Deleted::default()
                });
            }
            // Not flushed by filter here (one refusal means none of the
            // ports was flushed: the kernel is the same for each).
            Err(e) if e.is(libc::EOPNOTSUPP) || e.is(libc::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    let mut entries = Vec::new();
    let mut filtered = how != Dump::Full;
    if filtered {
        for &port in &ports {
            match sock.dump_of(
                NFNL_SUBSYS_CTNETLINK,
                IPCTNL_MSG_CT_GET,
                family,
                filter_attrs(protocol, port),
            ) {
                Ok(found) => entries.extend(found),
                // A kernel that rejects the filter rather than ignoring it (as
                // before 5.8 does): the full dump below finds the entries.
                Err(e) if e.is(libc::EOPNOTSUPP) || e.is(libc::EINVAL) => {
                    filtered = false;
                    entries.clear();
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    if !filtered {
        entries = sock.dump_of(
            NFNL_SUBSYS_CTNETLINK,
            IPCTNL_MSG_CT_GET,
            family,
            Body::default(),
        )?;
    }
    let mut done = Deleted {
        deleted: 0,
        received: entries.len(),
        filtered,
        table_empty: false,
        flushed: false,
    };
    for entry in &entries {
        // Kernels before 5.8 ignore the unknown filter and send every entry:
        // match here too.
        let Some(orig) = ports.iter().find_map(|p| matches(entry, protocol, *p)) else {
            continue;
        };
        // In the entry's own zone, as the flush and the reference delete.
        let mut attrs = Body::default().attr(CTA_TUPLE_ORIG | wire::NESTED, orig);
        if let Some(zone) = wire::find(entry, CTA_ZONE) {
            attrs = attrs.attr(CTA_ZONE, zone);
        }
        let attrs = attrs.into_bytes();
        match sock.request(NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_DELETE, family, &attrs) {
            Ok(()) => done.deleted += 1,
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// One filtered DELETE per port (acknowledged: a refusal is an error).
fn flush(sock: &mut NfSocket, family: u8, protocol: u8, ports: &[u16]) -> Result<()> {
    for &port in ports {
        let attrs = filter_attrs(protocol, port).into_bytes();
        sock.request(NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_DELETE, family, &attrs)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "conntrack_tests.rs"]
mod tests;
