use super::*;

#[test]
fn cni_args_rules() {
    let known = ["IP", "MAC"];
    let a = CniArgs::parse("IP=10.0.0.2;MAC=aa", &known).expect("valid");
    assert_eq!(a.get("IP"), Some("10.0.0.2"));
    assert!(CniArgs::parse("", &known).is_ok());
    let e = CniArgs::parse("IP=1=2", &known).expect_err("bad pair");
    assert_eq!(e.msg, "ARGS: invalid pair \"IP=1=2\"");
    let e = CniArgs::parse("IP=1;", &known).expect_err("trailing ;");
    assert_eq!(e.msg, "ARGS: invalid pair \"\"");
    let e = CniArgs::parse("ip=1;FOO=2", &known).expect_err("unknown");
    assert_eq!(e.msg, "ARGS: unknown args [\"ip=1\" \"FOO=2\"]");
    assert!(CniArgs::parse("FOO=2;IgnoreUnknown=TRUE", &known).is_ok());
    assert!(CniArgs::parse("FOO=2;IgnoreUnknown=0", &known).is_err());
    assert!(CniArgs::parse("IgnoreUnknown=yes", &known).is_err());
}

#[test]
fn path_settings_must_not_escape() {
    assert!(absolute_path(None, "/var/lib/cni/networks", "dataDir").is_ok());
    assert!(absolute_path(Some("/tmp/x"), "/d", "dataDir").is_ok());
    for bad in ["relative", "/a/../b", "/a/b/..", "/a\0b"] {
        assert_eq!(
            absolute_path(Some(bad), "/d", "dataDir").map_err(|e| e.code),
            Err(7),
            "{bad:?}"
        );
    }
}

#[test]
fn relative_path_settings_stay_relative() {
    let p = |v| path_setting(Some(v), "/d", "dataDir").map_err(|e| e.code);
    assert_eq!(p(""), Ok("/d".into()));
    assert_eq!(p("state"), Ok("state".into()));
    assert_eq!(p("./state/x"), Ok("./state/x".into()));
    assert_eq!(p("/abs"), Ok("/abs".into()));
    for bad in ["../x", "a/../b", "a/..", "/a/../b", "a\0b"] {
        assert_eq!(p(bad), Err(7), "{bad:?}");
    }
}

#[test]
fn config_typing() {
    assert_eq!(NetConf::parse(b"[]").expect_err("array").code, 6);
    assert_eq!(NetConf::parse(b"{\"name\":1}").expect_err("type").code, 6);
    let c = NetConf::parse(br#"{"name":"n","cniVersion":"1.0.0","runtimeConfig":{"mac":"x"}}"#)
        .expect("valid");
    assert_eq!(
        c.runtime_config::<String>("mac").ok().flatten().as_deref(),
        Some("x")
    );
    assert_eq!(c.args_cni::<String>("mac").ok().flatten(), None);
}
