//! The plugin table: the one list of plugin names. It feeds argv[0] dispatch,
//! `--help`, `--list` (and so `symlinks.sh`) and the tests.

pub(crate) mod attachments;
pub mod bandwidth;
pub mod bridge;
pub(crate) mod dhcp;
mod dummy;
pub(crate) mod firewall;
pub mod flannel;
pub mod footprint;
mod host_device;
mod host_local;
pub mod installed;
mod ipvlan;
mod loopback;
mod macvlan;
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

pub static PLUGINS: &[PluginInfo] = &[
    PluginInfo {
        name: "bridge",
        summary: "veth pairs attached to a Linux bridge",
        cni_args: ArgsPolicy::Keys(ARGS_MAC),
        plugin: &bridge::Bridge,
    },
    PluginInfo {
        name: "ptp",
        summary: "point-to-point veth pairs with host routes",
        cni_args: ArgsPolicy::Ignored,
        plugin: &ptp::Ptp,
    },
    PluginInfo {
        name: "macvlan",
        summary: "macvlan interfaces on a host master",
        cni_args: ArgsPolicy::Keys(ARGS_MAC),
        plugin: &macvlan::Macvlan,
    },
    PluginInfo {
        name: "ipvlan",
        summary: "ipvlan interfaces on a host master",
        cni_args: ArgsPolicy::Ignored,
        plugin: &ipvlan::Ipvlan,
    },
    PluginInfo {
        name: "vlan",
        summary: "802.1q VLAN interfaces on a host master",
        cni_args: ArgsPolicy::Ignored,
        plugin: &vlan::Vlan,
    },
    PluginInfo {
        name: "host-device",
        summary: "moves an existing host device into the container",
        cni_args: ArgsPolicy::Ignored,
        plugin: &host_device::HostDevice,
    },
    PluginInfo {
        name: "loopback",
        summary: "brings up the loopback interface",
        cni_args: ArgsPolicy::Ignored,
        plugin: &loopback::Loopback,
    },
    PluginInfo {
        name: "dummy",
        summary: "dummy interfaces inside the container",
        cni_args: ArgsPolicy::Ignored,
        plugin: &dummy::Dummy,
    },
    PluginInfo {
        name: "tap",
        summary: "tap devices inside the container",
        cni_args: ArgsPolicy::Keys(ARGS_MAC),
        plugin: &tap::Tap,
    },
    PluginInfo {
        name: "host-local",
        summary: "IPAM: addresses from local ranges, state on disk",
        cni_args: ArgsPolicy::Keys(ARGS_IP),
        plugin: &host_local::HostLocal,
    },
    PluginInfo {
        name: "static",
        summary: "IPAM: fixed addresses from the config",
        cni_args: ArgsPolicy::Keys(ARGS_STATIC),
        plugin: &static_ipam::Static,
    },
    PluginInfo {
        name: "dhcp",
        summary: "IPAM: addresses from a DHCP server",
        // The reference reads CNI_ARGS only for `provide[].fromArg`, leniently:
        // unknown keys are never an error, so the dispatcher does not parse it.
        cni_args: ArgsPolicy::Ignored,
        plugin: &dhcp::Dhcp,
    },
    PluginInfo {
        name: "portmap",
        summary: "meta: host port forwarding",
        cni_args: ArgsPolicy::Ignored,
        plugin: &portmap::Portmap,
    },
    PluginInfo {
        name: "bandwidth",
        summary: "meta: ingress/egress rate limits",
        cni_args: ArgsPolicy::Ignored,
        plugin: &bandwidth::Bandwidth,
    },
    PluginInfo {
        name: "tuning",
        summary: "meta: sysctls and link attributes",
        cni_args: ArgsPolicy::Keys(ARGS_MAC),
        plugin: &tuning::Tuning,
    },
    PluginInfo {
        name: "firewall",
        summary: "meta: forward rules for container addresses",
        cni_args: ArgsPolicy::Ignored,
        plugin: &firewall::Firewall,
    },
    PluginInfo {
        name: "sbr",
        summary: "meta: source-based routing",
        cni_args: ArgsPolicy::Ignored,
        plugin: &sbr::Sbr,
    },
    PluginInfo {
        name: "mptcp",
        summary: "meta: MPTCP endpoints and limits in the container",
        cni_args: ArgsPolicy::Ignored,
        plugin: &mptcp::Mptcp,
    },
    PluginInfo {
        name: "vrf",
        summary: "meta: puts the interface into a VRF",
        cni_args: ArgsPolicy::Ignored,
        plugin: &vrf::Vrf,
    },
    PluginInfo {
        name: "flannel",
        summary: "delegates to bridge from flannel's subnet.env",
        cni_args: ArgsPolicy::Ignored,
        plugin: &flannel::Flannel,
    },
    PluginInfo {
        name: "multus",
        summary: "meta: several networks per pod (Multus, NAD spec)",
        cni_args: ArgsPolicy::Keys(ARGS_MULTUS),
        plugin: &multus::Multus,
    },
];

/// The plugin called `name` exactly (no suffix matching: `vlan` ≠ `macvlan`).
pub fn lookup(name: &str) -> Option<&'static PluginInfo> {
    PLUGINS.iter().find(|p| p.name == name)
}

/// DEL's masquerade cleanup for bridge and ptp: found by chain name, so it
/// works when the netns (and its addresses) are gone.
fn del_ip_masq(
    inv: &crate::cni::Invocation,
    enabled: bool,
    backend: Option<String>,
) -> crate::cni::CniResult<()> {
    // The addresses ADD masqueraded, where prevResult has them (an unreadable
    // prevResult is no reason to leave the rules: they are found by name).
    let ips: Vec<ipnet::IpNet> = inv
        .conf
        .prev_result()
        .ok()
        .flatten()
        .map(|prev| prev.ips.iter().map(|ip| ip.address).collect())
        .unwrap_or_default();
    crate::netfilter::masq::IpMasq::for_del(enabled, backend).del(
        inv.conf.name(),
        &inv.env.container_id,
        &inv.env.ifname,
        &ips,
    )?;
    Ok(())
}

/// Decodes a config into every plugin's own key struct, as each plugin's
/// `plugin_keys` does first: no kernel or disk work. For the `netconf` fuzz target.
#[doc(hidden)]
pub fn decode_every_plugins_keys(conf: &crate::cni::NetConf) -> usize {
    let ok = |r: crate::cni::CniResult<()>| usize::from(r.is_ok());
    ok(conf.plugin_keys::<bandwidth::SubnetKeys>().map(drop))
        + ok(conf.plugin_keys::<bandwidth::Keys>().map(drop))
        + ok(conf.plugin_keys::<bandwidth::StateKeys>().map(drop))
        + ok(conf.plugin_keys::<bridge::Keys>().map(drop))
        + ok(conf.plugin_keys::<dhcp::Keys>().map(drop))
        + ok(conf.plugin_keys::<firewall::Keys>().map(drop))
        + ok(conf.plugin_keys::<flannel::Keys>().map(drop))
        + ok(conf.plugin_keys::<host_device::Keys>().map(drop))
        + ok(conf.plugin_keys::<host_local::Keys>().map(drop))
        + ok(conf.plugin_keys::<ipvlan::Keys>().map(drop))
        + ok(conf.plugin_keys::<macvlan::Keys>().map(drop))
        + ok(conf.plugin_keys::<multus::Keys>().map(drop))
        + ok(conf.plugin_keys::<portmap::Keys>().map(drop))
        + ok(conf.plugin_keys::<ptp::Keys>().map(drop))
        + ok(conf.plugin_keys::<sbr::Keys>().map(drop))
        + ok(conf.plugin_keys::<static_ipam::Keys>().map(drop))
        + ok(conf.plugin_keys::<tap::Keys>().map(drop))
        + ok(conf.plugin_keys::<vlan::Keys>().map(drop))
        + ok(conf.plugin_keys::<vrf::Keys>().map(drop))
        + ok(conf.plugin_keys::<tuning::Keys>().map(drop))
        + ok(conf.args_cni_all::<tuning::ArgsKeys>().map(drop))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_exact() {
        for (i, p) in PLUGINS.iter().enumerate() {
            assert!(PLUGINS[i + 1..].iter().all(|q| q.name != p.name));
            assert!(std::ptr::eq(lookup(p.name).expect("listed"), p));
        }
        assert!(lookup("vla").is_none());
        assert!(lookup("cni-multi").is_none());
    }
}
