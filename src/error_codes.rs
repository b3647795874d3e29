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
mod tests {
    use super::*;
    use crate::netfilter;
    use std::error::Error as _;

    #[test]
    fn netfilter_errors_keep_their_codes_text_and_cause() {
        let e = Error::from(netfilter::Backend::parse("ebtables").expect_err("unknown"));
        assert_eq!(
            (e.code, e.msg.as_str()),
            (7, "unknown backend \"ebtables\" (iptables or nftables)")
        );
        let e = Error::from(netfilter::Error::NoBackend);
        assert_eq!(e.code, 50);
        assert!(e.msg.starts_with("no usable netfilter backend"), "{e}");
        let e = Error::from(netfilter::Error::Lock {
            path: netfilter::LOCK_PATH.into(),
            source: std::io::Error::from_raw_os_error(13),
        });
        assert_eq!(
            (e.code, e.msg.as_str()),
            (999, "Permission denied (os error 13)")
        );
        // The chain: CNI error -> netfilter error -> io error.
        let io = e.source().and_then(|nf| nf.source()).expect("the io error");
        assert_eq!(io.to_string(), "Permission denied (os error 13)");
    }

    /// A layer error's hint goes into the details, by errno and by what the
    /// operation did; the message stays the layer's sentence.
    #[test]
    fn layer_errors_carry_the_hint_for_their_errno_in_the_details() {
        use crate::netlink::Error as Nl;
        use nix::errno::Errno;
        let taken =
            Nl::os("create veth link \"eth0\"", Errno::EEXIST).about(Object::Link("eth0".into()));
        let e = Error::from(taken);
        assert_eq!(
            (e.code, e.msg.as_str()),
            (999, "create veth link \"eth0\": File exists")
        );
        assert_eq!(e.details, hint::link_exists("eth0"));
        let route = Error::from(Nl::os("add route x", Errno::EEXIST).about(Object::Route));
        assert!(
            route.details.starts_with("an equal route already exists"),
            "{route}"
        );
        let denied = Error::from(Nl::os("create bridge link \"cni0\"", Errno::EPERM));
        assert!(
            denied
                .details
                .ends_with("this needs CAP_NET_ADMIN to change the network"),
            "{denied}"
        );
        // An errno with nothing to do about it, or no errno: no details.
        assert_eq!(Error::from(Nl::os("get link 3", Errno::ENODEV)).details, "");
        assert_eq!(Error::from(Nl::os("x", Errno::EEXIST)).details, "");
        let ns = |e| Error::from(e).details;
        let entering = ns(crate::netns::Error::Enter(
            "/run/netns/x".into(),
            Errno::EPERM,
        ));
        assert!(
            entering.ends_with("this needs CAP_SYS_ADMIN to enter or mount network namespaces")
        );
        let gone = ns(crate::netns::Error::NotFound("/run/netns/x".into()));
        assert!(gone.starts_with("CNI_NETNS must name an existing network namespace"));
        // Through the netfilter layer, the netlink error's hint.
        let nft = Error::from(netfilter::Error::Netlink(Nl::os("add rule", Errno::EPERM)));
        assert!(nft.details.contains("CAP_NET_ADMIN"), "{nft}");
    }

    #[test]
    fn firewalld_errors_are_999_and_keep_the_bus_error() {
        let e = Error::from(netfilter::Error::Firewalld {
            what: "failed to add the address 10.1.2.3/32 to x zone".into(),
            source: crate::dbus::Error::Remote {
                name: "org.fedoraproject.FirewallD1.Exception".into(),
                message: "INVALID_ZONE: x".into(),
            },
        });
        assert_eq!(
            (e.code, e.msg.as_str()),
            (
                999,
                "failed to add the address 10.1.2.3/32 to x zone: INVALID_ZONE: x"
            )
        );
        let bus = e
            .source()
            .and_then(|nf| nf.source())
            .expect("the bus error");
        assert_eq!(bus.to_string(), "INVALID_ZONE: x");
    }

    #[test]
    fn dhcp_option_errors_are_config_errors_and_the_rest_999_with_their_cause() {
        use crate::dhcp::error::Error as Dhcp;
        let e = Error::from(Dhcp::UnknownOption("no-such".into()));
        assert_eq!(e.code, 7);
        assert!(e.msg.contains("no-such"), "{e}");
        assert_eq!(Error::from(Dhcp::InvalidOption("x".into())).code, 7);
        let e = Error::from(Dhcp::NoAnswer {
            ifname: "eth0".into(),
            after: std::time::Duration::from_secs(10),
        });
        assert_eq!(e.code, 999);
        assert!(e.msg.contains("eth0"), "{e}");
        let e = Error::from(Dhcp::Io {
            op: "bind".into(),
            source: std::io::Error::from_raw_os_error(13),
        });
        assert_eq!(e.code, 999);
        let io = e.source().and_then(|d| d.source()).expect("the io error");
        assert_eq!(io.to_string(), "Permission denied (os error 13)");
    }
}
