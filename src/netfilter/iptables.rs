//! The iptables backend: state read with one `iptables-save -t <table>`, every
//! change of an operation written as one `iptables-restore --noflush --wait`
//! batch (atomic per table), never one `iptables` process per rule.

use super::{Error, Family, Result};
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

/// One table as `iptables-save` printed it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Saved {
    pub chains: BTreeSet<String>,
    /// `(chain, spec)`: a rule line `-A <chain> <spec>`, spec as printed.
    pub rules: Vec<(String, String)>,
}

impl Saved {
    /// Parses `iptables-save -t <table>` output (one table).
    pub fn parse(text: &str) -> Saved {
        let mut saved = Saved::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix(':') {
                if let Some(name) = rest.split_whitespace().next() {
                    saved.chains.insert(name.to_string());
                }
            } else if let Some(rest) = line.strip_prefix("-A ")
                && let Some((chain, spec)) = rest.split_once(' ')
            {
                saved.rules.push((chain.to_string(), spec.to_string()));
            }
        }
        saved
    }

    pub fn has_chain(&self, chain: &str) -> bool {
        self.chains.contains(chain)
    }

    /// Rules of `chain` whose printed spec satisfies `pred`.
    pub fn rules_in<'a>(
        &'a self,
        chain: &'a str,
        pred: impl Fn(&str) -> bool + 'a,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.rules
            .iter()
            .filter(move |(c, s)| c == chain && pred(s))
            .map(|(_, s)| s.as_str())
    }

    /// Whether `chain` has a rule jumping to `target` (`-j <target>` at the end
    /// or followed by options).
    pub fn jumps_to(&self, chain: &str, target: &str) -> bool {
        self.rules_in(chain, |s| jumps(s, target)).next().is_some()
    }
}

/// A printed rule spec jumps to `target`.
pub fn jumps(spec: &str, target: &str) -> bool {
    let needle = format!("-j {target}");
    spec.ends_with(&needle) || spec.contains(&format!("{needle} "))
}

/// The container ID from a saved rule's comment that starts with `prefix`
/// (`name: "<net>" id: `, with the rest `"<cid>"`).
pub fn comment_container(spec: &str, prefix: &str) -> Option<String> {
    // iptables-save prints the comment quoted with escaped inner quotes.
    let printed = quote(prefix);
    let start = spec.find(printed.trim_end_matches('"'))? + printed.len() - 1;
    let rest = &spec[start..];
    let rest = rest.strip_prefix("\\\"")?;
    let end = rest.find("\\\"")?;
    Some(rest[..end].to_string())
}

/// Whether `name` may name a chain the config chooses: at most 28 ASCII
/// letters, digits, `-` or `_` (the kernel's limit, and nothing to quote).
pub fn valid_chain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 28
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Quotes one argument for iptables-restore's tokenizer (as iptables-save does).
/// Control characters cannot be quoted: `render` refuses lines that hold one.
pub fn quote(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '"', '\'', '\\', '\t', '#']) {
        return arg.to_string();
    }
    let mut out = String::from("\"");
    for c in arg.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn join(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

/// The changes of one operation to one table.
#[derive(Debug, Clone)]
pub struct Batch {
    pub family: Family,
    pub table: String,
    lines: Vec<String>,
}

impl Batch {
    pub fn new(family: Family, table: &str) -> Batch {
        Batch {
            family,
            table: table.to_string(),
            lines: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Creates `chain` if the saved state lacks it (and remembers it did).
    pub fn ensure_chain(&mut self, saved: &mut Saved, chain: &str) {
        if saved.chains.insert(chain.to_string()) {
            self.lines.push(format!("-N {chain}"));
        }
    }

    /// Declares `chain`: created when missing, flushed when present (--noflush semantics).
    pub fn reset_chain(&mut self, chain: &str) {
        self.lines.push(format!(":{chain} - [0:0]"));
    }

    pub fn append(&mut self, chain: &str, args: &[String]) {
        self.lines.push(format!("-A {chain} {}", join(args)));
    }

    pub fn insert(&mut self, chain: &str, position: u32, args: &[String]) {
        self.lines
            .push(format!("-I {chain} {position} {}", join(args)));
    }

    /// Deletes the rule `args` describe (restore fails when none matches).
    pub fn delete(&mut self, chain: &str, args: &[String]) {
        self.lines.push(format!("-D {chain} {}", join(args)));
    }

    /// Creates `chain`; the restore fails if it exists (a state check that
    /// costs no `iptables-save`).
    pub fn new_chain(&mut self, chain: &str) {
        self.lines.push(format!("-N {chain}"));
    }

    /// Deletes a rule given as iptables-save printed it.
    pub fn delete_saved(&mut self, chain: &str, spec: &str) {
        self.lines.push(format!("-D {chain} {spec}"));
    }

    /// Deletes an (already empty) chain. Note: with iptables-nft, flushing a chain
    /// whose rules were deleted earlier in the same batch makes the kernel see the
    /// deleted rules' jump targets as still in use (EBUSY), so callers that emptied
    /// a chain with `-D` use this rather than flush-and-delete.
    pub fn delete_chain(&mut self, chain: &str) {
        self.lines.push(format!("-X {chain}"));
    }

    pub fn flush_and_delete_chain(&mut self, chain: &str) {
        self.lines.push(format!("-F {chain}"));
        self.lines.push(format!("-X {chain}"));
    }

    /// Appends another batch's lines (same family and table).
    pub fn extend(&mut self, other: Batch) {
        self.lines.extend(other.lines);
    }

    /// The restore input. A control character anywhere (a newline would end
    /// the rule and start another, even a `COMMIT` and a new table) refuses the
    /// whole batch: names are validated where they enter, this is the backstop.
    pub fn render(&self) -> Result<String> {
        let mut s = format!("*{}\n", self.table);
        for l in std::iter::once(&self.table).chain(&self.lines) {
            if l.chars().any(char::is_control) {
                return Err(Error::ControlCharacter { line: l.clone() });
            }
        }
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("COMMIT\n");
        Ok(s)
    }
}

/// Which iptables tools an operation runs: those PATH resolves `iptables-save`
/// and the like to (what every plugin uses), or one flavour by its own name
/// (for a host that switched, whose old flavour may still hold rules). It is
/// part of the iptables backend's value ([`super::Backend::Iptables`]), handed
/// down to every read and write, so a thread runs whatever it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Default,
    Legacy,
    Nft,
}

impl Flavour {
    /// The family's command as this flavour names it: `iptables`,
    /// `iptables-legacy`, `ip6tables-nft`.
    pub fn command(self, family: Family) -> String {
        let base = match family {
            Family::V4 => "iptables",
            Family::V6 => "ip6tables",
        };
        match self {
            Flavour::Default => base.to_string(),
            Flavour::Legacy => format!("{base}-legacy"),
            Flavour::Nft => format!("{base}-nft"),
        }
    }

    fn tool(self, family: Family, what: &str) -> String {
        format!("{}-{what}", self.command(family))
    }

    /// A command for the family's tool, by its located path when found.
    fn process(self, family: Family, what: &str) -> (String, Command) {
        let name = self.tool(family, what);
        let cmd = match locate(&name) {
            Some(path) => Command::new(path),
            None => Command::new(&name),
        };
        (name, cmd)
    }

    /// `iptables-save -t <table>` (or ip6tables-save): one process.
    pub fn save(self, family: Family, table: &str) -> Result<Saved> {
        self.save_existing(family, table)?
            .ok_or_else(|| Error::NoTable {
                tool: self.tool(family, "save"),
                table: table.to_string(),
            })
    }

    /// As `save`, for DEL and GC: None when nothing of ours can exist in the
    /// table (the tool is not installed, or the kernel has no such table); an
    /// error when the state could not be read, so a DEL never reports success
    /// over rules it did not see.
    pub fn save_existing(self, family: Family, table: &str) -> Result<Option<Saved>> {
        let (bin, mut cmd) = self.process(family, "save");
        let out = match cmd.args(["-t", table]).stdin(Stdio::null()).output() {
            Ok(out) => out,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(Error::Tool {
                    tool: bin,
                    op: "run",
                    source,
                });
            }
        };
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            // iptables-legacy on a kernel without the table's module.
            if stderr.contains("Table does not exist") {
                return Ok(None);
            }
            return Err(Error::ToolFailed {
                command: format!("{bin} -t {table}"),
                status: out.status,
                stderr: stderr.trim().to_string(),
                input: None,
            });
        }
        let text = String::from_utf8_lossy(&out.stdout);
        // iptables-nft exits 0 with only this comment for a table it cannot read:
        // taken as empty, a DEL would report success over rules it never saw.
        if text.contains("is incompatible, use 'nft' tool") {
            return Err(Error::Incompatible {
                tool: bin,
                table: table.to_string(),
            });
        }
        Ok(Some(Saved::parse(&text)))
    }

    /// Applies a batch with one `iptables-restore --noflush --wait`; empty
    /// batches run nothing.
    pub fn apply(self, batch: &Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let input = batch.render()?;
        let (bin, cmd) = self.process(batch.family, "restore");
        restore(&bin, cmd, &input)
    }

    /// Applies several tables' batches of `family` with one `iptables-restore
    /// --noflush --wait`; nothing to do runs nothing.
    pub fn apply_all(self, family: Family, batches: &[Batch]) -> Result<()> {
        if let Some(other) = batches.iter().find(|b| b.family != family) {
            return Err(Error::InvalidConfig(format!(
                "a {} batch for table {} among {family} ones",
                other.family, other.table
            )));
        }
        let input = render_all(batches)?;
        if input.is_empty() {
            return Ok(());
        }
        let (bin, cmd) = self.process(family, "restore");
        restore(&bin, cmd, &input)
    }

    /// Whether the family's tools are the nf_tables flavour, whose state can
    /// then be read (and rules written) over netlink instead. The two
    /// multi-call binaries of iptables are known by name (no exec on every
    /// operation); any other tool (a wrapper, a renamed binary) is asked: `-V`
    /// prints `(nf_tables)`.
    pub fn is_nft_based(self, family: Family) -> bool {
        let Some(path) = locate(&self.tool(family, "restore")) else {
            return false;
        };
        let real = fs_err::canonicalize(&path).unwrap_or_else(|_| path.clone());
        match real.file_name().and_then(|n| n.to_str()) {
            Some("xtables-nft-multi") => true,
            Some("xtables-legacy-multi") => false,
            _ => Command::new(&path)
                .arg("-V")
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("(nf_tables)")),
        }
    }

    /// Whether the family's `nat` table belongs to another nftables user in a
    /// form iptables-nft cannot read (it has sets): writes would go in, but no
    /// `iptables-save` could show them again. One netlink request, no exec.
    pub fn nat_foreign(self, family: Family) -> bool {
        self.is_nft_based(family)
            && crate::netfilter::nft::open()
                .and_then(|mut sock| {
                    crate::netfilter::nft::has_sets(
                        &mut sock,
                        crate::netfilter::nft::nfproto(family),
                        "nat",
                    )
                })
                .unwrap_or(false)
    }

    /// Whether the family's tools are installed (looked up on PATH, no process
    /// run: detection must not cost an exec per operation).
    pub fn usable(self, family: Family) -> bool {
        locate(&self.tool(family, "restore")).is_some()
            && locate(&self.tool(family, "save")).is_some()
    }

    /// Each family's `nat` table as saved (None: no such table, or no tools).
    pub fn nat_tables(self) -> [(Family, Option<Saved>); 2] {
        [Family::V4, Family::V6].map(|f| (f, self.save_existing(f, "nat").ok().flatten()))
    }
}

/// The flavours whose rules the host may hold: the default tools', and the
/// other flavour's when a host has both (one it switched from may keep rules).
pub fn flavours() -> Vec<Flavour> {
    std::iter::once(Flavour::Default)
        .chain(other_flavour())
        .collect()
}

/// The flavour the default tools are not, when both flavours' tools are
/// installed and the default is one of them.
pub fn other_flavour() -> Option<Flavour> {
    let have = |f: Flavour| {
        [Family::V4, Family::V6].iter().any(|&family| {
            ["save", "restore"]
                .iter()
                .all(|what| locate(&f.tool(family, what)).is_some())
        })
    };
    let default = Flavour::Default;
    let family = [Family::V4, Family::V6]
        .into_iter()
        .find(|&f| default.usable(f))?;
    let other = if default.is_nft_based(family) {
        Flavour::Legacy
    } else {
        Flavour::Nft
    };
    // Legacy tools load the legacy table modules they ask about: with no
    // legacy table in this namespace there are no legacy rules to read.
    if other == Flavour::Legacy && !legacy_tables() {
        return None;
    }
    (have(Flavour::Legacy) && have(Flavour::Nft)).then_some(other)
}

/// Whether this network namespace has any legacy (x_tables) table.
fn legacy_tables() -> bool {
    ["/proc/net/ip_tables_names", "/proc/net/ip6_tables_names"]
        .iter()
        .any(|p| std::fs::read_to_string(p).is_ok_and(|t| !t.trim().is_empty()))
}

/// The first executable `name` on PATH: what a shell would run. Running it by
/// this path spares the child one failed execve per PATH entry before it.
fn locate(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The restore input of several tables' batches (one family): each table
/// committed in turn, empty batches left out.
pub fn render_all(batches: &[Batch]) -> Result<String> {
    let mut input = String::new();
    for batch in batches.iter().filter(|b| !b.is_empty()) {
        input.push_str(&batch.render()?);
    }
    Ok(input)
}

/// Runs `cmd` (a restore tool) on `input`. The input is written from a thread
/// while stderr is read here, so a tool that reports errors while we still
/// write cannot block either side; the child is always waited for, even when
/// it exits early and the write fails, and its own error line is reported.
fn restore(bin: &str, mut cmd: Command, input: &str) -> Result<()> {
    let tool_error = |op, source| Error::Tool {
        tool: bin.to_string(),
        op,
        source,
    };
    let mut child = cmd
        .args(["--noflush", "--wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| tool_error("run", e))?;
    let writer = child.stdin.take().map(|mut stdin| {
        let input = input.to_string();
        std::thread::spawn(move || stdin.write_all(input.as_bytes()))
    });
    let out = child.wait_with_output();
    let written = writer.map(|w| w.join());
    let out = out.map_err(|e| tool_error("wait for", e))?;
    if !out.status.success() {
        return Err(Error::ToolFailed {
            command: bin.to_string(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            input: Some(input.to_string()),
        });
    }
    match written {
        Some(Ok(Err(e))) => Err(tool_error("write to", e)),
        Some(Err(_)) => Err(tool_error(
            "write to",
            std::io::Error::other("writer thread panicked"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "iptables_tests.rs"]
mod tests;
