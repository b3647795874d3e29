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

use crate::cni::{Code, Error};

impl From<crate::netlink::Error> for Error {
    fn from(e: crate::netlink::Error) -> Self {
        Error::internal(e.to_string()).with_source(e)
    }
}

impl From<crate::netns::Error> for Error {
    fn from(e: crate::netns::Error) -> Self {
        Error::internal(e.to_string()).with_source(e)
    }
}

impl From<crate::kernel::sysctl::Error> for Error {
    fn from(e: crate::kernel::sysctl::Error) -> Self {
        Error::internal(e.to_string()).with_source(e)
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
        Error::new(code, e.to_string()).with_source(e)
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
        Error::new(code, e.to_string()).with_source(e)
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
        Error::new(code, e.to_string()).with_source(e)
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
