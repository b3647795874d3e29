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
mod tests {
    use super::*;

    const ME: &str = "digest-of-this-build";

    #[test]
    fn install_steps_per_name() {
        let link = |t: &str| Observed::Link(t.to_string());
        let file = |d: &str| Observed::File(d.to_string());
        let stub = |b: &str| Observed::Stub(b.to_string());
        let stubs = Layout::Stubs("/opt/cni/bin/cni-multi".into());
        let here = stub("/opt/cni/bin/cni-multi");
        // (name, now, owned, force, left, step)
        let cases = [
            (
                "bridge",
                Observed::Absent,
                false,
                false,
                false,
                Step::Install,
            ),
            ("bridge", here.clone(), false, false, false, Step::Unchanged),
            ("bridge", here.clone(), true, true, true, Step::Unchanged),
            ("bridge", link(BINARY), true, false, false, Step::Upgrade),
            ("bridge", link(BINARY), false, false, false, Step::Upgrade),
            (
                "bridge",
                stub("/usr/lib/cni/cni-multi"),
                false,
                false,
                false,
                Step::Upgrade,
            ),
            (
                "bridge",
                file("reference"),
                false,
                false,
                false,
                Step::KeptForeign,
            ),
            (
                "bridge",
                file("reference"),
                false,
                true,
                false,
                Step::Replace,
            ),
            (
                "bridge",
                link("/usr/lib/cni/bridge"),
                false,
                false,
                false,
                Step::KeptForeign,
            ),
            (
                "flannel",
                file("flannel's"),
                true,
                false,
                false,
                Step::Clobbered,
            ),
            (
                "flannel",
                file("flannel's"),
                true,
                true,
                false,
                Step::Replace,
            ),
            ("flannel", file("flannel's"), true, true, true, Step::Left),
            (
                "flannel",
                Observed::Absent,
                false,
                true,
                true,
                Step::Install,
            ),
            ("flannel", link(BINARY), true, true, true, Step::Upgrade),
            (
                "bridge",
                link("/usr/lib/cni/bridge"),
                true,
                false,
                false,
                Step::Clobbered,
            ),
            (
                "bridge",
                Observed::Other,
                true,
                true,
                false,
                Step::KeptOther,
            ),
            (BINARY, Observed::Absent, false, false, false, Step::Install),
            (BINARY, file(ME), false, false, false, Step::Unchanged),
            (BINARY, file("installed"), true, false, false, Step::Upgrade),
            (BINARY, file("flannel's"), true, false, false, Step::Repair),
            (
                BINARY,
                file("older"),
                false,
                false,
                false,
                Step::KeptForeign,
            ),
            (BINARY, file("older"), false, true, false, Step::Replace),
            (BINARY, link(BINARY), false, false, false, Step::KeptForeign),
        ];
        for (name, now, owned, force, left, want) in cases {
            let held = Held {
                owned,
                installed: "installed",
                force,
                left,
            };
            assert_eq!(
                plan_install(name, &now, ME, &stubs, held),
                want,
                "{name} {now:?} owned={owned} force={force} left={left}"
            );
        }
        assert_eq!(
            plan_install("bridge", &here, ME, &Layout::Links, Held::default()),
            Step::Upgrade
        );
    }

    #[test]
    fn the_journal_keeps_the_first_original_and_the_last_previous() {
        let older = Observed::File("older".into());
        let (undo, original) = record(&older, Some(&Was::Absent), Some("cni-multi"));
        assert_eq!(undo.was, Was::File("cni-multi".into()));
        assert!(undo.owned_before);
        assert_eq!(original, Was::Absent, "first original stays");

        let (undo, original) = record(&Observed::File("ref".into()), None, Some("bridge"));
        assert_eq!(original, Was::File("bridge".into()));
        assert!(!undo.owned_before);

        let (undo, original) = record(&Observed::Absent, None, None);
        assert_eq!((undo.was, original), (Was::Absent, Was::Absent));
    }

    #[test]
    fn restore_touches_only_what_is_still_ours() {
        let state = State {
            binary: "installed".into(),
            ..State::default()
        };
        let ours_link = Observed::Link(BINARY.into());
        let cases = [
            ("bridge", ours_link.clone(), Was::Absent, Restore::Remove),
            (
                "bridge",
                ours_link.clone(),
                Was::File("b".into()),
                Restore::File("b".into()),
            ),
            (
                "bridge",
                ours_link.clone(),
                Was::Link("x".into()),
                Restore::Link("x".into()),
            ),
            (
                "bridge",
                Observed::Absent,
                Was::File("b".into()),
                Restore::File("b".into()),
            ),
            ("bridge", Observed::Absent, Was::Absent, Restore::Nothing),
            (
                "bridge",
                Observed::Link("x".into()),
                Was::Link("x".into()),
                Restore::Nothing,
            ),
            (
                "bridge",
                Observed::File("other".into()),
                Was::Absent,
                Restore::KeptChanged,
            ),
            (
                BINARY,
                Observed::File("installed".into()),
                Was::Absent,
                Restore::Remove,
            ),
            (
                BINARY,
                Observed::File(ME.into()),
                Was::File("p".into()),
                Restore::File("p".into()),
            ),
            (
                BINARY,
                Observed::File("stranger".into()),
                Was::Absent,
                Restore::KeptChanged,
            ),
        ];
        for (name, now, was, want) in cases {
            assert_eq!(
                plan_restore(name, &now, &was, &state, ME),
                want,
                "{name} {now:?} {was:?}"
            );
        }
    }

    #[test]
    fn the_binary_goes_first_and_names_are_checked() {
        let mut names = vec!["bridge".to_string(), BINARY.to_string(), "ptp".to_string()];
        binary_first(&mut names);
        assert_eq!(names[0], BINARY);
        for bad in ["", ".", "..", ".cni-multi", "a/b", "x\0"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(valid_name("host-local"));
    }

    #[test]
    fn the_state_file_round_trips_through_the_go_decoder() {
        let mut state = State {
            binary: "abc".into(),
            ..State::default()
        };
        state
            .owned
            .insert("bridge".into(), Was::File("bridge".into()));
        state.owned.insert("ptp".into(), Was::Absent);
        state.last.insert(
            "tap".into(),
            Undo {
                was: Was::Link("/x".into()),
                owned_before: false,
            },
        );
        let text = serde_json::to_string(&state).expect("encode");
        let back: State = crate::cni::json::from_str(&text).expect("decode");
        assert_eq!(back, state);
    }
}
