//! portmap (chained): forwards host ports to the container with DNAT, with
//! masquerading for hairpin and localhost, in the reference's iptables chains
//! or nftables table. Its output is prevResult, unchanged. Each verb hands
//! its rules as a `portmap::Op` to an [`Apply`] (`Kernel` on a node).

use crate::attach::records::{self, Split};
use crate::cni::capabilities::PortMapping;
use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::netfilter::portmap::{Mapping, Op, Plan, Target};
use crate::netfilter::{Apply, Backend, Choice, Family, Kernel};
use crate::netlink::Socket;
use crate::netlink::link::{Change, IPV4_DEVCONF_ROUTE_LOCALNET};
use crate::quote::quoted;
use serde::Deserialize;
use std::net::IpAddr;

pub struct Portmap;

/// Where ADD with nftables records each attachment for GC (`dataDir`).
pub(crate) const DEFAULT_DATA_DIR: &str = "/run/cni/portmap";

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "PortMapConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    snat: Option<bool>,
    masq_all: bool,
    mark_masq_bit: Option<i64>,
    external_set_mark_chain: Option<String>,
    conditions_v4: Option<Vec<String>>,
    conditions_v6: Option<Vec<String>>,
    backend: Option<String>,
}

/// iptables syntax starts with `-` or `!`; anything else is nft syntax.
fn is_iptables_syntax(conditions: &[String]) -> bool {
    conditions
        .first()
        .is_some_and(|t| t.starts_with('-') || t.starts_with('!'))
}

/// What `Conf::load` does with `runtimeConfig.portMappings`.
#[derive(Clone, Copy, PartialEq)]
enum Mappings {
    /// ADD and CHECK: every entry must be a usable mapping.
    Required,
    /// DEL finds the rules by chain name: the mappings are not read, so a config
    /// whose ADD was refused can still be deleted.
    Ignored,
}

/// The validated config.
struct Conf {
    plan: Plan,
    /// The backend to use for ADD/CHECK.
    backend: Backend,
    /// The backend the config names (explicitly or through its conditions'
    /// syntax), if any.
    configured: Option<Backend>,
}

impl Conf {
    fn load(inv: &Invocation, mappings: Mappings, nf: &dyn Apply) -> CniResult<Conf> {
        validate(inv, inv.conf.plugin_keys()?, mappings, nf)
    }
}

fn validate(inv: &Invocation, k: Keys, mappings: Mappings, nf: &dyn Apply) -> CniResult<Conf> {
    let mark_bit = k.mark_masq_bit.unwrap_or(13);
    if !(0..=31).contains(&mark_bit) {
        return Err(Error::invalid_config(format!(
            "MasqMarkBit must be between 0 and 31, got {mark_bit}"
        )));
    }
    if k.mark_masq_bit.is_some() && k.external_set_mark_chain.is_some() {
        return Err(Error::invalid_config(
            "Cannot specify externalSetMarkChain and markMasqBit",
        ));
    }
    // DEL never writes these into rules: the reference's DEL takes any text.
    let writes_rules = mappings == Mappings::Required;
    if let Some(chain) = &k.external_set_mark_chain
        && writes_rules
        && !crate::netfilter::iptables::valid_chain_name(chain)
    {
        return Err(Error::invalid_config(format!(
            "invalid externalSetMarkChain {chain}",
            chain = quoted(&chain)
        )));
    }
    let conditions_v4 = k.conditions_v4.unwrap_or_default();
    let conditions_v6 = k.conditions_v6.unwrap_or_default();
    for token in conditions_v4.iter().chain(&conditions_v6) {
        if writes_rules && token.contains(['\n', '\r', '\0']) {
            return Err(Error::invalid_config(format!(
                "invalid condition {token}",
                token = quoted(&token)
            )));
        }
    }
    // Conditions in nft syntax ask for nftables; mixed syntaxes are an error.
    let wants = |c: &[String]| (!c.is_empty()).then(|| is_iptables_syntax(c));
    let syntax = match (wants(&conditions_v4), wants(&conditions_v6)) {
        (Some(a), Some(b)) if a != b => {
            return Err(Error::invalid_config(
                "conditionsV4 and conditionsV6 use different syntaxes",
            ));
        }
        (Some(a), _) | (None, Some(a)) => Some(a),
        (None, None) => None,
    };
    if syntax == Some(false) && mappings == Mappings::Required {
        // Encoded here already: a condition we cannot express is refused
        // (naming its word) before anything is changed, never dropped. (DEL
        // does not need them: a config whose ADD was refused still deletes.)
        for (key, conditions, family) in [
            ("conditionsV4", &conditions_v4, Family::V4),
            ("conditionsV6", &conditions_v6, Family::V6),
        ] {
            // Code 7 (error_codes.rs: a netfilter InvalidConfig).
            crate::netfilter::nft::parse_conditions(conditions, family).context(key)?;
        }
    }
    let configured = match (k.backend.as_deref().filter(|b| !b.is_empty()), syntax) {
        (Some(b), Some(iptables)) => {
            let b = Backend::parse(b)?;
            if (b == Backend::IPTABLES) != iptables {
                return Err(Error::invalid_config(format!(
                    "conditions are in {} syntax but backend is {b}",
                    if iptables { "iptables" } else { "nftables" },
                    b = b.name()
                )));
            }
            Some(b)
        }
        (Some(b), None) => Some(Backend::parse(b)?),
        (None, Some(true)) => Some(Backend::IPTABLES),
        (None, Some(false)) => Some(Backend::Nftables),
        (None, None) => None,
    };
    let mappings: Vec<PortMapping> = match mappings {
        Mappings::Required => inv.conf.runtime_config("portMappings")?.unwrap_or_default(),
        Mappings::Ignored => Vec::new(),
    };
    let mappings = mappings
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            // A mapping that names no usable port is refused, never skipped: the
            // runtime would believe the port published.
            let port = |p: i64, what: &str| {
                u16::try_from(p).ok().filter(|p| *p > 0).ok_or_else(|| {
                    Error::invalid_config(format!(
                        "Invalid {what} port number: {p} (runtimeConfig.portMappings[{i}])"
                    ))
                })
            };
            let protocol = m.protocol.to_lowercase();
            let protocol = if protocol.is_empty() {
                "tcp".to_string()
            } else {
                protocol
            };
            if !matches!(protocol.as_str(), "tcp" | "udp" | "sctp") {
                return Err(Error::invalid_config(format!(
                    "Invalid protocol {}",
                    quoted(&m.protocol)
                )));
            }
            let host_ip = match m.host_ip.as_str() {
                "" => None,
                ip => Some(ip.parse::<IpAddr>().map_err(|_| {
                    Error::invalid_config(format!("Invalid host IP {ip}", ip = quoted(&ip)))
                })?),
            };
            Ok(Mapping {
                host_port: port(m.host_port, "host")?,
                container_port: port(m.container_port, "container")?,
                protocol,
                host_ip,
            })
        })
        .collect::<CniResult<Vec<_>>>()?;
    let backend = match configured {
        Some(b) => b,
        // Nothing to map: no need to probe (DEL probes on its own).
        None if mappings.is_empty() => Backend::IPTABLES,
        None => Choice::Detect.backend(nf)?,
    };
    let plan = Plan {
        network: inv.conf.name().to_string(),
        container_id: inv.env.container_id.clone(),
        mappings,
        snat: k.snat.unwrap_or(true),
        masq_all: k.masq_all,
        mark_bit: mark_bit as u32,
        external_mark_chain: k.external_set_mark_chain,
        conditions_v4,
        conditions_v6,
        targets: Vec::new(),
    };
    Ok(Conf {
        plan,
        backend,
        configured,
    })
}

/// The container's first IPv4 and first IPv6 address of CNI_IFNAME in prevResult.
fn targets(prev: &NetResult, ifname: &str) -> Vec<Target> {
    let mine = |ip: &&crate::cni::result::IpConfig| match ip.interface {
        None => true,
        Some(i) => prev
            .interfaces
            .get(i)
            .is_some_and(|itf| itf.name == ifname && !itf.sandbox.is_empty()),
    };
    let mut out: Vec<Target> = Vec::new();
    for ip in prev.ips.iter().filter(mine) {
        let family = Family::of(ip.address.addr());
        if !out.iter().any(|t| Family::of(t.address.addr()) == family) {
            out.push(Target {
                address: ip.address,
            });
        }
    }
    out
}

fn prev_result(inv: &Invocation) -> CniResult<NetResult> {
    inv.conf
        .container_prev_result()?
        .ok_or_else(|| Error::invalid_config("must be called as chained plugin"))
}

/// What ADD acts on and CHECK verifies.
struct Validated {
    plan: Plan,
    backend: Backend,
    configured: Option<Backend>,
    prev: NetResult,
    /// The container addresses to map to; never empty when there are mappings.
    targets: Vec<Target>,
}

/// Every check ADD makes before it changes anything, in one place for ADD and
/// CHECK: a CHECK must not pass a config its ADD would refuse.
fn validated(inv: &Invocation, nf: &dyn Apply) -> CniResult<Validated> {
    let Conf {
        mut plan,
        backend,
        configured,
    } = Conf::load(inv, Mappings::Required, nf)?;
    let prev = prev_result(inv)?;
    let targets = targets(&prev, &inv.env.ifname);
    plan.targets = targets.clone();
    if targets.is_empty() && !plan.mappings.is_empty() {
        // The reference maps nothing and succeeds: the runtime would then
        // believe the ports published.
        return Err(Error::invalid_config(format!(
            "prevResult has no address of the container's interface {} to map ports to",
            quoted(&inv.env.ifname)
        )));
    }
    Ok(Validated {
        plan,
        backend,
        configured,
        prev,
        targets,
    })
}

impl Plugin for Portmap {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv, Mappings::Required, &Kernel).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        add(inv, &Kernel)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        del(inv, &Kernel)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        check(inv, &Kernel)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        gc(inv, &Kernel)
    }

    fn status(&self, _inv: &Invocation) -> CniResult<()> {
        Backend::choose(None)
            .map(drop)
            .map_err(|e| Error::new(Code::NotAvailable, e.to_string()).with_source(e))
    }
}

fn add(inv: &Invocation, nf: &dyn Apply) -> CniResult<NetResult> {
    let Validated {
        plan,
        backend,
        configured,
        prev,
        targets,
    } = validated(inv, nf)?;
    if plan.mappings.is_empty() {
        return Ok(prev);
    }
    if let Err(e) = add_rules(inv, nf, backend, &plan, &targets)? {
        match Choice::from(configured).instead(nf, backend, &e) {
            Some(other) => add_rules(inv, nf, other, &plan, &targets)??,
            None => return Err(e.into()),
        }
    }
    let _ = flush_udp_conntrack(&plan, &targets);
    if plan.snat {
        // Let localhost-sourced traffic leave towards the container.
        for t in targets.iter().filter(|t| t.address.addr().is_ipv4()) {
            enable_route_localnet(t.address.addr())?;
        }
    }
    Ok(prev)
}

/// Found by chain name: the mappings need not be given again. When they
/// are (runtimes send them on DEL too), the entry rules are deleted by the
/// specs ADD wrote, with no `iptables-save`.
fn del(inv: &Invocation, nf: &dyn Apply) -> CniResult<()> {
    let Conf {
        mut plan,
        configured,
        ..
    } = Conf::load(inv, Mappings::Required, nf)
        .or_else(|_| Conf::load(inv, Mappings::Ignored, nf))?;
    // Without prevResult (or its addresses) both families are cleaned.
    if let Some(prev) = inv.conf.container_prev_result()? {
        plan.targets = targets(&prev, &inv.env.ifname);
    }
    // Without a configured backend both are cleaned: detection may have
    // chosen either at ADD time.
    let iptables = configured != Some(Backend::Nftables);
    let nftables = configured != Some(Backend::IPTABLES);
    if iptables && nf.installed(Backend::IPTABLES) {
        let op = Op::Del {
            plan: plan.clone(),
            recorded: true,
        };
        nf.portmap(Backend::IPTABLES, &op)?;
    }
    if nftables && nf.installed(Backend::Nftables) {
        // An unreadable dataDir leaves it unknown: as if recorded.
        let recorded =
            records::data_dir(inv, DEFAULT_DATA_DIR).map_or(true, |dir| records::exists(&dir, inv));
        let op = Op::Del {
            plan: plan.clone(),
            recorded,
        };
        nf.portmap(Backend::Nftables, &op)?;
    }
    // After the rules: a packet in between would make a new entry with the
    // old translation. A host port taken over by a new pod would keep
    // sending to this one until the entries expire.
    if let Err(e) = flush_udp_conntrack(&plan, &plan.targets) {
        eprintln!("portmap: stale UDP conntrack entries may remain: {e}");
    }
    // A dataDir ADD would refuse means ADD recorded nothing.
    if let Ok(dir) = records::data_dir(inv, DEFAULT_DATA_DIR) {
        records::remove(&dir, inv)?;
    }
    Ok(())
}

/// Refuses what ADD refuses, with the same error (`validated`), then
/// looks for the rules ADD writes.
fn check(inv: &Invocation, nf: &dyn Apply) -> CniResult<()> {
    let Validated {
        plan,
        backend,
        configured,
        ..
    } = validated(inv, nf)?;
    if plan.mappings.is_empty() {
        return Ok(());
    }
    let op = Op::Check(plan);
    nf.portmap(backend, &op).or_else(|e| {
        match Choice::from(configured).instead(nf, backend, &e) {
            Some(other) => nf.portmap(other, &op),
            None => Err(e),
        }
    })?;
    Ok(())
}

/// iptables rules name their network and container: GC finds this
/// network's there. nftables rules name only the container (as the
/// reference's): GC removes those of the attachments ADD recorded for this
/// network, then the records.
fn gc(inv: &Invocation, nf: &dyn Apply) -> CniResult<()> {
    // Without a valid list nothing is known to be stale.
    let Some(valid) = inv.conf.valid_attachments()? else {
        return Ok(());
    };
    let keep: Vec<String> = valid.iter().map(|a| a.container_id.clone()).collect();
    let network = inv.conf.name().to_string();
    if nf.installed(Backend::IPTABLES) {
        let op = Op::Gc {
            network: network.clone(),
            keep: keep.clone(),
            stale: Vec::new(),
        };
        nf.portmap(Backend::IPTABLES, &op)?;
    }
    let dir = records::data_dir(inv, DEFAULT_DATA_DIR)?;
    let split = Split::read(&dir, "portmap", inv.conf.name(), &valid)?;
    if split.stale.is_empty() || !nf.installed(Backend::Nftables) {
        return Ok(());
    }
    // The container's rules stay while another attachment of it is recorded.
    let stale: Vec<String> = split
        .stale
        .iter()
        .map(|(_, r)| r.container_id.clone())
        .filter(|id| !split.container_live(id))
        .collect();
    let op = Op::Gc {
        network,
        keep,
        stale,
    };
    nf.portmap(Backend::Nftables, &op)?;
    split.remove_stale()?;
    Ok(())
}

/// ADD's rules in one backend, the attachment recorded first with nftables
/// (so that GC finds what a failed ADD left); the rules' own failure is the
/// inner error, for the caller to try the other backend.
fn add_rules(
    inv: &Invocation,
    nf: &dyn Apply,
    backend: Backend,
    plan: &Plan,
    targets: &[Target],
) -> CniResult<crate::netfilter::Result<()>> {
    if backend == Backend::Nftables {
        let ips: Vec<_> = targets.iter().map(|t| t.address).collect();
        records::write(&records::data_dir(inv, DEFAULT_DATA_DIR)?, inv, &ips)?;
    }
    Ok(nf.portmap(backend, &Op::Add(plan.clone())))
}

/// UDP flows to a newly mapped port that started before the mapping keep their
/// old translation until they expire; drop them (best effort, as the reference:
/// every family is tried, the last failure returned). DEL drops those of its
/// mappings the same way.
fn flush_udp_conntrack(plan: &Plan, targets: &[Target]) -> crate::netlink::Result<()> {
    let mut outcome = Ok(());
    for t in targets {
        let family = Family::of(t.address.addr());
        let ports: Vec<u16> = plan
            .mappings
            .iter()
            .filter(|m| m.protocol == "udp")
            .filter(|m| m.host_ip.is_none_or(|ip| Family::of(ip) == family))
            .map(|m| m.host_port)
            .collect();
        let nfproto = crate::netfilter::nft::nfproto(family);
        if let Err(e) = crate::netlink::conntrack::delete_by_dport(nfproto, 17, &ports) {
            outcome = Err(e);
        }
    }
    outcome
}

/// `net.ipv4.conf.<interface towards ip>.route_localnet=1` in the host namespace.
fn enable_route_localnet(ip: IpAddr) -> CniResult<()> {
    let mut sock = Socket::open()?;
    // No route to the container from here: no interface to enable it on.
    let Ok(Some(route)) = sock.route_get(ip) else {
        return Ok(());
    };
    let Some(oif) = route.oif else { return Ok(()) };
    // Read and set over netlink: no /proc/sys path walk, whose cost grows with
    // the number of namespaces on the node; most ADDs find it already set.
    let link = sock.link_by_index(oif)?;
    if link.ipv4_conf(IPV4_DEVCONF_ROUTE_LOCALNET) != Some(1) {
        sock.set_link(oif, Change::Ipv4Conf(IPV4_DEVCONF_ROUTE_LOCALNET, 1))
            .with_context(|| {
                format!("failed to set net.ipv4.conf.{}.route_localnet=1", link.name)
            })?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "portmap_tests.rs"]
mod tests;
