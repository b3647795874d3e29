use super::*;

#[test]
fn hostported_groups_by_container_without_localhost() {
    let rule = |comment: &str, saddr: Option<&str>| nft::DumpedRule {
        handle: 1,
        comment: comment.into(),
        jumps: Vec::new(),
        iifname: None,
        saddr: saddr.map(|s| s.parse().expect("ip")),
    };
    let rules = [
        rule("a", None),
        rule("b", Some("10.0.0.3")),
        rule("a", Some("10.0.0.2")),
        rule("a", Some("127.0.0.1")),
        rule("", Some("10.0.0.9")),
    ];
    let got = hostported(&rules);
    let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
    assert_eq!(
        got,
        vec![
            Hostported {
                container_id: "a".into(),
                saddrs: vec![ip("10.0.0.2")],
            },
            Hostported {
                container_id: "b".into(),
                saddrs: vec![ip("10.0.0.3")],
            },
        ]
    );
}
