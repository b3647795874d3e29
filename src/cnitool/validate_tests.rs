use super::*;
use crate::cni::json::UnknownKey;

#[test]
fn misspellings_find_their_key() {
    let known: Vec<String> = ["bridge", "isGateway", "ipMasq", "mtu", "name"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(nearest("bridgee", &known).as_deref(), Some("bridge"));
    assert_eq!(nearest("isGatway", &known).as_deref(), Some("isGateway"));
    assert_eq!(nearest("IPMASQ", &known).as_deref(), Some("ipMasq"));
    assert_eq!(nearest("hairpinMode", &known), None);
    assert_eq!(distance(&['a', 'b'], &['b', 'a']), 2);
    assert_eq!(distance(&[], &['x']), 1);
}

#[test]
fn unknown_key_paths() {
    let u = UnknownKey {
        at: "ipam".into(),
        key: "subnett".into(),
        known: Vec::new(),
    };
    assert_eq!(u.path(), "ipam.subnett");
}
