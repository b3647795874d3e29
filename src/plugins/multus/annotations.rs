//! The pod's selections: where its annotations come from without an API
//! server (the runtime's pod-annotations capability, else a pod file), and the
//! `k8s.v1.cni.cncf.io/networks` annotation in both of the spec's formats,
//! validated as the spec and Multus do (a bad entry fails, naming it).

use super::config::{BandwidthEntry, Conf, K8sArgs, PortMapEntry};
use crate::cni::{CniResult, Code, Error};
use crate::quote::quoted;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::net::IpAddr;

pub const NETWORKS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";
pub const DEFAULT_NETWORK_ANNOTATION: &str = "v1.multus-cni.io/default-network";
/// Static (file) pods carry this; their UID differs from the mirror pod's.
const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";

/// The pod as far as multus needs it.
#[derive(Debug, Clone, Default)]
pub struct Pod {
    pub namespace: String,
    pub annotations: BTreeMap<String, String>,
}

/// What the DEL of a pod tolerates that its ADD does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Add,
    Del,
}

/// The namespace selections default to: the pod's, `default` when the
/// runtime names none (Podman, Nomad).
pub fn pod_namespace(k8s: &K8sArgs) -> String {
    if k8s.namespace.is_empty() {
        "default".to_string()
    } else {
        k8s.namespace.clone()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct PodFile {
    metadata: PodMeta,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct PodMeta {
    uid: String,
    annotations: BTreeMap<String, String>,
}

/// The pod's annotations: the runtime's `io.kubernetes.cri.pod-annotations`
/// capability first, else `<podDir>/<namespace>/<name>.json` (a pod object as
/// `kubectl get pod -o json` prints it). None: no source, so no selections.
pub fn load_pod(settings: &Conf, k8s: &K8sArgs, verb: Verb) -> CniResult<Option<Pod>> {
    if let Some(annotations) = &settings.runtime_config.pod_annotations {
        return Ok(Some(Pod {
            namespace: pod_namespace(k8s),
            annotations: annotations.clone(),
        }));
    }
    if k8s.namespace.is_empty() || k8s.name.is_empty() {
        return Ok(None);
    }
    // Both become path components: refuse anything Kubernetes would not name.
    if !is_dns_label(&k8s.namespace) {
        return Err(Error::invalid_env(format!(
            "invalid K8S_POD_NAMESPACE {}: not a DNS-1123 label",
            quoted(&k8s.namespace)
        )));
    }
    if !is_dns_subdomain(&k8s.name) {
        return Err(Error::invalid_env(format!(
            "invalid K8S_POD_NAME {}: not a DNS-1123 subdomain",
            quoted(&k8s.name)
        )));
    }
    let path = settings
        .pod_dir
        .join(&k8s.namespace)
        .join(format!("{}.json", k8s.name));
    let bytes = match crate::files::read_limited(&path, crate::files::MAX_FILE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::caused_by(
                Code::Io,
                format!("failed to read pod file {}", path.display()),
                e,
            ));
        }
    };
    let pod: PodFile = crate::cni::json::from_slice(&bytes).map_err(|e| {
        Error::caused_by(
            Code::Decode,
            format!("failed to parse pod file {}", path.display()),
            e,
        )
    })?;
    let meta = pod.metadata;
    let is_static = meta
        .annotations
        .get(CONFIG_SOURCE_ANNOTATION)
        .is_some_and(|s| s != "api");
    if !k8s.uid.is_empty() && !meta.uid.is_empty() && meta.uid != k8s.uid && !is_static {
        if verb == Verb::Del {
            // A newer pod of the same name: DEL works from the cache alone.
            return Ok(None);
        }
        return Err(Error::internal(format!(
            "expected pod UID {} but got {} from {}",
            quoted(&k8s.uid),
            quoted(&meta.uid),
            path.display()
        )));
    }
    Ok(Some(Pod {
        namespace: k8s.namespace.clone(),
        annotations: meta.annotations,
    }))
}

/// One network the pod selects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub name: String,
    pub namespace: String,
    pub ips: Option<Vec<String>>,
    pub mac: String,
    pub infiniband_guid: String,
    pub interface: String,
    pub port_mappings: Option<Vec<PortMapEntry>>,
    pub bandwidth: Option<BandwidthEntry>,
    pub device_id: String,
    pub cni_args: Option<Map<String, Value>>,
    pub default_route: Option<Vec<IpAddr>>,
}

impl Selection {
    /// `namespace/name`, as the status and error messages name it.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// An element of the JSON list format, as Multus decodes it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawSelection {
    name: String,
    namespace: String,
    ips: Option<Vec<String>>,
    mac: String,
    #[serde(rename = "infiniband-guid")]
    infiniband_guid: String,
    interface: String,
    /// Before Multus 3.2.
    interface_request: String,
    port_mappings: Option<Vec<PortMapEntry>>,
    bandwidth: Option<BandwidthEntry>,
    device_id: String,
    #[serde(rename = "cni-args")]
    cni_args: Option<Map<String, Value>>,
    #[serde(rename = "default-route")]
    default_route: Option<Vec<String>>,
}

fn bad(entry: &str, problem: impl std::fmt::Display) -> Error {
    Error::invalid_config(format!("invalid network selection {entry}: {problem}"))
}

/// Parses a selection annotation: the JSON list format when the text has any
/// of `[{"` (Multus's test), else the comma-delimited `ns/name@ifname` list.
/// Selections without a namespace get `default_namespace`.
pub fn parse_networks(text: &str, default_namespace: &str) -> CniResult<Vec<Selection>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = if text.contains(['[', '{', '"']) {
        parse_json_list(text)?
    } else {
        text.split(',')
            .map(|item| parse_comma_item(item.trim()))
            .collect::<CniResult<Vec<_>>>()?
    };
    for (i, s) in out.iter_mut().enumerate() {
        if s.namespace.is_empty() {
            s.namespace = default_namespace.to_string();
        }
        validate(i, s)?;
    }
    Ok(out)
}

fn parse_json_list(text: &str) -> CniResult<Vec<Selection>> {
    let raw: Vec<Option<RawSelection>> = crate::cni::json::from_str(text).map_err(|e| {
        Error::caused_by(
            Code::InvalidConfig,
            "failed to parse pod Network Attachment Selection Annotation JSON format",
            e,
        )
    })?;
    raw.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let r = r.ok_or_else(|| bad(&format!("[{i}]"), "null"))?;
            let entry = format!("[{i}] ({})", quoted(&r.name));
            let default_route = r
                .default_route
                .map(|gws| {
                    gws.iter()
                        .map(|g| {
                            g.parse::<IpAddr>().map_err(|_| {
                                bad(
                                    &entry,
                                    format!("invalid default-route address {g}", g = quoted(&g)),
                                )
                            })
                        })
                        .collect::<CniResult<Vec<_>>>()
                })
                .transpose()?;
            if !r.name.is_empty() && !is_dns_subdomain(&r.name) {
                return Err(bad(
                    &entry,
                    "the name must be a DNS-1123 subdomain (lower case alphanumerics, '-', '.')",
                ));
            }
            Ok(Selection {
                name: r.name,
                namespace: r.namespace,
                ips: r.ips,
                mac: r.mac,
                infiniband_guid: r.infiniband_guid,
                interface: if r.interface.is_empty() {
                    r.interface_request
                } else {
                    r.interface
                },
                port_mappings: r.port_mappings,
                bandwidth: r.bandwidth,
                device_id: r.device_id,
                cni_args: r.cni_args,
                default_route,
            })
        })
        .collect()
}

/// `[namespace/]name[@ifname]`, each part checked as Multus checks it.
fn parse_comma_item(item: &str) -> CniResult<Selection> {
    let entry = format!("{item}", item = quoted(&item));
    let (namespace, rest) = match item.split('/').collect::<Vec<_>>()[..] {
        [name] => ("", name),
        [ns, name] => (ns.trim(), name),
        _ => return Err(bad(&entry, "invalid network object (failed at '/')")),
    };
    let (name, interface) = match rest.split('@').collect::<Vec<_>>()[..] {
        [name] => (name.trim(), ""),
        [name, ifname] => (name.trim(), ifname.trim()),
        _ => return Err(bad(&entry, "invalid network object (failed at '@')")),
    };
    for part in [namespace, name] {
        if !part.is_empty() && !is_dns_label(part) {
            return Err(bad(
                &entry,
                format!(
                    "{part} is not a DNS-1123 label (lower case alphanumerics or '-', \
                     starting and ending with an alphanumeric)",
                    part = quoted(&part)
                ),
            ));
        }
    }
    Ok(Selection {
        name: name.to_string(),
        namespace: namespace.to_string(),
        interface: interface.to_string(),
        ..Selection::default()
    })
}

/// The spec's value checks: a name, a namespace that is a label, an interface
/// name the kernel takes, a MAC or IPoIB address, IPs with at least one entry.
fn validate(i: usize, s: &Selection) -> CniResult<()> {
    let entry = format!("[{i}] ({})", quoted(&s.full_name()));
    if s.name.is_empty() {
        return Err(bad(&entry, "no network name"));
    }
    if !is_dns_label(&s.namespace) {
        return Err(bad(
            &entry,
            format!("namespace {} is not a DNS-1123 label", quoted(&s.namespace)),
        ));
    }
    if !s.interface.is_empty()
        && let Some(problem) = crate::cni::env::link_name_problem(&s.interface)
    {
        return Err(bad(
            &entry,
            format!("interface name {} {problem}", quoted(&s.interface)),
        ));
    }
    if !s.mac.is_empty() && parse_mac(&s.mac).is_none() {
        return Err(bad(
            &entry,
            format!("failed to parse mac {}", quoted(&s.mac)),
        ));
    }
    if !s.infiniband_guid.is_empty() && parse_mac(&s.infiniband_guid).is_none() {
        return Err(bad(
            &entry,
            format!(
                "failed to validate infiniband GUID {}",
                quoted(&s.infiniband_guid)
            ),
        ));
    }
    if let Some(ips) = &s.ips {
        if ips.is_empty() {
            return Err(bad(&entry, "ips must list at least one address"));
        }
        for ip in ips {
            let valid = if ip.contains('/') {
                ip.parse::<ipnet::IpNet>().is_ok()
            } else {
                ip.parse::<IpAddr>().is_ok()
            };
            if !valid {
                return Err(bad(
                    &entry,
                    format!("failed to parse IP address {ip}", ip = quoted(&ip)),
                ));
            }
        }
    }
    Ok(())
}

/// Namespace isolation: a selection may name another namespace only when it
/// is one of `globalNamespaces`.
pub fn check_isolation(settings: &Conf, pod_namespace: &str, s: &Selection) -> CniResult<()> {
    if settings.namespace_isolation
        && s.namespace != pod_namespace
        && !settings.global_namespaces.contains(&s.namespace)
    {
        return Err(Error::invalid_config(format!(
            "namespace isolation enabled, annotation violates permission, pod is in namespace \
             {pod_namespace} but refers to target namespace {} (network {})",
            s.namespace,
            s.full_name()
        )));
    }
    Ok(())
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 bytes.
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Labels joined by dots, at most 253 bytes (Kubernetes object names).
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 bytes as `xx:xx:…`, `xx-xx-…` or
/// `xxxx.xxxx.xxxx…` (20 bytes: an IP-over-InfiniBand address).
pub fn parse_mac(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let hex = |pair: &[u8]| -> Option<u8> {
        let text = std::str::from_utf8(pair).ok()?;
        u8::from_str_radix(text, 16)
            .ok()
            .filter(|_| pair.iter().all(u8::is_ascii_hexdigit))
    };
    let valid_len = |n: usize| matches!(n, 6 | 8 | 20);
    if b.len() < 14 {
        return None;
    }
    let mut out = Vec::new();
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) || !valid_len((b.len() + 1) / 3) {
            return None;
        }
        for group in b.chunks(3) {
            out.push(hex(&group[..2])?);
            if group.len() == 3 && group[2] != b[2] {
                return None;
            }
        }
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) || !valid_len(2 * (b.len() + 1) / 5) {
            return None;
        }
        for group in b.chunks(5) {
            out.push(hex(&group[..2])?);
            out.push(hex(group.get(2..4)?)?);
            if group.len() == 5 && group[4] != b'.' {
                return None;
            }
        }
    } else {
        return None;
    }
    Some(out)
}

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;
