//! Picks what to run from argv: a plugin by the name we were called as
//! (`/opt/cni/bin/bridge` → bridge) or by the first argument (`cni-multi bridge`).

mod commands;
mod man;

use crate::cni::dispatch;
use crate::plugins::{self, PLUGINS};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

pub const BINARY: &str = crate::cni::stub::BINARY;

/// Runs the binary with these arguments; returns the exit status.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    // Called through a plugin stub: dispatch as if through a link of its name.
    let args = crate::cni::stub::as_link_args(&args);
    let invoked_as = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let arg = |i: usize| args.get(i).map(|a| a.to_string_lossy().into_owned());
    // `dhcp daemon ...`: the dhcp plugin's lease daemon, as the reference starts it.
    if invoked_as == "dhcp" && arg(1).as_deref() == Some("daemon") {
        return crate::daemons::dhcp::main(args[2..].to_vec());
    }
    if let Some(info) = plugins::lookup(&invoked_as) {
        return dispatch::run_main(info, plugins::lookup);
    }
    if invoked_as == "cnitool" {
        return crate::cnitool::main(args);
    }
    // `flanneld ...` through a link of that name, as Go flanneld's binary is run.
    if invoked_as == "flanneld" {
        return crate::daemons::flanneld::main(args[1..].to_vec());
    }
    match arg(1).as_deref() {
        None | Some("-h" | "--help" | "help") => {
            print!("{}", usage());
            0
        }
        Some("-V" | "--version") => {
            println!("{BINARY} {}", crate::cni::version::LONG);
            0
        }
        Some("cnitool") => crate::cnitool::main(args[1..].to_vec()),
        Some("install") => crate::install::main(args[1..].to_vec()),
        Some("flanneld") => crate::daemons::flanneld::main(args[2..].to_vec()),
        Some("dhcp") if arg(2).as_deref() == Some("daemon") => {
            crate::daemons::dhcp::main(args[3..].to_vec())
        }
        // The shells' completion scripts ask here: the words typed, the
        // one under the cursor last (see cnitool's `completion`).
        Some("__complete") => {
            let words: Vec<String> = args[2..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let program = words.first().map(|w| Path::new(w).file_name());
            let root = match program.flatten().and_then(|n| n.to_str()) {
                Some("cnitool") => crate::cnitool::command(),
                _ => commands::top(),
            };
            let mut out = std::io::stdout().lock();
            for c in crate::cnitool::candidates(root, &words, &|k| std::env::var(k).ok()) {
                let _ = writeln!(out, "{c}");
            }
            0
        }
        // The package build writes the manual pages with this.
        Some("--generate-man") => match arg(2) {
            Some(dir) => match man::write_all(Path::new(&dir)) {
                Ok(files) => {
                    for f in files {
                        println!("{}", Path::new(&dir).join(f).display());
                    }
                    0
                }
                Err(e) => {
                    eprintln!("{BINARY}: cannot write the manual pages into {dir}: {e}");
                    1
                }
            },
            None => {
                eprintln!("usage: {BINARY} --generate-man DIR");
                2
            }
        },
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
         Usage:\n  <plugin>                 when installed as a stub or link named after the plugin\n  \
         {BINARY} <plugin>       run a plugin (CNI_COMMAND etc. from the environment)\n  \
         {BINARY} cnitool ...    add/check/del/gc/status/list/validate networks by hand ('cnitool --help')\n  \
         {BINARY} install ...    put this binary and its plugin links into /opt/cni/bin ('install --help')\n  \
         {BINARY} dhcp daemon ... the dhcp plugin's lease daemon ('dhcp daemon --help'; also 'dhcp daemon' via the symlink)\n  \
         {BINARY} flanneld ...   flannel's network daemon on etcd ('flanneld --help'; also as 'flanneld')\n  \
         {BINARY} --list         print every plugin name, one per line\n  \
         {BINARY} --version      print the version, commit and the reference versions matched\n\nPlugins:\n",
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
