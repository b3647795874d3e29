//! `cnitool completion bash|zsh|fish`: shell completion scripts generated from
//! cnitool's own clap command, so a new subcommand or flag is completed
//! without touching the scripts.

use clap::{Command, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// One (sub)command: its words from the top ("cnitool netns add"), the
/// subcommands under it, its flags and the fixed values of its positionals.
struct Node {
    path: String,
    subcommands: Vec<(String, String)>,
    flags: Vec<(String, String)>,
    values: Vec<String>,
}

fn about(text: Option<&clap::builder::StyledStr>) -> String {
    let text = text.map(|s| s.to_string()).unwrap_or_default();
    text.lines().next().unwrap_or_default().to_string()
}

fn walk(cmd: &Command, path: &str, out: &mut Vec<Node>) {
    let subs: Vec<&Command> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .collect();
    let mut flags = Vec::new();
    let mut values = Vec::new();
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let help = about(arg.get_help());
        if let Some(long) = arg.get_long() {
            flags.push((format!("--{long}"), help.clone()));
        }
        if let Some(short) = arg.get_short() {
            flags.push((format!("-{short}"), help));
        }
        if arg.is_positional() {
            values.extend(
                arg.get_possible_values()
                    .iter()
                    .filter(|v| !v.is_hide_set())
                    .map(|v| v.get_name().to_string()),
            );
        }
    }
    out.push(Node {
        path: path.to_string(),
        subcommands: subs
            .iter()
            .map(|c| (c.get_name().to_string(), about(c.get_about())))
            .collect(),
        flags,
        values,
    });
    for sub in subs {
        walk(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

fn nodes(mut cmd: Command) -> Vec<Node> {
    // Building propagates the global flags into every subcommand.
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, "cnitool", &mut out);
    out
}

impl Node {
    fn words(&self) -> Vec<&str> {
        let subs = self.subcommands.iter().map(|(n, _)| n.as_str());
        let flags = self.flags.iter().map(|(n, _)| n.as_str());
        subs.chain(self.values.iter().map(String::as_str))
            .chain(flags)
            .collect()
    }
}

/// The completion script for `shell`, for both `cni-multi cnitool` and a
/// `cnitool` link to the binary.
pub fn script(cmd: Command, shell: Shell) -> String {
    let nodes = nodes(cmd);
    match shell {
        Shell::Bash => bash(&nodes),
        Shell::Zsh => zsh(&nodes),
        Shell::Fish => fish(&nodes),
    }
}

/// The shell `case` arms that walk the typed words down the subcommand tree
/// and pick the candidates of the deepest one (same in bash and zsh).
fn case_arms(nodes: &[Node]) -> (String, String) {
    let paths: Vec<String> = nodes
        .iter()
        .skip(1)
        .map(|n| format!("\"{}\"", n.path))
        .collect();
    let walk = format!("            {}) path=\"$path $w\" ;;\n", paths.join("|"));
    let mut pick = String::new();
    for n in nodes {
        pick.push_str(&format!(
            "        \"{}\") cands=\"{}\" ;;\n",
            n.path,
            n.words().join(" ")
        ));
    }
    (walk, pick)
}

fn bash(nodes: &[Node]) -> String {
    let (walk, pick) = case_arms(nodes);
    format!(
        "# bash completion for cni-multi cnitool\n\
         _cni_multi_cnitool() {{\n    \
             local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" path=cnitool cands=\"\" w i\n    \
             for ((i = 1; i < COMP_CWORD; i++)); do\n        \
                 w=\"${{COMP_WORDS[i]}}\"\n        \
                 case \"$path $w\" in\n{walk}        \
                 esac\n    \
             done\n    \
             case \"$path\" in\n{pick}    \
             esac\n    \
             COMPREPLY=($(compgen -W \"$cands\" -- \"$cur\"))\n\
         }}\n\
         complete -o default -F _cni_multi_cnitool cni-multi cnitool\n"
    )
}

fn zsh(nodes: &[Node]) -> String {
    let (walk, pick) = case_arms(nodes);
    format!(
        "#compdef cni-multi cnitool\n\
         # zsh completion for cni-multi cnitool\n\
         _cni_multi_cnitool() {{\n    \
             local path=cnitool cands=\"\" w i\n    \
             for ((i = 2; i < CURRENT; i++)); do\n        \
                 w=\"${{words[i]}}\"\n        \
                 case \"$path $w\" in\n{walk}        \
                 esac\n    \
             done\n    \
             case \"$path\" in\n{pick}    \
             esac\n    \
             compadd -- ${{=cands}}\n\
         }}\n\
         compdef _cni_multi_cnitool cni-multi cnitool\n"
    )
}

fn fish_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn fish(nodes: &[Node]) -> String {
    let paths: Vec<String> = nodes.iter().skip(1).map(|n| fish_quote(&n.path)).collect();
    let mut out = format!(
        "# fish completion for cni-multi cnitool\n\
         function __cni_multi_cnitool_path\n    \
             set -l path cnitool\n    \
             for w in (commandline -opc)[2..-1]\n        \
                 if contains -- \"$path $w\" {}\n            \
                     set path \"$path $w\"\n        \
                 end\n    \
             end\n    \
             echo $path\n\
         end\n",
        paths.join(" ")
    );
    for cmd in ["cni-multi", "cnitool"] {
        for n in nodes {
            let cond = fish_quote(&format!(
                "test (__cni_multi_cnitool_path) = {}",
                fish_quote(&n.path)
            ));
            for (name, help) in &n.subcommands {
                out.push_str(&format!(
                    "complete -c {cmd} -f -n {cond} -a {} -d {}\n",
                    fish_quote(name),
                    fish_quote(help)
                ));
            }
            for value in &n.values {
                out.push_str(&format!(
                    "complete -c {cmd} -f -n {cond} -a {}\n",
                    fish_quote(value)
                ));
            }
            for (flag, help) in &n.flags {
                let opt = match flag.strip_prefix("--") {
                    Some(long) => format!("-l {}", fish_quote(long)),
                    None => format!("-s {}", fish_quote(flag.trim_start_matches('-'))),
                };
                out.push_str(&format!(
                    "complete -c {cmd} -n {cond} {opt} -d {}\n",
                    fish_quote(help)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn sample() -> Command {
        Command::new("cnitool")
            .arg(
                Arg::new("conf-dir")
                    .long("conf-dir")
                    .global(true)
                    .help("It's a dir"),
            )
            .subcommand(Command::new("add").about("Add it"))
            .subcommand(
                Command::new("netns")
                    .subcommand(Command::new("list"))
                    .arg(Arg::new("v").short('v').action(ArgAction::SetTrue)),
            )
    }

    #[test]
    fn every_level_gets_its_subcommands_and_global_flags() {
        let n = nodes(sample());
        let paths: Vec<&str> = n.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "cnitool",
                "cnitool add",
                "cnitool netns",
                "cnitool netns list"
            ]
        );
        assert!(n[3].words().contains(&"--conf-dir"));
        assert!(n[2].words().contains(&"-v"));
        assert!(n[2].words().contains(&"list"));
        let fish = script(sample(), Shell::Fish);
        assert!(fish.contains(r"-d 'It\'s a dir'"), "{fish}");
    }
}
