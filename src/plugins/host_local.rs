//! host-local IPAM: addresses from configured ranges, one per range set, with the
//! reservations on disk in the reference's format (see ipam::store).

use crate::cni::error::Context;
use crate::cni::result::{IpConfig, Route};
use crate::cni::{CniResult, Code, Error, Invocation, NetResult, Plugin};
use crate::ipam::allocator::allocate;
use crate::ipam::range::{Range, RangeSet};
use crate::ipam::store::{DEFAULT_DATA_DIR, DiskStore};
use crate::ipam::{check_addresses_per_family, parse_requested_ip};
use crate::quote::quoted;
use ipnet::IpNet;
use serde::Deserialize;
use std::net::IpAddr;
use std::path::PathBuf;

pub struct HostLocal;

impl Plugin for HostLocal {
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv)?.data_dir.map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let mut result = NetResult::new();
        if let Some(path) = &conf.resolv_conf {
            result.dns = parse_resolv_conf(path)?;
        }
        let store = conf.open_store()?;
        let (id, ifname) = (inv.env.container_id.as_str(), inv.env.ifname.as_str());
        let mut requested = conf.requested.clone();
        // On failure, give back only what this call reserved: a duplicate ADD
        // must not release the reservation the first ADD made.
        let release = |store: &DiskStore, got: &NetResult| {
            for ip in &got.ips {
                let _ = store.release_ip(ip.address.addr());
            }
        };
        for (idx, set) in conf.sets.iter().enumerate() {
            let wanted = requested
                .iter()
                .position(|ip| set.contains(*ip))
                .map(|i| requested.remove(i));
            match allocate(&store, set, idx, id, ifname, wanted) {
                Ok(a) => result.ips.push(IpConfig {
                    interface: None,
                    address: a.address,
                    gateway: Some(a.gateway),
                }),
                Err(e) => {
                    release(&store, &result);
                    return Err(
                        Error::from(e).context(format!("failed to allocate for range {idx}"))
                    );
                }
            }
        }
        if !requested.is_empty() {
            release(&store, &result);
            let left: Vec<String> = requested.iter().map(ToString::to_string).collect();
            return Err(Error::internal(format!(
                "failed to allocate all requested IPs: {}",
                left.join(" ")
            )));
        }
        result.routes = conf.routes;
        Ok(result)
    }

    /// A `dataDir` ADD refuses (`..`) holds nothing of ours: success, said on stderr.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        if let Err(e) = &conf.data_dir {
            eprintln!("host-local: nothing to release: {e}");
            return Ok(());
        }
        let store = conf.open_store()?;
        store.release_by_id(&inv.env.container_id, &inv.env.ifname)?;
        Ok(())
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let store = conf.open_store()?;
        let held = store.get_by_id(&inv.env.container_id, &inv.env.ifname)?;
        if held.is_empty() {
            return Err(Error::internal(format!(
                "host-local: Failed to find address added by container {}",
                inv.env.container_id
            )));
        }
        Ok(())
    }

    /// Releases every reservation whose attachment is not in
    /// `cni.dev/valid-attachments`. Without that key nothing is released: a runtime
    /// that sends no list (cnitool) must not wipe the store.
    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        let Some(valid) = inv.conf.valid_attachments()? else {
            return Ok(());
        };
        let conf = Conf::load(inv)?;
        let store = conf.open_store()?;
        let mut errors = Vec::new();
        for r in store.reservations()? {
            let alive = valid.iter().any(|a| {
                a.container_id == r.container_id && (r.ifname.is_empty() || a.ifname == r.ifname)
            });
            if !alive && let Err(e) = store.release_ip(r.ip) {
                errors.push(e.to_string());
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::internal(errors.join("; ")))
        }
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        conf.open_store()
            .map(drop)
            .map_err(|e| Error::caused_by(Code::NotAvailable, "host-local store is not usable", e))
    }
}

/// The `ipam` section as the reference reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename = "allocator.IPAMConfig", rename_all = "camelCase")]
struct IpamKeys {
    #[serde(default)]
    subnet: Option<IpNet>,
    #[serde(default)]
    range_start: Option<IpAddr>,
    #[serde(default)]
    range_end: Option<IpAddr>,
    #[serde(default)]
    gateway: Option<IpAddr>,
    #[serde(default)]
    ranges: Option<Vec<Vec<Range>>>,
    #[serde(default)]
    routes: Option<Vec<Route>>,
    #[serde(default)]
    data_dir: Option<String>,
    #[serde(default)]
    resolv_conf: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename = "Net", rename_all = "camelCase")]
pub(crate) struct Keys {
    ipam: Option<IpamKeys>,
}

/// Everything an operation needs, validated.
#[derive(Debug)]
struct Conf {
    network: String,
    /// Refused when used (DEL of a refused dataDir succeeds, see `del`).
    data_dir: CniResult<PathBuf>,
    sets: Vec<RangeSet>,
    routes: Vec<Route>,
    resolv_conf: Option<String>,
    requested: Vec<IpAddr>,
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let keys: Keys = inv.conf.plugin_keys()?;
        let ipam = keys
            .ipam
            .ok_or_else(|| Error::invalid_config("IPAM config missing 'ipam' key"))?;
        let requested = requested_ips(inv)?;

        // Order of range sets: ipRanges capability, legacy single range, `ranges`.
        let mut raw_sets: Vec<Vec<Range>> = inv
            .conf
            .runtime_config::<Vec<Vec<Range>>>("ipRanges")?
            .unwrap_or_default();
        if let Some(subnet) = ipam.subnet {
            raw_sets.push(vec![Range {
                subnet,
                range_start: ipam.range_start,
                range_end: ipam.range_end,
                gateway: ipam.gateway,
            }]);
        }
        raw_sets.extend(ipam.ranges.unwrap_or_default());
        if raw_sets.is_empty() {
            return Err(Error::invalid_config("no IP ranges specified"));
        }
        let sets = raw_sets
            .iter()
            .enumerate()
            .map(|(i, s)| {
                RangeSet::canonicalize(s)
                    .map_err(|e| Error::from(e).context(format!("invalid range set {i}")))
            })
            .collect::<CniResult<Vec<_>>>()?;
        // Each set yields one address, so the sets' families are the addresses'.
        let families = sets.iter().map(|s| match s.is_ipv4() {
            true => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            false => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        });
        check_addresses_per_family(inv.conf.cni_version(), families)?;
        for (i, a) in sets.iter().enumerate() {
            if let Some(j) = sets[i + 1..].iter().position(|b| a.overlaps(b)) {
                return Err(Error::invalid_config(format!(
                    "range set {i} overlaps with {}",
                    i + j + 1
                )));
            }
        }
        Ok(Conf {
            network: inv.conf.name().to_string(),
            data_dir: crate::cni::config::path_setting(
                ipam.data_dir.as_deref(),
                DEFAULT_DATA_DIR,
                "dataDir",
            ),
            sets,
            routes: ipam.routes.unwrap_or_default(),
            resolv_conf: ipam.resolv_conf.filter(|s| !s.is_empty()),
            requested,
        })
    }

    fn open_store(&self) -> CniResult<DiskStore> {
        let dir = self.data_dir.as_ref().map_err(Clone::clone)?;
        Ok(DiskStore::open(dir, &self.network)?)
    }
}

/// Requested IPs from CNI_ARGS `IP`, `args.cni.ips` and `runtimeConfig.ips`.
/// The same address given twice is one request, as in the reference (a map
/// keyed by address): Multus sends a selection's `ips` both as `IP=` and as
/// the `ips` capability. `IP=` may list several addresses, comma-separated,
/// as Multus sends them (the reference takes one).
fn requested_ips(inv: &Invocation) -> CniResult<Vec<IpAddr>> {
    let mut out: Vec<IpAddr> = Vec::new();
    let mut push = |ip: IpAddr| {
        if !out.contains(&ip) {
            out.push(ip);
        }
    };
    if let Some(ips) = inv.cni_args.get("IP") {
        for ip in ips.split(',').map(str::trim) {
            push(parse_requested_ip(ip).ok_or_else(|| {
                Error::invalid_env(format!(
                    "ARGS: error parsing value of pair \"IP={ips}\": invalid IP address: {ip}"
                ))
            })?);
        }
    }
    let from_args = inv.conf.args_cni::<Vec<String>>("ips")?.unwrap_or_default();
    let from_runtime = inv
        .conf
        .runtime_config::<Vec<String>>("ips")?
        .unwrap_or_default();
    for s in from_args.iter().chain(&from_runtime) {
        push(parse_requested_ip(s).ok_or_else(|| {
            Error::invalid_config(format!("cannot understand ip: {s}", s = quoted(&s)))
        })?);
    }
    Ok(out)
}

/// resolv.conf → result DNS: nameserver, domain, search, options; `#`/`;` comments.
fn parse_resolv_conf(path: &str) -> CniResult<crate::cni::result::Dns> {
    let text = crate::files::read_string_limited(path, crate::files::MAX_FILE)
        .with_context(|| format!("failed to read resolvConf {path}"))?;
    let mut dns = crate::cni::result::Dns::default();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 2 {
            continue;
        }
        let rest = fields[1..].iter().map(|s| s.to_string());
        match fields[0] {
            "nameserver" => dns.nameservers.push(fields[1].to_string()),
            "domain" => dns.domain = fields[1].to_string(),
            "search" => dns.search.extend(rest),
            "options" => dns.options.extend(rest),
            _ => {}
        }
    }
    Ok(dns)
}
