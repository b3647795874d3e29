//! ipMasq for bridge and ptp: the reference's chain, rules and comments; traffic
//! leaves masqueraded; DEL (also with the netns gone, also for rules written by
//! the Go plugins) leaves the nat table as it was.

use crate::harness;

use harness::{
    Call, Netns, Outcome, TempDir, enter_test_host, iptables_table, plugin_dir, run_in,
    sha512_prefix, veth_into,
};
use serde_json::{Value, json};

fn nat() -> String {
    iptables_table("nat")
}

fn conf(plugin: &str, store: &TempDir) -> Value {
    json!({
        "cniVersion": "1.0.0", "name": "masq-net", "type": plugin,
        "bridge": "cni-masq", "isGateway": true, "ipMasq": true,
        "ipam": {"type": "host-local", "subnet": "10.31.0.0/24", "dataDir": store.0,
                 "routes": [{"dst": "0.0.0.0/0"}]}
    })
}

fn call(plugin: &str, cmd: &str, ns: &str, id: &str, c: &Value, bin: &TempDir) -> Call {
    Call::new(plugin, cmd, ns, &c.to_string())
        .set("CNI_CONTAINERID", id)
        .path(bin)
}

/// An "outside" namespace on 192.0.2.0/24 with no route back to the containers:
/// only masqueraded traffic gets answers.
fn outside() -> Netns {
    let out = Netns::new();
    veth_into(&out, "to-out", "out0");
    run_in(
        None,
        "ip",
        &["addr", "add", "192.0.2.1/24", "dev", "to-out"],
    );
    run_in(None, "ip", &["link", "set", "to-out", "up"]);
    out.sh("ip", &["addr", "add", "192.0.2.2/24", "dev", "out0"]);
    out.sh("ip", &["link", "set", "out0", "up"]);
    out
}

fn pings(from: &Netns, to: &str) -> bool {
    std::process::Command::new("nsenter")
        .args([&format!("--net={}", from.path()), "ping", "-c1", "-W2", to])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn bridge_and_ptp_masquerade_with_the_reference_rules_and_del_restores_the_table() {
    enter_test_host();
    let _out = outside();
    let (bin, store) = (plugin_dir(), TempDir::new("masq"));
    let before = nat();
    for plugin in ["bridge", "ptp"] {
        let c = conf(plugin, &store);
        let ns = Netns::new();
        let id = format!("ctr-{plugin}");
        let added = call(plugin, "ADD", ns.path(), &id, &c, &bin).run().ok();
        let ip = added["ips"][0]["address"].as_str().expect("ip").to_string();
        let host_ip = ip.split('/').next().expect("ip");
        let chain = format!("CNI-{}", sha512_prefix(&format!("masq-net{id}"), 24));
        let comment = format!("--comment \"name: \\\"masq-net\\\" id: \\\"{id}\\\"\"");
        let rules = nat();
        assert!(rules.contains(&format!(":{chain} - [0:0]")), "{rules}");
        assert!(
            rules.contains(&format!(
                "-A POSTROUTING -s {host_ip}/32 -m comment {comment} -j {chain}"
            )),
            "{rules}"
        );
        let subnet = "10.31.0.0/24";
        assert!(
            rules.contains(&format!(
                "-A {chain} -d {subnet} -m comment {comment} -j ACCEPT"
            )),
            "{rules}"
        );
        assert!(
            rules.contains(&format!(
                "-A {chain} ! -d 224.0.0.0/4 -m comment {comment} -j MASQUERADE"
            )),
            "{rules}"
        );
        assert!(
            pings(&ns, "192.0.2.2"),
            "{plugin}: masqueraded traffic gets answers"
        );
        call(plugin, "DEL", ns.path(), &id, &c, &bin).run().ok();
        assert_eq!(nat(), before, "{plugin}: DEL restores the nat table");
        assert!(!pings(&ns, "192.0.2.2"));
    }
}

/// ipMasq's ADD (iptables) writes only the container's own chain and its
/// jumps from the built-in POSTROUTING, so it takes no node-wide lock (the
/// reference takes none) and parallel ADDs do not queue behind each other's
/// restore: with the netfilter lock held elsewhere, twenty ADDs at once all
/// complete with their rules; their DELs then leave the nat table as it was.
#[test]
fn ipmasq_adds_take_no_node_wide_lock_and_run_in_parallel() {
    use std::os::unix::fs::OpenOptionsExt;
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("masq-par"));
    let c = conf("bridge", &store);
    let before = nat();
    let namespaces: Vec<Netns> = (0..20).map(|_| Netns::new()).collect();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open("/run/cni-multi.netfilter.lock")
        .expect("lock file");
    let held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("flock");
    let id = |i: usize| format!("par-{i}");
    // Every call started before the first is waited for.
    let all_at_once = |verb: &str| -> Vec<Value> {
        let children: Vec<_> = namespaces
            .iter()
            .enumerate()
            .map(|(i, ns)| call("bridge", verb, ns.path(), &id(i), &c, &bin).spawn())
            .collect();
        children.into_iter().map(|c| Outcome::of(c).ok()).collect()
    };
    let added = all_at_once("ADD");
    drop(held);
    let rules = nat();
    for (i, result) in added.iter().enumerate() {
        let ip = result["ips"][0]["address"].as_str().expect("ip");
        let host = ip.split('/').next().expect("ip");
        let chain = format!("CNI-{}", sha512_prefix(&format!("masq-net{}", id(i)), 24));
        assert!(
            rules
                .lines()
                .any(|l| l.starts_with(&format!("-A POSTROUTING -s {host}/32 "))
                    && l.ends_with(&format!("-j {chain}"))),
            "{i}: {rules}"
        );
        assert!(
            rules
                .lines()
                .any(|l| l.starts_with(&format!("-A {chain} ! -d 224.0.0.0/4 "))
                    && l.ends_with("-j MASQUERADE")),
            "{i}: {rules}"
        );
    }
    all_at_once("DEL");
    assert_eq!(nat(), before);
}

#[test]
fn del_with_the_netns_gone_still_removes_the_rules_and_cycles_leave_nothing() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("masq-gone"));
    let c = conf("bridge", &store);
    let before = nat();
    for i in 0..100 {
        let ns = Netns::new();
        let id = format!("cycle-{i}");
        call("bridge", "ADD", ns.path(), &id, &c, &bin).run().ok();
        let path = ns.path().to_string();
        if i % 2 == 0 {
            ns.destroy();
        }
        call("bridge", "DEL", &path, &id, &c, &bin).run().ok();
    }
    assert_eq!(nat(), before);
}

#[test]
fn rules_written_by_the_go_plugins_are_removed_by_del() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("masq-live"));
    let before = nat();
    // What the reference's ip.SetupIPMasq leaves for container "go-ctr" at 10.31.0.7/24.
    let id = "go-ctr";
    let chain = format!("CNI-{}", sha512_prefix(&format!("masq-net{id}"), 24));
    let comment = format!("name: \"masq-net\" id: \"{id}\"");
    for args in [
        vec!["-t", "nat", "-N", &chain],
        vec![
            "-t",
            "nat",
            "-A",
            &chain,
            "-d",
            "10.31.0.7/24",
            "-j",
            "ACCEPT",
            "-m",
            "comment",
            "--comment",
            &comment,
        ],
        vec![
            "-t",
            "nat",
            "-A",
            &chain,
            "!",
            "-d",
            "224.0.0.0/4",
            "-j",
            "MASQUERADE",
            "-m",
            "comment",
            "--comment",
            &comment,
        ],
        vec![
            "-t",
            "nat",
            "-A",
            "POSTROUTING",
            "-s",
            "10.31.0.7",
            "-j",
            &chain,
            "-m",
            "comment",
            "--comment",
            &comment,
        ],
        // The legacy form with the prefix.
        vec![
            "-t",
            "nat",
            "-A",
            "POSTROUTING",
            "-s",
            "10.31.0.7/24",
            "-j",
            &chain,
            "-m",
            "comment",
            "--comment",
            &comment,
        ],
    ] {
        run_in(None, "iptables", &args);
    }
    assert_ne!(nat(), before);
    // DEL from cni-multi, with the container's netns long gone.
    call("bridge", "DEL", "", id, &conf("bridge", &store), &bin)
        .run()
        .ok();
    assert_eq!(nat(), before);
}

/// ADD with `ipMasqBackend: "nftables"`, DEL with the key unset while iptables
/// is installed (what detection picks): the nftables rules go all the same,
/// for bridge and ptp. And the other way: ADD with iptables, DEL unset, the
/// iptables chain goes and nftables is left as it was.
#[test]
fn del_without_a_backend_removes_the_rules_of_either_backend() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("masq-either"));
    let ruleset = || run_in(None, "nft", &["list", "ruleset"]);
    let before = nat();
    let masq_table = "table inet cni_plugins_masquerade";
    for plugin in ["bridge", "ptp"] {
        let unset = conf(plugin, &store);
        let nft = harness::merged(unset.clone(), json!({"ipMasqBackend": "nftables"}));
        let ns = Netns::new();
        let id = format!("either-{plugin}");
        call(plugin, "ADD", ns.path(), &id, &nft, &bin).run().ok();
        let rules = ruleset();
        assert!(rules.contains(masq_table), "{rules}");
        call(plugin, "DEL", ns.path(), &id, &unset, &bin).run().ok();
        let rules = ruleset();
        assert!(
            !rules.contains(masq_table),
            "{plugin}: DEL without ipMasqBackend leaves no nftables rule\n{rules}"
        );
        assert_eq!(nat(), before);

        let ipt = harness::merged(unset.clone(), json!({"ipMasqBackend": "iptables"}));
        let ns = Netns::new();
        call(plugin, "ADD", ns.path(), &id, &ipt, &bin).run().ok();
        let chain = format!("CNI-{}", sha512_prefix(&format!("masq-net{id}"), 24));
        assert!(nat().contains(&chain), "{}", nat());
        call(plugin, "DEL", ns.path(), &id, &unset, &bin).run().ok();
        assert_eq!(
            nat(),
            before,
            "{plugin}: DEL without ipMasqBackend leaves no iptables rule"
        );
        assert!(!ruleset().contains(masq_table));
    }
}

/// GC (the reference has none), for bridge and ptp and each backend: two
/// attachments of one network and one of another; GC of the first network
/// listing one of its two in `cni.dev/valid-attachments` removes the other's
/// masquerading (chain and jump; nftables rules) and leaves the listed one's
/// and the other network's.
#[test]
fn gc_removes_the_masquerading_of_this_networks_unlisted_attachments() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("masq-gc"));
    let ruleset = || run_in(None, "nft", &["list", "ruleset"]);
    let before = nat();
    for plugin in ["bridge", "ptp"] {
        for backend in ["iptables", "nftables"] {
            let mine = harness::merged(conf(plugin, &store), json!({"ipMasqBackend": backend}));
            let other = harness::merged(
                mine.clone(),
                json!({"name": "masq-other", "bridge": "cni-masq2",
                       "ipam": {"type": "host-local", "subnet": "10.32.0.0/24",
                                "dataDir": store.0, "routes": [{"dst": "0.0.0.0/0"}]}}),
            );
            let tag = format!("{plugin}-{backend}");
            let (keep, gone, theirs) = (
                format!("gc-keep-{tag}"),
                format!("gc-gone-{tag}"),
                format!("gc-theirs-{tag}"),
            );
            let attachments = [(&keep, &mine), (&gone, &mine), (&theirs, &other)];
            let namespaces: Vec<Netns> = attachments.iter().map(|_| Netns::new()).collect();
            for ((id, c), ns) in attachments.iter().zip(&namespaces) {
                call(plugin, "ADD", ns.path(), id, c, &bin).run().ok();
            }
            let list = harness::merged(mine.clone(), json!({"cniVersion": "1.1.0"}));
            let valid = json!([{"containerID": keep, "ifname": "eth0"}]);
            Call::gc(plugin, &list, Some(valid)).path(&bin).run().ok();
            let chain =
                |net: &str, id: &str| format!("CNI-{}", sha512_prefix(&format!("{net}{id}"), 24));
            if backend == "iptables" {
                let rules = nat();
                for (net, id, stays) in [
                    ("masq-net", &keep, true),
                    ("masq-net", &gone, false),
                    ("masq-other", &theirs, true),
                ] {
                    let chain = chain(net, id);
                    assert_eq!(
                        rules.contains(&format!(":{chain} ")),
                        stays,
                        "{tag} {id}: {rules}"
                    );
                    let jumps = rules.lines().any(|l| {
                        l.starts_with("-A POSTROUTING ") && l.ends_with(&format!("-j {chain}"))
                    });
                    assert_eq!(jumps, stays, "{tag} {id}: {rules}");
                }
            } else {
                let rules = ruleset();
                assert!(rules.contains(&format!("id: {keep}\"")), "{tag}: {rules}");
                assert!(!rules.contains(&format!("id: {gone}\"")), "{tag}: {rules}");
                assert!(rules.contains(&format!("id: {theirs}\"")), "{tag}: {rules}");
            }
            for ((id, c), ns) in attachments.iter().zip(&namespaces) {
                call(plugin, "DEL", ns.path(), id, c, &bin).run().ok();
            }
            assert_eq!(
                nat(),
                before,
                "{tag}: DEL after GC leaves the nat table as it was"
            );
            assert!(!ruleset().contains("table inet cni_plugins_masquerade"));
        }
    }
}

/// The quick paths count the jumps to a container's chain from the chain's
/// use count less its own rules, so POSTROUTING (a rule per container) and
/// CNI-HOSTPORT-DNAT (two) are never dumped; the count must be exact.
#[test]
fn jumps_to_a_chain_are_counted_without_reading_the_jumping_chain() {
    use cni_multi::netfilter::nft;
    enter_test_host();
    let mut restore = String::from("*nat\n:CNI-JT - [0:0]\n:CNI-OTHER - [0:0]\n");
    restore.push_str("-A CNI-JT -d 10.33.0.0/24 -j ACCEPT\n-A CNI-JT -j MASQUERADE\n");
    for i in 1..=3 {
        restore.push_str(&format!("-A POSTROUTING -s 10.33.0.{i} -j CNI-JT\n"));
    }
    for i in 1..=5 {
        restore.push_str(&format!("-A POSTROUTING -s 10.34.0.{i} -j CNI-OTHER\n"));
    }
    restore.push_str("COMMIT\n");
    let dir = TempDir::new("jt");
    let file = dir.0.join("rules");
    std::fs::write(&file, restore).expect("write rules");
    run_in(
        None,
        "iptables-restore",
        &["--noflush", file.to_str().expect("utf-8 path")],
    );
    let ipv4 = nix::libc::NFPROTO_IPV4 as u8;
    let mut sock = nft::open().expect("nf_tables socket");
    assert_eq!(
        nft::chain_use(&mut sock, ipv4, "nat", "CNI-JT").ok(),
        Some(Some(5))
    );
    assert_eq!(
        nft::jumps_to(&mut sock, ipv4, "nat", "CNI-JT").ok(),
        Some(Some(3))
    );
    assert_eq!(
        nft::jumps_to(&mut sock, ipv4, "nat", "CNI-OTHER").ok(),
        Some(Some(5))
    );
    assert_eq!(
        nft::jumps_to(&mut sock, ipv4, "nat", "CNI-NONE").ok(),
        Some(None)
    );
}
