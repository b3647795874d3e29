//! tap: a persistent tap device in the container (for VMs in pods), created with
//! /dev/net/tun ioctls inside the container namespace; never `ip tuntap`.

use crate::attach::{self, Addressing};
use crate::cni::error::Context;
use crate::cni::hint;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::kernel::tun::{TapSpec, create_tap};
use crate::netlink::Socket;
use crate::netlink::link::{Change, Link, LinkKind};
use crate::quote::quoted;
use serde::Deserialize;

pub struct Tap;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    mac: Option<String>,
    mtu: i64,
    multi_queue: bool,
    owner: Option<u32>,
    group: Option<u32>,
    selinux_context: String,
    bridge: String,
}

/// `selinuxContext`: the reference writes it to /proc/thread-self/attr/exec
/// (go-selinux's SetExecLabel) so that the `ip` it runs next creates the tap in
/// that context, and fails ADD with the kernel's refusal. Ours makes the same
/// write and reports the same refusal (without SELinux: EINVAL). Where the
/// kernel takes the label it would need a process of ours exec'd in it, which
/// cni-multi does not do: refused, saying so, rather than a tap in the wrong
/// context.
fn selinux_label_refused(label: &str) -> CniResult<()> {
    if label.chars().any(char::is_control) {
        return Err(Error::invalid_config(format!(
            "invalid selinuxContext {label}",
            label = quoted(&label)
        )));
    }
    if let Err(refusal) = try_exec_label(label) {
        return Err(
            Error::caused_by(Code::Internal, "failed set socket label", refusal).with_details(
                "the kernel refused the exec label (no SELinux on this host, or it does not \
                 take this label)",
            ),
        );
    }
    Err(Error::invalid_config(format!(
        "selinuxContext {label} is not supported: the tap would have to be created by a \
         process exec'd in that context, and cni-multi creates taps in-process",
        label = quoted(&label)
    )))
}

const EXEC_ATTR: &str = "/proc/thread-self/attr/exec";

/// The kernel's refusal of an exec label, printed as Go prints it
/// (`<op> <path>: <errno text>`).
#[derive(Debug)]
struct LabelRefused {
    op: &'static str,
    source: std::io::Error,
}

impl std::fmt::Display for LabelRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {EXEC_ATTR}: {}", self.op, go_errno(&self.source))
    }
}

impl std::error::Error for LabelRefused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Writes `label` as the exec label of a thread that ends right after, so a
/// label the kernel takes goes nowhere.
fn try_exec_label(label: &str) -> Result<(), LabelRefused> {
    use std::io::Write;
    let label = label.to_string();
    let attempt = move || -> Result<(), LabelRefused> {
        let mut attr = std::fs::OpenOptions::new()
            .write(true)
            .open(EXEC_ATTR)
            .map_err(|source| LabelRefused { op: "open", source })?;
        attr.write_all(label.as_bytes())
            .map_err(|source| LabelRefused {
                op: "write",
                source,
            })
    };
    let thread = std::thread::Builder::new()
        .name("exec-label".into())
        .spawn(attempt)
        .map_err(|source| LabelRefused {
            op: "start a thread to write",
            source,
        })?;
    thread.join().unwrap_or_else(|_| {
        Err(LabelRefused {
            op: "write",
            source: std::io::Error::other("the thread writing it panicked"),
        })
    })
}

/// An errno as Go's syscall.Errno prints it: strerror with a lower-case
/// first letter ("invalid argument").
fn go_errno(e: &std::io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return e.to_string();
    };
    let text = nix::errno::Errno::from_raw(n).desc();
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// In the container: the tap made under a temporary name, then configured
/// and renamed to `ifname` (and enslaved to `bridge`); removed if a step fails.
fn make_tap(
    spec: &TapSpec,
    ifname: &str,
    mtu: Option<u32>,
    mac: Option<[u8; 6]>,
    bridge: &str,
) -> CniResult<Link> {
    let mut sock = Socket::open()?;
    if sock.link_by_name(ifname).is_ok() {
        return Err(Error::internal(format!(
            "container interface name provided ({ifname}) already exists"
        ))
        .with_hint(Some(hint::link_exists(ifname))));
    }
    create_tap(spec).context("failed to create tap")?;
    let link = sock.link_by_name(&spec.name)?;
    let configured = (|| -> CniResult<()> {
        if let Some(mtu) = mtu {
            sock.set_link(&link, Change::Mtu(mtu))?;
        }
        if let Some(mac) = mac {
            sock.set_link(&link, Change::Mac(mac))?;
        }
        sock.set_link(&link, Change::Name(ifname))?;
        if !bridge.is_empty() {
            let br = sock.link_by_name(bridge).with_context(|| {
                format!("failed to find bridge {bridge}", bridge = quoted(&bridge))
            })?;
            sock.set_link(link.index, Change::Master(Some(br.index)))?;
        }
        attach::set_arp_notify(&mut sock, link.index);
        Ok(())
    })();
    if let Err(e) = configured {
        let _ = sock.delete_link(link.index);
        return Err(e);
    }
    Ok(sock.link_by_index(link.index)?)
}

/// The keys, with the checks ADD makes before it opens the netns.
fn checked(inv: &Invocation) -> CniResult<(Keys, Option<u32>, Option<[u8; 6]>)> {
    let k: Keys = inv.conf.plugin_keys()?;
    crate::cni::config::link_name_key("bridge", &k.bridge)?;
    let mtu = attach::optional_mtu(k.mtu)?;
    let mac = attach::requested_mac(inv, k.mac.clone())?;
    Ok((k, mtu, mac))
}

impl Plugin for Tap {
    fn delegates_ipam(&self) -> bool {
        true
    }

    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        let (k, _, _) = checked(inv)?;
        if !k.selinux_context.is_empty() {
            selinux_label_refused(&k.selinux_context)?;
        }
        Ok(())
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let (k, mtu, mac) = checked(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        if !k.selinux_context.is_empty() {
            selinux_label_refused(&k.selinux_context)?;
        }
        let ifname = inv.env.ifname.as_str();
        let tmp = attach::random_name("tap")?;
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
        let link = ns.run(|| make_tap(&spec, ifname, mtu, mac, &k.bridge))??;
        attach::finish_single(inv, &ns, &link, false, Addressing::Ipam { required: false })
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let _: Keys = inv.conf.plugin_keys()?;
        attach::del_single(inv)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        attach::check_single(inv, Some(LinkKind::Tun)).map(drop)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        attach::gc_ipam(inv)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        attach::status_ipam(inv)
    }
}

#[cfg(test)]
#[path = "tap_tests.rs"]
mod tests;
