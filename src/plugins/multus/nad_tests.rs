use super::*;

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cni-multi-nad-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn manifests_single_and_list() {
    let dir = temp("index");
    std::fs::write(
        dir.join("a.json"),
        r#"{"apiVersion":"k8s.cni.cncf.io/v1","kind":"NetworkAttachmentDefinition",
                "metadata":{"name":"macvlan-conf"},"spec":{"config":"{\"type\":\"macvlan\"}"}}"#,
    )
    .expect("write");
    std::fs::write(
        dir.join("b.json"),
        r#"{"apiVersion":"v1","kind":"List","items":[
                {"kind":"NetworkAttachmentDefinition","metadata":{"name":"x","namespace":"ns1"}},
                {"kind":"ConfigMap","metadata":{"name":"cm"}}]}"#,
    )
    .expect("write");
    std::fs::write(dir.join("c.yaml"), "not read").expect("write");
    let index = NadIndex::load(&dir).expect("load");
    let a = index
        .find("default", "macvlan-conf")
        .expect("find")
        .expect("a");
    assert_eq!(a.config, r#"{"type":"macvlan"}"#);
    assert!(index.find("ns1", "x").expect("find").is_some());
    assert!(index.find("default", "cm").expect("find").is_none());
    std::fs::write(
        dir.join("d.json"),
        r#"{"kind":"NetworkAttachmentDefinition","metadata":{"name":"x","namespace":"ns1"}}"#,
    )
    .expect("write");
    let index = NadIndex::load(&dir).expect("load");
    let e = index.find("ns1", "x").expect_err("twice");
    assert!(e.msg.contains("defined twice"), "{e}");
    std::fs::write(dir.join("e.json"), "{").expect("write");
    assert_eq!(NadIndex::load(&dir).expect_err("bad").code, 6);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(NadIndex::load(&dir).expect("missing dir").nads.is_empty());
}

#[test]
fn config_rules() {
    let dir = temp("conf");
    let nad = |config: &str| Nad {
        namespace: "default".into(),
        name: "net-a".into(),
        config: config.into(),
        annotations: BTreeMap::new(),
        source: PathBuf::from("x.json"),
    };
    // The name is injected (keys sorted, as Go marshals a map).
    assert_eq!(
        cni_config(&nad(r#"{"type":"bridge","cniVersion":"1.0.0"}"#), &dir).expect("spec"),
        br#"{"cniVersion":"1.0.0","name":"net-a","type":"bridge"}"#
    );
    let own = r#"{"name": "own", "type":"bridge"}"#;
    assert_eq!(cni_config(&nad(own), &dir).expect("spec"), own.as_bytes());
    assert_eq!(
        cni_config(&nad("[1]"), &dir)
            .expect_err("not an object")
            .code,
        7
    );
    // Empty spec: the conf dir, one pass over .conf/.json/.conflist by name.
    let e = cni_config(&nad(""), &dir).expect_err("empty dir");
    assert!(e.msg.contains("no networks found"), "{e}");
    std::fs::write(dir.join("10-a.conf"), r#"{"name":"other","type":"ptp"}"#).expect("write");
    std::fs::write(
        dir.join("20-b.conflist"),
        r#"{"name":"net-a","cniVersion":"1.0.0","plugins":[{"type":"bridge"}]}"#,
    )
    .expect("write");
    assert!(
        String::from_utf8_lossy(&cni_config(&nad(""), &dir).expect("found")).contains("plugins")
    );
    assert_eq!(
        config_from_dir("", &dir).expect("first"),
        br#"{"name":"other","type":"ptp"}"#
    );
    let e = config_from_dir("nope", &dir).expect_err("missing");
    assert!(
        e.msg.contains("no network available in the name nope"),
        "{e}"
    );
    std::fs::write(dir.join("00-bad.conf"), r#"{"name":"x"}"#).expect("write");
    assert!(config_from_dir("net-a", &dir).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
