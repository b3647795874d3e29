//! What install prints: one summary line per directory (each name's line too
//! with `--verbose`), in the future tense for `--dry-run`, so a dry run
//! never reads like a real one and a run that changes nothing is one line.

use super::plan::{Restore, Step};
use std::path::Path;

/// "1 name", "3 names".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The install's summary: how many names are ours afterwards, how many
/// change, and every name that is not ours with why.
pub fn install_summary(dir: &Path, steps: &[Step], dry_run: bool) -> String {
    let changed = steps.iter().filter(|s| s.changes()).count();
    if changed == 0 {
        return format!("cni-multi install: nothing to change in {}", dir.display());
    }
    let ours = steps.iter().filter(|s| s.ours_after()).count();
    let n = |step: Step| steps.iter().filter(|s| **s == step).count();
    let mut parts = vec![if dry_run {
        format!("{changed} to change")
    } else {
        format!("{changed} changed")
    }];
    for (step, what) in [
        (Step::Left, "left to other installers (--leave)"),
        (Step::KeptForeign, "kept: not ours (--force replaces)"),
        (Step::Clobbered, "kept: clobbered by another installer"),
        (Step::KeptOther, "kept: not files or links"),
    ] {
        if n(step) > 0 {
            parts.push(format!("{} {what}", n(step)));
        }
    }
    format!(
        "cni-multi install: {} {} in {} ({})",
        if dry_run {
            "would install"
        } else {
            "installed"
        },
        count(ours, "name", "names"),
        dir.display(),
        parts.join("; ")
    )
}

/// The names left as another installer's, each kind on a line naming them
/// (for stderr: they are why the directory is not all ours).
pub fn not_ours(steps: &[(&str, Step)]) -> Vec<String> {
    let names = |step: Step| -> Vec<&str> {
        steps
            .iter()
            .filter(|(_, s)| *s == step)
            .map(|(n, _)| *n)
            .collect()
    };
    let mut out = Vec::new();
    let foreign = names(Step::KeptForeign);
    if !foreign.is_empty() {
        out.push(format!(
            "cni-multi install: {} not installed by cni-multi: kept; --force replaces {} (kept for --rollback)",
            foreign.join(", "),
            if foreign.len() == 1 { "it" } else { "them" }
        ));
    }
    let clobbered = names(Step::Clobbered);
    if !clobbered.is_empty() {
        out.push(format!(
            "cni-multi install: {} overwritten by another installer (only {} its file); \
             --force takes {} back, --leave leaves {} to it",
            clobbered.join(", "),
            if clobbered.len() == 1 {
                "that name runs"
            } else {
                "those names run"
            },
            if clobbered.len() == 1 { "it" } else { "them" },
            if clobbered.len() == 1 { "it" } else { "them" },
        ));
    }
    out
}

/// The summary of `--rollback` or `--uninstall`: what was (or would be)
/// done to each name, and how many could not be restored.
pub fn restore_summary(
    dir: &Path,
    steps: &[Restore],
    lost: usize,
    rollback: bool,
    dry_run: bool,
) -> String {
    let verb = match (rollback, dry_run) {
        (true, false) => "rolled back",
        (true, true) => "would roll back",
        (false, false) => "uninstalled",
        (false, true) => "would uninstall",
    };
    let n = |pick: fn(&Restore) -> bool| steps.iter().filter(|s| pick(s)).count();
    let removed = n(|s| *s == Restore::Remove);
    let restored = n(|s| matches!(s, Restore::File(_) | Restore::Link(_)));
    let kept = n(|s| *s == Restore::KeptChanged);
    let mut parts = Vec::new();
    let (remove, restore) = if dry_run {
        ("to remove", "to restore")
    } else {
        ("removed", "restored")
    };
    for (k, what) in [
        (removed, remove),
        (restored, restore),
        (kept, "kept: changed since cni-multi installed them"),
        (lost, "not restored: backup gone"),
    ] {
        if k > 0 {
            parts.push(format!("{k} {what}"));
        }
    }
    if parts.is_empty() {
        parts.push("nothing to change".into());
    }
    format!(
        "cni-multi install: {verb} {} in {} ({})",
        count(steps.len() + lost, "name", "names"),
        dir.display(),
        parts.join(", ")
    )
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
