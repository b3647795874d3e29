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
