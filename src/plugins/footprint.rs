//! What a configured plugin leaves on the node besides its result: the
//! directories of its state files, its IPAM's store or daemon, the bridge it
//! attaches to, the masquerading and rules it writes. Read from its config's
//! keys as the plugin reads them (case-insensitive, defaults applied), for
//! tools that look at a node's CNI state.

use crate::cni::json::map_field;
use crate::runtime::conf::PluginConf;
use ipnet::IpNet;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// A configured plugin's footprint; a field a plugin does not have is None.
#[derive(Debug, Default, PartialEq)]
pub struct Footprint {
    /// Where it keeps its files (`dataDir`, else its default).
    pub data_dir: Option<PathBuf>,
    /// Whether those files are per-attachment records
    /// (`<containerID>@<ifname>[@<network hash>].json`).
    pub records: bool,
    /// Its host-local IPAM's store (`ipam.dataDir`).
    pub host_local: Option<PathBuf>,
    /// Its dhcp IPAM's daemon socket (`ipam.daemonSocketPath`).
    pub dhcp_socket: Option<PathBuf>,
    /// bridge's bridge.
    pub bridge: Option<String>,
    /// bridge's and ptp's masquerading: `ipMasq`, `ipMasqBackend`.
    pub ip_masq: Option<(bool, Option<String>)>,
    /// multus's `cniDir` (its delegates' cache and per-pod files).
    pub cni_dir: Option<PathBuf>,
    /// The firewalld zone firewall puts sources in (backend firewalld or unset).
    pub firewalld_zone: Option<String>,
    /// Whether its rules are iptables' (`backend` "iptables", or portmap's
    /// unset).
    pub iptables: bool,
    /// The subnets its IPAM allocates from (`ipam.subnet`, `ipam.ranges`).
    pub subnets: Vec<IpNet>,
}

impl Footprint {
    pub fn of(p: &PluginConf) -> Footprint {
        let raw = &p.raw;
        let ipam = match map_field(raw, "ipam") {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        };
        let ipam_text = |k| ipam.and_then(|m| text(m, k));
        let ipam_type = ipam_text("type");
        let dir = |k, default: &str| Some(PathBuf::from(absolute(raw, k).unwrap_or(default)));
        let data_dir = match p.plugin_type.as_str() {
            "firewall" => dir("dataDir", super::firewall::DEFAULT_DATA_DIR),
            "portmap" => dir("dataDir", super::portmap::DEFAULT_DATA_DIR),
            "bandwidth" => dir("dataDir", super::bandwidth::DEFAULT_DATA_DIR),
            "tuning" => dir("dataDir", super::tuning::DEFAULT_DATA_DIR),
            "flannel" => dir("dataDir", super::flannel::DEFAULT_DATA_DIR),
            _ => None,
        };
        let backend = text(raw, "backend");
        Footprint {
            records: matches!(p.plugin_type.as_str(), "firewall" | "portmap" | "bandwidth"),
            data_dir,
            host_local: (ipam_type == Some("host-local")).then(|| {
                let d = ipam.and_then(|m| absolute(m, "dataDir"));
                PathBuf::from(d.unwrap_or(crate::ipam::store::DEFAULT_DATA_DIR))
            }),
            dhcp_socket: (ipam_type == Some("dhcp")).then(|| {
                let s = ipam.and_then(|m| absolute(m, "daemonSocketPath"));
                PathBuf::from(s.unwrap_or(crate::dhcp::protocol::DEFAULT_SOCKET))
            }),
            bridge: (p.plugin_type == "bridge").then(|| {
                let b = text(raw, "bridge").filter(|b| !b.is_empty());
                b.unwrap_or(super::bridge::DEFAULT_BRIDGE).to_string()
            }),
            ip_masq: matches!(p.plugin_type.as_str(), "bridge" | "ptp").then(|| {
                let on = map_field(raw, "ipMasq").and_then(Value::as_bool);
                (
                    on == Some(true),
                    text(raw, "ipMasqBackend").map(str::to_string),
                )
            }),
            cni_dir: (p.plugin_type == "multus")
                .then(|| dir("cniDir", super::multus::DEFAULT_CNI_DIR))
                .flatten(),
            firewalld_zone: (p.plugin_type == "firewall"
                && matches!(backend, None | Some("firewalld")))
            .then(|| {
                let z = text(raw, "firewalldZone").filter(|z| !z.is_empty());
                z.unwrap_or(crate::netfilter::firewall::firewalld::DEFAULT_ZONE)
                    .to_string()
            }),
            iptables: matches!(p.plugin_type.as_str(), "portmap" | "firewall")
                && match map_field(raw, "backend") {
                    None | Some(Value::Null) => p.plugin_type == "portmap",
                    Some(v) => v.as_str() == Some("iptables"),
                },
            subnets: ipam.map(subnets).unwrap_or_default(),
        }
    }
}

/// A string key's value.
fn text<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map_field(m, key).and_then(Value::as_str)
}

/// A path key's value when it is absolute (the plugin refuses others).
fn absolute<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    text(m, key).filter(|d| d.starts_with('/'))
}

/// `ipam.subnet` and every `ipam.ranges[][].subnet`.
fn subnets(ipam: &Map<String, Value>) -> Vec<IpNet> {
    let ranges = map_field(ipam, "ranges").and_then(Value::as_array);
    let sets = ranges.into_iter().flatten().filter_map(Value::as_array);
    let in_ranges = sets.flatten().filter_map(Value::as_object);
    std::iter::once(ipam)
        .chain(in_ranges)
        .filter_map(|m| text(m, "subnet")?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(conf: Value) -> Footprint {
        let raw = conf.as_object().cloned().unwrap_or_default();
        let plugin_type = text(&raw, "type").unwrap_or_default().to_string();
        Footprint::of(&PluginConf { plugin_type, raw })
    }

    #[test]
    fn footprints_of_configured_plugins() {
        let b = of(serde_json::json!({"type": "bridge", "IPMASQ": true,
            "ipam": {"type": "host-local", "subnet": "10.1.0.0/24",
                "ranges": [[{"subnet": "10.2.0.0/24"}], [{"subnet": "fd00::/64"}, {"x": 1}]]}}));
        assert_eq!(b.bridge.as_deref(), Some("cni0"));
        assert_eq!(b.ip_masq, Some((true, None)));
        assert_eq!(b.host_local, Some(PathBuf::from("/var/lib/cni/networks")));
        let nets: Vec<String> = b.subnets.iter().map(ToString::to_string).collect();
        assert_eq!(nets, ["10.1.0.0/24", "10.2.0.0/24", "fd00::/64"]);
        assert!(!b.iptables && b.data_dir.is_none());
        let p = of(serde_json::json!({"type": "portmap", "dataDir": "relative"}));
        assert!(p.iptables && p.records);
        assert_eq!(p.data_dir, Some(PathBuf::from("/run/cni/portmap")));
        let f = of(serde_json::json!({"type": "firewall", "backend": "iptables"}));
        assert!(f.iptables && f.firewalld_zone.is_none());
        let f = of(serde_json::json!({"type": "firewall", "firewalldZone": "cni"}));
        assert_eq!(f.firewalld_zone.as_deref(), Some("cni"));
        assert!(!f.iptables);
        let d = of(serde_json::json!({"type": "macvlan", "ipam": {"type": "dhcp"}}));
        assert_eq!(d.dhcp_socket, Some(PathBuf::from("/run/cni/dhcp.sock")));
        let m = of(serde_json::json!({"type": "multus", "cniDir": "/x/multus"}));
        assert_eq!(m.cni_dir, Some(PathBuf::from("/x/multus")));
    }
}
