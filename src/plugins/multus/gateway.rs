//! `default-route`: the attachment whose selection asks for it gets the pod's
//! default route through the given gateway; the default routes of every other
//! attachment of that family go (Multus's CheckGatewayConfig, DeleteDefaultGW,
//! SetDefaultGW), in the pod and in the attachments' cached results, so CHECK
//! compares against what is there.

use super::delegates::Delegate;
use crate::cni::{CniResult, Error};
use crate::libcni::cache::{Cache, Cached};
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::route::{RT_TABLE_MAIN, Route};
use crate::netns::NetNs;
use ipnet::IpNet;
use serde_json::{Value, json};
use std::net::IpAddr;

/// Marks which families' default routes each delegate loses; more than one
/// gateway of a family is refused, as Multus does.
pub fn check(delegates: &mut [Delegate]) -> CniResult<()> {
    if delegates.iter().all(|d| d.gateway_request.is_none()) {
        return Ok(());
    }
    let gateways = || {
        delegates
            .iter()
            .flat_map(|d| d.gateway_request.iter().flatten())
    };
    let v4 = gateways().filter(|g| g.is_ipv4()).count();
    let v6 = gateways().filter(|g| g.is_ipv6()).count();
    if v4 > 1 || v6 > 1 {
        return Err(Error::invalid_config(
            "multus does not support ECMP for default-route",
        ));
    }
    for d in delegates.iter_mut() {
        d.filter_v4 = true;
        d.filter_v6 = true;
        for gw in d.gateway_request.iter().flatten() {
            if gw.is_ipv4() {
                d.filter_v4 = false;
            } else {
                d.filter_v6 = false;
            }
        }
    }
    Ok(())
}

/// After a delegate's ADD: its default routes go when its family is filtered
/// or it asked for its own gateway (then the whole link's, as Multus), and the
/// requested gateways are added on its interface.
pub fn apply(
    d: &Delegate,
    netns: &str,
    ifname: &str,
    cache: &Cache,
    container_id: &str,
) -> CniResult<()> {
    let requested: &[IpAddr] = d.gateway_request.as_deref().unwrap_or_default();
    let del_v4 = d.filter_v4 || !requested.is_empty();
    let del_v6 = d.filter_v6 || !requested.is_empty();
    if !del_v4 && !del_v6 {
        return Ok(());
    }
    let ns = NetNs::open(netns)?;
    ns.run(|| -> CniResult<()> {
        let mut sock = Socket::open()?;
        let link = match sock.link_by_name(ifname) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for family in [Family::V4, Family::V6] {
            for r in sock.routes(family, RT_TABLE_MAIN, Some(link.index))? {
                if r.dst.prefix_len() == 0 {
                    sock.del_route(&r)
                        .map_err(|e| Error::from(e).context("error deleting default gateway"))?;
                }
            }
        }
        for gw in requested {
            let dst: IpNet = if gw.is_ipv4() {
                IpNet::V4(Default::default())
            } else {
                IpNet::V6(Default::default())
            };
            let mut route = Route::new(dst);
            route.gw = Some(*gw);
            route.oif = Some(link.index);
            match sock.add_route(&route) {
                Err(e) if !e.is(nix::libc::EEXIST) => {
                    return Err(Error::from(e).context("error setting default gateway"));
                }
                _ => {}
            }
        }
        Ok(())
    })??;
    update_cached_routes(cache, &d.list.name, container_id, ifname, |routes| {
        routes.retain(|r| {
            let dst = r
                .get("dst")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<IpNet>().ok());
            !matches!(dst, Some(n) if n.prefix_len() == 0
                && ((n.addr().is_ipv4() && del_v4) || (n.addr().is_ipv6() && del_v6)))
        });
        for gw in requested {
            let dst = if gw.is_ipv4() { "0.0.0.0/0" } else { "::/0" };
            routes.push(json!({"dst": dst, "gw": gw.to_string()}));
        }
    })
}

/// Edits `routes` of an attachment's cached result (results of 0.3.0 and
/// later; older layouts keep routes per family and are left as they are).
fn update_cached_routes(
    cache: &Cache,
    network: &str,
    container_id: &str,
    ifname: &str,
    edit: impl FnOnce(&mut Vec<Value>),
) -> CniResult<()> {
    let Some(Cached::Entry(mut entry)) = cache.read(network, container_id, ifname)? else {
        return Ok(());
    };
    let Some(Value::Object(result)) = entry.result.as_mut() else {
        return Ok(());
    };
    let version = result
        .get("cniVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if matches!(version, "" | "0.1.0" | "0.2.0") {
        return Ok(());
    }
    let mut routes = match result.remove("routes") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    edit(&mut routes);
    if !routes.is_empty() {
        result.insert("routes".into(), Value::Array(routes));
    }
    cache.write(&entry)
}

#[cfg(test)]
#[path = "gateway_tests.rs"]
mod tests;
