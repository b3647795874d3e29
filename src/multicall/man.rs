//! Manual pages written from the clap definitions (`cni-multi --generate-man
//! DIR`, run by the package build): name, synopsis, description, options,
//! and every subcommand with its arguments, in plain man(7) roff. A page is
//! the command line as the binary parses it, so it cannot drift from it.

use clap::{Arg, Command};
use std::fmt::Write as _;
use std::path::Path;

/// The pages: (file name, section, the command's words from the top, the command).
pub fn pages() -> Vec<(String, u8, Vec<String>, Command)> {
    let mut top = super::commands::top();
    top.build();
    let mut out = Vec::new();
    let bin = super::BINARY.to_string();
    out.push((format!("{bin}.1"), 1, vec![bin.clone()], top.clone()));
    for s in super::table::SUBCOMMANDS {
        let mut cmd = Some(&top);
        for w in s.words {
            cmd = cmd.and_then(|c| c.find_subcommand(w));
        }
        let Some(cmd) = cmd.cloned() else {
            continue;
        };
        let section = if s.daemon { 8 } else { 1 };
        // A daemon run under its own name has its page under that name.
        let (file, words) = match s.words {
            [name] if s.daemon && s.as_link => (name.to_string(), vec![name.to_string()]),
            _ => {
                let words = std::iter::once(bin.as_str()).chain(s.words.iter().copied());
                (
                    format!("{bin}-{}", s.words.join("-")),
                    words.map(str::to_string).collect(),
                )
            }
        };
        out.push((format!("{file}.{section}"), section, words, cmd));
    }
    out
}

/// Writes every page into `dir`; the file names written.
pub fn write_all(dir: &Path) -> std::io::Result<Vec<String>> {
    crate::files::create_dir_mode(dir, 0o755)?;
    let mut written = Vec::new();
    for (file, section, words, cmd) in pages() {
        crate::files::write_file_atomic(
            &dir.join(&file),
            page(&cmd, &words, section).as_bytes(),
            0o644,
        )?;
        written.push(file);
    }
    Ok(written)
}

/// Text as roff reads it literally: backslashes escaped, minus signs as
/// such, and no line starting with a control character.
fn esc(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    text.lines()
        .map(|l| {
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn help_of(arg: &Arg) -> String {
    arg.get_long_help()
        .or(arg.get_help())
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// `NAME`, `[NAME]`, `NAME...` of a positional.
fn positional(arg: &Arg) -> String {
    let name = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
    let many = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
        "..."
    } else {
        ""
    };
    if arg.is_required_set() {
        format!("\\fI{}\\fR{many}", esc(&name))
    } else {
        format!("[\\fI{}\\fR]{many}", esc(&name))
    }
}

/// One option as a `.TP` entry: its forms, its value, its help.
fn option(arg: &Arg, out: &mut String) {
    let mut forms = Vec::new();
    if let Some(l) = arg.get_long() {
        forms.push(format!("\\fB\\-\\-{}\\fR", esc(l)));
    }
    if let Some(s) = arg.get_short() {
        forms.push(format!("\\fB\\-{}\\fR", esc(&s.to_string())));
    }
    let takes =
        arg.get_action().takes_values() && arg.get_num_args().is_some_and(|n| n.max_values() > 0);
    let mut head = forms.join(", ");
    if takes {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|v| v.to_string())
            .unwrap_or_else(|| "VALUE".into());
        let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
        if optional {
            let _ = write!(head, "[=\\fI{}\\fR]", esc(&value));
        } else {
            let _ = write!(head, " \\fI{}\\fR", esc(&value));
        }
    }
    let mut help = help_of(arg);
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .filter(|v| !v.is_empty())
        .collect();
    if takes && !defaults.is_empty() {
        let _ = write!(help, " [default: {}]", defaults.join(","));
    }
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if takes && !possible.is_empty() {
        let _ = write!(help, " [possible values: {}]", possible.join(", "));
    }
    let _ = writeln!(out, ".TP\n{head}\n{}", esc(help.trim()));
}

/// The options of `cmd` worth listing: hidden ones and, below the top,
/// the global ones (listed where they are defined) and help/version left out.
fn options(cmd: &Command, top: bool) -> Vec<&Arg> {
    cmd.get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter(|a| {
            top || !(a.is_global_set() || matches!(a.get_id().as_str(), "help" | "version"))
        })
        .collect()
}

fn synopsis(cmd: &Command, words: &[String]) -> String {
    let mut s = format!(".B {}\n", esc(&words.join(" ")));
    if cmd
        .get_arguments()
        .any(|a| !a.is_positional() && !a.is_hide_set())
    {
        s.push_str("[\\fIOPTIONS\\fR]");
    }
    for p in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        s.push(' ');
        s.push_str(&positional(p));
    }
    if cmd.has_subcommands() {
        s.push_str(" \\fICOMMAND\\fR ...");
    }
    s.push('\n');
    s
}

/// The page of the command called as `words` when it has one of its own:
/// (name, section). flanneld's page is under its own name.
fn own_page(words: &[String]) -> Option<(String, u8)> {
    pages()
        .into_iter()
        .find(|(_, _, w, _)| {
            w.as_slice() == words || (w.len() == 1 && words.len() == 2 && w[0] == words[1])
        })
        .map(|(file, section, ..)| {
            let name = file.trim_end_matches(&format!(".{section}")).to_string();
            (name, section)
        })
}

/// A subcommand, and the ones under it, as `.SS` sections; one with a page
/// of its own only named, with its page.
fn commands(cmd: &Command, words: &[String], out: &mut String) {
    for sub in cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
    {
        let mut w = words.to_vec();
        w.push(sub.get_name().to_string());
        let mut usage = esc(&w.join(" "));
        for p in sub.get_positionals().filter(|a| !a.is_hide_set()) {
            usage.push(' ');
            usage.push_str(&positional(p));
        }
        if sub.has_subcommands() {
            usage.push_str(" \\fICOMMAND\\fR");
        }
        let _ = writeln!(out, ".SS \"{usage}\"");
        if let Some((page, section)) = own_page(&w) {
            let about = sub.get_about().map(|s| s.to_string()).unwrap_or_default();
            let _ = writeln!(
                out,
                "{}\n.br\nSee \\fB{}\\fR({section}).",
                esc(about.trim()),
                esc(&page)
            );
            continue;
        }
        let about = sub
            .get_long_about()
            .or(sub.get_about())
            .map(|s| s.to_string());
        if let Some(about) = about {
            let _ = writeln!(out, "{}", esc(about.trim()));
        }
        for p in sub.get_positionals().filter(|a| !a.is_hide_set()) {
            let help = help_of(p);
            if !help.is_empty() {
                let _ = writeln!(out, ".TP\n{}\n{}", positional(p), esc(help.trim()));
            }
        }
        for arg in options(sub, false) {
            option(arg, out);
        }
        commands(sub, &w, out);
    }
}

/// The page of `cmd`, called as `words`.
pub fn page(cmd: &Command, words: &[String], section: u8) -> String {
    let title = words.join("-");
    let about = cmd.get_about().map(|s| s.to_string()).unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        ".TH \"{}\" \"{section}\" \"\" \"{} {}\" \"{} manual\"",
        esc(&title.to_uppercase()),
        super::BINARY,
        env!("CARGO_PKG_VERSION"),
        super::BINARY
    );
    let _ = writeln!(out, ".SH NAME\n{} \\- {}", esc(&title), esc(about.trim()));
    let _ = write!(out, ".SH SYNOPSIS\n{}", synopsis(cmd, words));
    let long = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|s| s.to_string());
    if let Some(text) = long {
        let _ = writeln!(out, ".SH DESCRIPTION\n{}", esc(text.trim()));
    }
    let opts = options(cmd, true);
    if !opts.is_empty() {
        out.push_str(".SH OPTIONS\n");
        for arg in opts {
            option(arg, &mut out);
        }
    }
    if cmd.has_subcommands() {
        out.push_str(".SH COMMANDS\n");
        commands(cmd, words, &mut out);
    }
    let _ = writeln!(
        out,
        ".SH VERSION\n{}",
        esc(crate::cni::version::LONG).replace('\n', "\n.br\n")
    );
    let others: Vec<String> = pages()
        .into_iter()
        .filter(|(file, ..)| !file.starts_with(&format!("{title}.")))
        .map(|(file, section, ..)| {
            let name = file.trim_end_matches(&format!(".{section}"));
            format!(".BR {} ({section})", esc(name))
        })
        .collect();
    let _ = writeln!(out, ".SH SEE ALSO\n{}", others.join(",\n"));
    out
}

#[cfg(test)]
#[path = "man_tests.rs"]
mod tests;
