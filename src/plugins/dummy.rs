//! dummy: a dummy interface in the container carrying IPAM's addresses.

use crate::attach;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netlink::link::{Kind, LinkKind, NewLink};

pub struct Dummy;

fn needs_ipam(inv: &Invocation) -> CniResult<()> {
    match inv.conf.ipam_type() {
        Some(_) => Ok(()),
        None => Err(Error::invalid_config(
            "IPAM config missing 'type' key: dummy needs IPAM",
        )),
    }
}

impl Plugin for Dummy {
    fn delegates_ipam(&self) -> bool {
        true
    }

    /// No keys of its own; IPAM it needs.
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        needs_ipam(inv)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        needs_ipam(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        let link = attach::create_in_container(&ns, NewLink::new("", Kind::Dummy), ifname, false)?;
        let cleanup = attach::ContainerLinkGuard::new(&ns, ifname);
        let mut result = NetResult::new();
        result.interfaces = vec![attach::result_interface(&link, Some(&inv.env.netns))];
        // dummy keeps IPAM's DNS (reference behaviour).
        let result = attach::configure_single(inv, &ns, ifname, result, true)?;
        cleanup.keep();
        Ok(result)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        attach::del_single(inv)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        attach::check_single(inv, Some(LinkKind::Dummy)).map(drop)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        attach::gc_ipam(inv)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        attach::status_ipam(inv)
    }
}
