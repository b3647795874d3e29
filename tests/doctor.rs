//! `cnitool doctor`: stale cache entries and host-local reservations of a node
//! are listed and fixed, live attachments and fresh state are left alone.

mod harness;

use harness::{
    BIN, Netns, Outcome, PinnedNetns, TempDir, enter_test_host, iptables_table, plugin_dir,
    sha512_prefix,
};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

struct Setup {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    bin: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let s = Setup {
            conf: TempDir::new("conf"),
            cache: TempDir::new("cache"),
            store: TempDir::new("store"),
            bin: plugin_dir(),
        };
        let text = std::fs::read_to_string("testdata/bridge.conflist").expect("testdata");
        let mut v: Value = serde_json::from_str(&text).expect("JSON");
        v["plugins"][0]["ipam"]["dataDir"] = json!(s.store.0);
        assert_eq!(v["plugins"][0]["ipMasq"], true);
        std::fs::write(s.conf.0.join("bridge.conflist"), v.to_string()).expect("conf");
        s
    }

    fn run(&self, args: &[&str]) -> Outcome {
        harness::cnitool_in(&self.conf.0, &self.cache.0, &self.bin.0, &[], args)
    }

    fn cache_file(&self, id: &str) -> std::path::PathBuf {
        self.cache
            .0
            .join("results")
            .join(format!("bridge-net-{id}-eth0"))
    }

    /// The containers holding a reservation of bridge-net, with the file.
    fn reservations(&self) -> Vec<(String, String)> {
        let dir = self.store.0.join("bridge-net");
        let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
            .expect("store")
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.parse::<std::net::IpAddr>().is_ok()
            })
            .map(|p| {
                let text = std::fs::read_to_string(&p).expect("reservation");
                let id = text.split("\r\n").next().unwrap_or_default().to_string();
                (id, p.to_string_lossy().into_owned())
            })
            .collect();
        out.sort();
        out
    }
}

fn container_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

fn masq_chain(id: &str) -> String {
    format!("CNI-{}", sha512_prefix(&format!("bridge-net{id}"), 24))
}

fn doctor(s: &Setup, args: &[&str], status: i32) -> Value {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let out = s.run(&all);
    assert_eq!(out.status, status, "{out:?}");
    out.json()
}

#[test]
fn doctor_lists_and_fixes_dead_cache_entries_and_orphan_reservations() {
    enter_test_host();
    let s = Setup::new();
    // Pinned as runtimes pin sandboxes: the path goes with the namespace.
    let (gone, forgotten, live) = (PinnedNetns::new(), Netns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for p in paths {
        s.run(&["add", "bridge-net", p]).ok();
    }
    let held = s.reservations();
    assert_eq!(held.len(), 3, "{held:?}");
    let held_by = |id: &str| -> Vec<String> {
        s.reservations()
            .into_iter()
            .filter(|(owner, _)| owner == id)
            .map(|(_, f)| f)
            .collect()
    };
    let forgotten_ip = held_by(&ids[1]);
    assert_eq!(forgotten_ip.len(), 1);
    for id in &ids {
        assert!(iptables_table("nat").contains(&masq_chain(id)), "{id}");
    }

    // The first pod's runtime crashed: its netns is gone, no DEL ran. The
    // second pod's runtime lost its cache file, then the pod went (its IP
    // stays reserved, and nothing names its owner).
    let gone_ip = held_by(&ids[0]);
    gone.destroy();
    std::fs::remove_file(s.cache_file(&ids[1])).expect("rm cache file");
    // While its pod lives, the address in its namespace keeps the reservation
    // (a runtime whose cache the doctor does not read).
    let while_alive = doctor(&s, &["--min-age", "0"], 1);
    let kept = while_alive["findings"].as_array().expect("findings");
    assert!(kept.iter().all(|f| f["containerId"] == ids[0]), "{kept:?}");
    forgotten.destroy();
    // Their veths go with their namespaces, a little after the last reference.
    harness::wait_for_ports("cni-multi0", 1);

    // Fresh state is left alone.
    assert_eq!(doctor(&s, &[], 0), json!({"findings": []}));

    let found = doctor(&s, &["--min-age", "0"], 1);
    assert_eq!(
        found,
        json!({"findings": [
            {
                "kind": "cache", "network": "bridge-net", "containerId": ids[0],
                "ifname": "eth0", "object": s.cache_file(&ids[0]).to_string_lossy(),
                "action": "DEL with the cached config", "fixed": false
            },
            {
                "kind": "ipam", "network": "bridge-net", "containerId": ids[0],
                "ifname": "eth0", "object": gone_ip[0],
                "action": "released by the DEL of its dead attachment", "fixed": false
            },
            {
                "kind": "ipam", "network": "bridge-net", "containerId": ids[1],
                "ifname": "eth0", "object": forgotten_ip[0],
                "action": "remove reservation", "fixed": false
            },
            {
                "kind": "masq", "network": "bridge-net", "containerId": ids[0],
                "ifname": "", "object": format!("iptables nat {}", masq_chain(&ids[0])),
                "action": "removed by the DEL of its dead attachment", "fixed": false
            },
            {
                "kind": "masq", "network": "bridge-net", "containerId": ids[1],
                "ifname": "", "object": format!("iptables nat {}", masq_chain(&ids[1])),
                "action": "remove chain and its POSTROUTING jumps", "fixed": false
            }
        ]}),
    );
    // The table for people says the same.
    let table = s.run(&["doctor", "--min-age", "0"]);
    assert_eq!(table.status, 1, "{table:?}");
    assert!(table.stdout.starts_with("KIND"), "{table:?}");
    assert_eq!(table.stdout.lines().count(), 6, "{table:?}");

    let fixed = doctor(&s, &["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert_eq!(fixed.len(), 5);
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");

    // First pod: no cache entry, no reservation, no masquerading chain.
    assert!(!s.cache_file(&ids[0]).exists());
    assert!(held_by(&ids[0]).is_empty());
    let nat = iptables_table("nat");
    assert!(!nat.contains(&masq_chain(&ids[0])), "{nat}");
    // Second pod: its reservation and its masquerading chain are gone.
    assert!(held_by(&ids[1]).is_empty());
    assert!(!nat.contains(&masq_chain(&ids[1])), "{nat}");
    // Third pod: untouched and working.
    assert_eq!(held_by(&ids[2]).len(), 1);
    assert!(s.cache_file(&ids[2]).exists());
    assert!(nat.contains(&masq_chain(&ids[2])), "{nat}");
    assert!(live.sh("ip", &["-o", "link"]).contains("eth0"));
    s.run(&["check", "bridge-net", live.path()]).ok();

    assert_eq!(doctor(&s, &["--min-age", "0"], 0), json!({"findings": []}));
    let clean = s.run(&["doctor", "--min-age", "0"]);
    assert_eq!(clean.status, 0, "{clean:?}");

    s.run(&["del", "bridge-net", live.path()]).ok();
}

#[test]
fn unjudgeable_entries_pass_failed_fixes_stay_findings_and_an_unreadable_cache_exits_2() {
    enter_test_host();
    let s = Setup::new();
    // An entry without netns cannot be judged.
    let results = s.cache.0.join("results");
    std::fs::create_dir_all(&results).expect("results");
    std::fs::write(
        results.join("bridge-net-c1-eth0"),
        json!({"kind": "cniCacheV1", "containerId": "c1", "ifName": "eth0",
               "networkName": "bridge-net", "config": ""})
        .to_string(),
    )
    .expect("entry");
    // Nor can one under /proc whose process is gone: the namespace may live on.
    std::fs::write(
        results.join("bridge-net-c3-eth0"),
        json!({"kind": "cniCacheV1", "containerId": "c3", "ifName": "eth0",
               "networkName": "bridge-net", "netns": "/proc/0/ns/net", "config": ""})
        .to_string(),
    )
    .expect("entry");
    assert_eq!(doctor(&s, &["--min-age", "0"], 0), json!({"findings": []}));
    // A dead entry whose DEL fails stays a finding, not fixed, and says why.
    let config =
        json!({"cniVersion": "1.0.0", "name": "gone-net", "plugins": [{"type": "nosuchplugin"}]});
    let entry = results.join("gone-net-c2-eth0");
    std::fs::write(
        &entry,
        json!({"kind": "cniCacheV1", "containerId": "c2", "ifName": "eth0",
               "networkName": "gone-net", "netns": "/nonexistent/netns/c2",
               "config": base64(&config.to_string())})
        .to_string(),
    )
    .expect("entry");
    let out = s.run(&["doctor", "--json", "--fix", "--min-age", "0"]);
    assert_eq!(out.status, 1, "{out:?}");
    let found = out.json();
    assert_eq!(found["findings"][0]["kind"], "cache");
    assert_eq!(found["findings"][0]["fixed"], false);
    assert!(out.stderr.contains("failed to fix cache"), "{out:?}");
    assert!(out.stderr.contains("nosuchplugin"), "{out:?}");
    assert!(entry.exists());
    // A cache dir that is a file cannot be read.
    let file = TempDir::new("notadir");
    let path = file.0.join("cache");
    std::fs::write(&path, "x").expect("file");
    let out = Command::new(BIN)
        .args(["cnitool", "--cache-dir"])
        .arg(Path::new(&path))
        .args(["doctor", "--json"])
        .env_clear()
        .env("NETCONFPATH", &s.conf.0)
        .output()
        .expect("cnitool");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot inspect the node"), "{err}");
}

fn base64(text: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("printf %s '{text}' | base64 -w0"))
        .output()
        .expect("base64");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
