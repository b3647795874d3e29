//! The daemon's command line: the reference's flags (Go's `flag` syntax:
//! `-name value`, `-name=value`, `--name`, bare `-broadcast`) plus `-statedir`.

use crate::goflags::{go_to_gnu, parse_go_bool, parse_go_duration};
use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The CNI dhcp IPAM daemon: acquires and keeps the leases the dhcp plugin asks
/// for. Flags take one or two dashes (-socketpath or --socketpath).
#[derive(Debug, Parser)]
#[command(name = "dhcp daemon", version, long_about = None)]
pub struct Flags {
    /// Path to write the daemon's PID to (absolute)
    #[arg(long, value_name = "PATH")]
    pub pidfile: Option<PathBuf>,
    /// Prefix of the host's root, prepended to netns and socket paths (daemon in a container)
    #[arg(long, value_name = "DIR", default_value = "")]
    pub hostprefix: String,
    /// The plugin's socket [default: /run/cni/dhcp.sock]
    #[arg(long, value_name = "PATH")]
    pub socketpath: Option<PathBuf>,
    /// Set the broadcast flag in DHCP messages (servers answer by broadcast)
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_go_bool, value_name = "BOOL", default_value = "false")]
    pub broadcast: bool,
    /// How long one ADD may take to get a lease (Go duration: 10s, 1m30s)
    #[arg(long, value_parser = parse_go_duration, value_name = "DURATION", default_value = "10s")]
    pub timeout: Duration,
    /// Longest pause between resends
    #[arg(long, value_parser = parse_go_duration, value_name = "DURATION", default_value = "62s")]
    pub resendmax: Duration,
    /// No more resends after this long
    #[arg(long, value_parser = parse_go_duration, value_name = "DURATION", default_value = "208s")]
    pub resendtimeout: Duration,
    /// Where leases are kept across restarts [default: <socketpath>.leases]
    #[arg(long, value_name = "DIR")]
    pub statedir: Option<PathBuf>,
}

/// Flags that take a value (`-name value`); the rest are booleans.
const VALUED: [&str; 7] = [
    "pidfile",
    "hostprefix",
    "socketpath",
    "timeout",
    "resendmax",
    "resendtimeout",
    "statedir",
];

impl Flags {
    /// Parses the arguments after `daemon` (Go's single-dash long flags turned
    /// into clap's double-dash ones first).
    pub fn parse_from_go(args: &[OsString]) -> Result<Flags, clap::Error> {
        let mut argv = vec![OsString::from("dhcp daemon")];
        argv.extend(go_to_gnu(args, &VALUED));
        Flags::try_parse_from(argv)
    }
}

#[cfg(test)]
#[path = "flags_tests.rs"]
mod tests;
