//! `dhcp daemon` (and `cni-multi dhcp daemon`): the process that acquires and
//! keeps the DHCP leases the dhcp plugin asks for over its unix socket.
//!
//! - `flags`: the reference's flags, Go syntax or GNU syntax, plus `-statedir`.
//! - `server`: socket (systemd's or its own, 0600; a stale one replaced),
//!   pidfile, signals, one thread per call (root peers only, with deadlines).
//! - `leases`: the table of leases, their keeper threads (T1, T2, expiry).
//! - `checks`: what a call must be before it is acted on.
//! - `state`: one file per lease under the state directory, reloaded at start.

mod checks;
mod flags;
mod leases;
mod server;
pub mod state;

use std::ffi::OsString;

/// The daemon's command line, for completion and the manual page.
pub fn command() -> clap::Command {
    <flags::Flags as clap::CommandFactory>::command()
}

/// Runs the daemon with the arguments after `daemon`; returns the exit status
/// (it returns only on a usage error or a failed start: a signal ends it with 0).
pub fn main(args: Vec<OsString>) -> i32 {
    let flags = match flags::Flags::parse_from_go(&args) {
        Ok(f) => f,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match server::run(flags) {
        Ok(()) => 0,
        Err(e) => {
            leases::log(format!("{e:#}"));
            1
        }
    }
}
