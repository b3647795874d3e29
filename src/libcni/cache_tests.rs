use super::*;

#[test]
fn a_results_addresses_and_host_interfaces() {
    let entry = |result: Value| Entry {
        result: Some(result),
        ..parse_entry_default()
    };
    let e = entry(serde_json::json!({
    "ips": [{"address": "10.1.0.5/24"}, {"address": "fd00::5/64"}, {"address": "bad"}],
    "interfaces": [
        {"name": "cni0", "mac": "0a:58:0a:f4:00:01"},
        {"name": "veth1234", "mac": "aa:bb:cc:dd:ee:ff", "sandbox": ""},
        {"name": "eth0", "mac": "0a:58:0a:f4:00:05", "sandbox": "/var/run/netns/x"},
        {"name": "vethbad", "mac": "zz:00"}
    ]}));
    let nets: Vec<String> = e.nets().iter().map(ToString::to_string).collect();
    assert_eq!(nets, ["10.1.0.5/24", "fd00::5/64"]);
    assert_eq!(
        e.ips()[0],
        "10.1.0.5".parse::<std::net::IpAddr>().expect("ip")
    );
    let hosts = e.host_interfaces();
    assert_eq!(hosts.len(), 3);
    assert_eq!(
        hosts[1],
        (
            "veth1234".into(),
            Some([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff])
        )
    );
    assert_eq!(hosts[2], ("vethbad".into(), None));
    let old = entry(serde_json::json!({"ip4": {"ip": "10.1.0.6/24"}}));
    assert_eq!(
        old.ips(),
        ["10.1.0.6".parse::<std::net::IpAddr>().expect("ip")]
    );
}

fn parse_entry_default() -> Entry {
    serde_json::from_str("{}").expect("an empty entry")
}

#[test]
fn layout_is_libcni_s() {
    let e = Entry {
        kind: KIND.into(),
        container_id: "c1".into(),
        config: b"{\"name\":\"n\"}".to_vec(),
        ifname: "eth0".into(),
        network_name: "n".into(),
        netns: "/run/netns/x".into(),
        cni_args: vec![["K".into(), "V".into()]],
        capability_args: Map::new(),
        result: Some(serde_json::json!({"cniVersion": "1.0.0", "ips": []})),
    };
    let json = serde_json::to_string(&e).expect("encode");
    assert_eq!(
        json,
        r#"{"kind":"cniCacheV1","containerId":"c1","config":"eyJuYW1lIjoibiJ9","ifName":"eth0","networkName":"n","netns":"/run/netns/x","cniArgs":[["K","V"]],"result":{"cniVersion":"1.0.0","ips":[]}}"#
    );
    assert_eq!(
        parse(json.as_bytes()).ok(),
        Some(Cached::Entry(Box::new(e)))
    );
    assert!(matches!(
        parse(br#"{"cniVersion":"0.4.0"}"#),
        Ok(Cached::LegacyResult(_))
    ));
}
