//! The dhcp layer's error. It names the interface or operation and keeps the
//! cause; which CNI code it becomes is decided in `error_codes.rs`.

use crate::quote::quoted;
use std::fmt;
use std::time::Duration;

#[derive(Debug)]
pub enum Error {
    /// A `provide`/`request` option name that is neither known nor a decimal 1..=254.
    UnknownOption(String),
    /// A provide value that is invalid (over 255 bytes, `fromArg` key absent, ...).
    InvalidOption(String),
    /// No OFFER/ACK within the time allowed (names the interface and the time).
    NoAnswer {
        ifname: String,
        after: Duration,
    },
    /// The server said NAK.
    Nak {
        ifname: String,
        message: String,
    },
    /// The ACK lacks something the result needs (subnet mask).
    Incomplete(String),
    /// A socket / netns / netlink operation failed (op names what, source keeps the cause).
    Io {
        op: String,
        source: std::io::Error,
    },
    Netlink(crate::netlink::Error),
    Netns(crate::netns::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(op: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            op: op.into(),
            source,
        }
    }

    pub(crate) fn os(op: impl Into<String>, errno: nix::errno::Errno) -> Error {
        Error::io(op, std::io::Error::from(errno))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownOption(name) => write!(
                f,
                "unknown DHCP option {name}: not a known name or a decimal code 1-254",
                name = quoted(&name)
            ),
            Error::InvalidOption(what) => write!(f, "invalid DHCP option: {what}"),
            Error::NoAnswer { ifname, after } => write!(
                f,
                "no answer from a DHCP server on {ifname} within {:.1} s",
                after.as_secs_f64()
            ),
            Error::Nak { ifname, message } if message.is_empty() => {
                write!(f, "the DHCP server refused the request on {ifname} (NAK)")
            }
            Error::Nak { ifname, message } => write!(
                f,
                "the DHCP server refused the request on {ifname} (NAK: {message})"
            ),
            Error::Incomplete(what) => write!(f, "DHCP lease incomplete: {what}"),
            Error::Io { op, source } => write!(f, "{op}: {source}"),
            Error::Netlink(e) => write!(f, "{e}"),
            Error::Netns(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Netlink(e) => Some(e),
            Error::Netns(e) => Some(e),
            Error::UnknownOption(_)
            | Error::InvalidOption(_)
            | Error::NoAnswer { .. }
            | Error::Nak { .. }
            | Error::Incomplete(_) => None,
        }
    }
}

impl From<crate::netlink::Error> for Error {
    fn from(e: crate::netlink::Error) -> Self {
        Error::Netlink(e)
    }
}

impl From<crate::netns::Error> for Error {
    fn from(e: crate::netns::Error) -> Self {
        Error::Netns(e)
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
