//! `cnitool doctor`'s `dhcp` kind: leases the dhcp daemon keeps for dead or
//! forgotten attachments are listed and released (through the daemon, or as
//! files while it is stopped); a live attachment's lease and fresh ones stay.
//! Each test has its own dnsmasq LAN and daemon (tests/harness/dhcp_lan.rs).

#[path = "harness/dhcp_lan.rs"]
mod dhcp_lan;
mod harness;

use dhcp_lan::{Daemon, Lan, wait_for};
use harness::{Netns, Outcome, PinnedNetns, TempDir, enter_test_host, plugin_dir, sha512_prefix};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const NET: &str = "dhcp-net";
const BY_DEL: &str = "removed by the DEL of its dead attachment";
const RELEASE: &str = "release the lease through the daemon";

struct Setup {
    conf: TempDir,
    cache: TempDir,
    bin: TempDir,
    dir: TempDir,
    lan: Lan,
    daemon: Daemon,
}

impl Setup {
    fn new() -> Setup {
        enter_test_host();
        let dir = TempDir::new("dhcp");
        let lan = Lan::new(&dir, true, "1h", &[]);
        let daemon = Daemon::start(&dir, &[]);
        let conf = TempDir::new("conf");
        let list = json!({
            "cniVersion": "1.0.0",
            "name": NET,
            "plugins": [{
                "type": "macvlan",
                "master": "lan-m",
                "ipam": {"type": "dhcp", "daemonSocketPath": daemon.socket},
            }],
        });
        std::fs::write(conf.0.join("dhcp.conflist"), list.to_string()).expect("conf");
        Setup {
            conf,
            cache: TempDir::new("cache"),
            bin: plugin_dir(),
            dir,
            lan,
            daemon,
        }
    }

    fn run(&self, args: &[&str]) -> Outcome {
        harness::cnitool_in(&self.conf.0, &self.cache.0, &self.bin.0, &[], args)
    }

    /// ADDs an attachment in `netns`; its container id and address.
    fn add(&self, netns: &str) -> (String, String) {
        let result = self.run(&["add", NET, netns]).ok();
        (container_id(netns), harness::first_ip(&result))
    }

    fn cache_file(&self, id: &str) -> PathBuf {
        self.cache
            .0
            .join("results")
            .join(format!("{NET}-{id}-eth0"))
    }

    /// The daemon's lease files by container id: the path the doctor names
    /// (beside the socket) and the address.
    fn leases(&self) -> BTreeMap<String, (String, String)> {
        let leases = self.dir.0.join("dhcp.sock.leases");
        let mut out = BTreeMap::new();
        for e in std::fs::read_dir(&leases).expect("lease dir").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".json") {
                continue;
            }
            let v: Value = serde_json::from_str(&std::fs::read_to_string(e.path()).expect("lease"))
                .expect("lease JSON");
            let id = v["attachment"]["containerID"]
                .as_str()
                .expect("id")
                .to_string();
            let ip = v["lease"]["address"].as_str().expect("address").to_string();
            out.insert(id, (leases.join(name).to_string_lossy().into_owned(), ip));
        }
        out
    }

    /// `doctor --json ARGS` with the expected exit status: its dhcp findings.
    fn doctor(&self, args: &[&str], status: i32) -> Vec<Value> {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert_eq!(out.status, status, "{out:?}");
        out.json()["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["kind"] == "dhcp")
            .cloned()
            .collect()
    }

    fn finding(&self, id: &str, action: &str, fixed: bool) -> Value {
        let (path, ip) = &self.leases_before(id);
        json!({
            "kind": "dhcp", "network": NET, "containerId": id, "ifname": "eth0",
            "object": format!("{path} ({ip})"), "action": action, "fixed": fixed,
        })
    }

    fn leases_before(&self, id: &str) -> (String, String) {
        self.leases().get(id).cloned().expect("a lease file")
    }
}

fn container_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

#[test]
fn a_dead_attachments_lease_is_released_and_a_live_ones_kept() {
    let s = Setup::new();
    let (gone, live) = (PinnedNetns::new(), Netns::new());
    let (gone_id, _) = s.add(gone.path());
    let (live_id, live_ip) = s.add(live.path());
    assert_eq!(s.leases().len(), 2);
    // The runtime crashed: the namespace is gone, no DEL ran.
    gone.destroy();
    let expected = s.finding(&gone_id, BY_DEL, false);
    let gone_file = expected["object"].as_str().expect("object").to_string();
    assert_eq!(s.doctor(&["--min-age", "0"], 1), vec![expected.clone()]);

    let mut fixed = expected;
    fixed["fixed"] = json!(true);
    assert_eq!(s.doctor(&["--fix", "--min-age", "0"], 0), vec![fixed]);
    let left = s.leases();
    assert!(!left.contains_key(&gone_id), "{gone_file}: {left:?}");
    assert!(!s.cache_file(&gone_id).exists());
    // The live attachment keeps its lease, with dnsmasq too.
    assert_eq!(left.get(&live_id).map(|l| &l.1), Some(&live_ip));
    assert!(s.lan.lease_of(&live_ip).is_some());
    s.run(&["check", NET, live.path()]).ok();
    assert_eq!(s.doctor(&["--min-age", "0"], 0), Vec::<Value>::new());
    s.run(&["del", NET, live.path()]).ok();
}

#[test]
fn a_forgotten_lease_is_released_by_the_daemon_or_removed_while_it_is_stopped() {
    let mut s = Setup::new();
    let live = Netns::new();
    let (live_id, live_ip) = s.add(live.path());
    // A runtime lost the cache file, then the pod gave its address up (its
    // namespace stays, so the daemon can still send DHCPRELEASE).
    let forgotten = Netns::new();
    let (id1, ip1) = s.add(forgotten.path());
    std::fs::remove_file(s.cache_file(&id1)).expect("rm cache file");
    forgotten.sh("ip", &["addr", "flush", "dev", "eth0"]);
    assert!(s.lan.lease_of(&ip1).is_some());
    // Fresh: left alone at the default --min-age.
    assert_eq!(s.doctor(&[], 0), Vec::<Value>::new());
    let expected = s.finding(&id1, RELEASE, false);
    assert_eq!(s.doctor(&["--min-age", "0"], 1), vec![expected.clone()]);
    let mut fixed = expected;
    fixed["fixed"] = json!(true);
    assert_eq!(s.doctor(&["--fix", "--min-age", "0"], 0), vec![fixed]);
    assert!(!s.leases().contains_key(&id1));
    assert!(
        s.daemon
            .log()
            .contains(&format!("{id1}/{NET}/eth0: released {ip1}")),
        "{}",
        s.daemon.log()
    );
    // dnsmasq got the DHCPRELEASE and dropped the lease.
    wait_for("dnsmasq to drop the lease", Duration::from_secs(10), || {
        s.lan.lease_of(&ip1).is_none()
    });
    drop(forgotten);
    assert!(s.leases().contains_key(&live_id));
    assert_eq!(s.doctor(&["--min-age", "0"], 0), Vec::<Value>::new());

    // The same with the daemon stopped: the file goes (a daemon starting
    // would take it up and renew it for ever).
    let forgotten = Netns::new();
    let (id2, _) = s.add(forgotten.path());
    std::fs::remove_file(s.cache_file(&id2)).expect("rm cache file");
    drop(forgotten);
    s.daemon.signal(Signal::SIGKILL);
    let fixed = s.finding(&id2, RELEASE, true);
    assert_eq!(s.doctor(&["--fix", "--min-age", "0"], 0), vec![fixed]);
    assert!(!s.leases().contains_key(&id2));
    s.daemon.restart();
    assert!(s.leases().contains_key(&live_id));
    s.run(&["check", NET, live.path()]).ok();
    assert_eq!(s.doctor(&["--min-age", "0"], 0), Vec::<Value>::new());
    assert!(s.lan.lease_of(&live_ip).is_some());
    s.run(&["del", NET, live.path()]).ok();
}
