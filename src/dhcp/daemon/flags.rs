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
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Flags, clap::Error> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        Flags::parse_from_go(&args)
    }

    #[test]
    fn go_and_gnu_flags_are_both_accepted() {
        let f = parse(&[
            "-socketpath",
            "/tmp/d.sock",
            "--pidfile=/run/d.pid",
            "-hostprefix=/host",
            "-broadcast",
            "-timeout",
            "1m30s",
            "--resendmax",
            "5s",
            "-resendtimeout=1h",
            "-statedir",
            "/var/lib/d",
        ])
        .expect("flags");
        assert_eq!(f.socketpath, Some(PathBuf::from("/tmp/d.sock")));
        assert_eq!(f.pidfile, Some(PathBuf::from("/run/d.pid")));
        assert_eq!(f.hostprefix, "/host");
        assert!(f.broadcast);
        assert_eq!(f.timeout, Duration::from_secs(90));
        assert_eq!(f.resendmax, Duration::from_secs(5));
        assert_eq!(f.resendtimeout, Duration::from_secs(3600));
        assert_eq!(f.statedir, Some(PathBuf::from("/var/lib/d")));
    }

    #[test]
    fn defaults_are_the_references() {
        let f = parse(&[]).expect("no flags");
        assert_eq!(f.socketpath, None);
        assert!(!f.broadcast);
        assert_eq!(f.timeout, Duration::from_secs(10));
        assert_eq!(f.resendmax, Duration::from_secs(62));
        assert_eq!(f.resendtimeout, Duration::from_secs(208));
        // Go bools take `=value`; a value that looks like a flag stays a value.
        let f = parse(&["-broadcast=false", "-hostprefix", "-odd"]).expect("flags");
        assert!(!f.broadcast);
        assert_eq!(f.hostprefix, "-odd");
        assert!(parse(&["-nosuchflag"]).is_err());
        assert!(parse(&["-timeout", "ten"]).is_err());
    }
}
