use super::*;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn required_table() {
    let e = read(&env(&[("CNI_COMMAND", "ADD")])).expect_err("missing");
    assert_eq!(
        e.msg,
        "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing"
    );
    let e = read(&env(&[("CNI_COMMAND", "DEL")])).expect_err("missing");
    assert_eq!(
        e.msg,
        "required env variables [CNI_CONTAINERID,CNI_IFNAME,CNI_PATH] missing"
    );
    assert!(read(&env(&[("CNI_COMMAND", "VERSION")])).is_ok());
    let e = read(&env(&[])).expect_err("no command");
    assert_eq!(e.msg, "required env variables [CNI_COMMAND] missing");
    let (_, a) = read(&env(&[("CNI_COMMAND", "GC"), ("CNI_PATH", "/a::/b")])).expect("gc");
    assert_eq!(a.path, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
}

#[test]
fn names() {
    assert!(is_valid_name("abc-1.2_x"));
    for bad in ["", "../x", "-a", ".a", "a/b", "a b", "a\0b", "é"] {
        assert!(!is_valid_name(bad), "{bad:?}");
    }
    assert!(validate_ifname("eth0").is_ok());
    assert!(validate_ifname("123456789012345").is_ok());
    assert!(validate_ifname("1234567890123456").is_err());
    for bad in ["", ".", "..", "a/b", "a:b", "a b", "a\tb"] {
        assert!(validate_ifname(bad).is_err(), "{bad:?}");
    }
}
