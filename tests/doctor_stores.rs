//! `cnitool doctor` over state whose network is no longer configured (a
//! host-local store of a removed network) and multus's device-info files.

mod harness;

use harness::{Netns, Outcome, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn doctor(conf: &Path, cache: &Path, args: &[&str], status: i32) -> Value {
    let bin = plugin_dir();
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let out: Outcome = harness::cnitool_in(conf, cache, &bin.0, &[], &all);
    assert_eq!(out.status, status, "{out:?}");
    out.json()
}

fn of_kind(found: &Value, kind: &str) -> Vec<Value> {
    let all = found["findings"].as_array().expect("findings");
    all.iter().filter(|f| f["kind"] == kind).cloned().collect()
}

fn reserve(store: &Path, network: &str, ip: &str, id: &str) -> PathBuf {
    let dir = store.join(network);
    std::fs::create_dir_all(&dir).expect("store");
    let file = dir.join(ip);
    std::fs::write(&file, format!("{id}\r\neth0")).expect("reservation");
    file
}

#[test]
fn doctor_removes_reservations_of_networks_no_longer_configured() {
    enter_test_host();
    let (conf, cache, store) = (
        TempDir::new("ds-conf"),
        TempDir::new("ds-cache"),
        TempDir::new("ds-store"),
    );
    // The one network still configured names the dataDir.
    let list = json!({"cniVersion": "1.0.0", "name": "still-net", "plugins": [
        {"type": "ptp", "ipam": {"type": "host-local", "dataDir": store.0,
                                  "ranges": [[{"subnet": "10.231.0.0/24"}]]}}]});
    std::fs::write(conf.0.join("still.conflist"), list.to_string()).expect("conf");
    let gone = reserve(&store.0, "removed-net", "10.231.9.5", "ctr-gone");
    std::fs::write(store.0.join("removed-net").join("lock"), "").expect("lock");
    // An address a namespace still holds keeps its reservation.
    let pod = Netns::new();
    run_in(
        Some(Path::new(pod.path())),
        "ip",
        &["addr", "add", "10.231.9.6/32", "dev", "lo"],
    );
    let held = reserve(&store.0, "removed-net", "10.231.9.6", "ctr-held");
    // A linked store is not followed.
    let elsewhere = TempDir::new("ds-elsewhere");
    let linked = reserve(&elsewhere.0, "linked-net", "10.231.9.7", "ctr-linked");
    std::os::unix::fs::symlink(elsewhere.0.join("linked-net"), store.0.join("linked-net"))
        .expect("link");

    // Fresh reservations are left alone.
    assert_eq!(doctor(&conf.0, &cache.0, &[], 0), json!({"findings": []}));
    let found = doctor(&conf.0, &cache.0, &["--min-age", "0"], 1);
    let expected = json!({"kind": "ipam", "network": "removed-net", "containerId": "ctr-gone",
        "ifname": "eth0", "object": gone.to_string_lossy(), "action": "remove reservation",
        "fixed": false});
    assert_eq!(found["findings"], json!([expected]), "{found}");

    let fixed = doctor(&conf.0, &cache.0, &["--fix", "--min-age", "0"], 0);
    assert_eq!(fixed["findings"][0]["fixed"], true, "{fixed}");
    assert!(!gone.exists());
    assert!(held.exists() && linked.exists());
    assert_eq!(
        doctor(&conf.0, &cache.0, &["--min-age", "0"], 0),
        json!({"findings": []})
    );
}

#[test]
fn doctor_removes_device_info_files_no_known_pod_owns() {
    enter_test_host();
    let (conf, cache, cni) = (
        TempDir::new("ds-mconf"),
        TempDir::new("ds-mcache"),
        TempDir::new("ds-mcni"),
    );
    let list = json!({"cniVersion": "1.0.0", "name": "multus-cni-network", "plugins": [
        {"type": "multus", "cniDir": cni.0, "clusterNetwork": "cbr0"}]});
    std::fs::write(conf.0.join("00-multus.conflist"), list.to_string()).expect("conf");
    // A live pod (its cache entry's netns is there), and one nothing names.
    let pid = std::process::id();
    let (known, unknown) = (format!("ds-known-{pid}"), format!("ds-unknown-{pid}"));
    let pod = Netns::new();
    let results = cache.0.join("results");
    std::fs::create_dir_all(&results).expect("results");
    let entry = results.join(format!("multus-cni-network-{known}-eth0"));
    std::fs::write(
        &entry,
        json!({"kind": "cniCacheV1", "containerId": known, "ifName": "eth0",
               "networkName": "multus-cni-network", "netns": pod.path(),
               "config": base64(&list.to_string())})
        .to_string(),
    )
    .expect("cache entry");
    let dir = Path::new("/var/run/k8s.cni.cncf.io/devinfo/cni");
    std::fs::create_dir_all(dir).expect("devinfo dir");
    let kept = dir.join(format!("default-sriov-{known}_net1"));
    let orphan = dir.join(format!("default-sriov-{unknown}_net1"));
    for f in [&kept, &orphan] {
        std::fs::write(f, r#"{"type":"pci","version":"1.1.0"}"#).expect("device-info");
    }
    let mine = |found: &Value| -> Vec<Value> {
        of_kind(found, "devinfo")
            .into_iter()
            .filter(|f| {
                f["object"]
                    .as_str()
                    .is_some_and(|o| o.contains(&format!("-{pid}_")))
            })
            .collect()
    };

    // The directory is the node's: files of other pods may be there too.
    let run = |args: &[&str]| -> Outcome {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        harness::cnitool_in(&conf.0, &cache.0, &plugin_dir().0, &[], &all)
    };
    // Fresh files are left alone.
    assert!(mine(&run(&[]).json()).is_empty());
    let found = run(&["--min-age", "0"]).json();
    let expected = json!({"kind": "devinfo", "network": "", "containerId": "", "ifname": "",
        "object": orphan.to_string_lossy(), "action": "remove device-info file", "fixed": false});
    assert_eq!(mine(&found), vec![expected], "{found}");

    let out = run(&["--fix", "--min-age", "0"]);
    assert!(
        mine(&out.json()).iter().all(|f| f["fixed"] == true),
        "{out:?}"
    );
    assert!(!orphan.exists());
    assert!(kept.exists(), "a live pod keeps its file");
    // Once its runtime forgets the pod, its file goes.
    std::fs::remove_file(&entry).expect("rm cache entry");
    let out = run(&["--fix", "--min-age", "0"]);
    assert_eq!(mine(&out.json()).len(), 1, "{out:?}");
    assert!(!kept.exists());
}

fn base64(text: &str) -> String {
    let out = std::process::Command::new("base64")
        .arg("-w0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("base64");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
