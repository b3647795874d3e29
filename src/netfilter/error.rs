//! What a netfilter operation reports: the tool, table, netlink request,
//! firewalld call or lock that failed, with its cause kept as `source()`. Which CNI code each
//! becomes is decided in `error_codes.rs`, not here.

use crate::quote::quoted;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::{fmt, io};

#[derive(Debug)]
pub enum Error {
    /// `<tool> -t <table>` was needed but the tool or the kernel's table is missing.
    NoTable { tool: String, table: String },
    /// `<tool> -t <table>` ran but cannot show the table: iptables-nft says
    /// another nf_tables user made it in a form it cannot read.
    Incompatible { tool: String, table: String },
    /// A tool could not be run, waited for or fed (`op`: "run", "wait for", "write to").
    Tool {
        tool: String,
        op: &'static str,
        source: io::Error,
    },
    /// A tool ran and failed: its command, exit status, own error line, and
    /// the restore input it refused, if any.
    ToolFailed {
        command: String,
        status: ExitStatus,
        stderr: String,
        input: Option<String>,
    },
    /// A restore input line holding a control character, refused before any tool ran.
    ControlCharacter { line: String },
    /// An nf_tables request (or the nfnetlink socket) failed.
    Netlink(crate::netlink::Error),
    /// The lock serialising netfilter changes could not be taken.
    Lock { path: PathBuf, source: io::Error },
    /// A configuration value the rules cannot be built from.
    InvalidConfig(String),
    /// Neither iptables' tools nor nf_tables are there.
    NoBackend,
    /// CHECK found `owner`'s rules other than ADD left them.
    Mismatch { owner: &'static str, detail: String },
    /// A call to firewalld over the system bus failed: what was asked, and why.
    Firewalld {
        what: String,
        source: crate::dbus::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoTable { tool, table } => {
                write!(f, "{tool} -t {table}: the tool or the table does not exist")
            }
            Error::Incompatible { tool, table } => write!(
                f,
                "{tool} -t {table}: the table is incompatible (made by another nftables user)"
            ),
            Error::Tool { tool, op, source } => write!(f, "failed to {op} {tool}: {source}"),
            Error::ToolFailed {
                command,
                status,
                stderr,
                input,
            } => {
                write!(f, "{command} failed ({status}): {stderr}")?;
                match input {
                    Some(input) => write!(f, " (input:\n{input})"),
                    None => Ok(()),
                }
            }
            Error::ControlCharacter { line } => write!(
                f,
                "refusing iptables-restore input with a control character: {line}",
                line = quoted(&line)
            ),
            Error::Netlink(e) => write!(f, "nftables: {e}"),
            // lockfile's error already says what failed on which path.
            Error::Lock { source, .. } => write!(f, "{source}"),
            Error::InvalidConfig(msg) => f.write_str(msg),
            Error::NoBackend => f.write_str(
                "no usable netfilter backend: no iptables-save/iptables-restore and no nf_tables",
            ),
            Error::Mismatch { owner, detail } => write!(f, "{owner}: {detail}"),
            Error::Firewalld { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Tool { source, .. } | Error::Lock { source, .. } => Some(source),
            Error::Netlink(e) => Some(e),
            Error::Firewalld { source, .. } => Some(source),
            Error::NoTable { .. }
            | Error::Incompatible { .. }
            | Error::ToolFailed { .. }
            | Error::ControlCharacter { .. }
            | Error::InvalidConfig(_)
            | Error::NoBackend
            | Error::Mismatch { .. } => None,
        }
    }
}

impl Error {
    /// Whether iptables is installed but cannot be used here: its tables
    /// cannot be initialised (iptables-legacy on a kernel without them) or
    /// read (a nat table iptables-nft calls incompatible).
    pub fn iptables_unusable(&self) -> bool {
        match self {
            Error::NoTable { .. } | Error::Incompatible { .. } => true,
            Error::ToolFailed { stderr, .. } => [
                "can't initialize",
                "Table does not exist",
                "is incompatible",
                "Could not fetch rule set generation id",
            ]
            .iter()
            .any(|m| stderr.contains(m)),
            _ => false,
        }
    }
}

impl From<crate::netlink::Error> for Error {
    fn from(e: crate::netlink::Error) -> Self {
        Error::Netlink(e)
    }
}
