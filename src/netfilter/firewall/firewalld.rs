//! The firewall's firewalld form (the reference's `firewalld.go`): each
//! container address, as a host prefix, becomes a source of a firewalld zone
//! over the system bus (`org.fedoraproject.FirewallD1.zone`): addSource on
//! ADD, removeSource on DEL, querySource on CHECK. firewalld writes the rules.

use crate::dbus::wire::Call;
use crate::dbus::{self, Conn};
use crate::netfilter::{Error, Result};
use ipnet::IpNet;
use std::fmt;

pub const NAME: &str = "org.fedoraproject.FirewallD1";
const PATH: &str = "/org/fedoraproject/FirewallD1";
const ZONE_INTERFACE: &str = "org.fedoraproject.FirewallD1.zone";
/// The zone when `firewalldZone` is unset.
pub const DEFAULT_ZONE: &str = "trusted";
/// firewalld's answer to adding a source the zone already has.
const ZONE_ALREADY_SET: &str = "ZONE_ALREADY_SET";
/// The error name of firewalld's own refusals; the message starts with its code.
const EXCEPTION: &str = "org.fedoraproject.FirewallD1.Exception";
/// firewalld's codes for removeSource of a source that is not in the zone:
/// in no zone at all, in another zone (1.x), not in this one (0.x), or a
/// zone that does not exist.
const NOT_IN_ZONE: [&str; 4] = [
    "UNKNOWN_SOURCE",
    "ZONE_CONFLICT",
    "NOT_ENABLED",
    "INVALID_ZONE",
];
/// The bus's answers to a call for a name nobody owns (firewalld stopped
/// between our question and the call).
const NO_OWNER: [&str; 2] = [
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
];

/// `ip/32` or `ip/128`, as the reference names a source.
pub fn source(ip: &IpNet) -> String {
    let bits = if ip.addr().is_ipv4() { 32 } else { 128 };
    format!("{}/{bits}", ip.addr())
}

fn zone_call<'a>(member: &'a str, args: &'a [&'a str]) -> Call<'a> {
    Call {
        destination: NAME,
        path: PATH,
        interface: ZONE_INTERFACE,
        member,
        args,
    }
}

fn failed(what: String) -> impl FnOnce(dbus::Error) -> Error {
    move |source| Error::Firewalld { what, source }
}

/// Whether firewalld owns its name on the system bus (what makes it the
/// default backend); any failure to ask means no.
pub fn running() -> bool {
    Conn::system()
        .and_then(|mut c| c.name_has_owner(NAME))
        .unwrap_or(false)
}

/// ADD: each address into `zone`; one already there is fine.
pub fn add(zone: &str, ips: &[IpNet]) -> Result<()> {
    let mut conn = Conn::system().map_err(failed("failed to connect to the system bus".into()))?;
    for ip in ips {
        let src = source(ip);
        match conn.call_string(&zone_call("addSource", &[zone, &src])) {
            Ok(_) => {}
            Err(e) if e.to_string().contains(ZONE_ALREADY_SET) => {}
            Err(e) => {
                return Err(failed(format!(
                    "failed to add the address {src} to {zone} zone"
                ))(e));
            }
        }
    }
    Ok(())
}

/// Why DEL found nothing to remove from firewalld.
#[derive(Debug)]
pub enum Gone {
    /// The system bus is not there.
    NoBus(dbus::Error),
    /// Nobody owns firewalld's name on the bus.
    NotRunning,
}

impl fmt::Display for Gone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gone::NoBus(e) => write!(f, "no system bus ({e})"),
            Gone::NotRunning => write!(f, "{NAME} has no owner on the system bus"),
        }
    }
}

/// Whether a removeSource error says the source is not in the zone.
fn not_in_zone(e: &dbus::Error) -> bool {
    match e {
        dbus::Error::Remote { name, message } if name == EXCEPTION => {
            let code = message.split(':').next().unwrap_or_default().trim();
            NOT_IN_ZONE.contains(&code)
        }
        _ => false,
    }
}

/// DEL: each address out of `zone`. firewalld's answers that the address is
/// not in the zone are success; any other error fails DEL, as the source may
/// still be there (the reference ignores every error here). When firewalld
/// is gone, its runtime sources went with it: nothing to do, and the caller
/// learns why (`Some`).
pub fn del(zone: &str, ips: &[IpNet]) -> Result<Option<Gone>> {
    let mut conn = match Conn::system() {
        Ok(c) => c,
        Err(e) if e.is_unreachable() => return Ok(Some(Gone::NoBus(e))),
        Err(e) => return Err(failed("failed to connect to the system bus".into())(e)),
    };
    let owned = conn
        .name_has_owner(NAME)
        .map_err(failed(format!("failed to ask the bus whether {NAME} runs")))?;
    if !owned {
        return Ok(Some(Gone::NotRunning));
    }
    for ip in ips {
        let src = source(ip);
        match conn.call_string(&zone_call("removeSource", &[zone, &src])) {
            Ok(_) => {}
            Err(e) if not_in_zone(&e) => {}
            Err(e) if NO_OWNER.iter().any(|n| e.is_remote(n)) => {
                return Ok(Some(Gone::NotRunning));
            }
            Err(e) => {
                return Err(failed(format!(
                    "failed to remove the address {src} from {zone} zone"
                ))(e));
            }
        }
    }
    Ok(None)
}

/// CHECK: each address is a source of `zone`.
pub fn check(zone: &str, ips: &[IpNet]) -> Result<()> {
    let mut conn = Conn::system().map_err(failed("failed to connect to the system bus".into()))?;
    for ip in ips {
        let src = source(ip);
        let what = || format!("failed to find the address {src} in {zone} zone");
        if !conn
            .call_bool(&zone_call("querySource", &[zone, &src]))
            .map_err(failed(what()))?
        {
            return Err(Error::Mismatch {
                owner: "firewall",
                detail: what(),
            });
        }
    }
    Ok(())
}

/// The host-prefix sources of `zone` (what ADD adds; other sources are
/// never a container's). None when firewalld does not run: its runtime
/// sources went with it.
pub fn sources(zone: &str) -> Result<Option<Vec<IpNet>>> {
    if !running() {
        return Ok(None);
    }
    let mut conn = Conn::system().map_err(failed("failed to connect to the system bus".into()))?;
    let sources = conn
        .call_strings(&zone_call("getSources", &[zone]))
        .map_err(failed(format!("failed to list the sources of {zone} zone")))?;
    Ok(Some(host_sources(&sources)))
}

/// The sources that are host prefixes, as [`source`] writes them.
pub fn host_sources(sources: &[String]) -> Vec<IpNet> {
    sources
        .iter()
        .filter_map(|s| s.parse::<IpNet>().ok())
        .filter(|n| n.prefix_len() == n.max_prefix_len())
        .collect()
}

#[cfg(test)]
#[path = "firewalld_tests.rs"]
mod tests;
