//! The plugin table: the one list of plugins, each entry all that others
//! know of one (`entry.rs`). It feeds argv[0] dispatch, `--help`, `--list`
//! (and so `symlinks.sh`), `install`, the doctor and its repair, fuzzing and
//! the tests.

pub mod bandwidth;
pub mod bridge;
pub(crate) mod dhcp;
mod dummy;
pub mod entry;
pub(crate) mod firewall;
pub mod flannel;
pub mod footprint;
mod host_device;
mod host_local;
pub mod installed;
mod ipvlan;
mod loopback;
mod macvlan;
mod masquerade;
mod mptcp;
pub mod multus;
pub(crate) mod portmap;
mod ptp;
mod sbr;
mod static_ipam;
mod tap;
pub mod tuning;
mod vlan;
mod vrf;

use crate::cni::{ArgsPolicy, PluginInfo};
pub use entry::{Entry, Files, Repair, STATELESS, State};
use entry::{decodes, decodes_nothing};

/// CNI_ARGS keys of plugins that read them (the reference's Args structs).
const ARGS_IP: &[&str] = &["IP"];
const ARGS_STATIC: &[&str] = &["IP", "GATEWAY"];
const ARGS_MAC: &[&str] = &["MAC"];
/// Multus's `K8sArgs`.
const ARGS_MULTUS: &[&str] = &[
    "IP",
    "K8S_POD_NAME",
    "K8S_POD_NAMESPACE",
    "K8S_POD_INFRA_CONTAINER_ID",
    "K8S_POD_UID",
];

pub static PLUGINS: &[Entry] = &[
    Entry {
        info: PluginInfo {
            name: "bridge",
            summary: "veth pairs attached to a Linux bridge",
            cni_args: ArgsPolicy::Keys(ARGS_MAC),
            plugin: &bridge::Bridge,
        },
        decode: decodes::<bridge::Keys>,
        state: State {
            keys: footprint::bridge,
            repair: Repair::Masquerading,
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "ptp",
            summary: "point-to-point veth pairs with host routes",
            cni_args: ArgsPolicy::Ignored,
            plugin: &ptp::Ptp,
        },
        decode: decodes::<ptp::Keys>,
        state: State {
            keys: footprint::ip_masq,
            repair: Repair::Masquerading,
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "macvlan",
            summary: "macvlan interfaces on a host master",
            cni_args: ArgsPolicy::Keys(ARGS_MAC),
            plugin: &macvlan::Macvlan,
        },
        decode: decodes::<macvlan::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "ipvlan",
            summary: "ipvlan interfaces on a host master",
            cni_args: ArgsPolicy::Ignored,
            plugin: &ipvlan::Ipvlan,
        },
        decode: decodes::<ipvlan::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "vlan",
            summary: "802.1q VLAN interfaces on a host master",
            cni_args: ArgsPolicy::Ignored,
            plugin: &vlan::Vlan,
        },
        decode: decodes::<vlan::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "host-device",
            summary: "moves an existing host device into the container",
            cni_args: ArgsPolicy::Ignored,
            plugin: &host_device::HostDevice,
        },
        decode: decodes::<host_device::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "loopback",
            summary: "brings up the loopback interface",
            cni_args: ArgsPolicy::Ignored,
            plugin: &loopback::Loopback,
        },
        decode: decodes_nothing,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "dummy",
            summary: "dummy interfaces inside the container",
            cni_args: ArgsPolicy::Ignored,
            plugin: &dummy::Dummy,
        },
        decode: decodes_nothing,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "tap",
            summary: "tap devices inside the container",
            cni_args: ArgsPolicy::Keys(ARGS_MAC),
            plugin: &tap::Tap,
        },
        decode: decodes::<tap::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "host-local",
            summary: "IPAM: addresses from local ranges, state on disk",
            cni_args: ArgsPolicy::Keys(ARGS_IP),
            plugin: &host_local::HostLocal,
        },
        decode: decodes::<host_local::Keys>,
        state: State {
            ipam_keys: footprint::host_local,
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "static",
            summary: "IPAM: fixed addresses from the config",
            cni_args: ArgsPolicy::Keys(ARGS_STATIC),
            plugin: &static_ipam::Static,
        },
        decode: decodes::<static_ipam::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "dhcp",
            summary: "IPAM: addresses from a DHCP server",
            // The reference reads CNI_ARGS only for `provide[].fromArg`, leniently:
            // unknown keys are never an error, so the dispatcher does not parse it.
            cni_args: ArgsPolicy::Ignored,
            plugin: &dhcp::Dhcp,
        },
        decode: decodes::<dhcp::Keys>,
        state: State {
            ipam_keys: footprint::dhcp,
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "portmap",
            summary: "meta: host port forwarding",
            cni_args: ArgsPolicy::Ignored,
            plugin: &portmap::Portmap,
        },
        decode: decodes::<portmap::Keys>,
        state: State {
            data_dir: Some(portmap::DEFAULT_DATA_DIR),
            files: Files::Records,
            keys: footprint::portmap,
            repair: Repair::OwnVerbs {
                nat: Some(("CNI-HOSTPORT-DNAT", "DN-")),
            },
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "bandwidth",
            summary: "meta: ingress/egress rate limits",
            cni_args: ArgsPolicy::Ignored,
            plugin: &bandwidth::Bandwidth,
        },
        decode: bandwidth_keys,
        state: State {
            data_dir: Some(bandwidth::DEFAULT_DATA_DIR),
            files: Files::Records,
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "tuning",
            summary: "meta: sysctls and link attributes",
            cni_args: ArgsPolicy::Keys(ARGS_MAC),
            plugin: &tuning::Tuning,
        },
        decode: tuning_keys,
        state: State {
            data_dir: Some(tuning::DEFAULT_DATA_DIR),
            files: Files::Backups,
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "firewall",
            summary: "meta: forward rules for container addresses",
            cni_args: ArgsPolicy::Ignored,
            plugin: &firewall::Firewall,
        },
        decode: decodes::<firewall::Keys>,
        state: State {
            data_dir: Some(firewall::DEFAULT_DATA_DIR),
            files: Files::Records,
            keys: footprint::firewall,
            repair: Repair::OwnVerbs { nat: None },
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "sbr",
            summary: "meta: source-based routing",
            cni_args: ArgsPolicy::Ignored,
            plugin: &sbr::Sbr,
        },
        decode: decodes::<sbr::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "mptcp",
            summary: "meta: MPTCP endpoints and limits in the container",
            cni_args: ArgsPolicy::Ignored,
            plugin: &mptcp::Mptcp,
        },
        decode: decodes_nothing,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "vrf",
            summary: "meta: puts the interface into a VRF",
            cni_args: ArgsPolicy::Ignored,
            plugin: &vrf::Vrf,
        },
        decode: decodes::<vrf::Keys>,
        state: STATELESS,
    },
    Entry {
        info: PluginInfo {
            name: "flannel",
            summary: "delegates to bridge from flannel's subnet.env",
            cni_args: ArgsPolicy::Ignored,
            plugin: &flannel::Flannel,
        },
        decode: decodes::<flannel::Keys>,
        state: State {
            data_dir: Some(flannel::DEFAULT_DATA_DIR),
            files: Files::DelegateConfigs,
            ..STATELESS
        },
    },
    Entry {
        info: PluginInfo {
            name: "multus",
            summary: "meta: several networks per pod (Multus, NAD spec)",
            cni_args: ArgsPolicy::Keys(ARGS_MULTUS),
            plugin: &multus::Multus,
        },
        decode: decodes::<multus::Keys>,
        state: State {
            keys: footprint::multus,
            ..STATELESS
        },
    },
];

/// The plugin called `name` exactly (no suffix matching: `vlan` ≠ `macvlan`).
pub fn lookup(name: &str) -> Option<&'static PluginInfo> {
    entry(name).map(|e| &e.info)
}

/// The table entry of the plugin called `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    PLUGINS.iter().find(|e| e.name() == name)
}

/// Decodes a config into every plugin's own key struct, as each plugin's
/// `plugin_keys` does first: no kernel or disk work. For the `netconf` fuzz target.
#[doc(hidden)]
pub fn decode_every_plugins_keys(conf: &crate::cni::NetConf) -> usize {
    decode_with(PLUGINS, conf)
}

/// [`decode_every_plugins_keys`] over the plugins of `table`.
pub fn decode_with(table: &[Entry], conf: &crate::cni::NetConf) -> usize {
    table.iter().map(|e| (e.decode)(conf)).sum()
}

/// bandwidth's keys: its subnets, its limits and what it records.
fn bandwidth_keys(conf: &crate::cni::NetConf) -> usize {
    decodes::<bandwidth::SubnetKeys>(conf)
        + decodes::<bandwidth::Keys>(conf)
        + decodes::<bandwidth::StateKeys>(conf)
}

/// tuning's keys and its CNI_ARGS.
fn tuning_keys(conf: &crate::cni::NetConf) -> usize {
    decodes::<tuning::Keys>(conf) + usize::from(conf.args_cni_all::<tuning::ArgsKeys>().is_ok())
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
