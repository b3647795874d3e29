//! tap: a persistent tap device in the container (for VMs in pods), created with
//! /dev/net/tun ioctls inside the container namespace; never `ip tuntap`.

use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::iface;
use crate::netlink::Socket;
use crate::netlink::link::{Change, Link};
use crate::netlink::tun::{TapSpec, create_tap};
use serde::Deserialize;

pub struct Tap;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Keys {
    mac: Option<String>,
    mtu: i64,
    #[serde(rename = "multiQueue")]
    multi_queue: bool,
    owner: Option<u32>,
    group: Option<u32>,
    #[serde(rename = "selinuxContext")]
    selinux_context: String,
    bridge: String,
}

/// `selinuxContext`: the reference writes it to /proc/thread-self/attr/exec
/// (go-selinux's SetExecLabel) so that the `ip` it runs next creates the tap in
/// that context. Without SELinux the kernel refuses that write (EINVAL) and the
/// reference's ADD fails: so does ours, with its text. With SELinux the label
/// would need a process of ours exec'd into it, which cni-multi does not do:
/// refused, saying so, rather than a tap in the wrong context.
fn selinux_label_refused(label: &str) -> CniResult<()> {
    if label.chars().any(char::is_control) {
        return Err(Error::invalid_config(format!(
            "invalid selinuxContext {label:?}"
        )));
    }
    if !selinux_enabled() {
        let mut e = Error::internal(
            "failed set socket label: write /proc/thread-self/attr/exec: invalid argument",
        );
        e.details = "SELinux is not enabled on this host, so it cannot take an exec label".into();
        return Err(e);
    }
    Err(Error::invalid_config(format!(
        "selinuxContext {label:?} is not supported: the tap would have to be created by a \
         process exec'd in that context, and cni-multi creates taps in-process"
    )))
}

/// SELinux is on as go-selinux decides: a writable selinuxfs is mounted and
/// this process is not labelled "kernel".
fn selinux_enabled() -> bool {
    let mounted = selinuxfs_writable(std::path::Path::new("/sys/fs/selinux"))
        || (fs_err::read_to_string("/proc/filesystems").is_ok_and(|f| f.contains("\tselinuxfs\n"))
            && fs_err::read_to_string("/proc/self/mountinfo").is_ok_and(|m| {
                m.lines()
                    .filter(|l| l.contains(" - selinuxfs "))
                    .filter_map(|l| l.split(' ').nth(4))
                    .any(|mnt| selinuxfs_writable(std::path::Path::new(mnt)))
            }));
    let label = fs_err::read_to_string("/proc/thread-self/attr/current").unwrap_or_default();
    mounted && label.trim_end_matches(['\0', '\n']) != "kernel"
}

fn selinuxfs_writable(mnt: &std::path::Path) -> bool {
    use nix::sys::{statfs, statvfs::FsFlags};
    statfs::statfs(mnt).is_ok_and(|fs| {
        fs.filesystem_type() == statfs::SELINUX_MAGIC && !fs.flags().contains(FsFlags::ST_RDONLY)
    })
}

impl Plugin for Tap {
    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let k: Keys = inv.conf.plugin_keys()?;
        crate::cni::config::link_name_key("bridge", &k.bridge)?;
        let mtu = iface::optional_mtu(k.mtu)?;
        let mac = iface::requested_mac(inv, k.mac.clone())?;
        let ns = iface::open_netns(&inv.env.netns)?;
        if !k.selinux_context.is_empty() {
            selinux_label_refused(&k.selinux_context)?;
        }
        let ifname = inv.env.ifname.as_str();
        let tmp = iface::random_name("tap")?;
        // Owner and group both set: the reference's netlink path (vnet header);
        // otherwise what its `ip tuntap add` path creates (no packet info).
        let both = k.owner.is_some() && k.group.is_some();
        let spec = TapSpec {
            name: tmp.clone(),
            multi_queue: k.multi_queue,
            vnet_hdr: both,
            no_pi: !both,
            owner: k.owner,
            group: k.group,
        };
        let bridge = k.bridge.clone();
        let link = ns.run(|| -> CniResult<Link> {
            let mut sock = Socket::open()?;
            if sock.link_by_name(ifname).is_ok() {
                return Err(Error::internal(format!(
                    "container interface name provided ({ifname}) already exists"
                )));
            }
            create_tap(&spec).context("failed to create tap")?;
            let link = sock.link_by_name(&tmp)?;
            let configured = (|| -> CniResult<()> {
                if let Some(mtu) = mtu {
                    sock.set_link(link.index, Change::Mtu(mtu))?;
                }
                if let Some(mac) = mac {
                    sock.set_link(link.index, Change::Mac(mac))?;
                }
                sock.set_link(link.index, Change::Name(ifname))?;
                if !bridge.is_empty() {
                    let br = sock
                        .link_by_name(&bridge)
                        .with_context(|| format!("failed to find bridge {bridge:?}"))?;
                    sock.set_link(link.index, Change::Master(Some(br.index)))?;
                }
                iface::set_arp_notify(&mut sock, link.index);
                Ok(())
            })();
            if let Err(e) = configured {
                let _ = sock.delete_link(link.index);
                return Err(e);
            }
            Ok(sock.link_by_index(link.index)?)
        })??;
        let cleanup = iface::ContainerLinkGuard::new(&ns, ifname);
        let mut result = NetResult::new();
        result.interfaces = vec![iface::result_interface(&link, Some(&inv.env.netns))];
        let mut result = iface::configure_single(inv, &ns, ifname, result, false)?;
        result.dns = inv.conf.common.dns.clone().unwrap_or_default();
        cleanup.keep();
        Ok(result)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let _: Keys = inv.conf.plugin_keys()?;
        iface::del_single(inv)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        iface::check_single(inv, Some("tun")).map(drop)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        iface::gc_ipam(inv)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        iface::status_ipam(inv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selinux_labels_are_never_ignored() {
        assert_eq!(selinux_label_refused("a\nb").map_err(|e| e.code), Err(7));
        let e = selinux_label_refused("system_u:system_r:container_t:s0").expect_err("label");
        if selinux_enabled() {
            assert_eq!(e.code, 7, "{e:?}");
        } else {
            assert_eq!(
                (e.code, e.msg.as_str()),
                (
                    999,
                    "failed set socket label: write /proc/thread-self/attr/exec: invalid argument"
                )
            );
        }
    }
}
