//! The container's network namespace: opening CNI_NETNS, and deleting the
//! container's interface there (on DEL, or when a failed ADD unwinds).

use crate::cni::CniResult;
use crate::cni::error::Context;
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netns::NetNs;
use crate::quote::quoted;
use ipnet::IpNet;

/// Opens CNI_NETNS for ADD/CHECK with the reference's message.
pub fn open_netns(path: &str) -> CniResult<NetNs> {
    NetNs::open(path).with_context(|| format!("failed to open netns {path}", path = quoted(&path)))
}

/// Deletes `ifname` in the container namespace, returning its global addresses
/// (for ipMasq teardown). A missing link is success.
pub fn delete_in_container(ns: &NetNs, ifname: &str) -> CniResult<Vec<IpNet>> {
    ns.run(|| -> CniResult<Vec<IpNet>> {
        let mut sock = Socket::open()?;
        let link = match sock.link_by_name(ifname) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut addrs = Vec::new();
        for family in [Family::V4, Family::V6] {
            addrs.extend(
                sock.addresses(link.index, family)?
                    .into_iter()
                    .filter(|a| a.scope == 0)
                    .map(|a| a.addr),
            );
        }
        sock.delete_link_detached(link.index)
            .with_context(|| format!("failed to delete {ifname}", ifname = quoted(&ifname)))?;
        Ok(addrs)
    })?
}

/// DEL's link removal: nothing to do when CNI_NETNS is empty or the namespace is
/// gone; otherwise deletes `ifname` there. Returns the addresses it had.
pub fn delete_for_del(netns: &str, ifname: &str) -> CniResult<Vec<IpNet>> {
    match NetNs::open_for_del(netns)? {
        Some(ns) => delete_in_container(&ns, ifname),
        None => Ok(Vec::new()),
    }
}

/// Deletes a container interface when dropped, unless kept: an ADD that fails
/// after creating it leaves nothing behind.
pub struct ContainerLinkGuard<'a> {
    ns: &'a NetNs,
    ifname: &'a str,
    armed: bool,
}

impl<'a> ContainerLinkGuard<'a> {
    pub fn new(ns: &'a NetNs, ifname: &'a str) -> Self {
        ContainerLinkGuard {
            ns,
            ifname,
            armed: true,
        }
    }

    pub fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for ContainerLinkGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = delete_in_container(self.ns, self.ifname);
        }
    }
}
