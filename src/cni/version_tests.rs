use super::*;

#[test]
fn the_long_version_names_the_supported_range() {
    let range = format!(
        "CNI spec versions {} to {}\n",
        SUPPORTED[0],
        SUPPORTED[SUPPORTED.len() - 1]
    );
    assert!(LONG.contains(&range), "{LONG}");
    assert!(LONG.starts_with(BUILD), "{LONG}");
    assert!(!COMMIT.is_empty());
}

#[test]
fn parses_and_compares() {
    assert_eq!(parse(""), Ok((0, 1, 0)));
    assert_eq!(parse("1"), Ok((1, 0, 0)));
    assert_eq!(parse("0.4"), Ok((0, 4, 0)));
    assert!(parse("1.2.3.4").is_err());
    assert!(parse("a.b").is_err());
    assert_eq!(compare("0.10.0", "0.4.0"), Ok(Ordering::Greater));
    assert!(at_least("1.1.0", "1.1.0").unwrap_or(false));
    assert!(!at_least("1.0.0", "1.1.0").unwrap_or(true));
}

#[test]
fn families_cover_supported() {
    for v in SUPPORTED {
        let fam = Family::of(v).expect("supported version has a family");
        assert!(fam.versions().contains(&v));
    }
    assert_eq!(Family::of("0.5.0"), None);
}

#[test]
fn gate_and_reply() {
    assert!(check_supported("").is_ok());
    let e = check_supported("9.9.9").expect_err("unsupported");
    assert_eq!(e.code, 1);
    assert_eq!(
        e.details,
        "config is \"9.9.9\", plugin supports [\"0.1.0\" \"0.2.0\" \"0.3.0\" \"0.3.1\" \"0.4.0\" \"1.0.0\" \"1.1.0\"]"
    );
    assert_eq!(
        version_reply(),
        "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
    );
}
