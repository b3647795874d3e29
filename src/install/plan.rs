//! What `cni-multi install` does to each name, decided from what is there and
//! what the state file says, without touching the disk (unit-tested below).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The binary's own name in the directory; every plugin link points at it.
pub const BINARY: &str = "cni-multi";

/// What a name in the directory is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Absent,
    /// A symbolic link and its target.
    Link(String),
    /// A regular file and the SHA-512 (hex) of its bytes.
    File(String),
    /// A directory, device, socket or a link whose target is not UTF-8: never touched.
    Other,
}

/// What a name was before a change, kept in the state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Was {
    Absent,
    /// A file now kept under this name in the backup directory.
    File(String),
    /// A symbolic link with this target.
    Link(String),
}

/// One name's entry in the journal of the last install that changed something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undo {
    pub was: Was,
    /// Whether cni-multi held the name before that install (an upgrade).
    pub owned_before: bool,
}

/// The state file: names cni-multi holds with what each was before it first
/// took them, the journal of the last install that changed something, and the
/// digest of the binary it installed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    #[serde(default)]
    pub owned: BTreeMap<String, Was>,
    #[serde(default)]
    pub last: BTreeMap<String, Undo>,
    #[serde(default)]
    pub binary: String,
}

/// What install does to one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Unchanged,
    /// Nothing there: ours goes in.
    Install,
    /// A cni-multi file or link of ours that differs: replaced, the old one
    /// kept for `--rollback`.
    Upgrade,
    /// Not ours and `--force`: kept in the backup directory, then replaced.
    Replace,
    /// Not ours, no `--force`.
    KeptForeign,
    /// A directory or special file: never replaced.
    KeptOther,
}

impl Step {
    pub fn changes(self) -> bool {
        matches!(self, Step::Install | Step::Upgrade | Step::Replace)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Step::Unchanged => "unchanged",
            Step::Install => "installed",
            Step::Upgrade => "replaced (previous cni-multi kept for --rollback)",
            Step::Replace => "replaced (backup kept)",
            Step::KeptForeign => "kept: not ours, use --force",
            Step::KeptOther => "kept: not a file or link, never replaced",
        }
    }
}

/// What a name should be: the binary (by digest) or a link to it.
pub fn desired(name: &str, self_digest: &str) -> Observed {
    if name == BINARY {
        Observed::File(self_digest.to_string())
    } else {
        Observed::Link(BINARY.to_string())
    }
}

/// The install step for `name` given what is there and whether we hold it.
pub fn plan_install(
    name: &str,
    now: &Observed,
    self_digest: &str,
    owned: bool,
    force: bool,
) -> Step {
    if *now == desired(name, self_digest) {
        return Step::Unchanged;
    }
    match now {
        Observed::Absent => Step::Install,
        Observed::Other => Step::KeptOther,
        Observed::Link(_) | Observed::File(_) if owned => Step::Upgrade,
        Observed::Link(_) | Observed::File(_) if force => Step::Replace,
        _ => Step::KeptForeign,
    }
}

/// What install records for a name it changes: (journal entry, whether the
/// name is ours afterwards with what it originally was). `backup` is the
/// backup file's name when `now` is a file.
pub fn record(now: &Observed, owned: Option<&Was>, backup: Option<&str>) -> (Undo, Was) {
    let was = match (now, backup) {
        (Observed::Link(t), _) => Was::Link(t.clone()),
        (Observed::File(_), Some(b)) => Was::File(b.to_string()),
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
    pub fn describe(&self) -> &'static str {
        match self {
            Restore::Remove => "removed",
            Restore::File(_) => "restored (from backup)",
            Restore::Link(_) => "restored (link)",
            Restore::Nothing => "unchanged",
            Restore::KeptChanged => "kept: changed since cni-multi installed it",
        }
    }
}

/// Whether `now` is what cni-multi put at `name`: the link, or a binary whose
/// digest is the installed one's or this build's.
pub fn is_ours(name: &str, now: &Observed, state: &State, self_digest: &str) -> bool {
    match now {
        Observed::File(d) if name == BINARY => *d == state.binary || d == self_digest,
        other => *other == desired(name, self_digest) && name != BINARY,
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

/// Whether `name` may be a file name in the directory (also for names read
/// back from the state file).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && name.len() <= 255 && !name.contains(['/', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "digest-of-this-build";

    #[test]
    fn install_steps_per_name() {
        let link = |t: &str| Observed::Link(t.to_string());
        let file = |d: &str| Observed::File(d.to_string());
        let cases = [
            // (name, now, owned, force, step)
            ("bridge", Observed::Absent, false, false, Step::Install),
            ("bridge", link(BINARY), false, false, Step::Unchanged),
            ("bridge", link(BINARY), true, true, Step::Unchanged),
            ("bridge", file("reference"), false, false, Step::KeptForeign),
            ("bridge", file("reference"), false, true, Step::Replace),
            (
                "bridge",
                link("/usr/lib/cni/bridge"),
                false,
                false,
                Step::KeptForeign,
            ),
            (
                "bridge",
                link("/usr/lib/cni/bridge"),
                true,
                false,
                Step::Upgrade,
            ),
            ("bridge", Observed::Other, true, true, Step::KeptOther),
            (BINARY, Observed::Absent, false, false, Step::Install),
            (BINARY, file(ME), false, false, Step::Unchanged),
            (BINARY, file("older"), true, false, Step::Upgrade),
            (BINARY, file("older"), false, false, Step::KeptForeign),
            (BINARY, file("older"), false, true, Step::Replace),
            (BINARY, link(BINARY), false, false, Step::KeptForeign),
        ];
        for (name, now, owned, force, want) in cases {
            assert_eq!(
                plan_install(name, &now, ME, owned, force),
                want,
                "{name} {now:?} owned={owned} force={force}"
            );
        }
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
