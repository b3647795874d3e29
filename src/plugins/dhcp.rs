//! dhcp IPAM: addresses from a DHCP server, through the lease daemon
//! (`dhcp daemon`), which acquires and keeps them. The plugin checks the
//! config, builds the request (client-id, provided and requested options) and
//! turns the daemon's lease into the result; `priority` stays here.
//!
//! The daemon not running is code 11 (try again later) naming its socket, 50
//! for STATUS. DEL and GC with nothing held succeed even then: a stopped
//! daemon's leases are files beside its socket (`<socket>.leases/`, or where
//! that links to); when those cannot be read, they fail (11) as well.

use crate::cni::env::Command;
use crate::cni::{CniResult, Code, Error, Invocation, NetResult, Plugin};
use crate::dhcp::client::Request;
use crate::dhcp::lease::Lease;
use crate::dhcp::options::{self, Provide, RequestOption};
use crate::dhcp::protocol::{
    self, Attachment, Call, DEFAULT_SOCKET, Deadlines, ExchangeError, Failure, Keep, Kind, Reply,
};
use crate::quote::quoted;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Dhcp;

impl Plugin for Dhcp {
    /// The keys and option names ADD checks before it asks the daemon.
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        conf.priority.clone()?;
        conf.request(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let request = conf.request(inv)?;
        let call = Call::Allocate {
            attachment: attachment(inv),
            request,
        };
        let lease = conf.lease(call, Command::Add)?;
        Ok(lease.to_result(conf.priority.clone()?)?)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let a = attachment(inv);
        // The daemon releases what it keeps, with the request it kept: option
        // lists are not needed (nor checked) to let go.
        match release(&conf.socket, a.clone(), conf.bare_request(inv)?) {
            Ok(()) => Ok(()),
            Err(e) if e.not_running() && nothing_held(&conf.socket, Some(&a)) => Ok(()),
            Err(e) => Err(e.into_error(Command::Del, Some("the lease may still be held"))),
        }
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        // The daemon checks the lease it keeps: options are not sent again.
        let call = Call::Check {
            attachment: attachment(inv),
            request: conf.bare_request(inv)?,
        };
        let lease = conf.lease(call, Command::Check)?;
        // The lease must be the address the runtime was given.
        if let Some(prev) = inv.conf.prev_result()? {
            let v4: Vec<_> = prev
                .ips
                .iter()
                .filter(|ip| ip.address.addr().is_ipv4())
                .collect();
            if !v4.is_empty()
                && !v4
                    .iter()
                    .any(|ip| ip.address.addr() == std::net::IpAddr::V4(lease.address))
            {
                return Err(Error::internal(format!(
                    "the dhcp lease of {} is {}, which prevResult does not list",
                    attachment(inv),
                    lease.address
                )));
            }
        }
        Ok(())
    }

    /// Releases the leases of this network whose attachment is not in
    /// `cni.dev/valid-attachments`; without that key nothing is released.
    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        let Some(valid) = inv.conf.valid_attachments()? else {
            return Ok(());
        };
        let conf = Conf::load(inv)?;
        let call = Call::Gc {
            network: inv.conf.name().to_string(),
            valid: valid
                .into_iter()
                .map(|a| Keep {
                    container_id: a.container_id,
                    ifname: a.ifname,
                })
                .collect(),
        };
        match conf.exchange(&call, Command::Gc) {
            Ok(_) => Ok(()),
            Err(e) if e.not_running() && nothing_held(&conf.socket, None) => Ok(()),
            Err(e) => Err(e.into_error(Command::Gc, None)),
        }
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        conf.exchange(&Call::Status, Command::Status)
            .map(drop)
            .map_err(|e| e.into_error(Command::Status, None))
    }
}

/// The `ipam` keys of the reference's dhcp plugin.
#[derive(Debug, Default, Deserialize)]
#[serde(rename = "IPAMConfig", rename_all = "camelCase")]
struct IpamKeys {
    #[serde(default)]
    daemon_socket_path: Option<String>,
    #[serde(default)]
    provide: Option<Vec<Provide>>,
    #[serde(default)]
    request: Option<Vec<RequestOption>>,
    #[serde(default)]
    priority: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase")]
pub(crate) struct Keys {
    #[serde(default)]
    ipam: Option<IpamKeys>,
}

/// The config, checked.
#[derive(Debug)]
struct Conf {
    socket: PathBuf,
    provide: Vec<Provide>,
    request: Vec<RequestOption>,
    /// Metric of every route of the result (the reference's `priority`, 0 = none);
    /// refused when ADD uses it (DEL, CHECK, GC and STATUS do not).
    priority: CniResult<Option<u32>>,
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let keys: Keys = inv.conf.plugin_keys()?;
        let ipam = keys.ipam.unwrap_or_default();
        let priority = match ipam.priority.unwrap_or(0) {
            0 => Ok(None),
            p => u32::try_from(p).map(Some).map_err(|_| {
                Error::invalid_config(format!(
                    "invalid ipam.priority {p}: a route metric is 0 to {}",
                    u32::MAX
                ))
            }),
        };
        Ok(Conf {
            socket: PathBuf::from(
                ipam.daemon_socket_path
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| DEFAULT_SOCKET.to_string()),
            ),
            provide: ipam.provide.unwrap_or_default(),
            request: ipam.request.unwrap_or_default(),
            priority,
        })
    }

    /// The request the daemon sends for this attachment: option names checked
    /// here (code 7) before the daemon is asked.
    fn request(&self, inv: &Invocation) -> CniResult<Request> {
        let args = cni_args_pairs(&inv.env.args);
        Ok(Request {
            provide: options::provided(&self.provide, &args)?,
            request: options::requested(&self.request)?,
            ..self.bare_request(inv)?
        })
    }

    /// The request without options: where and who (netns made absolute, as the
    /// daemon may run elsewhere).
    fn bare_request(&self, inv: &Invocation) -> CniResult<Request> {
        let netns = if inv.env.netns.is_empty() {
            PathBuf::new()
        } else {
            std::path::absolute(&inv.env.netns).map_err(|e| {
                Error::caused_by(
                    Code::Internal,
                    format!("failed to make {} an absolute path", quoted(&inv.env.netns)),
                    e,
                )
            })?
        };
        Ok(Request {
            netns,
            ifname: inv.env.ifname.clone(),
            client_id: options::client_id(&inv.env.container_id, inv.conf.name(), &inv.env.ifname),
            provide: Vec::new(),
            request: Vec::new(),
        })
    }

    fn exchange(&self, call: &Call, verb: Command) -> Result<Reply, Unanswered> {
        exchange(&self.socket, call, verb)
    }

    /// A call whose answer is a lease.
    fn lease(&self, call: Call, verb: Command) -> CniResult<Lease> {
        match self.exchange(&call, verb) {
            Ok(Reply::Lease(lease)) => Ok(*lease),
            Ok(_) => Err(Error::internal(format!(
                "the dhcp daemon on {} answered {} without a lease",
                self.socket.display(),
                call.op()
            ))),
            Err(e) => Err(e.into_error(verb, None)),
        }
    }
}

/// Asks the daemon on `socket` to stop keeping an attachment's lease and give
/// it back (DEL; the doctor releases leftover leases the same way). The daemon
/// keeps the request it was given: `request` only names the attachment.
pub(crate) fn release(
    socket: &Path,
    attachment: Attachment,
    request: Request,
) -> Result<(), Unanswered> {
    let call = Call::Release {
        attachment,
        request,
    };
    exchange(socket, &call, Command::Del).map(drop)
}

fn exchange(socket: &Path, call: &Call, verb: Command) -> Result<Reply, Unanswered> {
    let limits = Deadlines {
        connect: Duration::from_secs(5),
        reply: reply_deadline(verb),
    };
    match protocol::exchange(socket, call, limits) {
        Ok(Reply::Failed(f)) => Err(Unanswered::Failed(call.op(), f)),
        Ok(reply) => Ok(reply),
        Err(e @ (ExchangeError::Unreachable { .. } | ExchangeError::Busy { .. })) => {
            Err(Unanswered::Down(e))
        }
        Err(e) => Err(Unanswered::Broken(e)),
    }
}

/// How long the daemon may take: an ADD runs the whole DHCP exchange (its
/// `-timeout`, 10 s by default); the others are quick.
fn reply_deadline(verb: Command) -> Duration {
    match verb {
        Command::Add => Duration::from_secs(300),
        Command::Status => Duration::from_secs(10),
        _ => Duration::from_secs(60),
    }
}

/// Why a call did not get the answer it wanted.
pub(crate) enum Unanswered {
    /// Nothing listens (or the queue stayed full): the daemon is not running.
    Down(ExchangeError),
    /// The daemon was reached, then the exchange failed.
    Broken(ExchangeError),
    /// The daemon answered with a failure.
    Failed(&'static str, Failure),
}

impl Unanswered {
    /// Nothing listens on the socket. (A full listen queue is a daemon that
    /// runs: it may be saving the very lease DEL would look for.)
    pub(crate) fn not_running(&self) -> bool {
        matches!(self, Unanswered::Down(ExchangeError::Unreachable { .. }))
    }

    pub(crate) fn into_error(self, verb: Command, note: Option<&str>) -> Error {
        let note = note.map(|n| format!(" ({n})")).unwrap_or_default();
        match self {
            Unanswered::Down(e) => {
                let code = match verb {
                    Command::Status => Code::NotAvailable,
                    _ => Code::TryAgainLater,
                };
                Error::new(code, format!("{e}{note}")).with_source(e)
            }
            Unanswered::Broken(e) => {
                let code = match verb {
                    Command::Status => Code::NotAvailable,
                    _ => Code::Internal,
                };
                Error::new(code, format!("{e}{note}")).with_source(e)
            }
            Unanswered::Failed(op, f) => {
                let code = match (verb, f.kind) {
                    (Command::Status, _) => Code::NotAvailable,
                    (_, Kind::UnknownOption | Kind::InvalidOption) => Code::InvalidConfig,
                    (_, Kind::Busy) => Code::TryAgainLater,
                    _ => Code::Internal,
                };
                Error::new(code, format!("dhcp daemon {op}: {}{note}", f.message)).with_source(f)
            }
        }
    }
}

fn attachment(inv: &Invocation) -> Attachment {
    Attachment {
        container_id: inv.env.container_id.clone(),
        network: inv.conf.name().to_string(),
        ifname: inv.env.ifname.clone(),
    }
}

/// CNI_ARGS as the reference's dhcp plugin reads it for `fromArg`: `K=V`
/// pairs split at the first `=`, anything else ignored (unknown keys included).
fn cni_args_pairs(raw: &str) -> Vec<(String, String)> {
    raw.split(';')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether a daemon that is not running surely holds nothing to release.
/// Every daemon keeps its leases in `<socket>.leases/` or links that there
/// (one that cannot make the link does not start), so nothing there means no
/// daemon ever kept a lease for this socket. Otherwise it must lead to a
/// directory a daemon locked (its lock file is in it) with no file for
/// `attachment` (None: no lease file at all). Anything else (a link that leads
/// nowhere from here, a directory of something else, an entry that cannot be
/// read) may hide a lease: not sure, so not nothing.
fn nothing_held(socket: &Path, attachment: Option<&Attachment>) -> bool {
    let dir = protocol::default_state_dir(socket);
    let absent = |p: &Path| {
        std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    };
    if absent(&dir) {
        return true;
    }
    let locked =
        std::fs::symlink_metadata(dir.join(protocol::STATE_LOCK)).is_ok_and(|m| m.is_file());
    if !locked {
        return false;
    }
    match attachment {
        Some(a) => absent(&dir.join(protocol::state_file_name(a))),
        None => std::fs::read_dir(&dir).is_ok_and(|entries| {
            entries
                .into_iter()
                .all(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().ends_with(".json")))
        }),
    }
}

#[cfg(test)]
#[path = "dhcp_tests.rs"]
mod tests;
