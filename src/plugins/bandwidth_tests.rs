use super::*;

#[test]
fn ifb_names_and_aliases() {
    let name = ifb_name("net", "ctr");
    assert!(is_ifb_name(&name));
    let owner = aliased_owner(&name, &alias("net", "ctr").expect("alias"));
    assert_eq!(owner, Some(("net".to_string(), "ctr".to_string())));
    let other = alias("net", "other").expect("alias");
    assert_eq!(aliased_owner(&name, &other), None);
    // A long ID: its token, within the kernel's limit.
    let long = "c".repeat(1000);
    let a = alias("net", &long).expect("alias");
    assert!(
        a.len() <= 255 && a.ends_with(&crate::files::id_token(&long)),
        "{a}"
    );
    assert_eq!(alias(&"n".repeat(200), &long), None);
    for other in ["bwp12345", "bwpXYZ456789012", "eth0"] {
        assert!(!is_ifb_name(other), "{other}");
    }
}

#[test]
fn names_and_parameters() {
    let name = ifb_name("net", "ctr");
    assert_eq!(name.len(), 15);
    assert!(name.starts_with("bwp"));
    let t = tbf_params(8_000_000, 80_000);
    assert_eq!(t.rate, 1_000_000);
    // limit = rate * 25 ms + burst bytes
    assert_eq!(t.limit, 25_000 + 10_000);
    assert!(t.buffer > 0);
}
