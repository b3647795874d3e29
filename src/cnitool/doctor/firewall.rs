//! `firewall`: the firewall plugin's accept rules (iptables) in CNI-FORWARD
//! for addresses no attachment holds. The rules name only the address: one
//! is kept while any attachment not known dead, or any namespace, holds it.

use super::Finding;
use super::node::{Node, State, result_ips};
use crate::netfilter::Family;
use crate::netfilter::firewall::{self, iptables};
use crate::netfilter::iptables::{Flavour, use_flavour};
use anyhow::Result;
use ipnet::IpNet;

pub const KIND: &str = "firewall";
pub const ACTION: &str = "remove the address's accept rules";
pub use super::BY_DEL;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for flavour in super::chains::flavours() {
        let _flavour = use_flavour(flavour);
        if super::chains::usable() {
            find_in(node, out, flavour)?;
        }
    }
    Ok(())
}

fn find_in(node: &Node, out: &mut Vec<Finding>, flavour: Flavour) -> Result<()> {
    for net in iptables::read()? {
        let ip = net.addr();
        if node.ip_in_use(ip) {
            continue;
        }
        let family = if ip.is_ipv4() { Family::V4 } else { Family::V6 };
        let object = format!(
            "{} filter {} {net}",
            flavour.command(family),
            iptables::FORWARD_CHAIN
        );
        let dead = node.attachments.iter().find(|a| {
            a.state == State::Dead
                && a.entry
                    .result
                    .as_ref()
                    .is_some_and(|r| result_ips(r).contains(&ip))
        });
        let (network, id, ifname, action) = match dead {
            // Its DEL runs the default tools only.
            Some(a) if flavour == Flavour::Default => (
                a.entry.network_name.as_str(),
                a.entry.container_id.as_str(),
                a.entry.ifname.as_str(),
                BY_DEL,
            ),
            Some(a) => (
                a.entry.network_name.as_str(),
                a.entry.container_id.as_str(),
                a.entry.ifname.as_str(),
                ACTION,
            ),
            None if node.settled(&format!("{KIND} {object}")) => ("", "", "", ACTION),
            None => continue,
        };
        out.push(
            Finding::new(KIND, network, id, ifname, &object, action).fix(move |_| {
                let _flavour = use_flavour(flavour);
                fix(net)
            }),
        );
    }
    Ok(())
}

/// Removes the address's rules unless they are gone already or a namespace
/// holds the address now (an ADD that took it meanwhile writes the same rules).
fn fix(net: IpNet) -> Result<bool> {
    if !present(net)? {
        return Ok(true);
    }
    if super::namespaces::in_use_now(net.addr()) {
        return Ok(false);
    }
    firewall::del_addresses(&[net])?;
    present(net).map(|p| !p)
}

fn present(net: IpNet) -> Result<bool> {
    Ok(iptables::read()?.contains(&net))
}
