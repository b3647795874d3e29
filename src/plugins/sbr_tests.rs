use super::*;

#[test]
fn each_address_gets_a_table_checked_free() {
    let mut used = vec![100, 101, 103];
    assert_eq!(take_free_table(&mut used, FIRST_TABLE), Ok(102));
    assert_eq!(take_free_table(&mut used, 103), Ok(104));
    assert_eq!(take_free_table(&mut used, FIRST_TABLE), Ok(105));
    let mut full = vec![u32::MAX - 1];
    assert!(take_free_table(&mut full, u32::MAX - 1).is_err());
    assert!(take_free_table(&mut full, u32::MAX).is_err());
}

#[test]
fn gateways_are_one_per_family_and_override_prev_result() {
    let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let gws = Gateways::parse(&list(&["fd00::1", "::ffff:192.168.1.254"])).expect("parse");
    assert_eq!(gws.v4, Some("192.168.1.254".parse().expect("v4")));
    assert_eq!(gws.v6, Some("fd00::1".parse().expect("v6")));
    let ip = |a: &str, gw: Option<&str>| IpConfig {
        interface: None,
        address: a.parse().expect("addr"),
        gateway: gw.map(|g| g.parse().expect("gw")),
    };
    let v4 = ip("192.168.1.209/24", Some("192.168.1.1"));
    assert_eq!(gws.for_ip(&v4), gws.v4);
    let only_v6 = Gateways::parse(&list(&["fd00::1"])).expect("parse");
    assert_eq!(
        only_v6.for_ip(&v4),
        v4.gateway,
        "no IPv4 gateway: prevResult's"
    );
    assert_eq!(only_v6.for_ip(&ip("10.0.0.2/24", None)), None);
    assert_eq!(
        only_v6.for_ip(&ip("fd00::10/64", None)),
        only_v6.v6,
        "a default route even where prevResult has no gateway"
    );
    assert_eq!(Gateways::parse(&[]), Ok(Gateways::default()));
    for (bad, msg) in [
        (
            list(&["10.0.0.1", "fd00::1", "10.0.0.2"]),
            "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)",
        ),
        (
            list(&["10.0.0.1", "10.0.0.2"]),
            "gateways list contains multiple IPv4 addresses: 10.0.0.1 and 10.0.0.2",
        ),
        (
            list(&["fd00::1", "fd00::2"]),
            "gateways list contains multiple IPv6 addresses: fd00::1 and fd00::2",
        ),
        (
            list(&["10.0.0.1/24"]),
            "invalid static gateway IP address: 10.0.0.1/24",
        ),
        (
            list(&["010.0.0.1"]),
            "invalid static gateway IP address: 010.0.0.1",
        ),
    ] {
        let e = Gateways::parse(&bad).expect_err("refused");
        assert_eq!(e.code, 7);
        assert_eq!(e.msg, msg);
    }
}

#[test]
fn routes_without_source_or_gateway_go_to_every_table() {
    let ip = |a: &str| IpConfig {
        interface: None,
        address: a.parse().expect("addr"),
        gateway: None,
    };
    let route = |dst: &str, src: Option<&str>, gw: Option<&str>| {
        let mut r = Route::new(dst.parse().expect("dst"));
        r.src = src.map(|s| s.parse().expect("src"));
        r.gw = gw.map(|g| g.parse().expect("gw"));
        r
    };
    let v4 = ip("10.84.0.5/24");
    let v6 = ip("2001:db8:84::5/64");
    let link_local = route("fe80::/64", None, None);
    let subnet = route("10.84.0.0/24", Some("10.84.0.5"), None);
    let other_subnet = route("10.85.0.0/24", Some("10.85.0.5"), None);
    let via_ours = route("10.99.0.0/16", None, Some("10.84.0.1"));
    let plain = route("10.98.0.0/16", None, None);
    for (r, v4_gets, v6_gets) in [
        (&link_local, true, true),
        (&subnet, true, false),
        (&other_subnet, false, false),
        (&via_ours, true, false),
        (&plain, true, true),
    ] {
        assert_eq!(belongs_to(r, &v4), v4_gets, "{:?} for v4", r.dst);
        assert_eq!(belongs_to(r, &v6), v6_gets, "{:?} for v6", r.dst);
    }
}
