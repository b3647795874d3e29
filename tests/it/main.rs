//! The integration tests: one crate, one module per plugin or area, all
//! sharing one build of the harness (`harness/`). Test names are module
//! paths (`bridge::vlan_gateway_is_a_veth_port_of_that_vlan`), so
//! `cargo test --test it -- bridge::` runs one former file's tests.

mod harness;

mod attachments;
mod bad_input;
mod bandwidth;
mod bridge;
mod chained;
mod cnitool;
mod cnitool_validate;
mod completion;
mod config_errors;
mod config_keys;
mod del_tolerance;
mod dhcp;
mod dhcp_client;
mod docs;
mod doctor;
mod doctor_hazards;
mod doctor_leaks;
mod errors;
mod etcd_client;
mod firewall;
mod firewalld;
mod flannel;
mod flanneld;
mod flanneld_iptables;
mod flanneld_lane;
mod foreign_writers;
mod host_device;
mod host_local;
mod hostile_input;
mod house;
mod install;
mod ipam_dns;
mod ipmasq;
mod keys_effects;
mod leftovers;
mod long_ids;
mod loopback;
mod macspoofchk;
mod macvlan;
mod man;
mod mptcp;
mod multicall;
mod multus;
mod netlink;
mod nft_only;
mod o1_per_pod;
mod operator_hints;
mod portmap;
mod ptp;
mod sbr;
mod static_ipam;
mod tap;
mod tuning;
mod virtual_links;
mod vrf;
mod xtnft;
