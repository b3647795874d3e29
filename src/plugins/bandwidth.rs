//! bandwidth (chained): rate limits on the host end of the container's veth —
//! ingress as a root tbf on it, egress through an IFB (`bwp` + hash) fed by a
//! mirred redirect from its ingress qdisc — all over netlink, no `tc`.
//!
//! The host veth is only ever the one whose peer the kernel reports in the
//! container's namespace: a container can give its own links any ifindex, so
//! the peer index its `eth0` claims is no proof. DEL touches the host veth
//! only when ADD recorded it (root-owned state) and it still proves so.

use crate::attach;
use crate::cni::error::Context;
use crate::cni::result::{Interface, NetResult};
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netlink::Socket;
use crate::netlink::link::{Change, Kind, Link, LinkKind, NewLink};
use crate::netlink::tc::{TIME_UNITS_PER_SEC, Tbf, tick_in_usec};
use crate::netns::NetNs;
use crate::quote::quoted;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub struct Bandwidth;

const LATENCY_MS: f64 = 25.0;
/// IFBs we create carry this alias prefix, so GC can tell them apart.
pub(crate) const ALIAS_PREFIX: &str = "cni-multi bandwidth";

/// Where ADD records the host veth it shaped, for DEL.
pub(crate) const DEFAULT_DATA_DIR: &str = "/run/cni/bandwidth";
/// A state file is a few hundred bytes.
const MAX_STATE: u64 = 64 * 1024;

/// The limits in force: the top-level keys or the `bandwidth` capability.
type Limits = crate::cni::capabilities::Bandwidth;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "PluginConf", rename_all = "camelCase", default)]
pub(crate) struct SubnetKeys {
    #[serde(rename = "shapedSubnets")]
    shaped: Vec<String>,
    #[serde(rename = "unshapedSubnets")]
    unshaped: Vec<String>,
}

/// Which traffic is shaped: everything, only to/from `Only`, or all but `Except`.
#[derive(Debug, Clone, PartialEq)]
enum Scope {
    All,
    Only(Vec<IpNet>),
    Except(Vec<IpNet>),
}

/// htb classes when subnets select the shaped traffic.
const UNSHAPED_CLASS: u16 = 1;
const SHAPED_CLASS: u16 = 48;
/// The unshaped class's rate: 100 Gbit/s in bytes/s.
const UNCAPPED_RATE: u64 = 12_500_000_000;

fn scope(inv: &Invocation) -> CniResult<Scope> {
    let k: SubnetKeys = inv.conf.plugin_keys()?;
    let parse = |list: &[String]| {
        list.iter()
            .map(|s| {
                s.parse::<IpNet>().map(|n| n.trunc()).map_err(|_| {
                    Error::invalid_config(format!("invalid subnet {s}", s = quoted(&s)))
                })
            })
            .collect::<CniResult<Vec<_>>>()
    };
    match (k.shaped.is_empty(), k.unshaped.is_empty()) {
        (true, true) => Ok(Scope::All),
        (false, true) => Ok(Scope::Only(parse(&k.shaped)?)),
        (true, false) => Ok(Scope::Except(parse(&k.unshaped)?)),
        (false, false) => Err(Error::invalid_config(
            "unshapedSubnets and shapedSubnets cannot be both specified",
        )),
    }
}

/// Shapes link `index` at `rate`/`burst` (bits): a tbf, or with subnets an htb
/// whose filters match the source (`source`) or destination address.
fn shape(
    sock: &mut Socket,
    index: u32,
    rate: u64,
    burst: u64,
    scope: &Scope,
    source: bool,
) -> CniResult<()> {
    let tbf = tbf_params(rate, burst);
    let (default, listed, to) = match scope {
        Scope::All => return Ok(sock.add_tbf(index, tbf)?),
        Scope::Only(nets) => (UNSHAPED_CLASS, nets, SHAPED_CLASS),
        Scope::Except(nets) => (SHAPED_CLASS, nets, UNSHAPED_CLASS),
    };
    sock.add_htb(index, default)?;
    let uncapped = tbf_params(UNCAPPED_RATE * 8, 8 * 1024 * 1024);
    sock.add_htb_class(index, UNSHAPED_CLASS, UNCAPPED_RATE, uncapped.buffer.max(1))?;
    sock.add_htb_class(index, SHAPED_CLASS, tbf.rate, tbf.buffer)?;
    for net in listed {
        sock.add_subnet_filter(index, *net, source, to)?;
    }
    Ok(())
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "PluginConf", rename_all = "camelCase", default)]
pub(crate) struct StateKeys {
    data_dir: String,
}

fn data_dir(inv: &Invocation) -> CniResult<PathBuf> {
    let k: StateKeys = inv.conf.plugin_keys()?;
    crate::cni::config::path_setting(Some(&k.data_dir), DEFAULT_DATA_DIR, "dataDir")
}

/// What ADD shaped, in `files::attachment_record` of `dataDir` (the network
/// lets GC tell its own files apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    network: String,
    #[serde(rename = "containerID")]
    container_id: String,
    ifname: String,
    #[serde(rename = "hostVeth")]
    host_veth: String,
    #[serde(rename = "hostIndex")]
    host_index: u32,
}

fn state_path(dir: &Path, inv: &Invocation) -> PathBuf {
    crate::files::attachment_record(dir, &inv.env.container_id, &inv.env.ifname)
}

fn write_state(path: &Path, inv: &Invocation, host: &Link) -> CniResult<()> {
    let state = State {
        network: inv.conf.name().to_string(),
        container_id: inv.env.container_id.clone(),
        ifname: inv.env.ifname.clone(),
        host_veth: host.name.clone(),
        host_index: host.index,
    };
    let bytes = serde_json::to_vec(&state)
        .map_err(|e| Error::caused_by(crate::cni::Code::Internal, "failed to encode state", e))?;
    crate::files::write_private_atomic(path, &bytes)
        .map_err(|e| Error::from(e).context("failed to record the host veth"))
}

/// The recorded state; None when there is none or it cannot be read or
/// decoded (then DEL does no more than the reference's).
fn read_state(path: &Path) -> Option<State> {
    let bytes = match crate::files::read_state_limited(path, MAX_STATE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            eprintln!("bandwidth: ignoring unreadable state: {e}");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    match crate::cni::json::from_str::<State>(&text) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!(
                "bandwidth: ignoring malformed state {}: {e}",
                path.display()
            );
            None
        }
    }
}

/// Whether host link `host` is a veth whose other end is in `ns`. The host's
/// IFLA_LINK_NETNSID is the kernel's: nothing done inside the container forges it.
fn peer_is_in(sock: &mut Socket, host: &Link, ns: &NetNs) -> CniResult<bool> {
    let Some(id) = host.link_netnsid.filter(|_| host.kind == LinkKind::Veth) else {
        return Ok(false);
    };
    // Fetching `host` gave the namespace its ID, if it had none.
    Ok(sock.netns_id(ns.fd())? == Some(id))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "PluginConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    ingress_rate: Option<u64>,
    ingress_burst: Option<u64>,
    egress_rate: Option<u64>,
    egress_burst: Option<u64>,
}

/// Top-level keys when any is present, else the `bandwidth` capability (and
/// whether the runtime passed that capability at all).
fn limits(inv: &Invocation) -> CniResult<(Limits, bool)> {
    let top: Keys = inv.conf.plugin_keys()?;
    let any_top = top.ingress_rate.is_some()
        || top.ingress_burst.is_some()
        || top.egress_rate.is_some()
        || top.egress_burst.is_some();
    let (l, capability) = if any_top {
        let l = Limits {
            ingress_rate: top.ingress_rate.unwrap_or(0),
            ingress_burst: top.ingress_burst.unwrap_or(0),
            egress_rate: top.egress_rate.unwrap_or(0),
            egress_burst: top.egress_burst.unwrap_or(0),
        };
        (l, false)
    } else {
        match inv.conf.runtime_config::<Limits>("bandwidth")? {
            Some(l) => (l, true),
            None => (Limits::default(), false),
        }
    };
    for (rate, burst) in [
        (l.ingress_rate, l.ingress_burst),
        (l.egress_rate, l.egress_burst),
    ] {
        if rate > 0 && burst == 0 {
            return Err(Error::invalid_config(
                "if rate is set, burst must also be set",
            ));
        }
        if burst > 0 && rate == 0 {
            return Err(Error::invalid_config(
                "if burst is set, rate must also be set",
            ));
        }
        if burst / 8 >= u64::from(u32::MAX) {
            return Err(Error::invalid_config("burst cannot be more than 4GB"));
        }
    }
    Ok((l, capability))
}

/// ADD and CHECK: the tbf queue must fit too (the reference overflows it).
fn queue_fits(l: &Limits) -> CniResult<()> {
    for (rate, burst) in [
        (l.ingress_rate, l.ingress_burst),
        (l.egress_rate, l.egress_burst),
    ] {
        // The tbf queue limit is rate x latency + burst, in bytes, as a u32.
        let queued = (rate / 8) as f64 * LATENCY_MS / 1000.0 + (burst / 8) as f64;
        if queued >= f64::from(u32::MAX) {
            return Err(Error::invalid_config(
                "rate and burst together need a queue of more than 4GB",
            ));
        }
    }
    Ok(())
}

/// The reference's tbf parameters for a rate (bits/s) and burst (bits).
/// A tbf qdisc's settings as an error text shows them.
fn tbf_text(t: &Tbf) -> String {
    format!(
        "rate {} bytes/s, limit {} bytes, buffer {} ticks",
        t.rate, t.limit, t.buffer
    )
}

fn tbf_params(rate_bits: u64, burst_bits: u64) -> Tbf {
    let rate = rate_bits / 8;
    let burst = (burst_bits / 8) as u32;
    let ticks = tick_in_usec();
    let buffer =
        ((f64::from(burst) * TIME_UNITS_PER_SEC / rate as f64) as u32 as f64 * ticks) as u32;
    let latency = TIME_UNITS_PER_SEC * (LATENCY_MS / 1000.0);
    let limit = ((rate as f64 * latency / TIME_UNITS_PER_SEC) as u32).saturating_add(burst);
    Tbf {
        rate,
        limit,
        buffer,
    }
}

/// `bwp` + the first 12 hex digits of SHA-512(network + container ID).
pub(crate) fn ifb_name(network: &str, container_id: &str) -> String {
    format!(
        "bwp{}",
        &crate::digest::sha512_hex(format!("{network}{container_id}").as_bytes())[..12]
    )
}

/// `cni-multi bandwidth <network> <containerID>` within the kernel's 255
/// bytes: a long ID as its token (`files::id_token`); None when the network
/// name leaves no room (DEL finds the IFB by name; GC cannot tell it is ours).
fn alias(network: &str, container_id: &str) -> Option<String> {
    const IFALIAS_MAX: usize = 255;
    let full = format!("{ALIAS_PREFIX} {network} {container_id}");
    if full.len() <= IFALIAS_MAX {
        return Some(full);
    }
    let token = crate::files::id_token(container_id);
    Some(format!("{ALIAS_PREFIX} {network} {token}")).filter(|a| a.len() <= IFALIAS_MAX)
}

/// Whether a link name is one `ifb_name` gives: `bwp` and 12 lowercase hex digits.
pub fn is_ifb_name(name: &str) -> bool {
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    name.len() == 15 && name.strip_prefix("bwp").is_some_and(|h| h.bytes().all(hex))
}

/// The network and container an IFB's alias names, when they give its name
/// (a label to show, never to judge by); a long ID's token cannot give it.
pub fn aliased_owner(name: &str, alias: &str) -> Option<(String, String)> {
    let rest = alias.strip_prefix(ALIAS_PREFIX)?.strip_prefix(' ')?;
    let (network, id) = rest.split_once(' ')?;
    (ifb_name(network, id) == name || crate::files::is_id_token(id))
        .then(|| (network.to_string(), id.to_string()))
}

/// The host end of the container's veth among prevResult's host interfaces,
/// proven from the host side: its peer is the container's interface, in the
/// container's namespace (the index the container's end names is the container's word).
fn host_interface(sock: &mut Socket, inv: &Invocation, prev: &NetResult) -> CniResult<Link> {
    let ns = attach::open_netns(&inv.env.netns)?;
    let ifname = inv.env.ifname.clone();
    let container = ns.run(move || Socket::open().and_then(|mut s| s.link_by_name(&ifname)))??;
    if container.kind != LinkKind::Veth {
        return Err(Error::internal(format!(
            "container interface {} is not a veth",
            inv.env.ifname
        )));
    }
    // The kernel leaves IFLA_LINK out when the peer's index equals the link's own.
    let peer = container.parent.unwrap_or(container.index);
    let host = sock.link_by_index(peer)?;
    if prev
        .interfaces
        .iter()
        .any(|i| i.sandbox.is_empty() && i.name == host.name)
        && host.parent.unwrap_or(host.index) == container.index
        && peer_is_in(sock, &host, &ns)?
    {
        Ok(host)
    } else {
        Err(Error::internal(
            "no veth peer of container interface found in host ns",
        ))
    }
}

/// Best effort: clears the qdiscs of the recorded host veth when the link with
/// its index still has its name and its peer in the container's namespace.
fn clear_recorded_veth(sock: &mut Socket, inv: &Invocation, recorded: &State) {
    let Ok(Some(ns)) = NetNs::open_for_del(&inv.env.netns) else {
        return;
    };
    let Ok(host) = sock.link_by_index(recorded.host_index) else {
        return;
    };
    if host.name == recorded.host_veth && peer_is_in(sock, &host, &ns).unwrap_or(false) {
        clear_host_qdiscs(sock, &host);
    }
}

/// Best effort: the root tbf and the ingress qdisc (with its filter) on the host veth.
fn clear_host_qdiscs(sock: &mut Socket, host: &Link) {
    let Ok(qdiscs) = sock.qdiscs(host.index) else {
        return;
    };
    if qdiscs.iter().any(|q| q.kind == "tbf" || q.kind == "htb") {
        let _ = sock.del_qdisc(host.index, false);
    }
    if qdiscs.iter().any(|q| q.kind == "ingress") {
        let _ = sock.del_qdisc(host.index, true);
    }
}

/// Egress: the IFB (`bwp` + hash) that the host veth's ingress redirects to,
/// shaped; removed again if any step fails.
fn add_egress_ifb(
    sock: &mut Socket,
    inv: &Invocation,
    host: &Link,
    l: &Limits,
    scope: &Scope,
) -> CniResult<Link> {
    let name = ifb_name(inv.conf.name(), &inv.env.container_id);
    let mut spec = NewLink::new(&name, Kind::Ifb);
    spec.mtu = Some(host.mtu);
    // tbf has its own limit; htb leaf classes queue up to txqueuelen.
    spec.txqlen = Some(if *scope == Scope::All { 0 } else { 1000 });
    sock.create_link(&spec).context("adding link")?;
    let ifb = sock.link_by_name(&name)?;
    let setup = (|| -> CniResult<()> {
        if let Some(alias) = alias(inv.conf.name(), &inv.env.container_id) {
            sock.set_link(&ifb, Change::Alias(&alias))?;
        }
        sock.set_link(&ifb, Change::Up(true))?;
        sock.add_ingress(host.index)?;
        sock.add_redirect(host.index, ifb.index)?;
        // Traffic from the container: the remote end is the destination.
        shape(sock, ifb.index, l.egress_rate, l.egress_burst, scope, false)?;
        Ok(())
    })();
    if let Err(e) = setup {
        let _ = sock.delete_link(ifb.index);
        return Err(e.context("create egress qdisc"));
    }
    Ok(ifb)
}

/// CHECK of one shaped device: with subnets, that its htb qdisc is there;
/// else that its tbf has exactly the parameters ADD would give it.
fn check_shaped(
    sock: &mut Socket,
    index: u32,
    rate: u64,
    burst: u64,
    scope: &Scope,
    what: &str,
) -> CniResult<()> {
    let qdiscs = sock.qdiscs(index)?;
    if *scope != Scope::All {
        return match qdiscs.iter().any(|q| q.kind == "htb") {
            true => Ok(()),
            false => Err(Error::internal(format!("{what}: no htb qdisc"))),
        };
    }
    let want = tbf_params(rate, burst);
    let found = qdiscs
        .into_iter()
        .find_map(|q| q.tbf)
        .ok_or_else(|| Error::internal(format!("{what}: no tbf qdisc")))?;
    if found != want {
        return Err(Error::internal(format!(
            "{what}: tbf is {}, expected {}",
            tbf_text(&found),
            tbf_text(&want)
        )));
    }
    Ok(())
}

impl Plugin for Bandwidth {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        scope(inv)?;
        data_dir(inv)?;
        queue_fits(&limits(inv)?.0)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let (l, capability) = limits(inv)?;
        queue_fits(&l)?;
        let prev = inv.conf.container_prev_result()?;
        if l.is_empty() {
            // A capability the runtime passed that names no rate (keys it spells
            // in a way nobody reads, say) must not pass for limits applied.
            if capability {
                return Err(Error::invalid_config(
                    "runtimeConfig.bandwidth sets no rate or burst: nothing to apply",
                ));
            }
            return Ok(prev.unwrap_or_else(NetResult::new));
        }
        let scope = scope(inv)?;
        let state = state_path(&data_dir(inv)?, inv);
        let mut result =
            prev.ok_or_else(|| Error::invalid_config("must be called as chained plugin"))?;
        let mut sock = Socket::open()?;
        let host = host_interface(&mut sock, inv, &result)?;
        // Before any qdisc, so that DEL after a failed ADD finds it.
        write_state(&state, inv, &host)?;
        // A repeated ADD replaces what an earlier one left on the host veth.
        clear_host_qdiscs(&mut sock, &host);
        if l.ingress_rate > 0 {
            // Traffic to the container: the remote end is the source.
            shape(
                &mut sock,
                host.index,
                l.ingress_rate,
                l.ingress_burst,
                &scope,
                true,
            )
            .map_err(|e| e.context("create ingress qdisc"))?;
        }
        if l.egress_rate > 0 {
            let ifb = add_egress_ifb(&mut sock, inv, &host, &l, &scope)?;
            result.interfaces.push(Interface {
                mac: ifb.mac_string(),
                name: ifb.name,
                ..Interface::default()
            });
        }
        Ok(result)
    }

    /// Removes the IFB (by its name, from the network and the container ID),
    /// and clears the host veth's qdiscs only when ADD recorded that veth and
    /// it still proves to be the container's; without that, as the reference,
    /// they go with the veth when the main plugin deletes it. Refuses only
    /// what the reference's DEL refuses (rate/burst pairs): the subnets and the
    /// queue size matter to ADD only.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        limits(inv)?;
        // A dataDir ADD would refuse means ADD recorded nothing.
        let state = data_dir(inv).ok().map(|dir| state_path(&dir, inv));
        let mut sock = Socket::open()?;
        if let Some(recorded) = state.as_deref().and_then(read_state) {
            clear_recorded_veth(&mut sock, inv, &recorded);
        }
        match sock.link_by_name(&ifb_name(inv.conf.name(), &inv.env.container_id)) {
            Ok(ifb) => sock.delete_link_detached(ifb.index)?,
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        if let Some(path) = state {
            crate::files::remove_state(&path)?;
        }
        Ok(())
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let (l, _) = limits(inv)?;
        queue_fits(&l)?;
        let prev = inv
            .conf
            .container_prev_result()?
            .ok_or_else(|| Error::invalid_config("must be called as chained plugin"))?;
        if l == Limits::default() {
            return Ok(());
        }
        let scope = scope(inv)?;
        let mut sock = Socket::open()?;
        let host = host_interface(&mut sock, inv, &prev)?;
        let ifb_name = ifb_name(inv.conf.name(), &inv.env.container_id);
        if l.ingress_rate > 0 {
            check_shaped(
                &mut sock,
                host.index,
                l.ingress_rate,
                l.ingress_burst,
                &scope,
                "ingress",
            )?;
        }
        if l.egress_rate > 0 {
            let ifb = sock.link_by_name(&ifb_name)?;
            check_shaped(
                &mut sock,
                ifb.index,
                l.egress_rate,
                l.egress_burst,
                &scope,
                "egress",
            )?;
        }
        Ok(())
    }

    /// Deletes this network's IFBs whose container is not in the valid list,
    /// and (best effort) its state files of attachments not in it.
    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        let Some(valid) = inv.conf.valid_attachments()? else {
            return Ok(());
        };
        let keep: Vec<&str> = valid.iter().map(|a| a.container_id.as_str()).collect();
        let prefix = format!("{ALIAS_PREFIX} {} ", inv.conf.name());
        let mut sock = Socket::open()?;
        for link in sock.links()? {
            let Some(id) = link.alias.strip_prefix(&prefix) else {
                continue;
            };
            let kept = keep
                .iter()
                .any(|k| *k == id || crate::files::id_token(k) == id);
            if link.kind == LinkKind::Ifb && !kept {
                match sock.delete_link(link.index) {
                    Err(e) if !e.is_not_found() => return Err(e.into()),
                    _ => {}
                }
            }
        }
        if let Ok(dir) = data_dir(inv) {
            for path in crate::files::files_with(&dir, &["json"]).unwrap_or_default() {
                if let Some(s) = read_state(&path)
                    && s.network == inv.conf.name()
                    && !valid.iter().any(|a| {
                        a.container_id == s.container_id
                            && (a.ifname.is_empty() || a.ifname == s.ifname)
                    })
                {
                    let _ = fs_err::remove_file(&path);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "bandwidth_tests.rs"]
mod tests;
