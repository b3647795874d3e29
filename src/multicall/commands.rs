//! cni-multi's own command line as one clap tree: what `cni-multi` takes as
//! its first argument (cnitool, install, the daemons, every plugin), with
//! each front end's own command under it. Completion walks it and the manual
//! pages are written from it; dispatch itself stays in `main_with_args`.

use crate::cni::version;
use crate::plugins::PLUGINS;
use clap::{Arg, ArgAction, Command};

/// The tree under `cni-multi`.
pub fn top() -> Command {
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
        )
        .subcommand(crate::cnitool::command())
        .subcommand(crate::install::command())
        .subcommand(flanneld());
    for p in PLUGINS {
        let mut plugin = Command::new(p.name).about(p.summary);
        if p.name == "dhcp" {
            plugin = plugin.subcommand(
                crate::daemons::dhcp::command()
                    .name("daemon")
                    .about("The dhcp plugin's lease daemon"),
            );
        }
        top = top.subcommand(plugin);
    }
    top
}

/// flanneld's description is a paragraph: a line for lists, the paragraph
/// for its page.
fn flanneld() -> Command {
    let cmd = crate::daemons::flanneld::command();
    let long = cmd.get_about().cloned().unwrap_or_default();
    cmd.about("flannel's network daemon on etcd (also run as flanneld)")
        .long_about(long)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_holds_every_first_argument_dispatch_takes() {
        let mut top = top();
        top.build();
        let names: Vec<&str> = top.get_subcommands().map(|c| c.get_name()).collect();
        for name in ["cnitool", "install", "flanneld"]
            .into_iter()
            .chain(PLUGINS.iter().map(|p| p.name))
        {
            assert!(names.contains(&name), "{name} missing: {names:?}");
        }
        let dhcp = top.find_subcommand("dhcp").expect("dhcp");
        assert!(dhcp.find_subcommand("daemon").is_some());
        let cnitool = top.find_subcommand("cnitool").expect("cnitool");
        assert!(cnitool.find_subcommand("add").is_some());
    }
}
