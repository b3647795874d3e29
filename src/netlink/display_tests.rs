use super::*;

#[test]
fn values_read_as_ip_prints_them() {
    let mut route = Route::new("10.1.0.0/16".parse().expect("net"));
    route.gw = Some("10.1.0.1".parse().expect("ip"));
    route.oif = Some(3);
    route.onlink = true;
    route.table = 100;
    assert_eq!(
        route.to_string(),
        "10.1.0.0/16 via 10.1.0.1 dev 3 onlink table 100"
    );
    let rule = Rule {
        family: Family::V6,
        src: Some("fd00::/64".parse().expect("net")),
        table: 100,
        priority: Some(5),
    };
    assert_eq!(
        rule.to_string(),
        "IPv6 from fd00::/64 lookup 100 priority 5"
    );
    let all = Rule {
        src: None,
        priority: None,
        family: Family::V4,
        ..rule
    };
    assert_eq!(all.to_string(), "IPv4 from all lookup 100");
    assert_eq!(MacvlanMode(4).to_string(), "bridge");
    assert_eq!(MacvlanMode(3).to_string(), "mode 3");
}
