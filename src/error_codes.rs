//! Where layer errors become CNI errors: the one place that chooses the CNI
//! code for a failure of the kernel and rules layers (netlink, netns,
//! netfilter) and below. The layers report what failed and why (errno,
//! io::Error, path) and know nothing of CNI codes; plugins and their helpers
//! either pick a code for a decision of their own (bad config: 7, bad
//! environment: 4, ...) or let a layer error through with `?` /
//! `Context::context`, which lands here.
//!
//! The reference reports every such failure as a plain Go error, which libcni
//! prints as code 999; so do we, with the layer error kept as `source()`
//! (netfilter's own configuration and availability verdicts excepted, below).
//!
//! Where the errno says what the user can do (run as root, another interface
//! name, a stale route), the hint (`cni::hint`) goes into `details`: the
//! message stays the text of what failed.

use crate::cni::hint::{self, Doing};
use crate::cni::{Code, Error};
use crate::netlink::Object;

/// The hint for `errno` met while `doing`, for this process.
fn hint_for(errno: i32, doing: Doing<'_>) -> Option<String> {
    hint::for_errno(errno, doing, hint::running_as_root())
}

/// The hint for an io::Error's errno, if it has one.
fn io_hint(e: &std::io::Error, doing: Doing<'_>) -> Option<String> {
    hint_for(e.raw_os_error()?, doing)
}

/// What a netlink error's operation was doing, for its hint.
fn netlink_hint(e: &crate::netlink::Error) -> Option<String> {
    let doing = match &e.object {
        Object::Link(name) => Doing::Link(name),
        Object::Address => Doing::AddAddress,
        Object::Route => Doing::AddRoute,
        Object::Other => Doing::Network,
    };
    hint_for(e.errno, doing)
}

impl From<crate::netlink::Error> for Error {
    fn from(e: crate::netlink::Error) -> Self {
        Error::internal(e.to_string())
            .with_hint(netlink_hint(&e))
            .with_source(e)
    }
}

/// A namespace that is not there is the runtime's CNI_NETNS; entering or
/// mounting one is what needs privileges; a file is a file.
fn netns_hint(e: &crate::netns::Error) -> Option<String> {
    use crate::netns::Error as Ns;
    match e {
        Ns::NotFound(_) => Some(
            "CNI_NETNS must name an existing network namespace: the runtime makes it before ADD"
                .into(),
        ),
        Ns::Enter(_, errno) | Ns::Sys(_, _, errno) => hint_for(*errno as i32, Doing::Netns),
        Ns::Open(_, io) | Ns::File(io) => io_hint(io, Doing::Files),
        Ns::InvalidName(_) | Ns::NoSuchName(..) => None,
    }
}

impl From<crate::netns::Error> for Error {
    fn from(e: crate::netns::Error) -> Self {
        Error::internal(e.to_string())
            .with_hint(netns_hint(&e))
            .with_source(e)
    }
}

impl From<crate::kernel::sysctl::Error> for Error {
    fn from(e: crate::kernel::sysctl::Error) -> Self {
        use crate::kernel::sysctl::Error as Sysctl;
        let hint = match &e {
            Sysctl::Set { source, .. } => io_hint(source, Doing::Network),
            Sysctl::InvalidKey(_) | Sysctl::Get { .. } => None,
        };
        Error::internal(e.to_string())
            .with_hint(hint)
            .with_source(e)
    }
}

/// Range and address-count problems are config errors (7) as in the reference's
/// config loading; a bad version is a decode error (6); the rest 999.
impl From<crate::ipam::Error> for Error {
    fn from(e: crate::ipam::Error) -> Self {
        use crate::ipam::Error as Ipam;
        let code = match &e {
            Ipam::InvalidRange(_) | Ipam::TooManyAddresses { .. } => Code::InvalidConfig,
            Ipam::Version(_) => Code::Decode,
            Ipam::Unavailable(_) | Ipam::Store(_) => Code::Internal,
        };
        let hint = match &e {
            Ipam::Store(io) => io_hint(io, Doing::Files),
            _ => None,
        };
        Error::new(code, e.to_string())
            .with_hint(hint)
            .with_source(e)
    }
}

/// Netfilter's own decisions keep their codes: a configuration value the rules
/// cannot be built from is 7, no backend at all is 50 (as the reference's
/// STATUS); tool, netlink, firewalld, lock and CHECK failures are 999 like the
/// rest (the reference's firewalld errors are plain Go errors too).
impl From<crate::netfilter::Error> for Error {
    fn from(e: crate::netfilter::Error) -> Self {
        use crate::netfilter::Error as Nf;
        let code = match &e {
            Nf::InvalidConfig(_) => Code::InvalidConfig,
            Nf::NoBackend => Code::NotAvailable,
            Nf::NoTable { .. }
            | Nf::Incompatible { .. }
            | Nf::Tool { .. }
            | Nf::ToolFailed { .. }
            | Nf::ControlCharacter { .. }
            | Nf::Netlink(_)
            | Nf::Lock { .. }
            | Nf::Mismatch { .. }
            | Nf::Firewalld { .. } => Code::Internal,
        };
        let hint = match &e {
            Nf::Netlink(n) => netlink_hint(n),
            Nf::Lock { source, .. } => io_hint(source, Doing::Files),
            _ => None,
        };
        Error::new(code, e.to_string())
            .with_hint(hint)
            .with_source(e)
    }
}

/// The dhcp layer: an option name or value the config gives that cannot be
/// used is a config error (7, checked before the daemon is asked); no answer,
/// NAK, an incomplete ACK and socket/netns/netlink failures are 999 as the
/// reference reports them, with the layer error kept.
impl From<crate::dhcp::error::Error> for Error {
    fn from(e: crate::dhcp::error::Error) -> Self {
        use crate::dhcp::error::Error as Dhcp;
        let code = match &e {
            Dhcp::UnknownOption(_) | Dhcp::InvalidOption(_) => Code::InvalidConfig,
            Dhcp::NoAnswer { .. }
            | Dhcp::Nak { .. }
            | Dhcp::Incomplete(_)
            | Dhcp::Io { .. }
            | Dhcp::Netlink(_)
            | Dhcp::Netns(_) => Code::Internal,
        };
        let hint = match &e {
            Dhcp::Netlink(n) => netlink_hint(n),
            Dhcp::Netns(n) => netns_hint(n),
            Dhcp::Io { source, .. } => io_hint(source, Doing::Files),
            _ => None,
        };
        Error::new(code, e.to_string())
            .with_hint(hint)
            .with_source(e)
    }
}

#[cfg(test)]
#[path = "error_codes_tests.rs"]
mod tests;
