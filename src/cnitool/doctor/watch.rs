//! `--on-firewalld-reload`: a firewalld reload drops the runtime state
//! plugins gave it (zone sources) and, with its iptables backend, the chains
//! of everyone else; so the doctor runs once, then again after each of
//! firewalld's `Reloaded` signals. The subscription is made before the first
//! run, so a reload during that run is not missed. It runs until the bus goes
//! away (a restarted bus has forgotten the subscription): then it fails, for
//! its service manager to start it again.
//!
//! Anyone on the system bus may broadcast a signal named `Reloaded`: only
//! those sent by the connection that owns firewalld's name count (the match
//! rule names the sender, and the unique name is checked), and a burst gives
//! one pass, at most one per `GAP`.

use super::super::Settings;
use super::DoctorArgs;
use crate::dbus::{self, Conn, Next};
use std::time::{Duration, Instant};

const NAME: &str = "org.fedoraproject.FirewallD1";
const PATH: &str = "/org/fedoraproject/FirewallD1";
const INTERFACE: &str = NAME;
const MEMBER: &str = "Reloaded";
/// The exit status when the bus cannot be watched (any more).
const NO_BUS: i32 = 3;
/// The least time between two passes.
const GAP: Duration = Duration::from_secs(5);

pub(super) fn main(settings: &Settings, args: &DoctorArgs) -> i32 {
    let mut conn = match subscribe() {
        Ok(conn) => conn,
        Err(e) => return no_bus(&format!("cannot watch firewalld's reloads: {e}")),
    };
    super::run(settings, args);
    let mut last = Instant::now();
    loop {
        // Wait for a reload; then the rest of its burst, and what comes until
        // the gap since the last pass is over, is this pass's.
        let mut deadline = None;
        loop {
            match reloaded(&mut conn, deadline) {
                Ok(Some(true)) => deadline = Some(last + GAP),
                Ok(Some(false)) => break,
                Ok(None) => return no_bus("the system bus went away"),
                Err(e) => return no_bus(&format!("failed to wait for firewalld's reloads: {e}")),
            }
        }
        eprintln!("cnitool doctor: firewalld reloaded; checking again");
        super::run(settings, args);
        last = Instant::now();
    }
}

/// Says why the bus cannot be watched (any more); the exit status for it.
fn no_bus(why: &str) -> i32 {
    eprintln!("cnitool doctor: {why}");
    NO_BUS
}

/// Waits (until `deadline`, if any) for a `Reloaded` from firewalld itself:
/// Some(true) when one came, Some(false) when the deadline passed, None when
/// the bus closed. Signals from any other sender are skipped.
fn reloaded(conn: &mut Conn, deadline: Option<Instant>) -> dbus::Result<Option<bool>> {
    loop {
        let msg = match conn.next_signal_by(INTERFACE, MEMBER, deadline)? {
            Next::Signal(msg) => msg,
            Next::Quiet => return Ok(Some(false)),
            Next::Closed => return Ok(None),
        };
        let owner = conn.name_owner(NAME).ok();
        if msg.sender.is_some() && msg.sender == owner {
            return Ok(Some(true));
        }
        eprintln!(
            "cnitool doctor: ignored a {MEMBER} signal from {}, which is not firewalld",
            msg.sender.as_deref().unwrap_or("an unnamed sender")
        );
    }
}

fn subscribe() -> dbus::Result<Conn> {
    let mut conn = Conn::system()?;
    conn.add_match(&format!(
        "type='signal',sender='{NAME}',path='{PATH}',interface='{INTERFACE}',member='{MEMBER}'"
    ))?;
    Ok(conn)
}
