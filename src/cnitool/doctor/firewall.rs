//! `firewall`: the firewall plugin's accept rules (iptables) in CNI-FORWARD
//! for addresses no attachment holds. The rules name only the address: its
//! owners are the attachments whose result holds it, and any namespace that
//! holds it keeps them.

use super::Finding;
use super::engine::{self, Object, Owner};
use super::node::Node;
use crate::netfilter::Family;
use crate::netfilter::firewall::{self, iptables};
use crate::netfilter::iptables::{Flavour, use_flavour};
use anyhow::Result;
use ipnet::IpNet;

pub const KIND: &str = "firewall";
pub const ACTION: &str = "remove the address's accept rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for flavour in super::chains::flavours() {
        let _flavour = use_flavour(flavour);
        if super::chains::usable() {
            let objects = iptables::read()?
                .into_iter()
                .map(|net| object(node, flavour, net))
                .collect();
            engine::findings(node, objects, out)?;
        }
    }
    Ok(())
}

fn object(node: &Node, flavour: Flavour, net: IpNet) -> Object {
    let ip = net.addr();
    let family = if ip.is_ipv4() { Family::V4 } else { Family::V6 };
    let label = format!(
        "{} filter {} {net}",
        flavour.command(family),
        iptables::FORWARD_CHAIN
    );
    let present = Box::new(move |_: &Node| {
        let _flavour = use_flavour(flavour);
        Ok(iptables::read()?.contains(&net))
    });
    let remove = Box::new(move |_: &Node| {
        let _flavour = use_flavour(flavour);
        Ok(firewall::del_addresses(&[net])?)
    });
    Object {
        addresses: vec![ip],
        // Its DEL runs the default tools only.
        dead_action: (flavour != Flavour::Default).then_some(ACTION),
        ..Object::kernel(
            KIND,
            label,
            Owner::holding(node, ip),
            ACTION,
            present,
            remove,
        )
    }
}
