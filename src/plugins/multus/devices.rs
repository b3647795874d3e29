//! The devices of attachments to device-plugin pools (NADs with
//! `k8s.v1.cni.cncf.io/resourceName`): the ones the kubelet allocated to the
//! pod, as Multus takes them, never a device the pod's annotation names.
//!
//! Multus asks the kubelet's pod-resources socket (gRPC); this reads the
//! kubelet's device-manager checkpoint, the same allocation as a JSON file only
//! root can write. The Nth attachment to a pool gets the pool's Nth device.
//! Failing that, a device-info file of the NPWG Device Information spec that
//! already exists for the pod and network names the device.

use super::config::Conf;
use super::delegates::Delegate;
use super::status;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the kubelet keeps its device allocations.
pub const KUBELET_CHECKPOINT: &str = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint";
/// Device plugins' device-info files (`<resource>-<deviceID>-device.json`).
const DP_DEVICE_INFO_DIR: &str = "/var/run/k8s.cni.cncf.io/devinfo/dp";

/// Resource name → device IDs the kubelet allocated to the pod `pod_uid`
/// (every container's, in checkpoint order). A missing or unreadable
/// checkpoint allocates nothing.
pub fn kubelet_allocation(checkpoint: &Path, pod_uid: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if pod_uid.is_empty() {
        return out;
    }
    let Ok(bytes) = crate::files::read_state_limited(checkpoint, crate::files::MAX_FILE) else {
        return out;
    };
    let Ok(doc) = crate::cni::json::parse(&bytes) else {
        return out;
    };
    let entries = doc
        .field("Data")
        .and_then(|d| d.field("PodDeviceEntries"))
        .map(|e| e.to_value());
    for entry in entries
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or_default();
        if text("PodUID") != pod_uid || text("ResourceName").is_empty() {
            continue;
        }
        let ids = out.entry(text("ResourceName").to_string()).or_default();
        match entry.get("DeviceIDs") {
            // Kubelets before 1.20: a list.
            Some(Value::Array(list)) => ids.extend(list.iter().filter_map(id)),
            // Since: NUMA node → list.
            Some(Value::Object(by_node)) => {
                for list in by_node.values().filter_map(Value::as_array) {
                    ids.extend(list.iter().filter_map(id));
                }
            }
            _ => {}
        }
    }
    out
}

fn id(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(String::from)
}

/// A device plugin's device-info file for `device` of `resource`.
fn dp_device_info_path(resource: &str, device: &str) -> String {
    format!(
        "{DP_DEVICE_INFO_DIR}/{}-{}-device.json",
        resource.replace('/', "-"),
        device.replace('/', "-")
    )
}

/// Gives each pool attachment its device; `ifnames` are the attachments'
/// interface names, in order.
pub fn assign(
    s: &Conf,
    pod_uid: &str,
    container_id: &str,
    delegates: &mut [Delegate],
    ifnames: &[String],
) {
    if delegates.iter().all(|d| d.resource_name.is_empty()) {
        return;
    }
    let allocation = kubelet_allocation(&s.kubelet_checkpoint, pod_uid);
    // How many devices of each pool the attachments before took.
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for (d, ifname) in delegates.iter_mut().zip(ifnames) {
        if d.resource_name.is_empty() {
            continue;
        }
        let cni_info = d.device_info_path(container_id, ifname);
        let next = taken.entry(d.resource_name.clone()).or_default();
        let allocated = allocation
            .get(&d.resource_name)
            .and_then(|ids| ids.get(*next))
            .cloned();
        if let Some(device) = allocated {
            *next += 1;
            copy_dp_device_info(&d.resource_name, &device, &cni_info);
            s.log.debug(&format!(
                "{}: device {device} of resource {} allocated by the kubelet",
                d.name, d.resource_name
            ));
            d.device_id = device;
            continue;
        }
        let pci = status::read_device_info(&cni_info)
            .and_then(|info| info.pci)
            .map(|pci| pci.pci_address)
            .unwrap_or_default();
        if pci.is_empty() {
            s.log.verbose(&format!(
                "{}: resource {} has no device allocated to the pod in {} and no \
                 device-info file {cni_info}",
                d.name,
                d.resource_name,
                s.kubelet_checkpoint.display()
            ));
        } else {
            s.log.debug(&format!(
                "{}: device {pci} of resource {} from {cni_info}",
                d.name, d.resource_name
            ));
            d.device_id = pci;
        }
    }
}

/// As Multus: the device plugin's device-info file, when there is one, is
/// copied to the attachment's (which the delegate reads and DEL removes).
fn copy_dp_device_info(resource: &str, device: &str, cni_info: &str) {
    let Ok(bytes) = crate::files::read_state_limited(
        dp_device_info_path(resource, device),
        crate::files::MAX_FILE,
    ) else {
        return;
    };
    let _ = crate::files::write_private_atomic(Path::new(cni_info), &bytes);
}

#[cfg(test)]
#[path = "devices_tests.rs"]
mod tests;
