//! `cni-multi flanneld` (also as `flanneld`): flannel's network daemon in
//! etcd mode, so a node's whole pod network is this one binary. It leases a
//! subnet per node in etcd exactly as Go flanneld does (so both can share a
//! cluster), writes the subnet file the `flannel` plugin reads, and keeps the
//! vxlan or host-gw data path to every other node (docs/flanneld.md).
//!
//! - `flags`: flanneld's flags and `FLANNELD_*` variables.
//! - `config`, `lease`, `alloc`, `subnet_env`: flannel's formats and rules, pure.
//! - `iface`: the external interface.
//! - `registry`: our lease in etcd; `watch`: everyone's, kept current.
//! - `backend`: routes, neighbours and FDB entries, reconciled.
//! - `health`: the probes and systemd's readiness; `daemon`: the loop.

pub mod alloc;
mod backend;
pub mod config;
mod daemon;
mod flags;
mod health;
mod iface;
pub mod lease;
mod registry;
pub mod subnet_env;
mod watch;

use std::ffi::OsString;

/// What the worker threads tell the daemon's loop.
pub(crate) enum Msg {
    /// Every lease under the prefix, after a list or a watch event.
    Leases(watch::Leases),
    /// Our etcd lease is gone (expired while etcd was unreachable).
    LeaseExpired,
    Stop(nix::sys::signal::Signal),
}

/// flanneld's command line, for completion and the manual page.
pub fn command() -> clap::Command {
    <flags::Flags as clap::CommandFactory>::command()
}

/// Runs flanneld with the arguments after the program name; returns the exit status.
pub fn main(args: Vec<OsString>) -> i32 {
    let flags = match flags::Flags::parse(&args, &|k| std::env::var(k).ok()) {
        Ok(f) => f,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match daemon::run(flags) {
        Ok(code) => code,
        Err(e) => {
            log(format!("{e:#}"));
            1
        }
    }
}

pub(crate) fn log(msg: impl std::fmt::Display) {
    use std::io::Write;
    let line = crate::quote::log_line("flanneld", msg);
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
