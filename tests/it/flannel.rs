//! flannel end to end: the delegate config saved on disk equals the fixture,
//! the container gets an address from FLANNEL_SUBNET, DEL works after
//! subnet.env is gone.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::json;

#[test]
fn delegate_config_matches_the_fixture_and_del_survives_subnet_env_removal() {
    enter_test_host();
    let (bin, state, store, etc) = (
        plugin_dir(),
        TempDir::new("flannel-data"),
        TempDir::new("flannel-store"),
        TempDir::new("flannel-run"),
    );
    let subnet_env = etc.0.join("subnet.env");
    std::fs::copy("testdata/flannel/subnet.env", &subnet_env).expect("subnet.env");
    let conf = json!({
        "cniVersion": "1.0.0", "name": "cbr0", "type": "flannel",
        "subnetFile": subnet_env, "dataDir": state.0,
        "delegate": {"hairpinMode": true, "isDefaultGateway": true},
        "ipam": {"dataDir": store.0}
    })
    .to_string();
    let ns = Netns::new();
    let call = |cmd: &str| {
        Call::new("flannel", cmd, ns.path(), &conf)
            .set("CNI_CONTAINERID", "pod-1")
            .path(&bin)
    };
    let out = call("ADD").run().ok();
    assert_eq!(out["ips"][0]["address"], "10.244.1.2/24", "{out}");
    assert_eq!(out["ips"][0]["gateway"], "10.244.1.1");

    let saved = std::fs::read_to_string(state.0.join("pod-1")).expect("saved delegate");
    let expected = std::fs::read_to_string("testdata/flannel/expected-delegate.json")
        .expect("fixture")
        .replace("@STORE@", &store.0.to_string_lossy());
    assert_eq!(saved, expected);

    // The container: address, MTU from FLANNEL_MTU, route to the flannel network.
    let addr = ns.sh("ip", &["-4", "addr", "show", "dev", "eth0"]);
    assert!(
        addr.contains("10.244.1.2/24") && addr.contains("mtu 1450"),
        "{addr}"
    );
    assert!(
        ns.sh("ip", &["route"])
            .contains("10.244.0.0/16 via 10.244.1.1")
    );
    assert!(run_in(None, "ip", &["-o", "link", "show", "cni0"]).contains("cni0"));

    std::fs::remove_file(&subnet_env).expect("remove subnet.env");
    call("DEL").run().ok();
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    assert!(!state.0.join("pod-1").exists());
    assert!(!store.0.join("cbr0").join("10.244.1.2").exists());
    call("DEL").run().ok();
    // Without subnet.env, ADD fails with a clear error.
    let e = call("ADD").run().err(999);
    assert!(
        e["msg"].as_str().is_some_and(|m| m.contains("subnet.env")),
        "{e}"
    );
}

#[test]
fn delegate_must_not_set_name_or_ipam() {
    enter_test_host();
    let bin = plugin_dir();
    let etc = TempDir::new("flannel-bad");
    let subnet_env = etc.0.join("subnet.env");
    std::fs::copy("testdata/flannel/subnet.env", &subnet_env).expect("subnet.env");
    for delegate in [
        json!({"name": "x"}),
        json!({"ipam": {}}),
        json!({"type": 5}),
    ] {
        let conf = json!({"cniVersion": "1.0.0", "name": "cbr0", "type": "flannel",
                          "subnetFile": subnet_env, "dataDir": etc.0, "delegate": delegate});
        Call::new(
            "flannel",
            "ADD",
            "/run/netns/flannel-none",
            &conf.to_string(),
        )
        .path(&bin)
        .run()
        .err(7);
    }
}

/// Relative `subnetFile` and `dataDir` (and the delegate's host-local store)
/// resolve against the plugin's working directory, as in the reference.
#[test]
fn relative_subnet_file_and_data_dir_resolve_from_the_working_directory() {
    enter_test_host();
    let (bin, cwd) = (plugin_dir(), TempDir::new("flannel-rel"));
    std::fs::create_dir_all(cwd.0.join("run")).expect("run dir");
    std::fs::copy("testdata/flannel/subnet.env", cwd.0.join("run/subnet.env")).expect("subnet.env");
    let conf = json!({
        "cniVersion": "1.0.0", "name": "cbr0", "type": "flannel",
        "subnetFile": "run/subnet.env", "dataDir": "state",
        "ipam": {"dataDir": "store"}
    })
    .to_string();
    let ns = Netns::new();
    let call = |cmd: &str| {
        Call::new("flannel", cmd, ns.path(), &conf)
            .set("CNI_CONTAINERID", "pod-rel")
            .path(&bin)
            .run_in_dir(&cwd.0)
    };
    let out = call("ADD").ok();
    assert_eq!(out["ips"][0]["address"], "10.244.1.2/24", "{out}");
    assert!(cwd.0.join("state/pod-rel").exists());
    assert!(cwd.0.join("store/cbr0/10.244.1.2").exists());
    call("DEL").ok();
    assert!(!cwd.0.join("state/pod-rel").exists());
    assert!(!cwd.0.join("store/cbr0/10.244.1.2").exists());
    // `..` stays refused on ADD; DEL of such a config has nothing to replay.
    let escape = conf.replace("\"state\"", "\"state/../..\"");
    Call::new("flannel", "ADD", ns.path(), &escape)
        .path(&bin)
        .run_in_dir(&cwd.0)
        .err(7);
    Call::new("flannel", "DEL", ns.path(), &escape)
        .path(&bin)
        .run_in_dir(&cwd.0)
        .ok();
}

/// CHECK does nothing, as the reference's: no subnet.env, no saved delegate
/// config, no interface, and it still succeeds, creating nothing.
#[test]
fn check_succeeds_and_changes_nothing() {
    enter_test_host();
    let (bin, dir) = (plugin_dir(), TempDir::new("flannel-check"));
    let data = dir.0.join("data");
    let conf = json!({
        "cniVersion": "1.0.0", "name": "cbr0", "type": "flannel",
        "subnetFile": dir.0.join("subnet.env"), "dataDir": data,
        "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.244.1.2/24"}]}
    })
    .to_string();
    let ns = Netns::new();
    let links = || ns.sh("ip", &["-o", "link"]);
    let before = links();
    Call::new("flannel", "CHECK", ns.path(), &conf)
        .set("CNI_CONTAINERID", "pod-check")
        .path(&bin)
        .run()
        .ok();
    assert_eq!(links(), before);
    assert!(!data.exists(), "no data dir made");
    assert!(!dir.0.join("subnet.env").exists());
}

/// GC (1.1.0; flannel-io's plugin has none) removes the saved delegate configs
/// of this network's containers not in `cni.dev/valid-attachments` and passes
/// GC on to the delegate ADD would build, so host-local frees their addresses.
/// Another network's saved config stays; without the list nothing changes;
/// without subnet.env the saved configs still go and the delegate's GC is
/// skipped, said on stderr.
#[test]
fn gc_removes_stale_saved_configs_and_collects_through_the_delegate() {
    enter_test_host();
    let (bin, state, store, etc) = (
        plugin_dir(),
        TempDir::new("flannel-gc-data"),
        TempDir::new("flannel-gc-store"),
        TempDir::new("flannel-gc-run"),
    );
    let subnet_env = etc.0.join("subnet.env");
    std::fs::copy("testdata/flannel/subnet.env", &subnet_env).expect("subnet.env");
    let conf = json!({
        "cniVersion": "1.1.0", "name": "cbr0", "type": "flannel",
        "subnetFile": subnet_env, "dataDir": state.0,
        "ipam": {"dataDir": store.0}
    });
    let (ns1, ns2) = (Netns::new(), Netns::new());
    for (id, ns) in [("pod-1", &ns1), ("pod-2", &ns2)] {
        Call::new("flannel", "ADD", ns.path(), &conf.to_string())
            .set("CNI_CONTAINERID", id)
            .path(&bin)
            .run()
            .ok();
    }
    std::fs::write(state.0.join("pod-9"), r#"{"name":"other","type":"bridge"}"#).expect("other");
    let saved = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&state.0)
            .expect("data dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let held = |ip: &str| store.0.join("cbr0").join(ip).exists();
    let gc = |valid: Option<serde_json::Value>| {
        let mut c = conf.clone();
        if let Some(v) = valid {
            c["cni.dev/valid-attachments"] = v;
        }
        Call::new("flannel", "GC", "", &c.to_string())
            .unset("CNI_CONTAINERID")
            .unset("CNI_NETNS")
            .unset("CNI_IFNAME")
            .path(&bin)
            .run()
    };
    gc(None).ok();
    assert_eq!(saved(), ["pod-1", "pod-2", "pod-9"]);
    assert!(held("10.244.1.2") && held("10.244.1.3"));

    gc(Some(json!([{"containerID": "pod-1", "ifname": "eth0"}]))).ok();
    assert_eq!(saved(), ["pod-1", "pod-9"]);
    assert!(held("10.244.1.2"), "pod-1's address stays");
    assert!(
        !held("10.244.1.3"),
        "pod-2's address is freed by host-local"
    );

    std::fs::remove_file(&subnet_env).expect("remove subnet.env");
    let out = gc(Some(json!([])));
    out.ok();
    assert!(out.stderr.contains("skipped"), "{}", out.stderr);
    assert_eq!(saved(), ["pod-9"]);
    assert!(held("10.244.1.2"), "no delegate GC without subnet.env");
}
