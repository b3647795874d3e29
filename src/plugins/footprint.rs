//! What a configured plugin leaves on the node besides its result: the
//! directories of its state files, its IPAM's store or daemon, the bridge it
//! attaches to, the masquerading and rules it writes. Its table entry says
//! what it keeps and how it is repaired; the functions here, which the
//! entries name, read its config's keys as the plugin reads them
//! (case-insensitive, defaults applied), for tools that look at a node's CNI
//! state.

use super::entry::{Entry, Files, Repair};
use crate::cni::json::map_field;
use crate::libcni::conf::PluginConf;
use crate::netfilter::masq::Masquerade;
use ipnet::IpNet;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// A configured plugin's footprint; a field a plugin does not have is None.
#[derive(Debug, PartialEq)]
pub struct Footprint {
    /// Where it keeps its files (`dataDir`, else its default).
    pub data_dir: Option<PathBuf>,
    /// What those files are.
    pub files: Files,
    /// How its state is repaired.
    pub repair: Repair,
    /// Its host-local IPAM's store (`ipam.dataDir`).
    pub host_local: Option<PathBuf>,
    /// Its dhcp IPAM's daemon socket (`ipam.daemonSocketPath`).
    pub dhcp_socket: Option<PathBuf>,
    /// bridge's bridge.
    pub bridge: Option<String>,
    /// bridge's and ptp's masquerading (`ipMasq`, `ipMasqBackend`) as their
    /// ADD decodes it: off for a backend it refuses, which wrote none.
    pub masquerade: Masquerade,
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

impl Default for Footprint {
    fn default() -> Footprint {
        Footprint {
            data_dir: None,
            files: Files::None,
            repair: Repair::None,
            host_local: None,
            dhcp_socket: None,
            bridge: None,
            masquerade: Masquerade::Off,
            cni_dir: None,
            firewalld_zone: None,
            iptables: false,
            subnets: Vec::new(),
        }
    }
}

impl Footprint {
    pub fn of(p: &PluginConf) -> Footprint {
        Footprint::in_table(super::PLUGINS, p)
    }

    /// The footprint as `table` describes the plugin (and its IPAM plugin).
    pub fn in_table(table: &[Entry], p: &PluginConf) -> Footprint {
        let raw = &p.raw;
        let find = |name: &str| table.iter().find(|e| e.name() == name);
        let mut f = Footprint::default();
        if let Some(e) = find(&p.plugin_type) {
            let s = &e.state;
            f.data_dir = s
                .data_dir
                .map(|d| PathBuf::from(absolute(raw, "dataDir").unwrap_or(d)));
            f.files = s.files;
            f.repair = s.repair;
            (s.keys)(raw, &mut f);
        }
        if let Some(Value::Object(ipam)) = map_field(raw, "ipam") {
            if let Some(e) = text(ipam, "type").and_then(find) {
                (e.state.ipam_keys)(ipam, &mut f);
            }
            f.subnets = subnets(ipam);
        }
        f
    }
}

/// bridge's bridge and masquerading.
pub(super) fn bridge(raw: &Map<String, Value>, f: &mut Footprint) {
    let b = text(raw, "bridge").filter(|b| !b.is_empty());
    f.bridge = Some(b.unwrap_or(super::bridge::DEFAULT_BRIDGE).to_string());
    ip_masq(raw, f);
}

/// The masquerading of bridge and ptp.
pub(super) fn ip_masq(raw: &Map<String, Value>, f: &mut Footprint) {
    let on = map_field(raw, "ipMasq").and_then(Value::as_bool) == Some(true);
    f.masquerade = Masquerade::from_keys(on, text(raw, "ipMasqBackend")).unwrap_or_default();
}

/// portmap's rules: iptables unless `backend` says otherwise.
pub(super) fn portmap(raw: &Map<String, Value>, f: &mut Footprint) {
    f.iptables = match map_field(raw, "backend") {
        None | Some(Value::Null) => true,
        Some(v) => v.as_str() == Some("iptables"),
    };
}

/// firewall's rules (iptables only when `backend` says so) or its zone.
pub(super) fn firewall(raw: &Map<String, Value>, f: &mut Footprint) {
    let backend = text(raw, "backend");
    f.iptables = backend == Some("iptables");
    if matches!(backend, None | Some("firewalld")) {
        let z = text(raw, "firewalldZone").filter(|z| !z.is_empty());
        let zone = z.unwrap_or(crate::netfilter::firewall::firewalld::DEFAULT_ZONE);
        f.firewalld_zone = Some(zone.to_string());
    }
}

/// multus's `cniDir`.
pub(super) fn multus(raw: &Map<String, Value>, f: &mut Footprint) {
    let dir = absolute(raw, "cniDir").unwrap_or(super::multus::DEFAULT_CNI_DIR);
    f.cni_dir = Some(PathBuf::from(dir));
}

/// As IPAM: host-local's store.
pub(super) fn host_local(ipam: &Map<String, Value>, f: &mut Footprint) {
    let d = absolute(ipam, "dataDir").unwrap_or(crate::ipam::store::DEFAULT_DATA_DIR);
    f.host_local = Some(PathBuf::from(d));
}

/// As IPAM: dhcp's daemon socket.
pub(super) fn dhcp(ipam: &Map<String, Value>, f: &mut Footprint) {
    let s = absolute(ipam, "daemonSocketPath").unwrap_or(crate::dhcp::protocol::DEFAULT_SOCKET);
    f.dhcp_socket = Some(PathBuf::from(s));
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
#[path = "footprint_tests.rs"]
mod tests;
