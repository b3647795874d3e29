use super::*;

fn plugin(raw: Value) -> PluginConf {
    PluginConf {
        plugin_type: raw["type"].as_str().unwrap_or_default().to_string(),
        raw: raw.as_object().cloned().unwrap_or_default(),
    }
}

/// A list named "n" at 1.0.0 without plugins.
fn empty_list() -> NetworkList {
    NetworkList {
        name: "n".into(),
        cni_version: "1.0.0".into(),
        disable_check: false,
        disable_gc: false,
        plugins: Vec::new(),
        bytes: Vec::new(),
        source: PathBuf::new(),
    }
}

#[test]
fn runtime_config_is_replaced_only_by_supplied_enabled_capabilities() {
    let caps: Map<String, Value> = serde_json::from_value(json!({
        "portMappings": [{"hostPort": 80}], "mac": "aa", "bandwidth": {"x": 1}
    }))
    .expect("caps");
    let list = empty_list();
    let p = plugin(json!({
        "type": "portmap", "name": "old", "cniVersion": "0.3.1",
        "capabilities": {"portMappings": true, "mac": false, "ips": true},
        "runtimeConfig": {"static": 1}
    }));
    let stdin: Value =
        serde_json::from_slice(&stdin_for(&p, &list, None, Some(&caps), &[])).expect("json");
    assert_eq!(stdin["name"], "n");
    assert_eq!(stdin["cniVersion"], "1.0.0");
    assert_eq!(
        stdin["runtimeConfig"],
        json!({"portMappings": [{"hostPort": 80}]})
    );
    // Nothing matched: the file's runtimeConfig survives.
    let stdin: Value =
        serde_json::from_slice(&stdin_for(&p, &list, None, Some(&Map::new()), &[])).expect("json");
    assert_eq!(stdin["runtimeConfig"], json!({"static": 1}));
}

/// A failed plugin verb names that verb (DEL is "delete"), not CHECK's.
#[test]
fn a_plugin_verb_names_its_own_verb() {
    let dir = PathBuf::from("/nonexistent");
    let runtime = Runtime {
        cni_path: vec![dir.clone()],
        cache: Cache::new(&dir),
        plugins: crate::cni::no_plugins,
    };
    let list = empty_list();
    let absent = plugin(json!({"type": "no-such-plugin"}));
    let rt = RuntimeConf {
        container_id: "c".into(),
        netns: "/run/netns/x".into(),
        ifname: "eth0".into(),
        ..RuntimeConf::default()
    };
    let prev = json!({"cniVersion": "1.0.0"});
    for (command, verb) in [
        (Command::Add, "(add)"),
        (Command::Del, "(delete)"),
        (Command::Check, "(check)"),
    ] {
        let e = runtime
            .plugin_verb(
                &list,
                &absent,
                command,
                &rt,
                &prev,
                Implementation::OnCniPath,
            )
            .expect_err("no such plugin");
        assert!(e.msg.contains(verb), "{command:?}: {}", e.msg);
    }
}

#[test]
fn container_ids_follow_cnitool() {
    let id = cnitool_container_id("/run/netns/x");
    assert!(id.starts_with("cnitool-") && id.len() == 28, "{id}");
    assert_eq!(
        id,
        format!(
            "cnitool-{}",
            &crate::digest::sha512_hex(b"/run/netns/x")[..20]
        )
    );
}
