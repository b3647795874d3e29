//! The network-status of a pod (the spec's §5, the annotation Multus writes):
//! one entry per pod interface of each attachment, built from its ADD result
//! as the NAD client's `CreateNetworkStatuses` builds it, printed as Multus
//! prints the annotation (each entry Go's 4-space `MarshalIndent`, joined with
//! `,` inside `[…]`) and kept in `<cniDir>/<containerID>.status`.

use crate::cni::result::{NetResult, to_pretty_json};
use crate::cni::{CniResult, Code, Error};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One entry, keys in the order and with the omissions of Go's struct.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NetworkStatus {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub interface: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mac: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub mtu: u32,
    #[serde(skip_serializing_if = "is_false")]
    pub default: bool,
    /// A struct in Go: `{}` when empty, never omitted.
    pub dns: StatusDns,
    #[serde(rename = "device-info", skip_serializing_if = "Option::is_none")]
    pub device_info: Option<DeviceInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gateway: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatusDns {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// The device-info file an SR-IOV style plugin writes (NAD client's
/// `DeviceInfo`), re-encoded in Go's key order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceInfo {
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci: Option<PciDevice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vdpa: Option<VdpaDevice>,
    #[serde(rename = "vhost-user", skip_serializing_if = "Option::is_none")]
    pub vhost_user: Option<VhostDevice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memif: Option<MemifDevice>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PciDevice {
    #[serde(rename = "pci-address", skip_serializing_if = "String::is_empty")]
    pub pci_address: String,
    #[serde(rename = "vhost-net", skip_serializing_if = "String::is_empty")]
    pub vhost_net: String,
    #[serde(rename = "rdma-device", skip_serializing_if = "String::is_empty")]
    pub rdma_device: String,
    #[serde(rename = "pf-pci-address", skip_serializing_if = "String::is_empty")]
    pub pf_pci_address: String,
    #[serde(
        rename = "representor-device",
        skip_serializing_if = "String::is_empty"
    )]
    pub representor_device: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VdpaDevice {
    #[serde(rename = "parent-device", skip_serializing_if = "String::is_empty")]
    pub parent_device: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub driver: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(rename = "pci-address", skip_serializing_if = "String::is_empty")]
    pub pci_address: String,
    #[serde(rename = "pf-pci-address", skip_serializing_if = "String::is_empty")]
    pub pf_pci_address: String,
    #[serde(
        rename = "representor-device",
        skip_serializing_if = "String::is_empty"
    )]
    pub representor_device: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VhostDevice {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemifDevice {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub role: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

/// A device-info file, when there is a readable one (as Multus, a missing or
/// bad file only means no `device-info`).
pub fn read_device_info(path: &str) -> Option<DeviceInfo> {
    if path.is_empty() {
        return None;
    }
    let bytes = crate::files::read_state_limited(path, crate::files::MAX_FILE).ok()?;
    crate::cni::json::from_slice(&bytes).ok()
}

/// The entries of one attachment. No result at all gives the spec's minimal
/// entry (§5.1.1); a result without interfaces one entry with its addresses.
pub fn statuses(
    result: Option<&NetResult>,
    name: &str,
    is_default: bool,
    ifname: &str,
    device_info: Option<DeviceInfo>,
) -> Vec<NetworkStatus> {
    let Some(r) = result else {
        return vec![NetworkStatus {
            name: name.to_string(),
            interface: ifname.to_string(),
            default: is_default,
            device_info,
            ..NetworkStatus::default()
        }];
    };
    let dns = StatusDns {
        nameservers: r.dns.nameservers.clone(),
        domain: r.dns.domain.clone(),
        search: r.dns.search.clone(),
        options: r.dns.options.clone(),
    };
    // Go prints a route without a gateway as "<nil>"; such an entry names no
    // gateway, so it is left out.
    let gateway: Vec<String> = r
        .routes
        .iter()
        .filter(|route| route.dst.addr().is_unspecified())
        .filter_map(|route| route.gw.map(|g| g.to_string()))
        .collect();
    let ip = |c: &crate::cni::result::IpConfig| c.address.addr().to_string();
    if r.interfaces.len() <= 1 {
        // One interface (or none): every address is the attachment's.
        let iface = r.interfaces.iter().rfind(|i| !i.sandbox.is_empty());
        return vec![NetworkStatus {
            name: name.to_string(),
            interface: iface.map(|i| i.name.clone()).unwrap_or_default(),
            ips: r.ips.iter().map(ip).collect(),
            mac: iface.map(|i| i.mac.clone()).unwrap_or_default(),
            mtu: iface.map_or(0, |i| i.mtu),
            default: is_default,
            dns,
            device_info,
            gateway,
        }];
    }
    // Several interfaces: one entry per pod (sandbox) interface; the default
    // one is the first interface an address with a gateway names, else the
    // first pod interface.
    let gateway_index = is_default
        .then(|| {
            r.ips
                .iter()
                .find(|c| c.gateway.is_some() && c.interface.is_some())
                .and_then(|c| c.interface)
        })
        .flatten();
    let mut out: Vec<NetworkStatus> = Vec::new();
    let mut index_map: Vec<(usize, usize)> = Vec::new();
    for (i, iface) in r.interfaces.iter().enumerate() {
        if iface.sandbox.is_empty() {
            continue;
        }
        let default = is_default
            && match gateway_index {
                Some(g) => g == i,
                None => out.is_empty(),
            };
        index_map.push((i, out.len()));
        out.push(NetworkStatus {
            name: name.to_string(),
            interface: iface.name.clone(),
            ips: Vec::new(),
            mac: iface.mac.clone(),
            mtu: iface.mtu,
            default,
            dns: dns.clone(),
            device_info: device_info.clone(),
            gateway: gateway.clone(),
        });
    }
    for c in &r.ips {
        let target = match c.interface {
            Some(i) => index_map
                .iter()
                .find(|(from, _)| *from == i)
                .map(|(_, to)| *to),
            // Addresses of no interface go to the last entry, as the NAD client's.
            None => out.len().checked_sub(1),
        };
        if let Some(t) = target {
            out[t].ips.push(ip(c));
        }
    }
    out
}

/// The annotation text: `[` entries `,`-joined `]`.
pub fn render(statuses: &[NetworkStatus]) -> String {
    let parts: Vec<String> = statuses.iter().map(to_pretty_json).collect();
    format!("[{}]", parts.join(","))
}

/// `<cniDir>/<containerID>.status` (the container ID was validated; a long
/// one as its token, `files::state_name`).
pub fn status_path(cni_dir: &Path, container_id: &str) -> PathBuf {
    cni_dir.join(crate::files::state_name("", container_id, ".status"))
}

pub fn write(cni_dir: &Path, container_id: &str, statuses: &[NetworkStatus]) -> CniResult<()> {
    let path = status_path(cni_dir, container_id);
    crate::files::write_private_atomic(&path, render(statuses).as_bytes()).map_err(|e| {
        Error::caused_by(
            Code::Io,
            format!("error writing the network status {}", path.display()),
            e,
        )
    })
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
