//! The iptables backend: state read with one `iptables-save -t <table>`, every
//! change of an operation written as one `iptables-restore --noflush --wait`
//! batch (atomic per table), never one `iptables` process per rule.

use super::Family;
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

/// Quotes one argument for iptables-restore's tokenizer (as iptables-save does).
pub fn quote(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '"', '\'', '\\', '\t']) {
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

    /// The restore input.
    pub fn render(&self) -> String {
        let mut s = format!("*{}\n", self.table);
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("COMMIT\n");
        s
    }
}

fn tool(family: Family, what: &str) -> String {
    match family {
        Family::V4 => format!("iptables-{what}"),
        Family::V6 => format!("ip6tables-{what}"),
    }
}

/// The first executable `name` on PATH: what a shell would run. Running it by
/// this path spares the child one failed execve per PATH entry before it.
fn locate(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

/// A command for the family's tool, by its located path when found.
fn command(family: Family, what: &str) -> (String, Command) {
    let name = tool(family, what);
    let cmd = match locate(&name) {
        Some(path) => Command::new(path),
        None => Command::new(&name),
    };
    (name, cmd)
}

/// `iptables-save -t <table>` (or ip6tables-save): one process.
pub fn save(family: Family, table: &str) -> Result<Saved, String> {
    let (bin, mut cmd) = command(family, "save");
    let out = cmd
        .args(["-t", table])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("failed to run {bin}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{bin} -t {table} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(Saved::parse(&String::from_utf8_lossy(&out.stdout)))
}

/// Applies a batch with one `iptables-restore --noflush --wait`; empty batches run nothing.
pub fn apply(batch: &Batch) -> Result<(), String> {
    if batch.is_empty() {
        return Ok(());
    }
    let (bin, mut cmd) = command(batch.family, "restore");
    let mut child = cmd
        .args(["--noflush", "--wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("failed to run {bin}: {e}"))?;
    let input = batch.render();
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| format!("failed to write to {bin}: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("failed to wait for {bin}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{bin} failed: {} (input:\n{input})",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether the family's iptables is the nf_tables flavour (xtables-nft-multi),
/// whose state can then be read over netlink instead of by `iptables-save`.
pub fn is_nft_based(family: Family) -> bool {
    locate(&tool(family, "restore"))
        .and_then(|p| std::fs::canonicalize(p).ok())
        .is_some_and(|p| p.to_string_lossy().contains("nft"))
}

/// With iptables-nft, true when none of `chains` exists in `table`, read over
/// nf_tables netlink: a DEL with nothing to remove then runs no iptables-save.
/// False whenever that cannot be known (iptables-legacy, netlink failure).
pub fn surely_absent(family: Family, table: &str, chains: &[String]) -> bool {
    if !is_nft_based(family) {
        return false;
    }
    let f = match family {
        Family::V4 => super::nft::NFPROTO_IPV4,
        Family::V6 => super::nft::NFPROTO_IPV6,
    };
    let Ok(mut sock) = super::nft::open() else {
        return false;
    };
    super::nft::chains(&mut sock, f, table)
        .is_ok_and(|have| !have.iter().any(|c| chains.contains(c)))
}

/// Whether the family's tools are installed (looked up on PATH, no process run:
/// detection must not cost an exec per operation).
pub fn usable(family: Family) -> bool {
    locate(&tool(family, "restore")).is_some() && locate(&tool(family, "save")).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_save_output_and_quotes_like_it() {
        let text = "# Generated\n*nat\n:PREROUTING ACCEPT [0:0]\n:CNI-DN-1 - [0:0]\n\
                    -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\n\
                    -A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"n\\\" id: \\\"c\\\"\" -m multiport --dports 80 -j CNI-DN-1\nCOMMIT\n";
        let s = Saved::parse(text);
        assert!(s.has_chain("CNI-DN-1") && s.has_chain("PREROUTING"));
        assert!(s.jumps_to("PREROUTING", "CNI-HOSTPORT-DNAT"));
        assert!(!s.jumps_to("PREROUTING", "CNI-HOSTPORT"));
        assert!(s.jumps_to("CNI-HOSTPORT-DNAT", "CNI-DN-1"));
        assert_eq!(
            quote("dnat name: \"n\" id: \"c\""),
            "\"dnat name: \\\"n\\\" id: \\\"c\\\"\""
        );
        assert_eq!(quote("10.0.0.2:80"), "10.0.0.2:80");
        let mut b = Batch::new(Family::V4, "nat");
        let mut saved = s.clone();
        b.ensure_chain(&mut saved, "CNI-DN-1");
        b.ensure_chain(&mut saved, "CNI-NEW");
        b.append("CNI-NEW", &["-j".into(), "RETURN".into()]);
        assert_eq!(
            b.render(),
            "*nat\n-N CNI-NEW\n-A CNI-NEW -j RETURN\nCOMMIT\n"
        );
    }
}
