use super::*;

#[test]
fn marks_are_short_and_distinct() {
    let long = "c".repeat(1000);
    let p = path("net", &long, "eth0");
    assert!(p.file_name().is_some_and(|n| n.len() == 40));
    assert_ne!(path("a-b", "c", "eth0"), path("a", "b-c", "eth0"));
    assert_eq!(path("n", "c", "eth0"), path("n", "c", "eth0"));
}
