//! What ADD records of the device it moves, and how DEL knows the device again.
//!
//! Inside its namespace a container can rename any link, set any alias or MAC,
//! and create veth pairs, macvlans on its own links and most other virtual
//! links, under any name, and (from a namespace of its own) at any ifindex. It
//! cannot create a device on a bus (PCI, auxiliary, …), a driver-made link (no
//! kind) with a permanent hardware address, or a veth whose peer is the
//! host's. Those are what a device is known by; the name and alias never are.
//!
//! A link on a lower device in the host (ipvlan, vlan, macvlan, …) is known
//! by that lower device and by the ifindex ADD left it at: the kernel makes a
//! link on a lower device in another namespace only for who holds
//! CAP_NET_ADMIN over that namespace, except that a macvlan (or macvtap) asked
//! for on a macvlan goes on the real lower device, unchecked. So the container
//! can build a copy of a moved macvlan; a copy at the device's index takes a
//! namespace of its own, which a pod whose network namespace belongs to its
//! own user namespace can make: there a macvlan proves nothing.

use crate::cni::{CniResult, Code, Error};
use crate::netlink::Socket;
use crate::netlink::link::{Link, LinkKind, format_mac};
use crate::quote::quoted;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::os::fd::RawFd;

/// One attachment's state file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Record {
    pub container_id: String,
    pub ifname: String,
    /// The device's name in the host, which DEL gives back.
    pub host_name: String,
    pub identity: Identity,
}

/// The device as the host saw it at ADD.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Identity {
    /// IFLA_INFO_KIND, by its kernel name (empty for a device a driver made).
    pub kind: LinkKind,
    pub mac: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub perm_addr: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent_bus: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent_device: String,
    /// `/sys/devices/…` of the parent device (for people reading errors).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sysfs_path: String,
    /// The host ifindex of the veth peer or lower device, when that is in the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_link: Option<u32>,
    /// The device's ifindex in the container, where ADD left it (none in a
    /// record an older cni-multi wrote, or one ADD wrote before the move).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_index: Option<u32>,
}

/// Whose user namespace the container's network namespace belongs to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Owner {
    /// Ours: only who holds CAP_NET_ADMIN over the host can change its links.
    Host,
    /// Another: the pod's own, in which it can change its links and make
    /// network namespaces, with no right over the host.
    Pod,
}

/// A kind the kernel puts on the real lower device when asked for one on a
/// link of the kind, without asking for rights over that lower device (an
/// ipvlan on an ipvlan takes CAP_NET_ADMIN over the lower device's namespace).
fn stacks_on_the_lower(kind: &LinkKind) -> bool {
    matches!(kind, LinkKind::Macvlan | LinkKind::Macvtap)
}

pub fn encode(record: &Record) -> Vec<u8> {
    // A struct of strings and numbers always serializes.
    serde_json::to_vec_pretty(record).unwrap_or_default()
}

/// The record for this attachment, or why the file is not one.
pub fn decode(bytes: &[u8], container_id: &str, ifname: &str) -> CniResult<Record> {
    let record: Record = crate::cni::json::from_slice(bytes)
        .map_err(|e| Error::caused_by(Code::Internal, "undecodable", e))?;
    if (record.container_id.as_str(), record.ifname.as_str()) != (container_id, ifname) {
        return Err(Error::internal(format!(
            "it is for container {} interface {}",
            quoted(&record.container_id),
            quoted(&record.ifname)
        )));
    }
    if let Some(problem) = crate::cni::env::link_name_problem(&record.host_name) {
        return Err(Error::internal(format!(
            "host name {} {problem}",
            quoted(&record.host_name)
        )));
    }
    Ok(record)
}

/// Where a link is looked at from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum View {
    /// The host namespace itself.
    Host,
    /// Another namespace, in which the host namespace has this id (None: none).
    Away(Option<i32>),
}

/// Where a link's peer (veth) or lower device (macvlan, vlan, …) is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lower {
    None,
    /// In the namespace the link is in, at this index.
    Here(u32),
    Host(u32),
    /// In the namespace with this id (as the link's namespace numbers it).
    Other(i32, u32),
}

pub fn lower(link: &Link, view: View) -> Lower {
    let (index, nsid) = match (link.parent, link.link_netnsid) {
        (Some(p), ns) => (p, ns),
        // The kernel leaves IFLA_LINK out when it equals the link's own index,
        // which a peer in another namespace may have.
        (None, Some(ns)) => (link.index, Some(ns)),
        (None, None) => return Lower::None,
    };
    match (nsid, view) {
        (None, View::Host) => Lower::Host(index),
        (None, View::Away(_)) => Lower::Here(index),
        (Some(id), View::Away(Some(host))) if id == host => Lower::Host(index),
        (Some(id), _) => Lower::Other(id, index),
    }
}

fn hw(addr: &[u8]) -> String {
    if addr.iter().all(|b| *b == 0) {
        String::new()
    } else {
        format_mac(addr)
    }
}

fn relation(kind: &LinkKind) -> &'static str {
    if *kind == LinkKind::Veth {
        "with its peer"
    } else {
        "on a link"
    }
}

impl Identity {
    /// A link as the host sees it.
    pub fn of(link: &Link, sysfs_path: String) -> Identity {
        Identity {
            kind: link.kind.clone(),
            mac: format_mac(&link.mac),
            perm_addr: hw(&link.perm_addr),
            parent_bus: link.parent_bus.clone(),
            parent_device: link.parent_dev.clone(),
            sysfs_path,
            host_link: match lower(link, View::Host) {
                Lower::Host(i) => Some(i),
                _ => None,
            },
            pod_index: None,
        }
    }

    /// Something a container cannot forge names the device.
    fn hardware(&self) -> bool {
        !self.parent_device.is_empty()
            || (self.kind == LinkKind::Device && !self.perm_addr.is_empty())
    }

    /// Why DEL cannot tell this device, in a container whose namespace `owner`
    /// holds, from one the container made; None when it can: it has a bus
    /// device, a permanent MAC, or a peer or lower device in the host (not a
    /// macvlan's in a pod's own user namespace).
    pub fn unprovable(&self, owner: Owner) -> Option<String> {
        if self.hardware() {
            return None;
        }
        if self.host_link.is_none() {
            return Some("has no bus device, permanent MAC or peer in the host".into());
        }
        if owner == Owner::Pod && stacks_on_the_lower(&self.kind) {
            return Some(format!(
                "is a {} the pod, in a user namespace of its own, can copy on the device itself, index included",
                self.kind
            ));
        }
        None
    }

    /// Why `link`, seen from `view`, is not this device; None when it is. A
    /// veth's pair is confirmed from the host side as well (`host_confirms_pair`).
    ///
    /// Without a proof (`unprovable`: a tun, a veth whose peer was in a third
    /// namespace) kind and MAC are all there is, and a container could forge
    /// them: DEL never relies on that, only ADD giving back a device it has
    /// just moved in. Even then, never a link whose peer or lower device is
    /// in the container.
    pub fn mismatch(&self, link: &Link, view: View) -> Option<String> {
        if link.kind != self.kind {
            return Some(format!("kind {}, not {}", link.kind, self.kind));
        }
        if !self.parent_device.is_empty()
            && (link.parent_bus.as_str(), link.parent_dev.as_str())
                != (self.parent_bus.as_str(), self.parent_device.as_str())
        {
            return Some(format!(
                "not {} device {}",
                self.parent_bus, self.parent_device
            ));
        }
        if !self.perm_addr.is_empty() && hw(&link.perm_addr) != self.perm_addr {
            return Some(format!("permanent MAC is not {}", self.perm_addr));
        }
        let lower = lower(link, view);
        match self.host_link {
            Some(i) if lower != Lower::Host(i) => Some(format!(
                "not {} in the host at index {i}",
                relation(&self.kind)
            )),
            // A link the container built on the device shares its lower
            // device; the index tells them apart (a veth's pair is confirmed
            // from the host instead). The host's own view is not the pod's.
            Some(_) => match (self.pod_index, view) {
                (Some(at), View::Away(_)) if self.kind != LinkKind::Veth && link.index != at => {
                    Some(format!("not at index {at}, where ADD left the device"))
                }
                _ => None,
            },
            // Hardware has no lower device: one there is a link built on it.
            None if self.hardware() && lower != Lower::None => Some(format!(
                "{} link on a link, not the device itself",
                if link.kind == LinkKind::Device {
                    "a"
                } else {
                    link.kind.name()
                }
            )),
            None if self.hardware() => None,
            None if matches!(lower, Lower::Here(_)) => {
                Some(format!("{} in its own namespace", relation(&self.kind)))
            }
            None if format_mac(&link.mac) != self.mac => Some(format!("MAC is not {}", self.mac)),
            None => None,
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host_link {
            Some(i) => write!(
                f,
                "{} {} in the host at index {i}",
                self.kind,
                relation(&self.kind)
            )?,
            None if self.kind == LinkKind::Device => write!(f, "physical")?,
            None => write!(f, "{}", self.kind)?,
        }
        if !self.parent_device.is_empty() {
            write!(f, ", {} device {}", self.parent_bus, self.parent_device)?;
        }
        if !self.sysfs_path.is_empty() {
            write!(f, " ({})", self.sysfs_path)?;
        }
        if !self.perm_addr.is_empty() {
            write!(f, ", permanent MAC {}", self.perm_addr)?;
        }
        write!(f, ", MAC {}", self.mac)?;
        match self.pod_index {
            Some(i) if self.kind != LinkKind::Veth && self.host_link.is_some() => {
                write!(f, ", index {i} in the container")
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "host device {} ({})",
            quoted(&self.host_name),
            self.identity
        )
    }
}

/// Why nothing the kernel tells of `link` (seen from `view`, in a namespace
/// `owner` holds) shows that the container did not make it; None when
/// something does: a bus device, a driver-made link's permanent MAC, a peer
/// or lower device in the host (a veth's pair still to be confirmed from the
/// host, `host_confirms_pair`; not a macvlan's in a pod's own user namespace).
pub fn unprovable(link: &Link, view: View, owner: Owner) -> Option<String> {
    if !link.parent_dev.is_empty()
        || (link.kind == LinkKind::Device && !hw(&link.perm_addr).is_empty())
    {
        return None;
    }
    let rel = relation(&link.kind);
    match lower(link, view) {
        Lower::Host(_) if owner == Owner::Pod && stacks_on_the_lower(&link.kind) => Some(format!(
            "a {} on a host link, which the pod, in a user namespace of its own, can build on the device it was given",
            link.kind
        )),
        Lower::Host(_) => None,
        Lower::Here(_) => Some(format!(
            "{rel} in its own namespace, the container can make it"
        )),
        Lower::Other(..) => Some(format!("{rel} in a namespace other than the host")),
        Lower::None if link.kind == LinkKind::Device => {
            Some("no bus device, permanent MAC or peer in the host".into())
        }
        Lower::None => Some(format!(
            "a {} link with no bus device or peer in the host, which the container can make",
            link.kind
        )),
    }
}

/// A link in the container, for errors: what it is and where its peer is.
pub fn describe(link: &Link, view: View) -> String {
    let kind = if link.kind == LinkKind::Device {
        "physical"
    } else {
        link.kind.name()
    };
    let mut out = format!("{kind} link {}", quoted(&link.name));
    let rel = relation(&link.kind);
    match lower(link, view) {
        Lower::None => {}
        Lower::Here(i) => out += &format!(" {rel} in the container at index {i}"),
        Lower::Host(i) => out += &format!(" {rel} in the host at index {i}"),
        Lower::Other(id, i) => out += &format!(" {rel} in netns id {id} at index {i}"),
    }
    if !link.parent_dev.is_empty() {
        out += &format!(", {} device {}", link.parent_bus, link.parent_dev);
    }
    let perm = hw(&link.perm_addr);
    if !perm.is_empty() {
        out += &format!(", permanent MAC {perm}");
    }
    out + &format!(", MAC {}", format_mac(&link.mac))
}

/// For a veth: the host's end at `peer` is a veth whose own peer is `link`,
/// at its index in the namespace of `ns_fd`. Only the host can make this so.
pub fn host_confirms_pair(
    host: &mut Socket,
    peer: u32,
    link: &Link,
    ns_fd: RawFd,
) -> crate::netlink::Result<bool> {
    let end = match host.link_by_index(peer) {
        Ok(end) => end,
        Err(e) if e.is_not_found() => return Ok(false),
        Err(e) => return Err(e),
    };
    // After the dump above, which gives the namespace an id if it had none.
    let Some(id) = host.netns_id(ns_fd)? else {
        return Ok(false);
    };
    Ok(end.kind == LinkKind::Veth && lower(&end, View::Host) == Lower::Other(id, link.index))
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
