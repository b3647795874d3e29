use super::*;

fn range(subnet: &str) -> Range {
    Range {
        range_start: None,
        range_end: None,
        subnet: subnet.parse().expect("subnet"),
        gateway: None,
    }
}

#[test]
fn defaults_follow_the_reference() {
    let r = range("10.1.2.0/24").canonicalize().expect("valid");
    assert_eq!(r.to_string(), "10.1.2.1-10.1.2.254");
    assert_eq!(r.gateway.to_string(), "10.1.2.1");
    let r = range("fd00::/120").canonicalize().expect("valid");
    assert_eq!(r.to_string(), "fd00::1-fd00::ff");
}

#[test]
fn refuses_bad_ranges() {
    assert!(range("10.0.0.0/31").canonicalize().is_err());
    assert!(range("10.0.0.0/30").canonicalize().is_ok());
    let e = range("10.0.0.5/24")
        .canonicalize()
        .expect_err("host bits")
        .to_string();
    assert!(e.contains("network address is 10.0.0.0"), "{e}");
    let mut r = range("10.0.0.0/24");
    r.range_start = Some("10.0.1.5".parse().expect("ip"));
    assert!(r.canonicalize().is_err());
    let a = range("10.0.0.0/24");
    let b = range("10.0.0.0/25");
    let e = RangeSet::canonicalize(&[a.clone(), b])
        .expect_err("overlap")
        .to_string();
    assert!(e.contains("overlap"), "{e}");
    let e = RangeSet::canonicalize(&[a, range("fd00::/64")])
        .expect_err("families")
        .to_string();
    assert_eq!(e, "mixed address families");
}

/// Regression (fuzz target host_local): a start after the end gave an
/// empty, inverted range that later allocation math did not expect.
#[test]
fn refuses_an_inverted_range_as_the_reference() {
    let mut r = range("10.1.2.0/24");
    r.range_start = Some("10.1.2.9".parse().expect("ip"));
    r.range_end = Some("10.1.2.4".parse().expect("ip"));
    assert_eq!(
        r.canonicalize().expect_err("inverted").to_string(),
        "RangeStart 10.1.2.9 not in network 10.1.2.0/24"
    );
}
