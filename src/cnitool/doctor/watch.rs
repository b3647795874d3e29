//! `--on-firewalld-reload`: a firewalld reload drops the runtime state
//! plugins gave it (zone sources) and, with its iptables backend, the chains
//! of everyone else; so the doctor runs once, then again after each of
//! firewalld's `Reloaded` signals. The subscription is made before the first
//! run, so a reload during that run is not missed. It runs until the bus goes
//! away (a restarted bus has forgotten the subscription): then it fails, for
//! its service manager to start it again.

use super::super::Settings;
use super::DoctorArgs;
use crate::dbus::{self, Conn};

const INTERFACE: &str = "org.fedoraproject.FirewallD1";
const MEMBER: &str = "Reloaded";
/// The exit status when the bus cannot be watched (any more).
const NO_BUS: i32 = 3;

pub(super) fn main(settings: &Settings, args: &DoctorArgs) -> i32 {
    let mut conn = match subscribe() {
        Ok(conn) => conn,
        Err(e) => {
            eprintln!("cnitool doctor: cannot watch firewalld's reloads: {e}");
            return NO_BUS;
        }
    };
    super::run(settings, args);
    loop {
        match conn.next_signal(INTERFACE, MEMBER) {
            Ok(Some(_)) => {
                eprintln!("cnitool doctor: firewalld reloaded; checking again");
                super::run(settings, args);
            }
            Ok(None) => {
                eprintln!("cnitool doctor: the system bus went away");
                return NO_BUS;
            }
            Err(e) => {
                eprintln!("cnitool doctor: failed to wait for firewalld's reloads: {e}");
                return NO_BUS;
            }
        }
    }
}

fn subscribe() -> dbus::Result<Conn> {
    let mut conn = Conn::system()?;
    conn.add_match(&format!(
        "type='signal',interface='{INTERFACE}',member='{MEMBER}'"
    ))?;
    Ok(conn)
}
