use super::vlans::trunk_ids;
use super::*;

#[test]
fn trunk_ranges() {
    let t = |v: serde_json::Value| {
        let keys: Vec<TrunkKeys> = crate::cni::json::from_value(v).expect("keys");
        trunk_ids(&keys).map_err(|e| e.code)
    };
    assert_eq!(
        t(serde_json::json!([{"minID": 100, "maxID": 102}, {"id": 5}, {"id": 101}])),
        Ok(vec![5, 100, 101, 102])
    );
    assert_eq!(t(serde_json::json!([{"minID": 100}])), Err(7));
    assert_eq!(t(serde_json::json!([{"id": 4095}])), Err(7));
    assert_eq!(t(serde_json::json!([{"minID": 9, "maxID": 3}])), Err(7));
}

#[test]
fn gateways_default_to_network_plus_one() {
    let mut r = NetResult::new();
    r.ips.push(crate::cni::result::IpConfig {
        interface: Some(2),
        address: "10.1.2.7/24".parse().expect("cidr"),
        gateway: None,
    });
    let addrs = assign_gateways(&mut r, true);
    assert_eq!(addrs, vec!["10.1.2.1/24".parse::<IpNet>().expect("cidr")]);
    assert_eq!(r.ips[0].gateway, Some("10.1.2.1".parse().expect("ip")));
    assert_eq!(r.routes.len(), 1);
    assert_eq!(r.routes[0].dst.to_string(), "0.0.0.0/0");
}

#[test]
fn group_fwd_mask_range_and_restricted_groups() {
    assert_eq!(forwardable_groups(0), Ok(None), "0: the bridge's own mask");
    assert_eq!(forwardable_groups(0x4000), Ok(Some(0x4000)));
    assert_eq!(forwardable_groups(0xfff8), Ok(Some(0xfff8)));
    for bad in [-1, 65536] {
        let e = forwardable_groups(bad).expect_err("range");
        assert_eq!((e.code, e.msg), (7, format!("invalid groupFwdMask {bad}")));
    }
    for restricted in [1, 2, 4, 0x4001] {
        assert_eq!(forwardable_groups(restricted).map_err(|e| e.code), Err(7));
    }
    assert_eq!(
        group_fwd_mask_in_range(7),
        Ok(7),
        "DEL checks the range only"
    );
}
