use super::*;

#[test]
fn one_line_says_what_happened_or_would() {
    let dir = Path::new("/opt/cni/bin");
    let mut steps = vec![Step::Unchanged; 20];
    steps.extend([Step::Install, Step::Upgrade, Step::Left, Step::KeptForeign]);
    assert_eq!(
        install_summary(dir, &steps, false),
        "cni-multi install: installed 22 names in /opt/cni/bin (2 changed; \
             1 left to other installers (--leave); 1 kept: not ours (--force replaces))"
    );
    let dry = install_summary(dir, &steps, true);
    assert!(
        dry.starts_with("cni-multi install: would install 22 names in /opt/cni/bin (2 to change;"),
        "{dry}"
    );
    assert_eq!(
        install_summary(dir, &[Step::Unchanged, Step::KeptForeign], true),
        "cni-multi install: nothing to change in /opt/cni/bin"
    );
    let back = [Restore::Remove, Restore::Remove, Restore::File("b".into())];
    assert_eq!(
        restore_summary(dir, &back, 0, true, false),
        "cni-multi install: rolled back 3 names in /opt/cni/bin (2 removed, 1 restored)"
    );
    assert_eq!(
        restore_summary(dir, &back[..1], 0, false, true),
        "cni-multi install: would uninstall 1 name in /opt/cni/bin (1 to remove)"
    );
    assert_eq!(
        restore_summary(dir, &back[..2], 1, true, false),
        "cni-multi install: rolled back 3 names in /opt/cni/bin (2 removed, 1 not restored: backup gone)"
    );
    for step in [
        Step::Install,
        Step::Upgrade,
        Step::Replace,
        Step::Repair,
        Step::Left,
    ] {
        assert!(step.describe(true).contains("would"), "{step:?}");
        assert!(!step.describe(false).contains("would"), "{step:?}");
    }
    assert!(Restore::Remove.describe(true).starts_with("would"));
    let named = [
        ("bridge", Step::KeptForeign),
        ("ptp", Step::KeptForeign),
        ("x", Step::Unchanged),
    ];
    assert_eq!(
        not_ours(&named),
        [
            "cni-multi install: bridge, ptp not installed by cni-multi: kept; --force replaces them (kept for --rollback)"
        ]
    );
}
