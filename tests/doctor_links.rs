//! `cnitool doctor` on links: bandwidth's IFBs and bridge ports (host veths)
//! of attachments that are gone are listed and deleted, a live pod's are not.

mod harness;

use harness::sha512_prefix;
use harness::{Netns, Outcome, PinnedNetns, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Value, json};

const NET: &str = "links-net";

struct Setup {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    bin: TempDir,
}

impl Setup {
    /// bridge + bandwidth (both directions shaped, so every pod has an IFB).
    fn new() -> Setup {
        let s = Setup {
            conf: TempDir::new("conf"),
            cache: TempDir::new("cache"),
            store: TempDir::new("store"),
            bin: plugin_dir(),
        };
        let list = json!({"cniVersion": "1.0.0", "name": NET, "plugins": [
            {"type": "bridge", "bridge": "cni-links0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.91.0.0/24", "dataDir": s.store.0}},
            {"type": "bandwidth", "dataDir": s.store.0.join("bw"),
             "ingressRate": 8_000_000, "ingressBurst": 524288,
             "egressRate": 8_000_000, "egressBurst": 524288}]});
        std::fs::write(s.conf.0.join("links.conflist"), list.to_string()).expect("conf");
        s
    }

    fn run(&self, args: &[&str]) -> Outcome {
        harness::cnitool_in(&self.conf.0, &self.cache.0, &self.bin.0, &[], args)
    }

    fn cache_file(&self, id: &str) -> std::path::PathBuf {
        self.cache
            .0
            .join("results")
            .join(format!("{NET}-{id}-eth0"))
    }

    /// ADD; the pod's container ID, IFB and host veth.
    fn add(&self, netns: &str) -> Pod {
        let result = self.run(&["add", NET, netns]).ok();
        let ifaces = result["interfaces"].as_array().expect("interfaces");
        let host = ifaces
            .iter()
            .filter(|i| i["sandbox"].as_str().unwrap_or_default().is_empty())
            .filter_map(|i| i["name"].as_str())
            .find(|n| n.starts_with("veth"))
            .expect("host veth in the result")
            .to_string();
        let id = format!("cnitool-{}", sha512_prefix(netns, 20));
        let ifb = format!("bwp{}", sha512_prefix(&format!("{NET}{id}"), 12));
        assert!(has_link(&ifb) && has_link(&host), "{result}");
        Pod { id, ifb, host }
    }

    fn doctor(&self, args: &[&str], status: i32) -> Value {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert_eq!(out.status, status, "{out:?}");
        out.json()
    }
}

struct Pod {
    id: String,
    ifb: String,
    host: String,
}

/// The owner of a dead attachment's finding.
fn dead(p: &Pod) -> (&str, &str, &str) {
    (NET, p.id.as_str(), "eth0")
}

fn has_link(name: &str) -> bool {
    run_in(None, "ip", &["-o", "link"]).lines().any(|l| {
        l.split(": ")
            .nth(1)
            .is_some_and(|n| n.split('@').next() == Some(name))
    })
}

/// The findings of these kinds (others are covered elsewhere).
fn of_kinds(found: &Value, kinds: &[&str]) -> Vec<Value> {
    found["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| kinds.iter().any(|k| f["kind"] == *k))
        .cloned()
        .collect()
}

fn finding(kind: &str, owner: (&str, &str, &str), link: &str, action: &str) -> Value {
    json!({"kind": kind, "network": owner.0, "containerId": owner.1, "ifname": owner.2,
           "object": format!("link {link}"), "action": action, "fixed": false})
}

#[test]
fn doctor_lists_and_deletes_ifbs_and_host_veths_of_gone_attachments() {
    enter_test_host();
    let s = Setup::new();
    // gone: the runtime deleted its pinned netns without DEL: the veth pair
    // went with the namespace, the IFB stays. forgotten: its cache file was
    // lost, then the namespace went. The leaked pods' namespaces were unpinned
    // too, but a descriptor (as a daemon that leaked one, or a socket made in
    // the namespace) keeps each alive: no task is in it and no bind mount
    // holds it, so their veths stay on the bridge with nobody behind them;
    // one lost its cache file as well.
    let (gone, forgotten, leaked, leaked_dead) = (
        PinnedNetns::new(),
        PinnedNetns::new(),
        PinnedNetns::new(),
        PinnedNetns::new(),
    );
    let live = Netns::new();
    let pods: Vec<Pod> = [
        gone.path(),
        forgotten.path(),
        leaked.path(),
        leaked_dead.path(),
        live.path(),
    ]
    .iter()
    .map(|p| s.add(p))
    .collect();
    let held: Vec<std::fs::File> = [leaked.path(), leaked_dead.path()]
        .iter()
        .map(|p| std::fs::File::open(p).expect("hold netns"))
        .collect();
    std::fs::remove_file(s.cache_file(&pods[1].id)).expect("rm cache file");
    std::fs::remove_file(s.cache_file(&pods[2].id)).expect("rm cache file");
    gone.destroy();
    forgotten.destroy();
    leaked.destroy();
    leaked_dead.destroy();
    // A namespace's links go with it a little after its last reference.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while [&pods[0], &pods[1]].iter().any(|p| has_link(&p.host)) {
        assert!(
            std::time::Instant::now() < deadline,
            "veths outlive their netns"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(has_link(&pods[0].ifb) && has_link(&pods[1].ifb));
    assert!(has_link(&pods[2].host) && has_link(&pods[3].host));

    // Entries are fresh and ownerless links only just seen: nothing yet.
    assert_eq!(s.doctor(&[], 0), json!({"findings": []}));

    let found = s.doctor(&["--min-age", "0"], 1);
    let (by_del, delete) = ("removed by the DEL of its dead attachment", "delete link");
    assert_eq!(
        of_kinds(&found, &["veth", "ifb"]),
        vec![
            finding("veth", ("", "", ""), &pods[2].host, delete),
            finding("veth", dead(&pods[3]), &pods[3].host, by_del),
            finding("ifb", dead(&pods[0]), &pods[0].ifb, by_del),
            // Our bandwidth names the owner in the IFB's alias.
            finding("ifb", (NET, &pods[1].id, ""), &pods[1].ifb, delete),
            finding("ifb", (NET, &pods[2].id, ""), &pods[2].ifb, delete),
            finding("ifb", dead(&pods[3]), &pods[3].ifb, by_del),
        ]
    );
    let caches = of_kinds(&found, &["cache"]);
    assert_eq!(caches.len(), 2, "{found}");

    let fixed = s.doctor(&["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    for p in &pods[..4] {
        assert!(!has_link(&p.ifb) && !has_link(&p.host), "{}", p.id);
    }
    // The live pod: untouched and working.
    assert!(has_link(&pods[4].ifb) && has_link(&pods[4].host));
    s.run(&["check", NET, live.path()]).ok();
    drop(held);

    assert_eq!(s.doctor(&["--min-age", "0"], 0), json!({"findings": []}));
    s.run(&["del", NET, live.path()]).ok();
    assert!(!has_link(&pods[4].ifb));
}

#[test]
fn an_ifb_a_host_link_redirects_to_is_kept() {
    enter_test_host();
    let s = Setup::new();
    // The cache file was lost but the pod lives: its veth's ingress filter
    // still feeds the IFB, and its namespace is a task's.
    let pod_ns = Netns::new();
    let pod = s.add(pod_ns.path());
    std::fs::remove_file(s.cache_file(&pod.id)).expect("rm cache file");
    let found = s.doctor(&["--min-age", "0"], 0);
    assert_eq!(found, json!({"findings": []}));
    assert!(has_link(&pod.ifb) && has_link(&pod.host));
}
