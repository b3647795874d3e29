//! `cnitool doctor` and netfilter state: the ipMasq chains of dead and
//! ownerless attachments are listed and removed, a live pod's are untouched.

mod harness;

use harness::{
    BIN, Netns, Outcome, PinnedNetns, TempDir, enter_test_host, iptables_table, plugin_dir,
    sha512_prefix,
};
use serde_json::{Value, json};
use std::process::{Command, Stdio};

struct Setup {
    conf: TempDir,
    cache: TempDir,
    _store: TempDir,
    bin: TempDir,
}

impl Setup {
    /// bridge with ipMasq over iptables, host-local in a store of its own.
    fn new() -> Setup {
        let s = Setup {
            conf: TempDir::new("conf"),
            cache: TempDir::new("cache"),
            _store: TempDir::new("store"),
            bin: plugin_dir(),
        };
        let text = std::fs::read_to_string("testdata/bridge.conflist").expect("testdata");
        let mut v: Value = serde_json::from_str(&text).expect("JSON");
        v["plugins"][0]["ipam"]["dataDir"] = json!(s._store.0);
        v["plugins"][0]["ipMasqBackend"] = json!("iptables");
        std::fs::write(s.conf.0.join("bridge.conflist"), v.to_string()).expect("conf");
        s
    }

    fn run(&self, args: &[&str]) -> Outcome {
        let cache = self.cache.0.to_string_lossy().into_owned();
        let child = Command::new(BIN)
            .arg("cnitool")
            .args(["--cache-dir", &cache])
            .args(args)
            .env_clear()
            .env("NETCONFPATH", &self.conf.0)
            .env("CNI_PATH", &self.bin.0)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cnitool");
        Outcome::of(child)
    }

    fn doctor(&self, args: &[&str], status: i32) -> Value {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert_eq!(out.status, status, "{out:?}");
        out.json()
    }
}

fn container_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

fn masq_chain(id: &str) -> String {
    format!("CNI-{}", sha512_prefix(&format!("bridge-net{id}"), 24))
}

/// The lines of the nat table that mention a chain (its rules and jumps).
fn lines_of(nat: &str, chain: &str) -> Vec<String> {
    nat.lines()
        .filter(|l| l.contains(chain))
        .map(str::to_string)
        .collect()
}

/// The masq findings of a doctor run.
fn masq(found: &Value) -> Vec<Value> {
    found["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "masq")
        .cloned()
        .collect()
}

#[test]
fn masq_chains_of_dead_and_ownerless_attachments_are_found_and_removed() {
    enter_test_host();
    let s = Setup::new();
    let (gone, forgotten, live) = (PinnedNetns::new(), PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for p in paths {
        s.run(&["add", "bridge-net", p]).ok();
    }
    let live_before = lines_of(&iptables_table("nat"), &masq_chain(&ids[2]));
    assert!(live_before.len() >= 3, "{live_before:?}");

    // Pod 0: its namespace is deleted without DEL. Pod 1: its cache file
    // is removed, then its namespace is deleted.
    gone.destroy();
    std::fs::remove_file(
        s.cache
            .0
            .join("results")
            .join(format!("bridge-net-{}-eth0", ids[1])),
    )
    .expect("rm cache file");
    forgotten.destroy();

    // An ownerless chain carries no time: the first run only sees it.
    assert!(masq(&s.doctor(&[], 0)).is_empty());

    let found = masq(&s.doctor(&["--min-age", "0"], 1));
    let expect = |i: usize, action: &str| {
        json!({
            "kind": "masq", "network": "bridge-net", "containerId": ids[i], "ifname": "",
            "object": format!("iptables nat {}", masq_chain(&ids[i])),
            "action": action, "fixed": false
        })
    };
    assert_eq!(
        found,
        vec![
            expect(0, "removed by the DEL of its dead attachment"),
            expect(1, "remove chain and its POSTROUTING jumps"),
        ]
    );

    let fixed = s.doctor(&["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    let nat = iptables_table("nat");
    for id in &ids[..2] {
        assert!(lines_of(&nat, &masq_chain(id)).is_empty(), "{nat}");
    }
    assert_eq!(lines_of(&nat, &masq_chain(&ids[2])), live_before);

    assert_eq!(s.doctor(&["--min-age", "0"], 0), json!({"findings": []}));
    s.run(&["del", "bridge-net", live.path()]).ok();
}
