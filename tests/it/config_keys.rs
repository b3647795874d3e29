//! Issue 19: every key of the reference's (containernetworking/plugins v1.9.1,
//! flannel-io/cni-plugin v1.9.1-flannel1) config structs, per plugin, and where
//! cni-multi shows that it honours it: a test that sets the key and checks its
//! effect, or an entry in docs/differences.md.
//!
//! Keys are written as JSON paths (`ipam.routes[].mtu`); CNI_ARGS pairs as
//! `CNI_ARGS MAC`. Only keys the reference's structs have are listed.

use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy)]
enum Covered {
    /// A test (file, function name) that sets the key and checks its effect.
    Test(&'static str, &'static str),
    /// A phrase of docs/differences.md that explains it.
    Doc(&'static str),
}

use Covered::{Doc, Test};

/// Every plugin whose config the table must cover. `common` is
/// `types.NetConf`, which every plugin embeds.
const PLUGINS: &[&str] = &[
    "common",
    "bridge",
    "ptp",
    "macvlan",
    "ipvlan",
    "vlan",
    "host-device",
    "loopback",
    "dummy",
    "tap",
    "host-local",
    "static",
    "dhcp",
    "portmap",
    "bandwidth",
    "tuning",
    "firewall",
    "sbr",
    "vrf",
    "mptcp",
    "flannel",
    "multus",
];

const BRIDGE: &str = "tests/it/bridge.rs";
const MACVLAN: &str = "tests/it/macvlan.rs";
const VIRT: &str = "tests/it/virtual_links.rs";
const TAP: &str = "tests/it/tap.rs";
const HOST_DEVICE: &str = "tests/it/host_device.rs";
const HOST_LOCAL: &str = "tests/it/host_local.rs";
const STATIC: &str = "tests/it/static_ipam.rs";
const DHCP: &str = "tests/it/dhcp.rs";
const PORTMAP: &str = "tests/it/portmap/";
const BANDWIDTH: &str = "tests/it/bandwidth.rs";
const TUNING: &str = "tests/it/tuning.rs";
const FIREWALL: &str = "tests/it/firewall.rs";
const KEYS_FX: &str = "tests/it/keys_effects.rs";
const MULTUS: &str = "tests/it/multus.rs";

#[rustfmt::skip]
const KEYS: &[(&str, &str, Covered)] = &[
    // types.NetConf (cni v1.3, vendored by v1.9.1), embedded by every plugin.
    ("common", "cniVersion", Test(BRIDGE, "every_version_gets_its_layout_and_l2_only_works")),
    ("common", "name", Test(HOST_LOCAL, "a_thousand_adds_are_distinct_round_robin_and_in_reference_format")),
    ("common", "type", Test("tests/it/cnitool.rs", "testdata_conflists_add_check_del")),
    ("common", "capabilities", Test("tests/it/cnitool.rs", "chaining_gives_each_plugin_the_exact_stdin_and_del_runs_in_reverse")),
    ("common", "ipam.type", Test(BRIDGE, "add_builds_the_host_and_container_sides_and_containers_ping_each_other")),
    ("common", "dns", Test(MACVLAN, "two_macvlan_containers_on_one_master_reach_each_other")),
    ("common", "prevResult", Test("tests/it/chained.rs", "outputs_are_prev_result_with_only_the_reference_changes")),
    ("common", "cni.dev/valid-attachments", Test(HOST_LOCAL, "gc_releases_exactly_the_attachments_not_listed")),
    // plugins/main/bridge NetConf.
    ("bridge", "bridge", Test(BRIDGE, "add_builds_the_host_and_container_sides_and_containers_ping_each_other")),
    ("bridge", "isGateway", Test(BRIDGE, "add_builds_the_host_and_container_sides_and_containers_ping_each_other")),
    ("bridge", "isDefaultGateway", Test(BRIDGE, "dual_stack_gateway_and_default_routes")),
    ("bridge", "forceAddress", Test(BRIDGE, "bridge_options_force_address_promisc_isolation_dad_and_disabled_interface")),
    ("bridge", "ipMasq", Test("tests/it/ipmasq.rs", "bridge_and_ptp_masquerade_with_the_reference_rules_and_del_restores_the_table")),
    ("bridge", "ipMasqBackend", Test(PORTMAP, "nftables_ipmasq_for_bridge")),
    ("bridge", "mtu", Test(BRIDGE, "add_builds_the_host_and_container_sides_and_containers_ping_each_other")),
    ("bridge", "hairpinMode", Test(BRIDGE, "add_builds_the_host_and_container_sides_and_containers_ping_each_other")),
    ("bridge", "promiscMode", Test(BRIDGE, "bridge_options_force_address_promisc_isolation_dad_and_disabled_interface")),
    ("bridge", "vlan", Test(BRIDGE, "vlan_access_and_trunk_ports")),
    ("bridge", "vlanTrunk[].id", Test(BRIDGE, "vlan_access_and_trunk_ports")),
    ("bridge", "vlanTrunk[].minID", Test(BRIDGE, "vlan_access_and_trunk_ports")),
    ("bridge", "vlanTrunk[].maxID", Test(BRIDGE, "vlan_access_and_trunk_ports")),
    ("bridge", "preserveDefaultVlan", Test(BRIDGE, "vlan_access_and_trunk_ports")),
    ("bridge", "vlan with isGateway", Test("tests/it/bridge.rs", "vlan_gateway_is_a_veth_port_of_that_vlan")),
    ("bridge", "macspoofchk", Test("tests/it/macspoofchk.rs", "foreign_source_macs_are_dropped_and_the_ruleset_is_the_references")),
    ("bridge", "enabledad", Test(BRIDGE, "bridge_options_force_address_promisc_isolation_dad_and_disabled_interface")),
    ("bridge", "disableContainerInterface", Test(BRIDGE, "bridge_options_force_address_promisc_isolation_dad_and_disabled_interface")),
    ("bridge", "portIsolation", Test(BRIDGE, "bridge_options_force_address_promisc_isolation_dad_and_disabled_interface")),
    ("bridge", "groupFwdMask", Test(BRIDGE, "group_fwd_mask_is_written_to_the_bridge")),
    ("bridge", "args.cni.mac", Test(KEYS_FX, "bridge_mac_from_args_cni_and_runtime_config_is_eth0s")),
    ("bridge", "runtimeConfig.mac", Test(KEYS_FX, "bridge_mac_from_args_cni_and_runtime_config_is_eth0s")),
    ("bridge", "CNI_ARGS MAC", Test(BRIDGE, "bad_configs_and_failures_leave_nothing_behind")),
    // plugins/main/ptp NetConf.
    ("ptp", "ipMasq", Test("tests/it/ipmasq.rs", "bridge_and_ptp_masquerade_with_the_reference_rules_and_del_restores_the_table")),
    ("ptp", "ipMasqBackend", Test(KEYS_FX, "ptp_ip_masq_backend_nftables_writes_the_nft_masquerade_rule")),
    ("ptp", "mtu", Test("tests/it/ptp.rs", "ptp_routes_both_sides_and_the_container_pings_its_host")),
    // plugins/main/macvlan NetConf (+ MacEnvArgs).
    ("macvlan", "master", Test(MACVLAN, "two_macvlan_containers_on_one_master_reach_each_other")),
    ("macvlan", "mode", Test(MACVLAN, "master_defaults_to_the_default_route_interface_and_bad_configs_fail")),
    ("macvlan", "mtu", Test(MACVLAN, "two_macvlan_containers_on_one_master_reach_each_other")),
    ("macvlan", "mac", Test(MACVLAN, "two_macvlan_containers_on_one_master_reach_each_other")),
    ("macvlan", "linkInContainer", Test(KEYS_FX, "macvlan_link_in_container_uses_the_master_in_the_container")),
    ("macvlan", "bcqueuelen", Test(KEYS_FX, "macvlan_bcqueuelen_is_the_links_broadcast_queue_length")),
    ("macvlan", "runtimeConfig.mac", Test(KEYS_FX, "macvlan_mac_from_cni_args_and_runtime_config_is_eth0s")),
    ("macvlan", "CNI_ARGS MAC", Test(KEYS_FX, "macvlan_mac_from_cni_args_and_runtime_config_is_eth0s")),
    // plugins/main/ipvlan NetConf.
    ("ipvlan", "master", Test(VIRT, "ipvlan_l2_l3_and_l3s")),
    ("ipvlan", "mode", Test(VIRT, "ipvlan_l2_l3_and_l3s")),
    ("ipvlan", "mtu", Test(VIRT, "ipvlan_l2_l3_and_l3s")),
    ("ipvlan", "linkInContainer", Test(KEYS_FX, "ipvlan_link_in_container_uses_the_master_in_the_container")),
    // plugins/main/vlan NetConf.
    ("vlan", "master", Test(VIRT, "vlan_with_id")),
    ("vlan", "vlanId", Test(VIRT, "vlan_with_id")),
    ("vlan", "mtu", Test(VIRT, "vlan_with_id")),
    ("vlan", "linkInContainer", Test(KEYS_FX, "vlan_link_in_container_uses_the_master_in_the_container")),
    // plugins/main/host-device NetConf.
    ("host-device", "device", Test(HOST_DEVICE, "device_moves_in_by_name_and_back_on_del")),
    ("host-device", "hwaddr", Test(HOST_DEVICE, "device_found_by_mac_and_missing_devices_fail")),
    ("host-device", "kernelpath", Doc("**`kernelpath`**: must lie under `/sys/devices/` without `..`")),
    ("host-device", "pciBusID", Test("src/plugins/host_device_tests.rs", "config_keys_pick_the_device_in_the_reference_order")),
    ("host-device", "DPDKMode", Test(HOST_DEVICE, "dpdk_mode_moves_nothing_and_reports_ipam_for_the_named_interface")),
    ("host-device", "runtimeConfig.deviceID", Test("src/plugins/host_device_tests.rs", "device_id_beats_pci_bus_id_and_falls_back_to_auxiliary")),
    // plugins/main/loopback and dummy: types.NetConf only.
    ("loopback", "cniVersion", Test("tests/it/loopback.rs", "add_brings_lo_up_and_reports_its_addresses_at_every_version")),
    ("dummy", "ipam", Test(VIRT, "dummy_with_ipam")),
    // plugins/main/tap NetConf (+ MacEnvArgs).
    ("tap", "multiQueue", Test(TAP, "tap_without_ipam_joins_a_bridge_in_the_container")),
    ("tap", "mtu", Test(TAP, "tap_with_owner_group_mtu_mac_and_ipam")),
    ("tap", "mac", Test(TAP, "tap_with_owner_group_mtu_mac_and_ipam")),
    ("tap", "owner", Test(TAP, "tap_with_owner_group_mtu_mac_and_ipam")),
    ("tap", "group", Test(TAP, "tap_with_owner_group_mtu_mac_and_ipam")),
    ("tap", "selinuxContext", Doc("Without SELinux, ADD fails as the reference's does")),
    ("tap", "bridge", Test(TAP, "tap_without_ipam_joins_a_bridge_in_the_container")),
    ("tap", "args", Doc("ours also takes `args.cni.mac` (the reference's tap has an empty `args`)")),
    ("tap", "runtimeConfig.mac", Test(KEYS_FX, "tap_mac_from_cni_args_and_runtime_config_is_the_taps")),
    ("tap", "CNI_ARGS MAC", Test(KEYS_FX, "tap_mac_from_cni_args_and_runtime_config_is_the_taps")),
    // plugins/ipam/host-local allocator.Net / IPAMConfig / Range.
    ("host-local", "ipam.subnet", Test(HOST_LOCAL, "a_thousand_adds_are_distinct_round_robin_and_in_reference_format")),
    ("host-local", "ipam.gateway", Test(HOST_LOCAL, "a_thousand_adds_are_distinct_round_robin_and_in_reference_format")),
    ("host-local", "ipam.rangeStart", Test(KEYS_FX, "host_local_range_start_and_end_bound_the_allocation")),
    ("host-local", "ipam.rangeEnd", Test(KEYS_FX, "host_local_range_start_and_end_bound_the_allocation")),
    ("host-local", "ipam.ranges", Test(HOST_LOCAL, "dual_stack_gives_one_address_per_family_and_dns_from_resolv_conf")),
    ("host-local", "ipam.routes[].dst", Test(HOST_LOCAL, "dual_stack_gives_one_address_per_family_and_dns_from_resolv_conf")),
    ("host-local", "ipam.routes[].gw", Test(KEYS_FX, "host_local_route_fields_reach_the_result_and_the_containers_routes")),
    ("host-local", "ipam.routes[].mtu", Test(KEYS_FX, "host_local_route_fields_reach_the_result_and_the_containers_routes")),
    ("host-local", "ipam.routes[].advmss", Test(KEYS_FX, "host_local_route_fields_reach_the_result_and_the_containers_routes")),
    ("host-local", "ipam.routes[].priority", Test(KEYS_FX, "host_local_route_fields_reach_the_result_and_the_containers_routes")),
    ("host-local", "ipam.routes[].table", Test(KEYS_FX, "host_local_route_fields_reach_the_result_and_the_containers_routes")),
    ("host-local", "ipam.routes[].scope", Test(KEYS_FX, "host_local_route_fields_reach_the_result_and_the_containers_routes")),
    ("host-local", "ipam.dataDir", Test(HOST_LOCAL, "a_thousand_adds_are_distinct_round_robin_and_in_reference_format")),
    ("host-local", "ipam.resolvConf", Test(HOST_LOCAL, "dual_stack_gives_one_address_per_family_and_dns_from_resolv_conf")),
    ("host-local", "runtimeConfig.ipRanges", Test(KEYS_FX, "host_local_runtime_config_ip_ranges_come_before_the_configured_ranges")),
    ("host-local", "runtimeConfig.ips", Test(HOST_LOCAL, "requested_ips_are_honoured_or_refused_clearly")),
    ("host-local", "args.cni.ips", Test(HOST_LOCAL, "requested_ips_are_honoured_or_refused_clearly")),
    ("host-local", "CNI_ARGS IP", Test(HOST_LOCAL, "requested_ips_are_honoured_or_refused_clearly")),
    // plugins/ipam/static Net / IPAMConfig / Address.
    ("static", "ipam.addresses[].address", Test(STATIC, "add_returns_the_configured_addresses_routes_and_dns")),
    ("static", "ipam.addresses[].gateway", Test(STATIC, "add_returns_the_configured_addresses_routes_and_dns")),
    ("static", "ipam.routes", Test(STATIC, "add_returns_the_configured_addresses_routes_and_dns")),
    ("static", "ipam.dns", Test(STATIC, "add_returns_the_configured_addresses_routes_and_dns")),
    ("static", "runtimeConfig.ips", Test(STATIC, "cni_args_append_and_set_gateways_args_and_runtime_config_replace")),
    ("static", "args.cni.ips", Test(STATIC, "cni_args_append_and_set_gateways_args_and_runtime_config_replace")),
    ("static", "CNI_ARGS IP", Test(STATIC, "cni_args_append_and_set_gateways_args_and_runtime_config_replace")),
    ("static", "CNI_ARGS GATEWAY", Test(STATIC, "cni_args_append_and_set_gateways_args_and_runtime_config_replace")),
    // plugins/ipam/dhcp IPAMConfig / ProvideOption / RequestOption.
    ("dhcp", "ipam.daemonSocketPath", Test(DHCP, "macvlan_add_leases_from_dnsmasq_with_routes_and_dns_check_holds_and_del_releases")),
    ("dhcp", "ipam.provide[].option", Test(DHCP, "macvlan_add_leases_from_dnsmasq_with_routes_and_dns_check_holds_and_del_releases")),
    ("dhcp", "ipam.provide[].fromArg", Test(DHCP, "macvlan_add_leases_from_dnsmasq_with_routes_and_dns_check_holds_and_del_releases")),
    ("dhcp", "ipam.provide[].value", Test(DHCP, "a_provided_literal_value_is_the_host_name_dnsmasq_leases")),
    ("dhcp", "ipam.request[].option", Test(DHCP, "macvlan_add_leases_from_dnsmasq_with_routes_and_dns_check_holds_and_del_releases")),
    ("dhcp", "ipam.request[].skipDefault", Test(DHCP, "skip_default_leaves_routers_and_subnet_mask_out_of_the_request_list")),
    ("dhcp", "ipam.priority", Test(DHCP, "macvlan_add_leases_from_dnsmasq_with_routes_and_dns_check_holds_and_del_releases")),
    // plugins/meta/portmap PortMapConf / PortMapEntry.
    ("portmap", "backend", Test(PORTMAP, "nftables_backend_reachability_rules_and_del_restore_the_ruleset")),
    ("portmap", "snat", Test(KEYS_FX, "portmap_snat_false_writes_no_setmark_or_masquerade_rules")),
    ("portmap", "conditionsV4", Test("tests/it/portmap/", "nft_conditions_are_encoded_and_only_matching_traffic_is_forwarded")),
    ("portmap", "conditionsV6", Test(PORTMAP, "nft_conditions_v6_gate_ipv6_traffic_to_the_mapping")),
    ("portmap", "masqAll", Test(KEYS_FX, "portmap_masq_all_marks_every_source")),
    ("portmap", "markMasqBit", Test(KEYS_FX, "portmap_mark_masq_bit_sets_and_matches_that_bit")),
    ("portmap", "externalSetMarkChain", Test(KEYS_FX, "portmap_external_set_mark_chain_is_jumped_to_instead_of_setmark")),
    ("portmap", "runtimeConfig.portMappings[].hostPort", Test(PORTMAP, "mapped_ports_are_reachable_from_everywhere_and_del_removes_the_container_rules")),
    ("portmap", "runtimeConfig.portMappings[].containerPort", Test(PORTMAP, "mapped_ports_are_reachable_from_everywhere_and_del_removes_the_container_rules")),
    ("portmap", "runtimeConfig.portMappings[].protocol", Test(PORTMAP, "mapped_ports_are_reachable_from_everywhere_and_del_removes_the_container_rules")),
    ("portmap", "runtimeConfig.portMappings[].hostIP", Test(PORTMAP, "mapped_ports_are_reachable_from_everywhere_and_del_removes_the_container_rules")),
    // plugins/meta/bandwidth PluginConf / BandwidthEntry.
    ("bandwidth", "ingressRate", Test(KEYS_FX, "bandwidth_top_level_rates_and_bursts_shape_and_win_over_runtime_config")),
    ("bandwidth", "ingressBurst", Test(KEYS_FX, "bandwidth_top_level_rates_and_bursts_shape_and_win_over_runtime_config")),
    ("bandwidth", "egressRate", Test(KEYS_FX, "bandwidth_top_level_rates_and_bursts_shape_and_win_over_runtime_config")),
    ("bandwidth", "egressBurst", Test(KEYS_FX, "bandwidth_top_level_rates_and_bursts_shape_and_win_over_runtime_config")),
    ("bandwidth", "runtimeConfig.bandwidth.ingressRate", Test(BANDWIDTH, "shaped_rates_are_met_in_both_directions_and_del_removes_the_ifb")),
    ("bandwidth", "runtimeConfig.bandwidth.ingressBurst", Test(BANDWIDTH, "shaped_rates_are_met_in_both_directions_and_del_removes_the_ifb")),
    ("bandwidth", "runtimeConfig.bandwidth.egressRate", Test(BANDWIDTH, "shaped_rates_are_met_in_both_directions_and_del_removes_the_ifb")),
    ("bandwidth", "runtimeConfig.bandwidth.egressBurst", Test(BANDWIDTH, "shaped_rates_are_met_in_both_directions_and_del_removes_the_ifb")),
    // plugins/meta/tuning TuningConf / IPAMArgs (+ MacEnvArgs).
    ("tuning", "dataDir", Test(TUNING, "every_key_is_applied_backed_up_and_restored")),
    ("tuning", "sysctl", Test(TUNING, "every_key_is_applied_backed_up_and_restored")),
    ("tuning", "mac", Test(TUNING, "every_key_is_applied_backed_up_and_restored")),
    ("tuning", "promisc", Test(TUNING, "every_key_is_applied_backed_up_and_restored")),
    ("tuning", "mtu", Test(TUNING, "every_key_is_applied_backed_up_and_restored")),
    ("tuning", "txQLen", Test(TUNING, "every_key_is_applied_backed_up_and_restored")),
    ("tuning", "allmulti", Test(TUNING, "every_key_is_applied_backed_up_and_restored")),
    ("tuning", "runtimeConfig.mac", Test(KEYS_FX, "tuning_mac_from_runtime_config_and_from_cni_args_alone")),
    ("tuning", "args.cni.sysctl", Test(TUNING, "mac_sources_and_args_overrides")),
    ("tuning", "args.cni.mac", Test(TUNING, "mac_sources_and_args_overrides")),
    ("tuning", "args.cni.mtu", Test(TUNING, "mac_sources_and_args_overrides")),
    ("tuning", "args.cni.promisc", Test(KEYS_FX, "tuning_args_cni_promisc_allmulti_and_txqlen_override_the_config")),
    ("tuning", "args.cni.allmulti", Test(KEYS_FX, "tuning_args_cni_promisc_allmulti_and_txqlen_override_the_config")),
    ("tuning", "args.cni.txQLen", Test(KEYS_FX, "tuning_args_cni_promisc_allmulti_and_txqlen_override_the_config")),
    ("tuning", "CNI_ARGS MAC", Test(KEYS_FX, "tuning_mac_from_runtime_config_and_from_cni_args_alone")),
    ("tuning", "sysctl allowlist (/etc/cni/tuning/allowlist.conf)", Test(TUNING, "the_allowlist_refuses_a_sysctl_it_does_not_list_and_sets_nothing")),
    // plugins/meta/firewall FirewallNetConf.
    ("firewall", "backend", Test(FIREWALL, "nftables_backend_accepts_the_container_and_del_restores_the_ruleset")),
    ("firewall", "backend firewalld", Test("tests/it/firewalld.rs", "firewalld_backend_makes_the_address_a_trusted_source_check_sees_it_del_removes_it")),
    ("firewall", "firewalldZone", Test("tests/it/firewalld.rs", "firewalld_zone_is_configurable_for_both_families_add_is_idempotent_and_ingress_policy_isolates")),
    ("firewall", "iptablesAdminChainName", Test(KEYS_FX, "firewall_admin_chain_name_is_the_chain_cni_forward_jumps_to")),
    ("firewall", "ingressPolicy", Test(FIREWALL, "same_bridge_policy_isolates_bridges")),
    // plugins/meta/sbr PluginConf (gateways/addSourceHints: upstream main, not yet released).
    ("sbr", "table", Test("tests/it/sbr.rs", "a_fixed_table_gets_only_rules")),
    ("sbr", "gateways", Test("tests/it/sbr.rs", "works_with_dual_stack_static_gateway_configuration")),
    ("sbr", "addSourceHints", Test("tests/it/sbr.rs", "works_with_add_source_hints_enabled")),
    // plugins/meta/vrf VRFNetConf.
    ("vrf", "vrfname", Test("tests/it/vrf.rs", "interface_joins_the_vrf_with_its_routes")),
    ("vrf", "table", Test("tests/it/vrf.rs", "vrf_with_a_table_is_shared_and_goes_with_its_last_member")),
    // mptcp: upstream's open plugin, ours ahead of its release.
    ("mptcp", "endpoints[].flags", Test("tests/it/mptcp.rs", "mptcp_sets_endpoints_and_limits_check_sees_them_del_removes_them")),
    ("mptcp", "endpoints[].address", Test("tests/it/mptcp.rs", "mptcp_refuses_bad_configs")),
    ("mptcp", "limits.subflows", Test("tests/it/mptcp.rs", "mptcp_sets_endpoints_and_limits_check_sees_them_del_removes_them")),
    ("mptcp", "limits.addAddrAccepted", Test("tests/it/mptcp.rs", "mptcp_sets_endpoints_and_limits_check_sees_them_del_removes_them")),
    // flannel-io/cni-plugin NetConf.
    ("flannel", "subnetFile", Test("tests/it/flannel.rs", "delegate_config_matches_the_fixture_and_del_survives_subnet_env_removal")),
    ("flannel", "dataDir", Test("tests/it/flannel.rs", "delegate_config_matches_the_fixture_and_del_survives_subnet_env_removal")),
    ("flannel", "delegate", Test("tests/it/flannel.rs", "delegate_config_matches_the_fixture_and_del_survives_subnet_env_removal")),
    ("flannel", "ipam", Test("tests/it/flannel.rs", "delegate_config_matches_the_fixture_and_del_survives_subnet_env_removal")),
    ("flannel", "runtimeConfig", Test(KEYS_FX, "flannel_runtime_config_reaches_the_delegate")),
    // Multus's thin-plugin NetConf (k8snetworkplumbingwg/multus-cni), plus ours.
    ("multus", "confDir", Test(MULTUS, "selection_edge_cases_follow_the_spec")),
    ("multus", "cniDir", Test(MULTUS, "a_pod_gets_the_default_network_and_two_nads_and_del_needs_no_files")),
    ("multus", "binDir", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "delegates", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "clusterNetwork", Test(MULTUS, "cluster_network_names_resolve_in_the_multus_namespace")),
    ("multus", "defaultNetworks", Test(MULTUS, "default_networks_skip_the_system_namespaces")),
    ("multus", "kubeconfig", Test(MULTUS, "log_file_level_and_to_stderr_and_the_kubeconfig_note")),
    ("multus", "logFile", Test(MULTUS, "log_file_level_and_to_stderr_and_the_kubeconfig_note")),
    ("multus", "logLevel", Test(MULTUS, "log_file_level_and_to_stderr_and_the_kubeconfig_note")),
    ("multus", "logToStderr", Test(MULTUS, "log_file_level_and_to_stderr_and_the_kubeconfig_note")),
    ("multus", "readinessindicatorfile", Test(MULTUS, "status_waits_for_the_readiness_file_and_gc_deletes_stale_pods")),
    ("multus", "namespaceIsolation", Test(MULTUS, "selection_edge_cases_follow_the_spec")),
    ("multus", "globalNamespaces", Test(MULTUS, "selection_edge_cases_follow_the_spec")),
    ("multus", "systemNamespaces", Test(MULTUS, "default_networks_skip_the_system_namespaces")),
    ("multus", "multusNamespace", Test(MULTUS, "cluster_network_names_resolve_in_the_multus_namespace")),
    ("multus", "retryDeleteOnError", Test(MULTUS, "retry_delete_on_error_keeps_the_cache_when_a_delegate_del_fails")),
    ("multus", "auxiliaryCNIChainName", Test(MULTUS, "auxiliary_cni_chain_name_is_refused_with_7")),
    ("multus", "runtimeConfig.portMappings", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "runtimeConfig.bandwidth", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "runtimeConfig.ips", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "runtimeConfig.mac", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "runtimeConfig.infinibandGUID", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "runtimeConfig.deviceID", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "runtimeConfig.CNIDeviceInfoFile", Test(MULTUS, "inline_delegates_run_from_bin_dir_with_the_runtime_config")),
    ("multus", "runtimeConfig.io.kubernetes.cri.pod-annotations", Test(MULTUS, "the_json_selection_honours_ips_mac_interface_and_default_route")),
    ("multus", "podDir", Test(MULTUS, "a_pod_gets_the_default_network_and_two_nads_and_del_needs_no_files")),
    ("multus", "netAttachDefDir", Test(MULTUS, "a_pod_gets_the_default_network_and_two_nads_and_del_needs_no_files")),
    ("multus", "annotationPortMappings", Test(MULTUS, "annotation_port_mappings_of_the_nodes_ports_can_be_refused")),
    ("multus", "maxAttachments", Test(MULTUS, "a_pod_asking_for_300_networks_is_refused_before_anything_is_attached")),
    ("multus", "kubeletCheckpointFile", Test(MULTUS, "pool_attachments_get_the_devices_the_kubelet_allocated_to_the_pod")),
    ("multus", "k8s.v1.cni.cncf.io/networks", Test(MULTUS, "the_json_selection_honours_ips_mac_interface_and_default_route")),
    ("multus", "v1.multus-cni.io/default-network", Test(MULTUS, "the_default_network_override_obeys_namespace_isolation")),
];

/// A file, or every `.rs` file of a module directory (a path ending in `/`).
fn read(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if path.ends_with('/') {
        let mut files: Vec<_> = std::fs::read_dir(&full)
            .unwrap_or_else(|e| panic!("{}: {e}", full.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        files.sort();
        return files.iter().map(|f| read_file(f)).collect();
    }
    read_file(&full)
}

fn read_file(full: &std::path::Path) -> String {
    std::fs::read_to_string(full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// docs/differences.md, where cni-multi says how and why it differs.
fn differs_section() -> String {
    read("docs/differences.md")
}

#[test]
fn every_named_test_exists_in_its_file() {
    let mut missing = Vec::new();
    for (plugin, key, covered) in KEYS {
        if let Test(file, name) = covered
            && !read(file).contains(&format!("fn {name}("))
        {
            missing.push(format!("{plugin} {key}: {file} has no fn {name}("));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_phrase_is_in_the_differences_doc() {
    // The doc wraps lines: compare with runs of whitespace made one space.
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let section = squash(&differs_section());
    let missing: Vec<String> = KEYS
        .iter()
        .filter_map(|(plugin, key, covered)| match covered {
            Doc(phrase) if !section.contains(&squash(phrase)) => {
                Some(format!("{plugin} {key}: {phrase:?}"))
            }
            _ => None,
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not in the section:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_plugin_is_in_the_table_and_nothing_else() {
    let listed: BTreeSet<&str> = KEYS.iter().map(|(p, _, _)| *p).collect();
    let wanted: BTreeSet<&str> = PLUGINS.iter().copied().collect();
    assert_eq!(listed, wanted);
}

#[test]
fn no_key_is_listed_twice() {
    let mut seen = BTreeSet::new();
    for (plugin, key, _) in KEYS {
        assert!(seen.insert((plugin, key)), "{plugin} {key} twice");
    }
}

/// The body of `fn name(` in `text`: up to the first line that is `}` at the
/// function's own indentation.
fn fn_body<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("fn {name}("))?;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..start];
    let indent = &indent[..indent.len() - indent.trim_start().len()];
    let close = format!("\n{indent}}}\n");
    let end = text[start..].find(&close).map_or(text.len(), |i| start + i);
    Some(&text[start..end])
}

/// What a test that sets `key` must spell: its last component, as JSON
/// spells a key (`"mtu"` for `ipam.routes[].mtu`) or as CNI_ARGS does (`MAC=`).
fn spellings(key: &str) -> Vec<String> {
    if let Some(arg) = key.strip_prefix("CNI_ARGS ") {
        return vec![format!("{arg}=")];
    }
    let word = key.split_whitespace().next().unwrap_or(key);
    // An annotation-like key (`cni.dev/valid-attachments`) is spelled whole.
    let leaf = if word.contains('/') {
        word
    } else {
        word.rsplit('.')
            .next()
            .unwrap_or(word)
            .trim_end_matches("[]")
    };
    let mut out = vec![
        format!("\"{leaf}\""),
        format!("{leaf}:"),
        format!("{leaf} ="),
    ];
    // A runtimeConfig key may itself hold dots (`io.kubernetes.cri.pod-annotations`).
    if let Some(whole) = word.strip_prefix("runtimeConfig.") {
        out.push(format!("\"{whole}\""));
    }
    // A unit test sets the field of the plugin's config struct.
    let field = snake_case(leaf);
    if field != leaf {
        out.extend([format!("{field}:"), format!(".{field} =")]);
    }
    out
}

/// `pciBusID` → `pci_bus_id`, `DPDKMode` → `dpdk_mode`, as the struct fields are named.
fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1);
        let boundary = c.is_ascii_uppercase()
            && prev.is_some_and(|p| {
                p.is_ascii_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_ascii_uppercase() && next.is_some_and(char::is_ascii_lowercase))
            });
        if boundary {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `<stem>.rs` and every file of `<stem>/`.
fn module_text(stem: &str) -> String {
    let mut text = read(&format!("{stem}.rs"));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(stem);
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    for f in files {
        text.push_str(&std::fs::read_to_string(&f).unwrap_or_default());
    }
    text
}

/// The names a body calls: identifiers followed by `(`.
fn called_names(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, _) in body.match_indices('(') {
        let before = &body[..i];
        let start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |j| j + 1);
        let name = &before[start..];
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Rows whose test does not yet set the key through the plugin (a unit test
/// of the parser only, or no traffic of that family). Each must stay weak to
/// stay listed, so the list only shrinks.
const KNOWN_WEAK: &[(&str, &str)] = &[];

#[test]
fn every_named_test_sets_its_key() {
    let mut weak = Vec::new();
    let mut mended = Vec::new();
    for (plugin, key, covered) in KEYS {
        let Test(file, name) = covered else { continue };
        let text = read(file);
        let Some(body) = fn_body(&text, name) else {
            continue; // every_named_test_exists_in_its_file says so
        };
        // A unit-test file's helpers include the code it tests (the module
        // and its submodules).
        let text = match file.strip_suffix("_tests.rs") {
            Some(stem) => text.clone() + &module_text(stem),
            None => text.clone(),
        };
        // The test's own text, and that of the helpers of its file it calls
        // (and they call, two levels down).
        let mut seen = body.to_string();
        let mut frontier = vec![body];
        let mut visited = vec![*name];
        for _ in 0..2 {
            let mut next = Vec::new();
            for b in frontier {
                for callee in called_names(b) {
                    if !visited.contains(&callee)
                        && let Some(helper) = fn_body(&text, callee)
                    {
                        visited.push(callee);
                        seen.push_str(helper);
                        next.push(helper);
                    }
                }
            }
            frontier = next;
        }
        let spelled = spellings(key).iter().any(|s| seen.contains(s.as_str()));
        let known = KNOWN_WEAK.contains(&(plugin, key));
        if !spelled && !known {
            weak.push(format!("{plugin} {key}: {file} fn {name} never spells it"));
        }
        if spelled && known {
            mended.push(format!("{plugin} {key}"));
        }
    }
    assert!(weak.is_empty(), "{} rows:\n{}", weak.len(), weak.join("\n"));
    assert!(
        mended.is_empty(),
        "no longer weak, take out of KNOWN_WEAK: {}",
        mended.join(", ")
    );
}
