//! firewall end to end (iptables backend): forwarding allowed for the
//! container's addresses under a DROP policy, CHECK, DEL restoring the filter
//! table, same-bridge isolation, refused backends.

mod harness;

use harness::{
    BIN, Netns, Outcome, TempDir, enter_test_host, plugin_dir, run_in, tcp_fetch, tcp_server,
};
use serde_json::{Value, json};
use std::process::{Command, Stdio};

fn filter() -> String {
    run_in(None, "iptables-save", &["-t", "filter"])
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

struct Setup {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    bin: TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            conf: TempDir::new("fw-conf"),
            cache: TempDir::new("fw-cache"),
            store: TempDir::new("fw-store"),
            bin: plugin_dir(),
        }
    }

    fn network(&self, name: &str, bridge: &str, subnet: &str, firewall: Value) {
        let mut fw = json!({"type": "firewall"});
        if let (Some(f), Some(extra)) = (fw.as_object_mut(), firewall.as_object()) {
            for (k, v) in extra {
                f.insert(k.clone(), v.clone());
            }
        }
        let list = json!({
            "cniVersion": "1.0.0", "name": name,
            "plugins": [
                {"type": "bridge", "bridge": bridge, "isGateway": true,
                 "ipam": {"type": "host-local", "subnet": subnet, "dataDir": self.store.0,
                          "routes": [{"dst": "0.0.0.0/0"}]}},
                fw
            ]
        });
        std::fs::write(
            self.conf.0.join(format!("{name}.conflist")),
            list.to_string(),
        )
        .expect("conf");
    }

    fn run(&self, args: &[&str]) -> Outcome {
        let child = Command::new(BIN)
            .arg("cnitool")
            .arg("--cache-dir")
            .arg(&self.cache.0)
            .args(args)
            .env_clear()
            .env("NETCONFPATH", &self.conf.0)
            .env("CNI_PATH", &self.bin.0)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cnitool");
        Outcome::of(child)
    }
}

/// A server namespace at 192.0.2.2 behind the host's 192.0.2.1, serving TCP 80.
fn server() -> Netns {
    let s = Netns::new();
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "to-srv",
            "type",
            "veth",
            "peer",
            "name",
            "s0",
            "netns",
            s.path(),
        ],
    );
    run_in(
        None,
        "ip",
        &["addr", "add", "192.0.2.1/24", "dev", "to-srv"],
    );
    run_in(None, "ip", &["link", "set", "to-srv", "up"]);
    s.sh("ip", &["addr", "add", "192.0.2.2/24", "dev", "s0"]);
    s.sh("ip", &["link", "set", "s0", "up"]);
    s.sh("ip", &["route", "add", "default", "via", "192.0.2.1"]);
    tcp_server(s.path(), 80, "outside");
    s
}

#[test]
fn forwarding_is_opened_for_the_container_and_del_restores_the_table() {
    enter_test_host();
    let _srv = server();
    run_in(None, "iptables", &["-P", "FORWARD", "DROP"]);
    let s = Setup::new();
    s.network("fw-net", "cni-fw0", "10.50.0.0/24", json!({}));
    let before = filter();
    let ns = Netns::new();
    let out = s.run(&["add", "fw-net", ns.path()]).ok();
    let ip = out["ips"][0]["address"]
        .as_str()
        .expect("ip")
        .split('/')
        .next()
        .expect("ip")
        .to_string();
    assert_eq!(
        tcp_fetch(Some(ns.path()), "192.0.2.2:80").as_deref(),
        Some("outside")
    );
    let rules = filter();
    for expected in [
        "-A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD".to_string(),
        "-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN"
            .into(),
        format!("-A CNI-FORWARD -d {ip}/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"),
        format!("-A CNI-FORWARD -s {ip}/32 -j ACCEPT"),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    s.run(&["check", "fw-net", ns.path()]).ok();
    run_in(
        None,
        "iptables",
        &[
            "-D",
            "CNI-FORWARD",
            "-s",
            &format!("{ip}/32"),
            "-j",
            "ACCEPT",
        ],
    );
    assert_eq!(s.run(&["check", "fw-net", ns.path()]).status, 1);
    s.run(&["del", "fw-net", ns.path()]).ok();
    assert_eq!(filter(), before, "DEL leaves the filter table as it was");
}

#[test]
fn same_bridge_policy_isolates_bridges() {
    enter_test_host();
    let s = Setup::new();
    s.network(
        "net-a",
        "cni-fwa",
        "10.51.0.0/24",
        json!({"ingressPolicy": "same-bridge"}),
    );
    s.network(
        "net-b",
        "cni-fwb",
        "10.52.0.0/24",
        json!({"ingressPolicy": "same-bridge"}),
    );
    let (a1, a2, b1) = (Netns::new(), Netns::new(), Netns::new());
    s.run(&["add", "net-a", a1.path()]).ok();
    s.run(&["add", "net-a", a2.path()]).ok();
    s.run(&["add", "net-b", b1.path()]).ok();
    tcp_server(a2.path(), 80, "a2");
    tcp_server(b1.path(), 80, "b1");
    assert_eq!(
        tcp_fetch(Some(a1.path()), "10.51.0.3:80").as_deref(),
        Some("a2"),
        "same bridge"
    );
    assert_eq!(
        tcp_fetch(Some(a1.path()), "10.52.0.2:80"),
        None,
        "other bridge is isolated"
    );
    let rules = filter();
    for expected in [
        "-A CNI-ISOLATION-STAGE-1 -i cni-fwa ! -o cni-fwa -m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge)\" -j CNI-ISOLATION-STAGE-2",
        "-A CNI-ISOLATION-STAGE-2 -o cni-fwa -m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge)\" -j DROP",
        "-A CNI-ISOLATION-STAGE-1 -j RETURN",
    ] {
        assert!(rules.contains(expected), "missing {expected}\n{rules}");
    }
    assert_eq!(
        rules.matches("-A CNI-ISOLATION-STAGE-1 -j RETURN").count(),
        1,
        "{rules}"
    );
}

#[test]
fn unsupported_backends_are_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let prev = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.50.0.5/24"}]});
    for (extra, code) in [
        (json!({"backend": "firewalld"}), 7),
        (json!({"backend": "pf"}), 7),
        (json!({"ingressPolicy": "closed"}), 7),
        (json!({"iptablesAdminChainName": "bad name"}), 7),
    ] {
        let mut c =
            json!({"cniVersion": "1.0.0", "name": "fw", "type": "firewall", "prevResult": prev});
        if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        harness::Call::new("firewall", "ADD", "/run/netns/fw-none", &c.to_string())
            .path(&bin)
            .run()
            .err(code);
    }
}

#[test]
fn nftables_backend_accepts_the_container_and_del_restores_the_ruleset() {
    enter_test_host();
    let _srv = server();
    let s = Setup::new();
    s.network(
        "fw-nft",
        "cni-fwn0",
        "10.53.0.0/24",
        json!({"backend": "nftables"}),
    );
    let ruleset = || run_in(None, "nft", &["list", "ruleset"]);
    let before = ruleset();
    let ns = Netns::new();
    let out = s.run(&["add", "fw-nft", ns.path()]).ok();
    let ip = out["ips"][0]["address"]
        .as_str()
        .expect("ip")
        .split('/')
        .next()
        .expect("ip")
        .to_string();
    assert_eq!(
        tcp_fetch(Some(ns.path()), "192.0.2.2:80").as_deref(),
        Some("outside")
    );
    let rules = ruleset();
    for expected in [
        "table inet cni_firewall {".to_string(),
        "jump admin".into(),
        format!("ip daddr {ip} ct state established,related accept comment"),
        format!("ip saddr {ip} accept comment"),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    s.run(&["check", "fw-nft", ns.path()]).ok();
    s.run(&["del", "fw-nft", ns.path()]).ok();
    assert_eq!(ruleset(), before);
}
