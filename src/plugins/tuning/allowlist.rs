//! The node's sysctl allowlist (`/etc/cni/tuning/allowlist.conf`), as the
//! reference reads it: one RE2 pattern a line, tried in order at ADD.

use super::Conf;
use super::pattern::Pattern;
use crate::cni::error::Context;
use crate::cni::{CniResult, Code, Error};

const ALLOWLIST: &str = "/etc/cni/tuning/allowlist.conf";

/// ADD only, as the reference: with an allowlist file, every sysctl key must
/// match one of its lines. A key with `IFNAME` may match as written or with
/// the interface name put in (the reference tries only the former).
pub(super) fn check_allowlist(conf: &Conf, ifname: &str) -> CniResult<()> {
    let Some(lines) = read_allowlist()? else {
        return Ok(());
    };
    for (key, _, _) in &conf.sysctls {
        if !allowed(&lines, key, ifname)? {
            // The reference's words and code (a plain error, 999); Go's %+v
            // of the lines is `[a b]`.
            let listed: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
            return Err(Error::internal(format!(
                "Sysctl {key} is not allowed. Only the following sysctls are allowed: [{}]",
                listed.join(" ")
            )));
        }
    }
    Ok(())
}

/// The allowlist's pattern lines with their line numbers, when the file exists
/// (blank lines and `#` comments skipped).
fn read_allowlist() -> CniResult<Option<Vec<(usize, String)>>> {
    let text = match crate::files::read_string_limited(ALLOWLIST, crate::files::MAX_FILE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("failed to read {ALLOWLIST}")),
    };
    Ok(Some(allowlist_lines(&text)))
}

fn allowlist_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(n, l)| (n, l.to_string()))
        .collect()
}

/// Lines are tried in order and compiled when reached, as the reference's
/// `regexp.MatchString` loop does: a line that does not parse is an error
/// naming it, unless an earlier line already allowed the key.
fn allowed(lines: &[(usize, String)], key: &str, ifname: &str) -> CniResult<bool> {
    let with_ifname = key.replacen("IFNAME", ifname, 1);
    for (n, line) in lines {
        let p = Pattern::compile(line).map_err(|e| {
            Error::caused_by(Code::InvalidConfig, format!("{ALLOWLIST} line {n}"), e)
        })?;
        if p.is_match(key) || p.is_match(&with_ifname) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
#[path = "allowlist_tests.rs"]
mod tests;
