//! Attachments whose cache entry names no netns (libcni before 1.2, as
//! containerd 1.6 and 1.7 and Debian's libcni write them), judged from what
//! the host shows: a host veth the cached result lists lives while its peer's
//! namespace does, and a namespace that holds an address of the result is
//! the pod's. Alive with that namespace (so a repair can enter it), dead only
//! on positive evidence: a host interface of the result is gone and no
//! namespace, every one of them read, holds any of its addresses. Else
//! unknown, never judged.

use super::namespaces::Census;
use super::node::{Cached, State};
use crate::netlink::Socket;
use crate::netlink::link::LinkKind;
use anyhow::Result;

pub fn judge(attachments: &mut [Cached], census: &Census) -> Result<()> {
    let pending = attachments.iter_mut().filter(|a| {
        a.state == State::Unknown && a.entry.netns.is_empty() && a.entry.result.is_some()
    });
    let mut links = None;
    for a in pending {
        let links = match &links {
            Some(l) => l,
            None => links.insert(Socket::open()?.links()?),
        };
        let hosts = a.entry.host_interfaces();
        let ips = a.entry.ips();
        let by_veth = hosts.iter().find_map(|(name, mac)| {
            let l = links
                .iter()
                .find(|l| &l.name == name && l.kind == LinkKind::Veth)?;
            if mac.is_some_and(|m| m[..] != l.mac[..]) {
                return None;
            }
            let id = l.link_netnsid?;
            census.spaces.iter().find(|s| s.nsid == Some(id))
        });
        let by_address = || {
            let mut spaces = census.spaces.iter();
            spaces.find(|s| s.ips.iter().any(|ip| ips.contains(ip)))
        };
        if let Some(space) = by_veth.or_else(by_address) {
            a.state = State::Alive;
            a.netns = space.path.to_string_lossy().into_owned();
            continue;
        }
        let host_gone = hosts
            .iter()
            .any(|(name, _)| !links.iter().any(|l| &l.name == name));
        if census.complete && host_gone && !ips.is_empty() {
            a.state = State::Dead;
        }
    }
    Ok(())
}
