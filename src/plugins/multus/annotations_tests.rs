use super::*;

fn names(v: &[Selection]) -> Vec<(String, String, String)> {
    v.iter()
        .map(|s| (s.namespace.clone(), s.name.clone(), s.interface.clone()))
        .collect()
}

#[test]
fn comma_format() {
    let s = parse_networks(" net-a, other/net-b@eth9 ,net-a", "pods").expect("valid");
    assert_eq!(
        names(&s),
        [
            ("pods".into(), "net-a".into(), "".into()),
            ("other".into(), "net-b".into(), "eth9".into()),
            ("pods".into(), "net-a".into(), "".into()),
        ]
    );
    for bad in [
        "a/b/c",
        "a@b@c",
        "Net-A",
        "net_a",
        "-net",
        "net-a,",
        "ns/net@bad/if",
        "net@0123456789abcdef",
    ] {
        let e = parse_networks(bad, "pods").expect_err(bad);
        assert_eq!(e.code, 7, "{bad}: {e}");
        assert!(e.msg.starts_with("invalid network selection"), "{e}");
    }
    assert!(parse_networks("  ", "pods").expect("empty").is_empty());
}

#[test]
fn json_format() {
    let s = parse_networks(
        r#"[{"name":"net-b","ips":["10.2.2.42/24","2001:db8::5"],"mac":"02:23:45:67:89:01",
                 "interface":"data0","default-route":["10.2.2.1"],"cni-args":{"x":1}},
                {"name":"net-c","namespace":"other-ns","interfaceRequest":"old0"}]"#,
        "pods",
    )
    .expect("valid");
    assert_eq!(s[0].namespace, "pods");
    assert_eq!(s[0].interface, "data0");
    assert_eq!(
        s[0].default_route,
        Some(vec!["10.2.2.1".parse().expect("ip")])
    );
    assert_eq!(s[1].full_name(), "other-ns/net-c");
    assert_eq!(s[1].interface, "old0");
    for (bad, what) in [
        (
            r#"[{"name":"n","ips":["10.0.0.300"]}]"#,
            "failed to parse IP",
        ),
        (r#"[{"name":"n","ips":[]}]"#, "at least one"),
        (
            r#"[{"name":"n","mac":"02:23:45:67:89"}]"#,
            "failed to parse mac",
        ),
        (r#"[{"name":"n","interface":"a b"}]"#, "interface name"),
        (r#"[{"namespace":"x"}]"#, "no network name"),
        (r#"[{"name":"n","default-route":["x"]}]"#, "default-route"),
        (r#"[{"name":"n"}"#, "JSON format"),
        (r#"[null]"#, "null"),
    ] {
        let e = parse_networks(bad, "pods").expect_err(bad);
        assert!(e.msg.contains(what), "{bad}: {e}");
        assert_eq!(e.code, 7);
    }
}

#[test]
fn macs_as_go_parses_them() {
    assert_eq!(
        parse_mac("02:23:45:67:89:01"),
        Some(vec![2, 0x23, 0x45, 0x67, 0x89, 1])
    );
    assert!(parse_mac("02-23-45-67-89-01").is_some());
    assert!(parse_mac("0223.4567.8901").is_some());
    assert!(parse_mac("02:00:5e:10:00:00:00:01").is_some());
    assert_eq!(
        parse_mac("80:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22").map(|m| m.len()),
        Some(20)
    );
    for bad in [
        "02:23:45:67:89",
        "02:23-45:67:89:01",
        "0g:23:45:67:89:01",
        "",
        "+2:23:45:67:89:01",
    ] {
        assert!(parse_mac(bad).is_none(), "{bad}");
    }
}

#[test]
fn dns_names() {
    assert!(is_dns_label("a-1"));
    assert!(!is_dns_label("a.b") && !is_dns_label("") && !is_dns_label(&"a".repeat(64)));
    assert!(is_dns_subdomain("a.b-c"));
    assert!(!is_dns_subdomain("a..b") && !is_dns_subdomain("A"));
}
