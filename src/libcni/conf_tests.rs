use super::*;

fn list(json: &str) -> CniResult<NetworkList> {
    list_from_bytes(json.as_bytes(), Path::new("t.conflist"))
}

#[test]
fn versions_and_flags() {
    let l = list(r#"{"name":"n","cniVersion":"0.4.0","cniVersions":["1.0.0","9.9.9"],"disableCheck":"TRUE","plugins":[{"type":"a"}]}"#)
        .expect("valid");
    assert_eq!(l.cni_version, "1.0.0");
    assert!(l.disable_check && !l.disable_gc);
    assert_eq!(
        list(r#"{"name":"n","cniVersions":["x"],"plugins":[{"type":"a"}]}"#).map_err(|e| e.code),
        Err(7)
    );
    assert!(list(r#"{"name":"n","plugins":[]}"#).is_err());
    assert!(list(r#"{"name":"n","plugins":[{"name":"x"}]}"#).is_err());
    assert!(list(r#"{"plugins":[{"type":"a"}]}"#).is_err());
    assert!(list(r#"{"name":"n","disableGC":"maybe","plugins":[{"type":"a"}]}"#).is_err());
}

#[test]
fn single_conf_is_wrapped_with_sorted_keys() {
    let l = conf_from_bytes(
        br#"{"type":"bridge","name":"n","cniVersion":"1.0.0"}"#,
        Path::new("x.conf"),
    )
    .expect("valid");
    assert_eq!(
        String::from_utf8_lossy(&l.bytes),
        r#"{"cniVersion":"1.0.0","name":"n","plugins":[{"cniVersion":"1.0.0","name":"n","type":"bridge"}]}"#
    );
    assert_eq!(l.plugins[0].plugin_type, "bridge");
}
