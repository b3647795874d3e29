//! What `cni-multi` runs besides the plugins: its own subcommands, in the
//! one table dispatch, `--help`, the clap tree (completion, manual pages)
//! read beside the plugin table, and how argv picks an entry of either.

use crate::plugins::Entry;
use std::ffi::OsString;

/// One of cni-multi's own commands.
pub struct Subcommand {
    /// The words that name it: `cnitool`, or `dhcp daemon` (a subcommand of
    /// the plugin named by its first word).
    pub words: &'static [&'static str],
    /// Whether a link or stub named by its first word runs it too.
    pub as_link: bool,
    /// A daemon: its manual page is in section 8 (under its own name when
    /// it runs as a link of that name), not 1.
    pub daemon: bool,
    /// Its line in `--help`.
    pub help: &'static str,
    /// Its clap tree (named by its last word).
    pub command: fn() -> clap::Command,
    /// Runs it on the arguments from its last word on.
    pub main: fn(Vec<OsString>) -> i32,
}

pub static SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        words: &["cnitool"],
        as_link: true,
        daemon: false,
        help: "add/check/del/gc/status/list/validate networks by hand ('cnitool --help')",
        command: crate::cnitool::command,
        main: crate::cnitool::main,
    },
    Subcommand {
        words: &["install"],
        as_link: false,
        daemon: false,
        help: "put this binary and its plugin links into /opt/cni/bin ('install --help')",
        command: crate::install::command,
        main: crate::install::main,
    },
    Subcommand {
        words: &["flanneld"],
        as_link: true,
        daemon: true,
        help: "flannel's network daemon on etcd ('flanneld --help'; also as 'flanneld')",
        command: flanneld,
        main: flanneld_main,
    },
    Subcommand {
        words: &["dhcp", "daemon"],
        as_link: true,
        daemon: true,
        help: "the dhcp plugin's lease daemon ('dhcp daemon --help'; also 'dhcp daemon' via the symlink)",
        command: dhcp_daemon,
        main: dhcp_daemon_main,
    },
];

/// The daemons take their arguments without their own name.
fn dhcp_daemon_main(args: Vec<OsString>) -> i32 {
    crate::dhcp::daemon::main(args.get(1..).unwrap_or_default().to_vec())
}

fn flanneld_main(args: Vec<OsString>) -> i32 {
    crate::flanneld::main(args.get(1..).unwrap_or_default().to_vec())
}

fn dhcp_daemon() -> clap::Command {
    crate::dhcp::daemon::command()
        .name("daemon")
        .about("The dhcp plugin's lease daemon")
}

/// flanneld's description is a paragraph: a line for lists, the paragraph
/// for its page.
fn flanneld() -> clap::Command {
    let cmd = crate::flanneld::command();
    let long = cmd.get_about().cloned().unwrap_or_default();
    cmd.about("flannel's network daemon on etcd (also run as flanneld)")
        .long_about(long)
}

/// What argv asks for.
pub enum Route<'a> {
    /// A plugin (its CNI_* from the environment).
    Plugin(&'a Entry),
    /// A subcommand, with its arguments from its last word on.
    Subcommand(&'a Subcommand, Vec<OsString>),
    /// cni-multi's own flags (`--help`, `--list`, …): `args[1]` on.
    Own,
}

/// Picks the plugin or subcommand `args` name: by the name we were called as
/// (argv[0]'s file name, a link or stub), or by the first argument after
/// `cni-multi`.
pub fn route<'a>(
    plugins: &'a [Entry],
    subcommands: &'a [Subcommand],
    invoked_as: &str,
    args: &[OsString],
) -> Route<'a> {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let named = |from: usize, links: bool| {
        subcommands.iter().find(|s| {
            let (first, rest) = s.words.split_first().unwrap_or((&"", &[]));
            let given = if from == 0 {
                invoked_as
            } else {
                words.get(from).map_or("", String::as_str)
            };
            (!links || s.as_link)
                && *first == given
                && rest
                    .iter()
                    .enumerate()
                    .all(|(i, w)| words.get(from + 1 + i).is_some_and(|g| g == w))
        })
    };
    let plugin = |name: &str| plugins.iter().find(|e| e.name() == name);
    let last =
        |s: &Subcommand, from: usize| args[(from + s.words.len() - 1).min(args.len())..].to_vec();
    if let Some(s) = named(0, true) {
        return Route::Subcommand(s, last(s, 0));
    }
    if let Some(e) = plugin(invoked_as) {
        return Route::Plugin(e);
    }
    if let Some(s) = named(1, false) {
        return Route::Subcommand(s, last(s, 1));
    }
    match words.get(1).and_then(|w| plugin(w)) {
        Some(e) => Route::Plugin(e),
        None => Route::Own,
    }
}
