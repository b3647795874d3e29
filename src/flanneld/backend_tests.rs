use super::*;

#[test]
fn stable_mac_is_local_unicast_and_per_node() {
    let a = stable_mac("10.0.0.1".parse().unwrap(), 1);
    assert_eq!(a, stable_mac("10.0.0.1".parse().unwrap(), 1));
    assert_ne!(a, stable_mac("10.0.0.2".parse().unwrap(), 1));
    assert_ne!(a, stable_mac("10.0.0.1".parse().unwrap(), 2));
    assert_eq!(a[0] & 0x03, 0x02, "locally administered, unicast");
    let b = stable_mac("fd00::1".parse().unwrap(), 1);
    assert_ne!(a, b);
    assert_eq!(b[0] & 0x03, 0x02);
}
