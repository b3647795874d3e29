//! Picks what to run from argv: a plugin by the name we were called as
//! (`/opt/cni/bin/bridge` → bridge) or by the first argument (`cni-multi bridge`).

use crate::cni::dispatch;
use crate::plugins::{self, PLUGINS};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

pub const BINARY: &str = "cni-multi";

/// Runs the binary with these arguments; returns the exit status.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    let invoked_as = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(info) = plugins::lookup(&invoked_as) {
        return dispatch::run_main(info, plugins::lookup);
    }
    if invoked_as == "cnitool" {
        return crate::cnitool::main(args);
    }
    let first = args.get(1).map(|a| a.to_string_lossy().into_owned());
    match first.as_deref() {
        None | Some("-h" | "--help" | "help") => {
            print!("{}", usage());
            0
        }
        Some("-V" | "--version") => {
            println!("{BINARY} {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("cnitool") => crate::cnitool::main(args[1..].to_vec()),
        Some("--list") => {
            let mut out = std::io::stdout().lock();
            for p in PLUGINS {
                let _ = writeln!(out, "{}", p.name);
            }
            0
        }
        Some(name) => match plugins::lookup(name) {
            Some(info) => dispatch::run_main(info, plugins::lookup),
            None => {
                eprintln!(
                    "{BINARY}: unknown plugin or command {name:?}\nplugins: {}\nrun '{BINARY} --help' for usage",
                    PLUGINS
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                2
            }
        },
    }
}

fn usage() -> String {
    let mut s = format!(
        "{BINARY} {}: the CNI plugins in one binary\n\n\
         Usage:\n  <plugin>                 when installed as a symlink named after the plugin\n  \
         {BINARY} <plugin>       run a plugin (CNI_COMMAND etc. from the environment)\n  \
         {BINARY} cnitool ...    add/check/del/gc/status/list/validate networks by hand ('cnitool --help')\n  \
         {BINARY} --list         print every plugin name, one per line\n  \
         {BINARY} --version      print the version\n\nPlugins:\n",
        env!("CARGO_PKG_VERSION")
    );
    for p in PLUGINS {
        s.push_str(&format!("  {:<13}{}\n", p.name, p.summary));
    }
    s.push_str("\nCNI spec versions: ");
    s.push_str(&crate::cni::version::SUPPORTED.join(", "));
    s.push('\n');
    s
}
