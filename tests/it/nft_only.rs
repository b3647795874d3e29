//! Hosts where iptables is installed but cannot be used: a plugin whose
//! backend is not set takes nftables instead of failing (bridge ipMasq and
//! portmap here), and DEL leaves nothing in either.

use crate::harness;

use harness::{Netns, Outcome, TempDir, enter_test_host, nft_ruleset, plugin_dir};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

struct Node {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    bin: TempDir,
    path: String,
}

impl Node {
    fn new(path: String) -> Node {
        let n = Node {
            conf: TempDir::new("nfto-conf"),
            cache: TempDir::new("nfto-cache"),
            store: TempDir::new("nfto-store"),
            bin: plugin_dir(),
            path,
        };
        let list = json!({"cniVersion": "1.0.0", "name": "nfto-net", "plugins": [
            {"type": "bridge", "bridge": "nfto0", "isGateway": true, "ipMasq": true,
             "ipam": {"type": "host-local", "dataDir": n.store.0,
                      "ranges": [[{"subnet": "10.93.0.0/24"}]]}},
            {"type": "portmap", "capabilities": {"portMappings": true},
             "dataDir": n.store.0.join("portmap")}
        ]});
        std::fs::write(n.conf.0.join("nfto.conflist"), list.to_string()).expect("conf");
        n
    }

    fn run(&self, verb: &str, ns: &Netns) -> Outcome {
        let caps = json!({"portMappings": [
            {"hostPort": 8093, "containerPort": 80, "protocol": "tcp"}]})
        .to_string();
        harness::cnitool_in(
            &self.conf.0,
            &self.cache.0,
            &self.bin.0,
            &[("PATH", &self.path), ("CAP_ARGS", &caps)],
            &[verb, "nfto-net", ns.path()],
        )
    }
}

/// A PATH whose iptables tools fail as iptables-legacy does on a kernel
/// without its tables.
fn broken_iptables(dir: &Path) -> String {
    for tool in ["iptables", "ip6tables"] {
        for what in ["save", "restore"] {
            let file = dir.join(format!("{tool}-{what}"));
            std::fs::write(
                &file,
                format!(
                    "#!/bin/sh\necho \"{tool} v1.8.9 (legacy): can't initialize {tool} table \
                     \\`nat': Table does not exist (do you need to insmod?)\" >&2\nexit 3\n"
                ),
            )
            .expect("tool");
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("mode");
        }
    }
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn a_host_whose_iptables_cannot_be_used_gets_nftables_rules() {
    enter_test_host();
    let tools = TempDir::new("nfto-tools");
    let node = Node::new(broken_iptables(&tools.0));
    let pod = Netns::new();
    let out = node.run("add", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let rules = nft_ruleset();
    assert!(rules.contains("cni_plugins_masquerade"), "{rules}");
    assert!(rules.contains("cni_hostport"), "{rules}");
    assert!(rules.contains("8093"), "{rules}");
    let out = node.run("check", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let out = node.run("del", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let rules = nft_ruleset();
    assert!(
        !rules.contains("8093") && !rules.contains("10.93.0."),
        "{rules}"
    );
}

#[test]
fn a_nat_table_iptables_nft_calls_incompatible_gets_working_rules() {
    enter_test_host();
    // Made by another nftables user: iptables-nft cannot list it.
    let table = "table ip nat {\n set s { type ipv4_addr; }\n chain POSTROUTING {\n  \
                 type nat hook postrouting priority 100;\n  ip saddr @s masquerade\n }\n}\n";
    let mut nft = std::process::Command::new("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft");
    std::io::Write::write_all(&mut nft.stdin.take().expect("stdin"), table.as_bytes())
        .expect("write");
    assert!(nft.wait().expect("nft").success());
    let node = Node::new(std::env::var("PATH").unwrap_or_default());
    let pod = Netns::new();
    let out = node.run("add", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let rules = nft_ruleset();
    assert!(rules.contains("cni_plugins_masquerade"), "{rules}");
    assert!(rules.contains("cni_hostport"), "{rules}");
    let out = node.run("check", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let out = node.run("del", &pod);
    assert_eq!(out.status, 0, "{out:?}");
    let rules = nft_ruleset();
    assert!(
        !rules.contains("8093") && !rules.contains("10.93.0."),
        "{rules}"
    );
    assert!(rules.contains("ip saddr @s masquerade"), "{rules}");
    // The doctor inspects such a node (the foreign table is nobody's leak).
    let out = harness::cnitool_in(
        &node.conf.0,
        &node.cache.0,
        &node.bin.0,
        &[],
        &["doctor", "--min-age", "0"],
    );
    assert_eq!(out.status, 0, "{out:?}");
}
