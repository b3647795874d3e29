use super::*;

#[test]
fn cidr_forms() {
    assert_eq!(
        parse_cidr("10.1.2.3/24").ok().map(|n| n.to_string()),
        Some("10.1.2.3/24".into())
    );
    assert_eq!(
        parse_cidr("::ffff:10.1.2.3/120")
            .ok()
            .map(|n| n.to_string()),
        Some("10.1.2.3/24".into())
    );
    assert_eq!(
        parse_cidr("10.1.2.3").map_err(|e| e.to_string()).err(),
        Some(r#"invalid CIDR "10.1.2.3""#.into())
    );
    assert!(parse_cidr("").is_err());
    assert!(parse_cidr("10.1.2.3/33").is_err());
}
