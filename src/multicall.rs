//! Picks what to run from argv: a plugin by the name we were called as
//! (`/opt/cni/bin/bridge` → bridge) or by the first argument (`cni-multi bridge`).

mod commands;
mod man;
pub mod table;
#[cfg(test)]
mod table_tests;

use crate::cni::dispatch;
use crate::plugins::{self, Entry, PLUGINS};
use crate::quote::quoted;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use table::{Route, SUBCOMMANDS};

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
    match table::route(PLUGINS, SUBCOMMANDS, &invoked_as, &args) {
        Route::Plugin(e) => return dispatch::run_main(&e.info, plugins::lookup),
        Route::Subcommand(s, rest) => return (s.main)(rest),
        Route::Own => {}
    }
    match arg(1).as_deref() {
        None | Some("-h" | "--help" | "help") => {
            print!("{}", usage(PLUGINS, SUBCOMMANDS));
            0
        }
        Some("-V" | "--version") => {
            println!("{BINARY} {}", crate::cni::version::LONG);
            0
        }
        // The shells' completion scripts ask here: the words typed, the
        // one under the cursor last (see cnitool's `completion`).
        Some("__complete") => {
            let words: Vec<String> = args[2..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let program = words.first().map(|w| Path::new(w).file_name());
            // A subcommand's link completes that subcommand.
            let program = program.flatten().and_then(|n| n.to_str());
            let linked = SUBCOMMANDS
                .iter()
                .find(|s| s.as_link && program.is_some_and(|p| s.words == [p]));
            let root = linked.map_or_else(commands::top, |s| (s.command)());
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
            for name in names(PLUGINS) {
                let _ = writeln!(out, "{name}");
            }
            0
        }
        Some(name) => {
            eprintln!(
                "{BINARY}: unknown plugin or command {}\nplugins: {}\nrun '{BINARY} --help' for usage",
                quoted(&name),
                names(PLUGINS).join(", ")
            );
            2
        }
    }
}

/// The names `--list` prints (and so `symlinks.sh` links): every plugin's.
fn names(plugins: &[Entry]) -> Vec<&'static str> {
    plugins.iter().map(Entry::name).collect()
}

fn usage(plugins: &[Entry], subcommands: &[table::Subcommand]) -> String {
    let mut s = format!(
        "{BINARY} {}: the CNI plugins in one binary\n\n\
         Usage:\n  <plugin>                 when installed as a stub or link named after the plugin\n  \
         {BINARY} <plugin>       run a plugin (CNI_COMMAND etc. from the environment)\n",
        env!("CARGO_PKG_VERSION")
    );
    for c in subcommands {
        let call = format!("{} ...", c.words.join(" "));
        s.push_str(&format!("  {BINARY} {call:<14} {}\n", c.help));
    }
    s.push_str(&format!(
        "  {BINARY} --list         print every plugin name, one per line\n  \
         {BINARY} --version      print the version, commit and the reference versions matched\n\nPlugins:\n"
    ));
    for p in plugins {
        s.push_str(&format!("  {:<13}{}\n", p.name(), p.info.summary));
    }
    s.push_str("\nCNI spec versions: ");
    s.push_str(&crate::cni::version::SUPPORTED.join(", "));
    s.push('\n');
    s
}
