//! Shell completion. `cnitool completion bash|zsh|fish` prints a small
//! script that asks the binary itself (`cni-multi __complete WORD...`) for
//! the candidates of the word under the cursor; `candidates` walks the clap
//! command tree over the words typed so far. So every subcommand and flag is
//! completed without touching the scripts, `cni-multi <TAB>` offers
//! cni-multi's own commands, and arguments naming a network or a named
//! network namespace complete from the config directory and /run/netns.

use crate::netns::named;
use clap::{Arg, Command, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// What an argument's values are, where they are not a fixed list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    /// `name`s of the configs in the config directory.
    Networks,
    /// Named network namespaces.
    Netns,
}

/// The first line of a help text.
fn about(text: Option<&clap::builder::StyledStr>) -> String {
    let text = text.map(|s| s.to_string()).unwrap_or_default();
    text.lines().next().unwrap_or_default().to_string()
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values() && arg.get_num_args().is_some_and(|n| n.min_values() > 0)
}

/// Which names an argument of `path` (the subcommand words) takes, by its id.
fn names_of(path: &[String], arg: &Arg) -> Option<Names> {
    let id = arg.get_id().as_str();
    let under_netns = path.iter().any(|w| w == "netns");
    match id {
        "net" | "nets" | "network" | "networks" => Some(Names::Networks),
        "netns" => Some(Names::Netns),
        // `netns del NAME` and the like; `netns add` makes a new one.
        "name" if under_netns && path.last().is_some_and(|w| w != "add") => Some(Names::Netns),
        _ => None,
    }
}

/// The candidates for the last of `words` (the word under the cursor, maybe
/// empty), given the words before it from the program's name on; each
/// "word<TAB>description". `getenv` gives NETCONFPATH.
pub fn candidates(
    mut root: Command,
    words: &[String],
    getenv: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    // Building propagates the global flags into every subcommand.
    root.build();
    let Some((cur, typed)) = words.split_last() else {
        return Vec::new();
    };
    let mut cmd = &root;
    let mut path: Vec<String> = Vec::new();
    let mut pending: Option<&Arg> = None;
    let mut positional = 0;
    let mut values: Vec<(String, String)> = Vec::new();
    let mut only_positionals = false;
    for w in typed.iter().skip(1) {
        if let Some(arg) = pending.take() {
            // bash splits `--flag=value` into three words.
            if w == "=" {
                pending = Some(arg);
            } else {
                values.push((arg.get_id().to_string(), w.clone()));
            }
            continue;
        }
        if w == "--" {
            only_positionals = true;
            continue;
        }
        if !only_positionals && let Some(flag) = w.strip_prefix("--") {
            let (name, value) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (flag, None),
            };
            if let Some(arg) = long(cmd, name).filter(|a| takes_value(a)) {
                match value {
                    Some(v) => values.push((arg.get_id().to_string(), v.to_string())),
                    None => pending = Some(arg),
                }
            }
            continue;
        }
        if !only_positionals && w.len() > 1 && w.starts_with('-') {
            let short = w.chars().nth(1);
            if w.chars().count() == 2
                && let Some(arg) = cmd
                    .get_arguments()
                    .find(|a| a.get_short() == short && takes_value(a))
            {
                pending = Some(arg);
            }
            continue;
        }
        if !only_positionals && let Some(sub) = cmd.find_subcommand(w) {
            cmd = sub;
            path.push(sub.get_name().to_string());
            positional = 0;
            continue;
        }
        positional += 1;
    }
    let value_of = |id: &str| {
        values
            .iter()
            .rev()
            .find(|(k, _)| k == id)
            .map(|(_, v)| PathBuf::from(v))
    };
    let lookup = Lookup {
        conf_dir: value_of("conf_dir")
            .or_else(|| getenv("NETCONFPATH").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/etc/cni/net.d")),
        netns_dir: value_of("dir").unwrap_or_else(|| PathBuf::from(named::DEFAULT_DIR)),
    };
    let mut out = Vec::new();
    if let Some(arg) = pending {
        let cur = if cur == "=" { "" } else { cur.as_str() };
        out = lookup.values(&path, arg, cur, "");
    } else if let Some((name, partial)) = cur
        .strip_prefix("--")
        .and_then(|f| f.split_once('='))
        .filter(|_| !only_positionals)
    {
        if let Some(arg) = long(cmd, name) {
            out = lookup.values(&path, arg, partial, &format!("--{name}="));
        }
    } else if cur.starts_with('-') && !only_positionals {
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let help = about(arg.get_help());
            if let Some(l) = arg.get_long() {
                out.push(format!("--{l}\t{help}"));
            }
            if let Some(s) = arg.get_short() {
                out.push(format!("-{s}\t{help}"));
            }
        }
        out.retain(|c| c.starts_with(cur.as_str()));
    } else {
        if !only_positionals {
            for sub in cmd.get_subcommands() {
                if !sub.is_hide_set() && sub.get_name() != "help" {
                    out.push(format!("{}\t{}", sub.get_name(), about(sub.get_about())));
                }
            }
            out.retain(|c| c.starts_with(cur.as_str()));
        }
        let positionals: Vec<&Arg> = cmd.get_positionals().collect();
        // A last positional taking many values takes every word after it.
        let arg = positionals.get(positional).or_else(|| {
            positionals
                .last()
                .filter(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1))
        });
        if let Some(arg) = arg {
            out.extend(lookup.values(&path, arg, cur, ""));
        }
    }
    out
}

fn long<'a>(cmd: &'a Command, name: &str) -> Option<&'a Arg> {
    cmd.get_arguments().find(|a| a.get_long() == Some(name))
}

/// Where names come from, as the words typed so far set them.
struct Lookup {
    conf_dir: PathBuf,
    netns_dir: PathBuf,
}

impl Lookup {
    /// `arg`'s values starting with `cur`, each after `prefix`.
    fn values(&self, path: &[String], arg: &Arg, cur: &str, prefix: &str) -> Vec<String> {
        let fixed: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        let all = if !fixed.is_empty() {
            fixed
        } else {
            match names_of(path, arg) {
                Some(Names::Networks) => networks(&self.conf_dir),
                Some(Names::Netns) => named::list(&self.netns_dir).unwrap_or_default(),
                None => Vec::new(),
            }
        };
        all.into_iter()
            .filter(|v| v.starts_with(cur))
            .map(|v| format!("{prefix}{v}"))
            .collect()
    }
}

/// The network names of `dir`'s configs; a file that does not load is left
/// out (completion is no place to report it: `cnitool list` does).
fn networks(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let lists = crate::files::files_with(dir, &["conflist"]).unwrap_or_default();
    let singles = crate::files::files_with(dir, &["conf", "json"]).unwrap_or_default();
    let files = lists
        .iter()
        .map(|p| (p, true))
        .chain(singles.iter().map(|p| (p, false)));
    for (path, is_list) in files {
        let Ok(bytes) = crate::files::read_limited(path, crate::files::MAX_FILE) else {
            continue;
        };
        let loaded = if is_list {
            crate::libcni::conf::list_from_bytes(&bytes, path)
        } else {
            crate::libcni::conf::conf_from_bytes(&bytes, path)
        };
        if let Ok(list) = loaded
            && !names.contains(&list.name)
        {
            names.push(list.name);
        }
    }
    names
}

/// A shell word: `s` in single quotes.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The completion script for `shell`: it runs `exe` (this binary, where it
/// was when the script was made; else `cni-multi` on PATH) for candidates,
/// for both `cni-multi ...` and a `cnitool` link to the binary.
pub fn script(shell: Shell, exe: &str) -> String {
    let exe = quoted(exe);
    match shell {
        Shell::Bash => format!(
            "# bash completion for cni-multi and cnitool: candidates come from the binary\n\
             _cni_multi() {{\n    \
                 local bin={exe} IFS=$'\\n'\n    \
                 [ -x \"$bin\" ] || bin=$(command -v cni-multi) || return 0\n    \
                 COMPREPLY=($(\"$bin\" __complete \"${{COMP_WORDS[@]:0:COMP_CWORD+1}}\" 2>/dev/null))\n    \
                 COMPREPLY=(\"${{COMPREPLY[@]%%$'\\t'*}}\")\n\
             }}\n\
             complete -o default -F _cni_multi cni-multi cnitool\n"
        ),
        Shell::Zsh => format!(
            "#compdef cni-multi cnitool\n\
             # zsh completion for cni-multi and cnitool: candidates come from the binary\n\
             _cni_multi() {{\n    \
                 local bin={exe}\n    \
                 [[ -x $bin ]] || bin=${{commands[cni-multi]:-cni-multi}}\n    \
                 local -a cands\n    \
                 cands=(\"${{(@f)$(\"$bin\" __complete \"${{(@)words[1,CURRENT]}}\" 2>/dev/null)}}\")\n    \
                 cands=(${{cands:#}})\n    \
                 if (( ${{#cands}} == 0 )); then _files; return; fi\n    \
                 compadd -- \"${{cands[@]%%$'\\t'*}}\"\n\
             }}\n\
             compdef _cni_multi cni-multi cnitool\n"
        ),
        Shell::Fish => format!(
            "# fish completion for cni-multi and cnitool: candidates come from the binary\n\
             function __cni_multi_complete\n    \
                 set -l bin {exe}\n    \
                 test -x $bin; or set bin (command -s cni-multi); or return\n    \
                 set -l out ($bin __complete (commandline -opc) (commandline -ct) 2>/dev/null)\n    \
                 if test (count $out) -gt 0\n        \
                     printf '%s\\n' $out\n    \
                 else\n        \
                     __fish_complete_path (commandline -ct)\n    \
                 end\n\
             end\n\
             complete -c cni-multi -f -a '(__cni_multi_complete)'\n\
             complete -c cnitool -f -a '(__cni_multi_complete)'\n"
        ),
    }
}

#[cfg(test)]
#[path = "completion_tests.rs"]
mod tests;
