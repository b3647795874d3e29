//! What every main plugin does with interfaces, on the netlink layer.
//!
//! - `veth`: veth pairs between container and host, random link names.
//! - `address`: the reference's ConfigureIface (addresses, routes, DAD wait),
//!   forwarding, neighbour announcements, CHECK of addresses and routes.
//! - `container`: opening CNI_NETNS and deleting the container's interface there.
//! - `single`: what the one-interface plugins (macvlan, ipvlan, vlan, dummy, tap,
//!   host-device) share: create/configure/DEL/CHECK, master lookup, MTU, MAC.
//! - `result`: result interfaces for links, IPAM's addresses taken into a result.

mod address;
mod container;
mod result;
mod single;
mod veth;

pub use address::{
    announce_on_up, check_addresses, check_routes, configure, enable_forwarding, set_arp_notify,
    set_conf,
};
pub use container::{ContainerLinkGuard, delete_for_del, delete_in_container, open_netns};
pub use result::{adopt_ipam_result, ips_of, result_interface};
pub use single::{
    Addressing, check_single, config_dns_over, configure_single, create_in_container,
    default_route_link, del_single, find_master, finish_single, gc_ipam, mtu_within_master,
    optional_mtu, requested_mac, status_ipam,
};
pub use veth::{VethPair, random_name, setup_veth};
