//! What plugins share to attach a container to a network: its interface made,
//! addressed, checked and deleted (on the netlink layer), and the record a
//! chained plugin keeps of each attachment. A plugin's own steps stay in its
//! file under `plugins/`.
//!
//! - `veth`: veth pairs between container and host, random link names.
//! - `address`: the reference's ConfigureIface (addresses, routes, DAD wait),
//!   forwarding, neighbour announcements, CHECK of addresses and routes.
//! - `container`: opening CNI_NETNS and deleting the container's interface there.
//! - `single`: what the one-interface plugins (macvlan, ipvlan, vlan, dummy, tap,
//!   host-device) share: create/configure/DEL/CHECK, master lookup, MTU, MAC.
//! - `result`: result interfaces for links, IPAM's addresses taken into a result.
//! - `records`: what firewall and portmap record of each attachment at ADD,
//!   so GC (which is handed only container IDs and interfaces) finds its rules.

mod address;
mod container;
pub mod records;
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
    default_route_link, del_single, find_master, finish_single, gc_ipam, gc_masq,
    mtu_within_master, optional_mtu, requested_mac, status_ipam,
};
pub use veth::{VethPair, random_name, setup_veth};
