use super::*;

const CONF: &[u8] = br#"{"cniVersion":"1.0.0","name":"mv","type":"macvlan","master":"eth0","ipam":{"type":"static"}}"#;
const LIST: &[u8] =
    br#"{"name":"br","plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"tuning"}]}"#;

#[test]
fn the_cache_round_trips_in_multus_layout() {
    let dir = std::env::temp_dir().join(format!("cni-multi-dcache-{}", std::process::id()));
    let path = dir.join("ctr");
    let mut a = Delegate::load(LIST.to_vec(), "list", "1.0.0").expect("list");
    a.master = true;
    a.ifname_request = "eth0".into();
    let mut b = Delegate::load(CONF.to_vec(), "conf", "1.0.0").expect("conf");
    b.name = "default/mv".into();
    b.ip_request = Some(vec!["10.1.1.5/24".into()]);
    b.mac_request = "02:00:00:00:00:01".into();
    b.gateway_request = Some(vec!["10.1.1.1".parse().expect("ip")]);
    b.filter_v6 = true;
    // A long ID's list is named by its token and holds the ID.
    let long = "c".repeat(1000);
    let bounded = cache_path(&dir, &long);
    save(&bounded, &long, &[a.clone()]).expect("save");
    assert_eq!(cached_container(&bounded), Some(long));
    save(&path, "ctr", &[a, b]).expect("save");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(!text.contains("containerID"), "{text}");
    assert_eq!(cached_container(&path), None);
    assert!(text.starts_with(r#"[{"Conf":{"ipam":{},"dns":{}},"ConfList":{"cniVersion":"1.0.0","name":"br","plugins":[{"type":"bridge","ipam":{"type":"host-local"},"dns":{}}"#), "{text}");
    assert!(text.contains(r#""Name":"default/mv","macRequest":"02:00:00:00:00:01","ipRequest":["10.1.1.5/24"],"default-route":["10.1.1.1"],"IsFilterV4Gateway":false,"IsFilterV6Gateway":true,"Bytes":""#), "{text}");
    let back = load(&path, "1.0.0").expect("load").expect("there");
    assert!(back[0].master && !back[1].master);
    assert_eq!(back[0].ifname_request, "eth0");
    assert_eq!(back[1].bytes, CONF);
    assert_eq!(back[1].ip_request, Some(vec!["10.1.1.5/24".to_string()]));
    assert!(back[1].filter_v6);
    std::fs::write(&path, "{").expect("write");
    assert!(matches!(load(&path, "1.0.0"), Err(LoadError::Parse(_))));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(matches!(load(&path, "1.0.0"), Ok(None)));
}
