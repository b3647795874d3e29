use super::*;

#[test]
fn accepted_groups_by_container() {
    let rule = |comment: &str, saddr: Option<&str>| DumpedRule {
        handle: 1,
        comment: comment.into(),
        jumps: Vec::new(),
        iifname: None,
        saddr: saddr.map(|s| s.parse().expect("ip")),
    };
    let rules = [
        rule("", None),
        rule("a", None),
        rule("a", Some("10.0.0.2")),
        rule("b", Some("10.0.0.3")),
        rule("a", Some("fd00::2")),
    ];
    let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
    assert_eq!(
        accepted(&rules),
        vec![
            Accepted {
                container_id: "a".into(),
                addresses: vec![ip("10.0.0.2"), ip("fd00::2")],
            },
            Accepted {
                container_id: "b".into(),
                addresses: vec![ip("10.0.0.3")],
            },
        ]
    );
}
