//! cni-multi's own command line as one clap tree: what `cni-multi` takes as
//! its first argument (cnitool, install, the daemons, every plugin), with
//! each front end's own command under it. Completion walks it and the manual
//! pages are written from it; dispatch itself stays in `main_with_args`.

use super::table::{SUBCOMMANDS, Subcommand};
use crate::cni::version;
use crate::plugins::{Entry, PLUGINS};
use clap::{Arg, ArgAction, Command};

/// The tree under `cni-multi`.
pub fn top() -> Command {
    top_of(PLUGINS, SUBCOMMANDS)
}

/// The tree of these plugins and subcommands.
pub fn top_of(plugins: &[Entry], subcommands: &[Subcommand]) -> Command {
    let mut top = Command::new(super::BINARY)
        .about("The CNI plugins in one binary")
        .long_about(
            "The Container Network Interface reference plugins in one static binary. \
             Installed as a stub (or link) named after a plugin, it runs as that plugin; \
             run as cni-multi, its first argument picks a plugin or one of its own commands.",
        )
        .version(version::BUILD)
        .long_version(version::LONG)
        .arg(
            Arg::new("list")
                .long("list")
                .action(ArgAction::SetTrue)
                .help("Print every plugin name, one per line"),
        );
    for s in subcommands.iter().filter(|s| s.words.len() == 1) {
        top = top.subcommand((s.command)());
    }
    for p in plugins {
        let mut plugin = Command::new(p.name()).about(p.info.summary);
        // Its own subcommands (`dhcp daemon`).
        for s in subcommands
            .iter()
            .filter(|s| s.words.len() == 2 && s.words[0] == p.name())
        {
            plugin = plugin.subcommand((s.command)());
        }
        top = top.subcommand(plugin);
    }
    top
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
