//! What `cni-multi install` does to each name, decided from what is there and
//! what the state file says, without touching the disk (unit-tested below).

pub use crate::plugins::installed::{BINARY, Observed, State, Undo, Was, valid_name};

/// How plugin names are laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Stubs running the binary at this path (as runtimes see it).
    Stubs(String),
    /// Symbolic links to the binary: no disk blocks, but a write through one
    /// name lands in the binary every name runs.
    Links,
}

/// What install does to one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Unchanged,
    /// Nothing there: ours goes in.
    Install,
    /// A cni-multi binary, stub or link of ours that differs: replaced, the
    /// old one kept for `--rollback`.
    Upgrade,
    /// Not ours and `--force`: kept in the backup directory, then replaced.
    Replace,
    /// Not ours, no `--force`.
    KeptForeign,
    /// A plugin name we held now holds another file (a foreign installer's
    /// copy): kept unless `--force`.
    Clobbered,
    /// A name left to another installer (`--leave`) holds its file.
    Left,
    /// The binary we installed no longer has its bytes: rewritten. Not
    /// journaled, so `--rollback` never puts the damage back.
    Repair,
    /// A directory or special file: never replaced.
    KeptOther,
}

impl Step {
    pub fn changes(self) -> bool {
        matches!(
            self,
            Step::Install | Step::Upgrade | Step::Replace | Step::Repair
        )
    }

    /// The name's line of `--verbose`; future tense for `--dry-run`.
    pub fn describe(self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (Step::Unchanged, _) => "unchanged",
            (Step::Install, false) => "installed",
            (Step::Install, true) => "would install",
            (Step::Upgrade, false) => "replaced (previous cni-multi kept for --rollback)",
            (Step::Upgrade, true) => {
                "would replace (keeping the previous cni-multi for --rollback)"
            }
            (Step::Replace, false) => "replaced (backup kept)",
            (Step::Replace, true) => "would replace (keeping a backup)",
            (Step::KeptForeign, false) => "kept: not ours, use --force",
            (Step::KeptForeign, true) => "would keep: not ours, use --force",
            (Step::Clobbered, false) => {
                "clobbered: another installer wrote its file over our plugin name; kept, --force takes the name back"
            }
            (Step::Clobbered, true) => {
                "clobbered: another installer wrote its file over our plugin name; would keep it, --force takes the name back"
            }
            (Step::Left, false) => "left to another installer (--leave)",
            (Step::Left, true) => "would leave to another installer (--leave)",
            (Step::Repair, false) => "damaged: not the bytes cni-multi installed; repaired",
            (Step::Repair, true) => "damaged: not the bytes cni-multi installed; would repair",
            (Step::KeptOther, false) => "kept: not a file or link, never replaced",
            (Step::KeptOther, true) => "would keep: not a file or link, never replaced",
        }
    }

    /// Whether the name holds ours once the step is done.
    pub fn ours_after(self) -> bool {
        matches!(
            self,
            Step::Unchanged | Step::Install | Step::Upgrade | Step::Replace | Step::Repair
        )
    }
}

/// What a name should be: the binary (by digest) or a plugin name in `layout`.
pub fn desired(name: &str, self_digest: &str, layout: &Layout) -> Observed {
    match layout {
        _ if name == BINARY => Observed::File(self_digest.to_string()),
        Layout::Stubs(binary) => Observed::Stub(binary.clone()),
        Layout::Links => Observed::Link(BINARY.to_string()),
    }
}

/// What install knows of a name besides what is there.
#[derive(Debug, Clone, Copy, Default)]
pub struct Held<'a> {
    /// The name is in the state file.
    pub owned: bool,
    /// The digest of the binary the state file says was installed.
    pub installed: &'a str,
    pub force: bool,
    /// Left to another installer (`--leave`).
    pub left: bool,
}

/// The install step for `name` given what is there and what we hold.
pub fn plan_install(
    name: &str,
    now: &Observed,
    self_digest: &str,
    layout: &Layout,
    held: Held,
) -> Step {
    if *now == desired(name, self_digest, layout) {
        return Step::Unchanged;
    }
    let ours = if name == BINARY {
        matches!(now, Observed::File(d) if d == held.installed)
    } else {
        now.is_plugin_form()
    };
    match now {
        Observed::Absent => Step::Install,
        Observed::Other => Step::KeptOther,
        // A stub or link of any cni-multi (symlinks.sh, a package) is ours to update.
        _ if ours => Step::Upgrade,
        _ if held.owned && name == BINARY => Step::Repair,
        _ if held.left => Step::Left,
        _ if held.force => Step::Replace,
        _ if held.owned => Step::Clobbered,
        _ => Step::KeptForeign,
    }
}

/// What install records for a name it changes: (journal entry, whether the
/// name is ours afterwards with what it originally was). `backup` is the
/// backup file's name when `now` is a file.
pub fn record(now: &Observed, owned: Option<&Was>, backup: Option<&str>) -> (Undo, Was) {
    let was = match (now, backup) {
        (Observed::Link(t), _) => Was::Link(t.clone()),
        (Observed::File(_) | Observed::Stub(_), Some(b)) => Was::File(b.to_string()),
        _ => Was::Absent,
    };
    let original = owned.cloned().unwrap_or_else(|| was.clone());
    let undo = Undo {
        was,
        owned_before: owned.is_some(),
    };
    (undo, original)
}

/// What rollback or uninstall does to one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// The name was absent: what we put there goes.
    Remove,
    /// The kept file is renamed back over the name.
    File(String),
    /// The link is made again.
    Link(String),
    /// Nothing to do: it already is what it was.
    Nothing,
    /// Changed by someone else since: left alone.
    KeptChanged,
}

impl Restore {
    /// The name's line of `--verbose`; future tense for `--dry-run`.
    pub fn describe(&self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (Restore::Remove, false) => "removed",
            (Restore::Remove, true) => "would remove",
            (Restore::File(_), false) => "restored (from backup)",
            (Restore::File(_), true) => "would restore (from backup)",
            (Restore::Link(_), false) => "restored (link)",
            (Restore::Link(_), true) => "would restore (link)",
            (Restore::Nothing, _) => "unchanged",
            (Restore::KeptChanged, false) => "kept: changed since cni-multi installed it",
            (Restore::KeptChanged, true) => "would keep: changed since cni-multi installed it",
        }
    }
}

/// Whether `now` is what cni-multi put at `name`: a stub or link, or a
/// binary whose digest is the installed one's or this build's.
pub fn is_ours(name: &str, now: &Observed, state: &State, self_digest: &str) -> bool {
    match now {
        Observed::File(d) if name == BINARY => *d == state.binary || d == self_digest,
        other => name != BINARY && other.is_plugin_form(),
    }
}

/// How to put `name` back to `was`, given what is there now.
pub fn plan_restore(
    name: &str,
    now: &Observed,
    was: &Was,
    state: &State,
    self_digest: &str,
) -> Restore {
    let ours = is_ours(name, now, state, self_digest);
    match was {
        Was::Absent if *now == Observed::Absent => Restore::Nothing,
        Was::Link(t) if *now == Observed::Link(t.clone()) => Restore::Nothing,
        _ if !ours && *now != Observed::Absent => Restore::KeptChanged,
        Was::Absent => Restore::Remove,
        Was::File(b) => Restore::File(b.clone()),
        Was::Link(t) => Restore::Link(t.clone()),
    }
}

/// Order of changes so a runtime never finds a link without its binary: the
/// binary goes in first and out last.
pub fn binary_first(names: &mut [String]) {
    names.sort_by_key(|n| n != BINARY);
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
