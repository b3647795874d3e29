//! `cnitool doctor` and netfilter state: the ipMasq chains, portmap chains
//! and rules (iptables, nftables), firewall rules and MAC spoof check chains
//! of dead and ownerless attachments are listed and removed, a live pod's
//! are untouched.

mod harness;

use harness::{
    BIN, Netns, Outcome, PinnedNetns, Runtime, TempDir, enter_test_host, first_ip, iptables_table,
    nft_ruleset, plugin_dir, run_in, sha512_prefix,
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

/// bridge (ipMasq, macspoofchk) + portmap + firewall, all over iptables, as `pf-net`.
fn portmap_firewall() -> Runtime {
    let rt = Runtime::new("pf");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "pf-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-pf0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": "iptables", "macspoofchk": true,
             "ipam": {"type": "host-local", "subnet": "10.42.0.0/24", "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            // Records in the test's own dirs: other tests' records in the
            // default ones are not this node's business.
            {"type": "portmap", "capabilities": {"portMappings": true}, "backend": "iptables",
             "dataDir": "@STORE@/portmap"},
            {"type": "firewall", "backend": "iptables", "dataDir": "@STORE@/firewall"}
        ]
    });
    rt.write_list("pf.conflist", &list);
    rt
}

/// The findings of `kinds` in a doctor run.
fn of_kinds(found: &Value, kinds: &[&str]) -> Vec<Value> {
    found["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| kinds.iter().any(|k| f["kind"] == *k))
        .cloned()
        .collect()
}

/// The lines of the nat and filter tables that mention any of `needles`.
fn traces(needles: &[String]) -> Vec<String> {
    let tables = format!("{}\n{}", iptables_table("nat"), iptables_table("filter"));
    tables
        .lines()
        .filter(|l| needles.iter().any(|n| l.contains(n.as_str())))
        .map(str::to_string)
        .collect()
}

#[test]
fn portmap_firewall_and_macspoofchk_state_of_dead_and_ownerless_attachments_is_removed() {
    enter_test_host();
    let rt = portmap_firewall();
    let doctor = |args: &[&str], status: i32| {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = rt.run(&all, &json!({}));
        assert_eq!(out.status, status, "{out:?}");
        out.json()
    };
    let (gone, forgotten, live) = (PinnedNetns::new(), PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    let mut ips = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let caps = json!({"portMappings": [
            {"hostPort": 8091 + i, "containerPort": 80, "protocol": "tcp"},
            {"hostPort": 5391 + i, "containerPort": 53, "protocol": "udp"}
        ]});
        ips.push(first_ip(&rt.run(&["add", "pf-net", p], &caps).ok()));
    }
    let dn = |id: &str| format!("CNI-DN-{}", sha512_prefix(&format!("pf-net{id}"), 21));
    let marks = |i: usize| {
        vec![
            ids[i].clone(),
            dn(&ids[i]),
            format!("{}/", ips[i]),
            format!("{}:", ips[i]),
        ]
    };
    let live_before = traces(&marks(2));
    assert!(live_before.len() >= 6, "{live_before:?}");
    let spoof = |i: usize| -> Vec<String> {
        nft_ruleset()
            .lines()
            .filter(|l| l.contains(&ids[i]))
            .map(|l| l.trim().to_string())
            .collect()
    };
    let live_spoof = spoof(2);
    assert!(live_spoof.len() >= 4, "{live_spoof:?}");
    for i in 0..2 {
        assert!(!traces(&marks(i)).is_empty());
        assert!(!spoof(i).is_empty());
    }

    // Pod 0: its namespace is deleted without DEL. Pod 1: its cache file
    // is removed, then its namespace is deleted.
    gone.destroy();
    std::fs::remove_file(
        rt.cache
            .0
            .join("results")
            .join(format!("pf-net-{}-eth0", ids[1])),
    )
    .expect("rm cache file");
    forgotten.destroy();
    // The kernel removes a gone namespace's veths a moment later; until then
    // their MAC spoof check is kept.
    for _ in 0..200 {
        let ports = run_in(None, "ip", &["-o", "link", "show", "master", "cni-pf0"]);
        if ports.lines().count() == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }

    // Ownerless chains and rules carry no time: the first run only sees them.
    let kinds = ["portmap", "firewall", "macspoofchk"];
    assert_eq!(of_kinds(&doctor(&[], 0), &kinds), Vec::<Value>::new());

    let found = of_kinds(&doctor(&["--min-age", "0"], 1), &kinds);
    let by_del = "removed by the DEL of its dead attachment";
    let spoof_chain = |i: usize| format!("nft bridge nat cni-br-iface-{}-eth0", ids[i]);
    let rule = |i: usize| format!("iptables filter CNI-FORWARD {}/32", ips[i]);
    let finding = |kind: &str, owner: Option<(usize, &str)>, object: String, action: &str| {
        let (id, ifname) = owner.map_or((String::new(), ""), |(i, f)| (ids[i].clone(), f));
        let network = if owner.is_some() || kind == "portmap" {
            "pf-net"
        } else {
            ""
        };
        json!({
            "kind": kind, "network": network, "containerId": id, "ifname": ifname,
            "object": object, "action": action, "fixed": false
        })
    };
    assert_eq!(
        found,
        vec![
            finding(
                "portmap",
                Some((0, "")),
                format!("iptables nat {}", dn(&ids[0])),
                by_del
            ),
            finding(
                "portmap",
                Some((1, "")),
                format!("iptables nat {}", dn(&ids[1])),
                "remove chain and its CNI-HOSTPORT-DNAT jumps"
            ),
            finding("firewall", Some((0, "eth0")), rule(0), by_del),
            finding(
                "firewall",
                None,
                rule(1),
                "remove the address's accept rules"
            ),
            finding("macspoofchk", Some((0, "eth0")), spoof_chain(0), by_del),
            finding(
                "macspoofchk",
                None,
                spoof_chain(1),
                "remove chains and their PREROUTING jump"
            ),
        ]
    );

    let fixed = doctor(&["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    for i in 0..2 {
        assert_eq!(traces(&marks(i)), Vec::<String>::new());
        assert_eq!(spoof(i), Vec::<String>::new());
    }
    assert_eq!(traces(&marks(2)), live_before);
    assert_eq!(spoof(2), live_spoof);

    assert_eq!(doctor(&["--min-age", "0"], 0), json!({"findings": []}));
    rt.run(&["del", "pf-net", live.path()], &json!({})).ok();
}

#[test]
fn portmap_nftables_rules_of_dead_and_ownerless_attachments_are_removed() {
    enter_test_host();
    let rt = Runtime::new("pn");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "pn-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-pn0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.43.0.0/24", "dataDir": "@STORE@"}},
            {"type": "portmap", "capabilities": {"portMappings": true}, "backend": "nftables",
             "dataDir": "@STORE@/portmap"}
        ]
    });
    rt.write_list("pn.conflist", &list);
    let doctor = |args: &[&str], status: i32| {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = rt.run(&all, &json!({}));
        assert_eq!(out.status, status, "{out:?}");
        out.json()
    };
    let (gone, forgotten, live) = (PinnedNetns::new(), PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for (i, p) in paths.iter().enumerate() {
        let caps = json!({"portMappings": [
            {"hostPort": 8191 + i, "containerPort": 80, "protocol": "tcp"},
            {"hostPort": 5491 + i, "containerPort": 53, "protocol": "udp"}
        ]});
        rt.run(&["add", "pn-net", p], &caps).ok();
    }
    let rules = |i: usize| -> Vec<String> {
        nft_ruleset()
            .lines()
            .filter(|l| l.contains(&ids[i]))
            .map(|l| l.trim().to_string())
            .collect()
    };
    let live_before = rules(2);
    assert!(live_before.len() >= 2, "{live_before:?}");
    gone.destroy();
    std::fs::remove_file(
        rt.cache
            .0
            .join("results")
            .join(format!("pn-net-{}-eth0", ids[1])),
    )
    .expect("rm cache file");
    forgotten.destroy();

    assert!(of_kinds(&doctor(&[], 0), &["portmap"]).is_empty());
    let found = of_kinds(&doctor(&["--min-age", "0"], 1), &["portmap"]);
    let finding = |i: usize, network: &str, action: &str| {
        json!({
            "kind": "portmap", "network": network, "containerId": ids[i], "ifname": "",
            "object": format!("nft ip cni_hostport {}", ids[i]),
            "action": action, "fixed": false
        })
    };
    assert_eq!(
        found,
        vec![
            finding(0, "pn-net", "removed by the DEL of its dead attachment"),
            finding(1, "", "remove the container's rules"),
        ]
    );

    let fixed = doctor(&["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    assert_eq!(rules(0), Vec::<String>::new());
    assert_eq!(rules(1), Vec::<String>::new());
    assert_eq!(rules(2), live_before);
    assert_eq!(doctor(&["--min-age", "0"], 0), json!({"findings": []}));
    rt.run(&["del", "pn-net", live.path()], &json!({})).ok();
}
