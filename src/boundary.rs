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

impl From<crate::netlink::sysctl::Error> for Error {
    fn from(e: crate::netlink::sysctl::Error) -> Self {
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
/// STATUS); tool, netlink, lock and CHECK failures are 999 like the rest.
impl From<crate::netfilter::Error> for Error {
    fn from(e: crate::netfilter::Error) -> Self {
        use crate::netfilter::Error as Nf;
        let code = match &e {
            Nf::InvalidConfig(_) => Code::InvalidConfig,
            Nf::NoBackend => Code::NotAvailable,
            Nf::NoTable { .. }
            | Nf::Tool { .. }
            | Nf::ToolFailed { .. }
            | Nf::ControlCharacter { .. }
            | Nf::Netlink(_)
            | Nf::Lock { .. }
            | Nf::Mismatch { .. } => Code::Internal,
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
}
