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
mod tests {
    use super::*;

    fn link(
        name: &str,
        kind: LinkKind,
        index: u32,
        parent: Option<u32>,
        nsid: Option<i32>,
    ) -> Link {
        Link {
            index,
            name: name.into(),
            kind,
            parent,
            link_netnsid: nsid,
            mac: vec![0x0a, 0x58, 0x0a, 0x16, 0, 2],
            ..Link::default()
        }
    }

    #[test]
    fn a_record_survives_its_file_and_is_only_this_attachments() {
        let device = link("hd-dev", LinkKind::Veth, 5, Some(4), None);
        let record = Record {
            container_id: "ctr-1".into(),
            ifname: "eth0".into(),
            host_name: "hd-dev".into(),
            identity: Identity::of(&device, String::new()),
        };
        assert_eq!(record.identity.host_link, Some(4));
        let bytes = encode(&record);
        let text = String::from_utf8(bytes.clone()).expect("utf-8");
        assert!(text.contains("\"hostName\": \"hd-dev\""), "{text}");
        assert!(text.contains("\"hostLink\": 4"), "{text}");
        assert!(!text.contains("permAddr"), "empty fields left out: {text}");
        assert_eq!(decode(&bytes, "ctr-1", "eth0").ok(), Some(record.clone()));
        assert!(decode(&bytes, "ctr-2", "eth0").is_err());
        assert!(decode(&bytes, "ctr-1", "eth1").is_err());
        assert!(decode(b"{", "ctr-1", "eth0").is_err());
        let bad_name = Record {
            host_name: "../x".into(),
            ..record
        };
        assert!(decode(&encode(&bad_name), "ctr-1", "eth0").is_err());
    }

    #[test]
    fn a_veth_is_known_by_its_peer_in_the_host() {
        let rec = Identity::of(
            &link("hd-dev", LinkKind::Veth, 5, Some(4), None),
            String::new(),
        );
        let pod = View::Away(Some(0));
        // The real device in the pod: its peer in the host (nsid 0) at 4.
        assert_eq!(
            rec.mismatch(&link("eth0", LinkKind::Veth, 5, Some(4), Some(0)), pod),
            None
        );
        // Its peer's index equal to its own: the kernel sends no IFLA_LINK.
        let same = Identity::of(
            &link("hd-dev", LinkKind::Veth, 4, Some(4), None),
            String::new(),
        );
        assert_eq!(
            same.mismatch(&link("eth0", LinkKind::Veth, 4, None, Some(0)), pod),
            None
        );
        // The container's own veth, whatever its index, name or MAC.
        let fake = link("eth0", LinkKind::Veth, 5, Some(4), None);
        assert!(rec.mismatch(&fake, pod).is_some());
        assert_eq!(
            describe(&fake, pod),
            "veth link \"eth0\" with its peer in the container at index 4, MAC 0a:58:0a:16:00:02"
        );
        // A peer in a namespace of the container's making.
        assert!(
            rec.mismatch(&link("eth0", LinkKind::Veth, 5, Some(4), Some(3)), pod)
                .is_some()
        );
        // A host that has no id in the pod: nothing there can be the host's.
        assert!(
            rec.mismatch(
                &link("eth0", LinkKind::Veth, 5, Some(4), Some(0)),
                View::Away(None)
            )
            .is_some()
        );
        // Home again, in the host.
        assert_eq!(
            rec.mismatch(
                &link("hd-dev", LinkKind::Veth, 5, Some(4), None),
                View::Host
            ),
            None
        );
        assert_eq!(
            rec.to_string(),
            "veth with its peer in the host at index 4, MAC 0a:58:0a:16:00:02"
        );
    }

    #[test]
    fn hardware_is_known_by_bus_device_and_permanent_address() {
        let mut nic = link("ens1f0", LinkKind::Device, 2, None, None);
        nic.parent_bus = "pci".into();
        nic.parent_dev = "0000:01:00.0".into();
        nic.perm_addr = vec![0, 0x1b, 0x21, 1, 2, 3];
        let rec = Identity::of(&nic, "/sys/devices/pci0000:00/0000:01:00.0".into());
        let pod = View::Away(Some(0));
        let mut moved = nic.clone();
        moved.name = "eth0".into();
        moved.index = 9;
        // The container may change the MAC; the device stays the device.
        moved.mac = vec![2, 2, 2, 2, 2, 2];
        assert_eq!(rec.mismatch(&moved, pod), None);
        let mut other_port = moved.clone();
        other_port.perm_addr = vec![0, 0x1b, 0x21, 1, 2, 4];
        assert!(rec.mismatch(&other_port, pod).is_some());
        let mut other_fn = moved.clone();
        other_fn.parent_dev = "0000:01:00.1".into();
        assert!(rec.mismatch(&other_fn, pod).is_some());
        // An ipvlan copies its lower device's address as a permanent one: a
        // kind the container can create is never hardware.
        let mut ipvlan = link("eth0", LinkKind::Ipvlan, 9, Some(3), None);
        ipvlan.perm_addr = nic.perm_addr.clone();
        let bare_nic = Identity::of(
            &Link {
                parent_bus: String::new(),
                parent_dev: String::new(),
                ..nic.clone()
            },
            String::new(),
        );
        assert!(bare_nic.mismatch(&ipvlan, pod).is_some());
        assert!(rec.to_string().contains("pci device 0000:01:00.0"));
        assert_eq!(rec.unprovable(Owner::Pod), None);
        assert_eq!(bare_nic.unprovable(Owner::Pod), None);
        // A link built on the device (an IPoIB child shares its bus device)
        // has the device as its lower device; the device has none.
        let mut child = moved.clone();
        child.index = 10;
        child.parent = Some(9);
        assert!(rec.mismatch(&child, pod).is_some());
    }

    #[test]
    fn only_a_bus_device_permanent_mac_or_host_peer_proves_a_link() {
        let pod = View::Away(Some(0));
        let mut nic = link("eth0", LinkKind::Device, 9, None, None);
        nic.perm_addr = vec![0, 0x1b, 0x21, 1, 2, 3];
        let host = Owner::Host;
        assert_eq!(unprovable(&nic, pod, Owner::Pod), None);
        let mut vf = link("eth0", LinkKind::Device, 9, None, None);
        vf.parent_bus = "pci".into();
        vf.parent_dev = "0000:01:10.0".into();
        assert_eq!(unprovable(&vf, pod, Owner::Pod), None);
        assert_eq!(
            unprovable(
                &link("eth0", LinkKind::Veth, 9, Some(4), Some(0)),
                pod,
                host
            ),
            None
        );
        // On a host link: a pod in its own user namespace can build a macvlan
        // there (on the device it was given), not an ipvlan or a vlan.
        for kind in [LinkKind::Macvlan, LinkKind::Ipvlan, LinkKind::Vlan] {
            let on_host = link("eth0", kind.clone(), 9, Some(2), Some(0));
            assert_eq!(unprovable(&on_host, pod, host), None, "{kind}");
            let theirs = unprovable(&on_host, pod, Owner::Pod);
            assert_eq!(
                theirs.is_some(),
                kind == LinkKind::Macvlan,
                "{kind}: {theirs:?}"
            );
        }
        // What a container can make, or copy.
        let mut ipvlan = link("eth0", LinkKind::Ipvlan, 9, Some(3), None);
        ipvlan.perm_addr = nic.perm_addr.clone();
        for made in [
            link("eth0", LinkKind::Tun, 9, None, None),
            link("eth0", LinkKind::Vxlan, 9, None, None),
            link("eth0", LinkKind::Device, 9, None, None),
            link("eth0", LinkKind::Veth, 9, Some(4), None),
            link("eth0", LinkKind::Veth, 9, Some(4), Some(3)),
            ipvlan,
        ] {
            assert!(unprovable(&made, pod, host).is_some(), "{made:?}");
        }
        assert_eq!(
            unprovable(&link("eth0", LinkKind::Tun, 9, None, None), pod, host).as_deref(),
            Some("a tun link with no bus device or peer in the host, which the container can make")
        );
    }

    #[test]
    fn without_a_proof_kind_and_mac_must_match_and_nothing_built_in_the_pod() {
        // A tun moved in from the host: nothing the container could not copy.
        let rec = Identity::of(&link("tap0", LinkKind::Tun, 7, None, None), String::new());
        let pod = View::Away(Some(0));
        assert_eq!(
            rec.mismatch(&link("eth0", LinkKind::Tun, 7, None, None), pod),
            None
        );
        let mut other_mac = link("eth0", LinkKind::Tun, 7, None, None);
        other_mac.mac = vec![2, 0, 0, 0, 0, 1];
        assert!(rec.mismatch(&other_mac, pod).is_some());
        assert!(
            rec.mismatch(&link("eth0", LinkKind::Dummy, 7, None, None), pod)
                .is_some()
        );
        // A veth whose peer was in a third namespace: never one whose peer is in the pod.
        let far = Identity::of(
            &link("v0", LinkKind::Veth, 7, Some(2), Some(5)),
            String::new(),
        );
        assert_eq!(far.host_link, None);
        // Neither is anything DEL may move back.
        for owner in [Owner::Host, Owner::Pod] {
            assert!(rec.unprovable(owner).is_some() && far.unprovable(owner).is_some());
        }
        assert!(
            far.mismatch(&link("eth0", LinkKind::Veth, 7, Some(2), None), pod)
                .is_some()
        );
        assert_eq!(
            far.mismatch(&link("eth0", LinkKind::Veth, 7, Some(2), Some(4)), pod),
            None
        );
    }

    #[test]
    fn a_link_on_a_host_device_is_known_by_it_and_by_the_index_add_left_it_at() {
        let pod = View::Away(Some(0));
        for kind in [LinkKind::Macvlan, LinkKind::Ipvlan, LinkKind::Vlan] {
            // As the host saw it: on host link 2. ADD left it at index 6.
            let mut rec = Identity::of(
                &link("hd-dev", kind.clone(), 5, Some(2), None),
                String::new(),
            );
            let old = rec.clone();
            rec.pod_index = Some(6);
            let device = link("eth0", kind.clone(), 6, Some(2), Some(0));
            assert_eq!(rec.mismatch(&device, pod), None, "{kind}");
            // One the pod built on it: the kernel puts a macvlan on a macvlan
            // (an ipvlan on an ipvlan) on the same host link; its index differs.
            let copy = link("eth0", kind.clone(), 7, Some(2), Some(0));
            assert_eq!(
                rec.mismatch(&copy, pod).as_deref(),
                Some("not at index 6, where ADD left the device"),
                "{kind}"
            );
            // A record without the index (an older cni-multi's): the host link alone.
            assert_eq!(old.mismatch(&copy, pod), None, "{kind}");
            // Home, the host numbers it as it likes.
            assert_eq!(
                rec.mismatch(&link("hd-dev", kind.clone(), 9, Some(2), None), View::Host),
                None
            );
            assert!(
                rec.to_string().ends_with(", index 6 in the container"),
                "{rec}"
            );
            assert_eq!(rec.unprovable(Owner::Host), None);
            // In a pod's own user namespace a macvlan copy can take the index too.
            assert_eq!(
                rec.unprovable(Owner::Pod).is_some(),
                kind == LinkKind::Macvlan,
                "{kind}"
            );
        }
        // A veth's pair is confirmed from the host; its index is not compared.
        let mut veth = Identity::of(
            &link("hd-dev", LinkKind::Veth, 5, Some(4), None),
            String::new(),
        );
        veth.pod_index = Some(6);
        assert_eq!(
            veth.mismatch(&link("eth0", LinkKind::Veth, 8, Some(4), Some(0)), pod),
            None
        );
        assert!(!veth.to_string().contains("index 6"), "{veth}");
    }
}
