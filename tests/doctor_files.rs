//! `cnitool doctor` over plugin files: tuning's backups and flannel's saved
//! delegate configs of dead or forgotten attachments are listed and removed,
//! a live pod's are left alone.

mod harness;

use harness::{Netns, Outcome, PinnedNetns, TempDir, enter_test_host, plugin_dir, sha512_prefix};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

struct Setup {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    tuning: TempDir,
    flannel: TempDir,
    etc: TempDir,
    bin: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let s = Setup {
            conf: TempDir::new("conf"),
            cache: TempDir::new("cache"),
            store: TempDir::new("store"),
            tuning: TempDir::new("tuning"),
            flannel: TempDir::new("flannel"),
            etc: TempDir::new("flannel-run"),
            bin: plugin_dir(),
        };
        let tune = json!({
            "cniVersion": "1.0.0", "name": "tune-net",
            "plugins": [
                {
                    "type": "bridge", "bridge": "cni-tune0", "isGateway": true,
                    "ipam": {"type": "host-local", "dataDir": s.store.0,
                             "ranges": [[{"subnet": "10.23.0.0/16"}]]}
                },
                {"type": "tuning", "mtu": 1400, "dataDir": s.tuning.0}
            ]
        });
        std::fs::write(s.conf.0.join("tune.conflist"), tune.to_string()).expect("conf");
        let subnet_env = s.etc.0.join("subnet.env");
        std::fs::copy("testdata/flannel/subnet.env", &subnet_env).expect("subnet.env");
        let flan = json!({
            "cniVersion": "1.0.0", "name": "flan-net",
            "plugins": [{
                "type": "flannel", "subnetFile": subnet_env, "dataDir": s.flannel.0,
                "ipam": {"dataDir": s.store.0}
            }]
        });
        std::fs::write(s.conf.0.join("flan.conflist"), flan.to_string()).expect("conf");
        s
    }

    fn run(&self, args: &[&str]) -> Outcome {
        harness::cnitool_in(&self.conf.0, &self.cache.0, &self.bin.0, &[], args)
    }

    fn cache_file(&self, network: &str, id: &str, ifname: &str) -> PathBuf {
        self.cache
            .0
            .join("results")
            .join(format!("{network}-{id}-{ifname}"))
    }

    fn backup(&self, id: &str) -> PathBuf {
        self.tuning.0.join(format!("{id}_eth0.json"))
    }

    fn saved(&self, id: &str) -> PathBuf {
        self.flannel.0.join(id)
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

/// The findings of the file kinds (cache and ipam are tests/doctor.rs's).
fn of_files(found: &Value) -> Vec<Value> {
    let all = found["findings"].as_array().expect("findings");
    all.iter()
        .filter(|f| f["kind"] == "tuning" || f["kind"] == "flannel")
        .cloned()
        .collect()
}

fn finding(
    kind: &str,
    network: &str,
    id: &str,
    ifname: &str,
    object: &Path,
    action: &str,
) -> Value {
    json!({
        "kind": kind, "network": network, "containerId": id, "ifname": ifname,
        "object": object.to_string_lossy(), "action": action, "fixed": false
    })
}

#[test]
fn doctor_lists_and_removes_tuning_backups_and_flannel_configs_of_gone_pods() {
    enter_test_host();
    let s = Setup::new();
    // Each pod is on both networks: tune-net's eth0, flan-net's net1.
    let (gone, forgotten, live) = (PinnedNetns::new(), Netns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for p in paths {
        s.run(&["add", "tune-net", p]).ok();
        s.run(&["add", "flan-net", p, "--ifname", "net1"]).ok();
    }
    for id in &ids {
        assert!(s.backup(id).exists(), "{id}");
        assert!(s.saved(id).exists(), "{id}");
    }
    // The first pod's runtime crashed (no DEL); the second's lost its cache
    // files, then the pod went.
    gone.destroy();
    for (net, ifname) in [("tune-net", "eth0"), ("flan-net", "net1")] {
        std::fs::remove_file(s.cache_file(net, &ids[1], ifname)).expect("rm cache file");
    }
    forgotten.destroy();

    // Fresh files are left alone.
    assert!(of_files(&s.run(&["doctor", "--json"]).json()).is_empty());

    let by_del = "removed by the DEL of its dead attachment";
    let found = doctor(&s, &["--min-age", "0"], 1);
    let mut expected = vec![
        finding(
            "tuning",
            "tune-net",
            &ids[0],
            "eth0",
            &s.backup(&ids[0]),
            by_del,
        ),
        finding(
            "tuning",
            "tune-net",
            &ids[1],
            "eth0",
            &s.backup(&ids[1]),
            "remove backup",
        ),
        finding(
            "flannel",
            "flan-net",
            &ids[0],
            "net1",
            &s.saved(&ids[0]),
            by_del,
        ),
        finding(
            "flannel",
            "flan-net",
            &ids[1],
            "",
            &s.saved(&ids[1]),
            "remove saved delegate config",
        ),
    ];
    // Within a kind, files are listed in the directory's order.
    let key = |f: &Value| (f["kind"].to_string(), f["object"].to_string());
    let mut listed = of_files(&found);
    listed.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(listed, expected);

    let fixed = doctor(&s, &["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    for id in &ids[..2] {
        assert!(!s.backup(id).exists(), "{id}");
        assert!(!s.saved(id).exists(), "{id}");
    }
    // The live pod: untouched and working.
    assert!(s.backup(&ids[2]).exists());
    assert!(s.saved(&ids[2]).exists());
    assert!(
        live.sh("ip", &["-o", "link", "show", "eth0"])
            .contains("mtu 1400")
    );
    s.run(&["check", "tune-net", live.path()]).ok();

    assert_eq!(doctor(&s, &["--min-age", "0"], 0), json!({"findings": []}));

    s.run(&["del", "tune-net", live.path()]).ok();
    s.run(&["del", "flan-net", live.path(), "--ifname", "net1"])
        .ok();
    assert!(!s.backup(&ids[2]).exists());
    assert!(!s.saved(&ids[2]).exists());
}
