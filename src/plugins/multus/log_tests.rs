use super::*;

#[test]
fn times_and_levels() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
    assert_eq!(Level::parse("VERBOSE"), Some(Level::Verbose));
    assert_eq!(Level::parse("info"), None);
    assert!(Level::Debug > Level::Error);
}
