//! Where layer errors become CNI errors: the one place that chooses the CNI
//! code for a failure of the kernel layers (netlink, netns) and below. The
//! layers report what failed and why (errno, io::Error, path) and know
//! nothing of CNI codes; plugins and their helpers either pick a code for a
//! decision of their own (bad config: 7, bad environment: 4, ...) or let a
//! layer error through with `?` / `Context::context`, which lands here.
//!
//! The reference reports every such failure as a plain Go error, which libcni
//! prints as code 999; so do we, with the layer error kept as `source()`.

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
