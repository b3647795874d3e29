//! `cnitool doctor` over multus's per-pod files: the delegate cache and the
//! network status of a pod whose namespace went without DEL, and of one whose
//! cache entry was removed first, are listed and removed; a live pod's stay.

mod harness;

use harness::{Netns, Outcome, PinnedNetns, TempDir, enter_test_host, plugin_dir, sha512_prefix};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const NETWORK: &str = "multus-cni-network";

/// A local multus (no Kubernetes): the cluster network cbr0 from
/// testdata/multus, its host-local store and multus's cniDir of our own.
struct Setup {
    conf: TempDir,
    multus_conf: TempDir,
    cni: TempDir,
    store: TempDir,
    cache: TempDir,
    bin: TempDir,
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json")
}

impl Setup {
    fn new() -> Setup {
        let s = Setup {
            conf: TempDir::new("dm-conf"),
            multus_conf: TempDir::new("dm-multus-conf"),
            cni: TempDir::new("dm-cni"),
            store: TempDir::new("dm-store"),
            cache: TempDir::new("dm-cache"),
            bin: plugin_dir(),
        };
        let mut cbr0 = read_json(Path::new("testdata/multus/net.d/cbr0.conflist"));
        cbr0["plugins"][0]["ipam"]["dataDir"] = json!(s.store.0);
        std::fs::write(s.multus_conf.0.join("cbr0.conflist"), cbr0.to_string()).expect("cbr0");
        let mut list = read_json(Path::new("testdata/multus/00-multus.conflist"));
        let p = &mut list["plugins"][0];
        p["confDir"] = json!(s.multus_conf.0);
        p["cniDir"] = json!(s.cni.0);
        p["binDir"] = json!(s.bin.0);
        p["podDir"] = json!(s.multus_conf.0.join("pods"));
        p["netAttachDefDir"] = json!(s.multus_conf.0.join("nads"));
        std::fs::write(s.conf.0.join("00-multus.conflist"), list.to_string()).expect("conf");
        s
    }

    fn run(&self, args: &[&str]) -> Outcome {
        // No annotations: the cluster network only.
        let caps = json!({"io.kubernetes.cri.pod-annotations": {}}).to_string();
        let env = [
            (
                "CNI_ARGS",
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-9;K8S_POD_UID=u9",
            ),
            ("CAP_ARGS", caps.as_str()),
        ];
        harness::cnitool_in(&self.conf.0, &self.cache.0, &self.bin.0, &env, args)
    }

    fn delegates(&self, id: &str) -> PathBuf {
        self.cni.0.join(id)
    }

    fn status(&self, id: &str) -> PathBuf {
        self.cni.0.join(format!("{id}.status"))
    }

    /// multus's delegate cache entries of a container (in `<cniDir>/results`).
    fn delegate_entries(&self, id: &str) -> Vec<String> {
        std::fs::read_dir(self.cni.0.join("results"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains(id))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn container_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

fn doctor(s: &Setup, args: &[&str], status: i32) -> Value {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let out = s.run(&all);
    assert_eq!(out.status, status, "{out:?}");
    out.json()
}

fn of_kind(found: &Value, kind: &str) -> Vec<Value> {
    let all = found["findings"].as_array().expect("findings");
    all.iter().filter(|f| f["kind"] == kind).cloned().collect()
}

fn finding(network: &str, id: &str, ifname: &str, object: &Path, action: &str) -> Value {
    json!({
        "kind": "multus", "network": network, "containerId": id, "ifname": ifname,
        "object": object.to_string_lossy(), "action": action, "fixed": false
    })
}

#[test]
fn doctor_lists_and_removes_multus_files_of_gone_pods() {
    enter_test_host();
    let s = Setup::new();
    // Pinned like a runtime's netns: once destroyed, their cache entries are
    // dead (a /proc path would be unknown, and keep the pod's files).
    let (gone, forgotten, live) = (PinnedNetns::new(), PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for p in paths {
        let out = s.run(&["add", NETWORK, p]);
        assert!(out.ok()["ips"][0]["address"].as_str().is_some());
    }
    for id in &ids {
        assert!(s.delegates(id).is_file(), "{id}");
        assert!(s.status(id).is_file(), "{id}");
        assert_eq!(s.delegate_entries(id).len(), 1, "{id}");
    }
    // The first pod's runtime crashed (no DEL); the second's lost its cache
    // file, then the pod went.
    gone.destroy();
    let main_entry = s
        .cache
        .0
        .join("results")
        .join(format!("{NETWORK}-{}-eth0", ids[1]));
    std::fs::remove_file(main_entry).expect("rm cache file");
    forgotten.destroy();

    // Links, directories and names that are no container ID are never findings.
    let victim = TempDir::new("dm-victim");
    std::fs::write(victim.0.join("keep"), "x").expect("victim");
    std::os::unix::fs::symlink(victim.0.join("keep"), s.cni.0.join("linked")).expect("link");
    std::fs::create_dir(s.cni.0.join("adir")).expect("dir");
    std::fs::write(s.cni.0.join(".tmp-1"), "x").expect("tmp");

    // Fresh files are left alone.
    assert!(of_kind(&s.run(&["doctor", "--json"]).json(), "multus").is_empty());

    let by_del = "removed by the DEL of its dead attachment";
    let found = doctor(&s, &["--min-age", "0"], 1);
    let mut expected = vec![
        finding(NETWORK, &ids[0], "eth0", &s.delegates(&ids[0]), by_del),
        finding(NETWORK, &ids[0], "eth0", &s.status(&ids[0]), by_del),
        finding(
            NETWORK,
            &ids[1],
            "",
            &s.delegates(&ids[1]),
            "remove delegate cache",
        ),
        finding(
            NETWORK,
            &ids[1],
            "",
            &s.status(&ids[1]),
            "remove network status",
        ),
    ];
    let key = |f: &Value| f["object"].to_string();
    let mut listed = of_kind(&found, "multus");
    listed.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(listed, expected);
    // The dead pod's own attachment and both gone pods' delegates are `cache` findings.
    let mut dead: Vec<(String, String)> = of_kind(&found, "cache")
        .iter()
        .map(|f| {
            (
                f["network"].as_str().unwrap().into(),
                f["containerId"].as_str().unwrap().into(),
            )
        })
        .collect();
    dead.sort();
    let mut want = vec![
        (NETWORK.to_string(), ids[0].clone()),
        ("cbr0".to_string(), ids[0].clone()),
        ("cbr0".to_string(), ids[1].clone()),
    ];
    want.sort();
    assert_eq!(dead, want);

    let fixed = doctor(&s, &["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    for id in &ids[..2] {
        assert!(!s.delegates(id).exists(), "{id}");
        assert!(!s.status(id).exists(), "{id}");
        assert!(s.delegate_entries(id).is_empty(), "{id}");
    }
    assert!(victim.0.join("keep").exists());
    assert!(s.cni.0.join(".tmp-1").exists());
    // The live pod: untouched and working.
    assert!(s.delegates(&ids[2]).is_file());
    assert!(s.status(&ids[2]).is_file());
    assert_eq!(s.delegate_entries(&ids[2]).len(), 1);
    assert_eq!(doctor(&s, &["--min-age", "0"], 0), json!({"findings": []}));

    s.run(&["del", NETWORK, live.path()]).ok();
    assert!(!s.delegates(&ids[2]).exists());
    assert!(!s.status(&ids[2]).exists());
}
