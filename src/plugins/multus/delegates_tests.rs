use super::*;

const CONF: &[u8] = br#"{"cniVersion":"1.0.0","name":"mv","type":"macvlan","master":"eth0","ipam":{"type":"static"}}"#;
const LIST: &[u8] =
    br#"{"name":"br","plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"tuning"}]}"#;

#[test]
fn configs_become_delegates() {
    let d = Delegate::load(CONF.to_vec(), "conf", "0.4.0").expect("conf");
    assert!(!d.is_list());
    assert_eq!((d.name.as_str(), d.plugin_type()), ("mv", "macvlan"));
    assert_eq!(d.list.cni_version, "1.0.0");
    let d = Delegate::load(LIST.to_vec(), "list", "0.4.0").expect("list");
    assert!(d.is_list());
    // A list without a version takes multus's.
    assert_eq!(d.list.cni_version, "0.4.0");
    assert_eq!(d.list.plugins.len(), 2);
    for bad in [
        &br#"{"name":"x"}"#[..],
        b"[]",
        br#"{"name":"x","type":"multus"}"#,
    ] {
        assert!(Delegate::load(bad.to_vec(), "bad", "1.0.0").is_err());
    }
}

#[test]
fn cni_args_go_into_every_plugin() {
    let mut args = Map::new();
    args.insert("foo".into(), json!("bar"));
    let out = inject_cni_args(LIST, &args, "t").expect("list");
    let v: Value = crate::cni::json::from_slice(&out).expect("json");
    assert_eq!(v["plugins"][0]["args"]["cni"]["foo"], "bar");
    assert_eq!(v["plugins"][1]["args"]["cni"]["foo"], "bar");
    let conf = br#"{"type":"bridge","args":{"cni":{"keep":1}}}"#;
    let v: Value = crate::cni::json::from_slice(&inject_cni_args(conf, &args, "t").expect("conf"))
        .expect("json");
    assert_eq!(v["args"]["cni"], json!({"keep": 1, "foo": "bar"}));
    assert!(inject_cni_args(br#"{"type":"b","args":1}"#, &args, "t").is_err());
}
