//! The plugin's CNI result: interfaces for links, IPAM's addresses taken in.

use crate::cni::result::{Interface, IpConfig, NetResult};
use crate::cni::{CniResult, Error};
use crate::netlink::link::Link;

/// The result's IPs assigned to the interface called `ifname`.
pub fn ips_of<'r>(result: &'r NetResult, ifname: &str) -> impl Iterator<Item = &'r IpConfig> {
    result.ips.iter().filter(move |ip| {
        ip.interface
            .and_then(|i| result.interfaces.get(i))
            .is_some_and(|i| i.name == ifname)
    })
}

/// A result interface for a link; `sandbox` for the container side.
pub fn result_interface(link: &Link, sandbox: Option<&str>) -> Interface {
    Interface {
        name: link.name.clone(),
        mac: link.mac_string(),
        sandbox: sandbox.unwrap_or_default().to_string(),
        ..Default::default()
    }
}

/// Takes IPAM's addresses, routes and DNS into a plugin's result, the addresses
/// assigned to interface `index`. No address at all is an error.
pub fn adopt_ipam_result(result: &mut NetResult, ipam: NetResult, index: usize) -> CniResult<()> {
    if ipam.ips.is_empty() {
        return Err(Error::internal("IPAM plugin returned missing IP config"));
    }
    result.ips = ipam.ips;
    result.routes = ipam.routes;
    result.dns = ipam.dns;
    for ip in &mut result.ips {
        ip.interface = Some(index);
    }
    Ok(())
}
