use super::*;
use crate::dhcp::wire::{Message, MessageType};

fn ack(options: &[(u8, &[u8])]) -> Message {
    let mut m = Message::request(7, [2, 0, 0, 0, 0, 1]);
    m.op = wire::BOOTREPLY;
    m.yiaddr = Ipv4Addr::new(10, 1, 2, 3);
    m.options
        .push((code::MESSAGE_TYPE, vec![MessageType::Ack as u8]));
    m.options
        .extend(options.iter().map(|(c, v)| (*c, v.to_vec())));
    m
}

fn lease(options: &[(u8, &[u8])]) -> Lease {
    Lease::from_ack(&ack(options), Ipv4Addr::new(10, 1, 2, 254), 1000)
}

fn route(dst: &str, gw: Option<&str>) -> Route {
    Route::new(
        dst.parse().expect("dst"),
        gw.map(|g| g.parse().expect("gw")),
    )
}

const MASK_24: &[u8] = &[255, 255, 255, 0];

#[test]
fn times_and_server_from_the_ack_or_defaults() {
    let l = lease(&[
        (code::SERVER_ID, &[10, 1, 2, 1]),
        (code::LEASE_TIME, &[0, 0, 0, 120]),
        (code::RENEWAL_TIME, &[0, 0, 0, 30]),
        (code::REBINDING_TIME, &[0, 0, 0, 100]),
    ]);
    assert_eq!(l.server, Ipv4Addr::new(10, 1, 2, 1));
    assert_eq!((l.lease_secs, l.renew_secs, l.rebind_secs), (120, 30, 100));
    assert_eq!(
        (l.renew_at(), l.rebind_at(), l.expires_at()),
        (1030, 1100, 1120)
    );
    let l = lease(&[(code::LEASE_TIME, &[0, 0, 0, 200])]);
    assert_eq!(l.server, Ipv4Addr::new(10, 1, 2, 254), "source as fallback");
    assert_eq!((l.renew_secs, l.rebind_secs), (100, 170));
    let l = lease(&[(code::LEASE_TIME, &[0, 0, 1])]);
    assert_eq!(
        (l.lease_secs, l.renew_secs, l.rebind_secs),
        (3600, 1800, 3060)
    );
    // Infinite lease: no overflow.
    let l = lease(&[(code::LEASE_TIME, &[0xff; 4])]);
    assert_eq!(l.expires_at(), 1000 + u64::from(u32::MAX));
    assert_eq!(l.rebind_secs, (u64::from(u32::MAX) * 85 / 100) as u32);
}

#[test]
fn mask_routers_and_default_route() {
    let l = lease(&[
        (code::SUBNET_MASK, MASK_24),
        (code::ROUTER, &[10, 1, 2, 1, 10, 1, 2, 2]),
    ]);
    let r = l.to_result(None).expect("result");
    assert_eq!(r.ips.len(), 1);
    assert_eq!(r.ips[0].address.to_string(), "10.1.2.3/24");
    assert_eq!(r.ips[0].gateway, Some("10.1.2.1".parse().expect("ip")));
    assert_eq!(r.routes, vec![route("0.0.0.0/0", Some("10.1.2.1"))]);
    assert!(r.dns.is_empty());
    let json = serde_json::to_value(&r).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"cniVersion": "", "ips": [{"address": "10.1.2.3/24",
            "gateway": "10.1.2.1"}], "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}]})
    );
    // No router: no gateway and no route.
    let r = lease(&[(code::SUBNET_MASK, MASK_24)])
        .to_result(None)
        .expect("result");
    assert_eq!(r.ips[0].gateway, None);
    assert!(r.routes.is_empty());
}

#[test]
fn no_or_bad_mask_is_incomplete() {
    for options in [
        &[][..],
        &[(code::SUBNET_MASK, &[255, 255, 255][..])][..],
        &[(code::SUBNET_MASK, &[255, 0, 255, 0][..])][..],
    ] {
        let e = lease(options).to_result(None).unwrap_err();
        assert!(matches!(e, Error::Incomplete(_)), "{e}");
        assert!(e.to_string().contains("10.1.2.3"), "{e}");
    }
    let r = lease(&[(code::SUBNET_MASK, &[255; 4])])
        .to_result(None)
        .expect("/32");
    assert_eq!(r.ips[0].address.to_string(), "10.1.2.3/32");
    let r = lease(&[(code::SUBNET_MASK, &[0; 4])])
        .to_result(None)
        .expect("/0");
    assert_eq!(r.ips[0].address.to_string(), "10.1.2.3/0");
}

#[test]
fn classless_routes_replace_33_and_the_router() {
    let opt121: &[u8] = &[
        24, 192, 168, 5, 10, 1, 2, 9, // 192.168.5.0/24 via 10.1.2.9
        0, 10, 1, 2, 1, // default via 10.1.2.1
        32, 10, 9, 9, 9, 0, 0, 0, 0, // 10.9.9.9/32 on-link
        9, 10, 200, 10, 1, 2, 1, // 10.128.0.0/9 (host bits cut) via 10.1.2.1
    ];
    let l = lease(&[
        (code::SUBNET_MASK, MASK_24),
        (code::ROUTER, &[10, 1, 2, 254]),
        (code::STATIC_ROUTES, &[10, 0, 0, 0, 10, 1, 2, 7]),
        (code::CLASSLESS_ROUTES, opt121),
    ]);
    let r = l.to_result(Some(50)).expect("result");
    let mut link = route("10.9.9.9/32", None);
    link.scope = Some(SCOPE_LINK);
    let mut want = vec![
        route("192.168.5.0/24", Some("10.1.2.9")),
        route("0.0.0.0/0", Some("10.1.2.1")),
        link,
        route("10.128.0.0/9", Some("10.1.2.1")),
    ];
    want.iter_mut().for_each(|r| r.priority = 50);
    assert_eq!(r.routes, want);
    // The gateway is still the first router.
    assert_eq!(r.ips[0].gateway, Some("10.1.2.254".parse().expect("ip")));
    let json = serde_json::to_value(&r.routes[2]).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"dst": "10.9.9.9/32", "priority": 50, "scope": 253})
    );
}

#[test]
fn a_malformed_121_falls_back_to_33_and_the_router() {
    for bad in [
        &[33u8, 1, 2, 3, 4, 5, 6, 7, 8][..],
        &[24, 10, 1, 2, 10, 1][..],
    ] {
        let l = lease(&[
            (code::SUBNET_MASK, MASK_24),
            (code::ROUTER, &[10, 1, 2, 1]),
            (
                code::STATIC_ROUTES,
                &[10, 0, 0, 0, 10, 1, 2, 7, 172, 16, 9, 0, 10, 1, 2, 8],
            ),
            (code::CLASSLESS_ROUTES, bad),
        ]);
        let r = l.to_result(None).expect("result");
        assert_eq!(
            r.routes,
            vec![
                route("10.0.0.0/8", Some("10.1.2.7")),
                route("172.16.0.0/16", Some("10.1.2.8")),
                route("0.0.0.0/0", Some("10.1.2.1")),
            ]
        );
    }
}

#[test]
fn static_routes_are_classful() {
    let r = static_routes(&[
        192, 168, 1, 0, 10, 0, 0, 1, // C
        224, 0, 0, 1, 10, 0, 0, 1, // D: skipped
        130, 1, 2, 3, 10, 0, 0, 2, // B, host bits cut
        1, 2, 3, // trailing junk: ignored as Go does
    ]);
    assert_eq!(
        r,
        vec![
            route("192.168.1.0/24", Some("10.0.0.1")),
            route("130.1.0.0/16", Some("10.0.0.2"))
        ]
    );
}

#[test]
fn dns_from_6_15_and_compressed_119() {
    // "example.com", then "sub.example.com" with a pointer to offset 0,
    // then "corp.test" (RFC 3397 section 4's style).
    let mut opt119 = Vec::new();
    opt119.extend_from_slice(b"\x07example\x03com\x00");
    opt119.extend_from_slice(b"\x03sub\xc0\x00");
    opt119.extend_from_slice(b"\x04corp\x04test\x00");
    let l = lease(&[
        (code::SUBNET_MASK, MASK_24),
        (code::DNS_SERVERS, &[10, 1, 2, 53, 8, 8, 8, 8]),
        (code::DOMAIN_NAME, b"example.com.\0"),
        (code::DOMAIN_SEARCH, &opt119),
    ]);
    let dns = l.to_result(None).expect("result").dns;
    assert_eq!(dns.nameservers, vec!["10.1.2.53", "8.8.8.8"]);
    assert_eq!(dns.domain, "example.com");
    assert_eq!(
        dns.search,
        vec!["example.com", "sub.example.com", "corp.test"]
    );
}

#[test]
fn a_119_split_over_two_instances_is_joined() {
    let mut m = ack(&[(code::SUBNET_MASK, MASK_24)]);
    m.options
        .push((code::DOMAIN_SEARCH, b"\x01a\x04test\x00\x01b".to_vec()));
    m.options.push((code::DOMAIN_SEARCH, b"\xc0\x02".to_vec()));
    let l = Lease::from_ack(&m, Ipv4Addr::LOCALHOST, 0);
    assert_eq!(l.dns().search, vec!["a.test", "b.test"]);
}

#[test]
fn malformed_names_are_dropped() {
    for bad in [
        &b"\xc0\x00"[..],              // points at itself
        b"\x01a\xc0\x05",              // forward pointer
        b"\x03ab",                     // label past the end
        b"\x01a",                      // no terminator
        b"\x40a\x00",                  // reserved label type
        b"\x03a b\x00",                // space in a label
        b"\x00",                       // empty name
        b"\x01a\x00\x01b\xc0\x02\xc0", // a pointer cut short
    ] {
        assert_eq!(domain_search(bad), None, "{bad:?}");
    }
    // A loop through two pointers cannot happen: each must go backwards.
    assert_eq!(domain_search(b"\x01a\xc0\x04\x01b\xc0\x00"), None);
    assert_eq!(domain_name(b"bad name"), None);
    assert_eq!(domain_name(b""), None);
    // Names longer than 255 octets.
    let mut long = Vec::new();
    for _ in 0..5 {
        long.push(63);
        long.extend_from_slice(&[b'x'; 63]);
    }
    long.push(0);
    assert_eq!(domain_search(&long), None);
}

#[test]
fn serde_round_trip_with_hex_options() {
    let l = lease(&[
        (code::SUBNET_MASK, MASK_24),
        (code::SERVER_ID, &[10, 1, 2, 1]),
        (code::HOST_NAME, b""),
    ]);
    let json = serde_json::to_value(&l).expect("serialize");
    assert_eq!(json["options"]["1"], "ffffff00");
    assert_eq!(json["options"]["53"], "05");
    assert_eq!(json["options"]["12"], "");
    assert_eq!(json["address"], "10.1.2.3");
    let back: Lease = serde_json::from_value(json.clone()).expect("deserialize");
    assert_eq!(back, l);
    let mut bad = json;
    bad["options"]["1"] = "fff".into();
    assert!(serde_json::from_value::<Lease>(bad.clone()).is_err());
    bad["options"]["1"] = "zz".into();
    assert!(serde_json::from_value::<Lease>(bad.clone()).is_err());
    bad["options"]["1"] = "ff".into();
    bad["options"]["300"] = "ff".into();
    assert!(serde_json::from_value::<Lease>(bad).is_err());
}
