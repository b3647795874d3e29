//! firewall end to end (iptables backend): forwarding allowed for the
//! container's addresses under a DROP policy, CHECK, DEL restoring the filter
//! table, same-bridge isolation, refused backends and keys (firewalld:
//! tests/it/firewalld.rs).

use crate::harness;

use harness::{
    Netns, Runtime, bridge_host_local, enter_test_host, first_ip, iptables_table, merged,
    peer_netns, plugin_dir, run_in, tcp_fetch, tcp_server, with_default_route,
};
use serde_json::{Value, json};

fn filter() -> String {
    iptables_table("filter")
}

/// The shared chains (`CNI-FORWARD`, `CNI-ADMIN`) and their jumps: created by
/// the first ADD, never removed (as the reference).
const SHARED: [&str; 4] = [
    ":CNI-FORWARD - [0:0]",
    ":CNI-ADMIN - [0:0]",
    "-A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD",
    "-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN",
];

/// The filter table without the shared chains and jumps.
fn filter_but_shared() -> String {
    filter()
        .lines()
        .filter(|l| !SHARED.contains(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A bridge network followed by the firewall plugin with `firewall` keys.
fn network(rt: &Runtime, name: &str, bridge: &str, subnet: &str, firewall: Value) {
    let list = json!({
        "cniVersion": "1.0.0", "name": name,
        "plugins": [
            with_default_route(bridge_host_local(bridge, subnet, "@STORE@")),
            merged(json!({"type": "firewall"}), firewall)
        ]
    });
    rt.write_list(&format!("{name}.conflist"), &list);
}

/// A server namespace at 192.0.2.2 behind the host's 192.0.2.1, serving TCP 80.
fn server() -> Netns {
    let s = peer_netns("to-srv");
    tcp_server(s.path(), 80, "outside");
    s
}

#[test]
fn forwarding_is_opened_for_the_container_and_del_removes_its_rules() {
    enter_test_host();
    let _srv = server();
    run_in(None, "iptables", &["-P", "FORWARD", "DROP"]);
    let s = Runtime::new("fw");
    network(&s, "fw-net", "cni-fw0", "10.50.0.0/24", json!({}));
    let before = filter_but_shared();
    let ns = Netns::new();
    let out = s.run(&["add", "fw-net", ns.path()], &json!({})).ok();
    let ip = first_ip(&out);
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
    s.run(&["check", "fw-net", ns.path()], &json!({})).ok();
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
    assert_eq!(s.run(&["check", "fw-net", ns.path()], &json!({})).status, 1);
    s.run(&["del", "fw-net", ns.path()], &json!({})).ok();
    assert_eq!(
        filter_but_shared(),
        before,
        "DEL leaves the filter table as it was, but for the shared chains"
    );
    let rules = filter();
    assert!(!rules.contains(&format!("{ip}/32")), "{rules}");
}

#[test]
fn same_bridge_policy_isolates_bridges() {
    enter_test_host();
    let s = Runtime::new("fw");
    network(
        &s,
        "net-a",
        "cni-fwa",
        "10.51.0.0/24",
        json!({"ingressPolicy": "same-bridge"}),
    );
    network(
        &s,
        "net-b",
        "cni-fwb",
        "10.52.0.0/24",
        json!({"ingressPolicy": "same-bridge"}),
    );
    let (a1, a2, b1) = (Netns::new(), Netns::new(), Netns::new());
    s.run(&["add", "net-a", a1.path()], &json!({})).ok();
    s.run(&["add", "net-a", a2.path()], &json!({})).ok();
    s.run(&["add", "net-b", b1.path()], &json!({})).ok();
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
    // DEL also drops the attachments' records (kept on the host, not in the netns).
    s.run(&["del", "net-a", a1.path()], &json!({})).ok();
    s.run(&["del", "net-a", a2.path()], &json!({})).ok();
    s.run(&["del", "net-b", b1.path()], &json!({})).ok();
}

#[test]
fn unsupported_backends_are_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let prev = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.50.0.5/24"}]});
    for (extra, code) in [
        (
            json!({"backend": "nftables", "ingressPolicy": "isolated"}),
            7,
        ),
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
    let s = Runtime::new("fw");
    network(
        &s,
        "fw-nft",
        "cni-fwn0",
        "10.53.0.0/24",
        json!({"backend": "nftables"}),
    );
    let ruleset = || run_in(None, "nft", &["list", "ruleset"]);
    let before = ruleset();
    let ns = Netns::new();
    let out = s.run(&["add", "fw-nft", ns.path()], &json!({})).ok();
    let ip = first_ip(&out);
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
    s.run(&["check", "fw-nft", ns.path()], &json!({})).ok();
    s.run(&["del", "fw-nft", ns.path()], &json!({})).ok();
    assert_eq!(ruleset(), before);
}

fn firewall_conf(ip: &str) -> String {
    json!({"cniVersion": "1.0.0", "name": "fw-net", "type": "firewall", "backend": "iptables",
           "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": ip}]}})
    .to_string()
}

fn call(command: &str, conf: &str, bin: &harness::TempDir) -> harness::Outcome {
    harness::Call::new("firewall", command, "/run/netns/fw-none", conf)
        .path(bin)
        .run()
}

/// After the last DEL (v4 and v6), CNI-FORWARD, CNI-ADMIN and their jumps
/// stay, each once, with none of the container's rules.
#[test]
fn the_forward_and_admin_chains_stay_after_the_last_del() {
    enter_test_host();
    let bin = plugin_dir();
    let conf = json!({"cniVersion": "1.0.0", "name": "fw-net", "type": "firewall", "backend": "iptables",
                      "prevResult": {"cniVersion": "1.0.0",
                                     "ips": [{"address": "10.50.0.7/24"}, {"address": "fd00:50::7/64"}]}})
    .to_string();
    call("ADD", &conf, &bin).ok();
    call("DEL", &conf, &bin).ok();
    let v6 = run_in(None, "ip6tables-save", &["-t", "filter"]);
    for (family, table) in [("v4", filter()), ("v6", v6)] {
        for line in SHARED {
            assert_eq!(
                table.lines().filter(|l| *l == line).count(),
                1,
                "{family}: {line}\n{table}"
            );
        }
        assert!(
            !table.contains("10.50.0.7") && !table.contains("fd00:50::7"),
            "{family}:\n{table}"
        );
    }
}

/// On an iptables-nft host the iptables backend runs no process at all: ADD,
/// CHECK and DEL of both families under strace exec nothing but the plugin
/// (no iptables-restore, no iptables-save), and the rules are there and gone.
#[test]
fn on_iptables_nft_add_check_and_del_exec_no_iptables_process() {
    use std::io::Write as _;
    enter_test_host();
    if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
        harness::skip(
            "on_iptables_nft_add_check_and_del_exec_no_iptables_process",
            "iptables is not the nf_tables flavour",
        );
        return;
    }
    let bin = plugin_dir();
    let conf = json!({"cniVersion": "1.0.0", "name": "fw-net", "type": "firewall", "backend": "iptables",
                      "ingressPolicy": "isolated",
                      "prevResult": {"cniVersion": "1.0.0",
                                     "interfaces": [{"name": "cni-fwx"}],
                                     "ips": [{"address": "10.50.0.8/24"}, {"address": "fd00:50::8/64"}]}})
    .to_string();
    let log = bin.0.join("execs");
    for command in ["ADD", "CHECK", "DEL"] {
        let call = harness::Call::new("firewall", command, "/run/netns/fw-none", &conf).path(&bin);
        let mut child = std::process::Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=execve", "-o"])
            .arg(&log)
            .arg(harness::BIN)
            .arg("firewall")
            .env_clear()
            .envs(&call.env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("strace");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(conf.as_bytes())
            .expect("conf");
        harness::Outcome::of(child).ok();
        let execs = std::fs::read_to_string(&log).expect("strace log");
        let programs: Vec<&str> = execs
            .lines()
            .filter(|l| l.contains("execve(") && !l.contains("= -1"))
            .filter_map(|l| l.split('"').nth(1))
            .collect();
        assert_eq!(programs, [harness::BIN], "{command}: {execs}");
        let tables = format!(
            "{}\n{}",
            filter(),
            run_in(None, "ip6tables-save", &["-t", "filter"])
        );
        let present = command != "DEL";
        for rule in [
            "-A CNI-FORWARD -s 10.50.0.8/32 -j ACCEPT",
            "-A CNI-FORWARD -d fd00:50::8/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
            "-A CNI-ISOLATION-STAGE-2 -o cni-fwx -m comment --comment \"CNI firewall plugin rules (ingressPolicy: isolated)\" -j DROP",
        ] {
            let want = present || rule.contains("STAGE");
            assert_eq!(tables.contains(rule), want, "{command}: {rule}\n{tables}");
        }
    }
}

/// With legacy tools (wrappers that say so, log each run and run the real
/// tools), a DEL whose rules are all there deletes them by spec: one restore
/// per family and no `iptables-save`; a DEL with nothing left then reads the
/// table (the restore by spec fails) and succeeds.
#[test]
fn legacy_del_deletes_by_spec_without_a_save() {
    use std::os::unix::fs::PermissionsExt;
    enter_test_host();
    let bin = plugin_dir();
    let conf = json!({"cniVersion": "1.0.0", "name": "fw-net", "type": "firewall", "backend": "iptables",
                      "prevResult": {"cniVersion": "1.0.0",
                                     "ips": [{"address": "10.50.0.9/24"}, {"address": "fd00:50::9/64"}]}})
    .to_string();
    let wrappers = harness::TempDir::new("fw-legacy-wrap");
    let log = wrappers.0.join("execs");
    for tool in [
        "iptables-save",
        "iptables-restore",
        "ip6tables-save",
        "ip6tables-restore",
    ] {
        let real = run_in(None, "sh", &["-c", &format!("command -v {tool}")]);
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = -V ] && {{ echo '{tool} v1.8.9 (legacy)'; exit 0; }}\n\
             echo {tool} >> '{}'\nexec {} \"$@\"\n",
            log.display(),
            real.trim()
        );
        let path = wrappers.0.join(tool);
        std::fs::write(&path, script).expect("wrapper");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = format!(
        "{}:{}",
        wrappers.0.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |command: &str| {
        let _ = std::fs::remove_file(&log);
        harness::Call::new("firewall", command, "/run/netns/fw-none", &conf)
            .path(&bin)
            .set("PATH", &path)
            .run()
            .ok();
        let mut execs: Vec<String> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect();
        execs.sort();
        execs
    };
    run("ADD");
    assert!(filter().contains("-A CNI-FORWARD -s 10.50.0.9/32 -j ACCEPT"));
    assert_eq!(run("DEL"), ["ip6tables-restore", "iptables-restore"]);
    assert!(!filter().contains("10.50.0.9"));
    let again = run("DEL");
    assert!(again.contains(&"iptables-save".to_string()), "{again:?}");
}

/// A node where the reference's firewall (Go, one iptables call per rule) and
/// ours share the filter table: while our DEL removes the last address again
/// and again, every one of 60 reference ADDs succeeds (a DEL of ours that
/// removed CNI-FORWARD could pull it from under the reference between its
/// `-N` and its `-A`).
#[test]
fn reference_firewall_adds_all_succeed_while_our_dels_loop() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    const REFERENCE: &str = "/usr/lib/cni/firewall";
    assert!(
        std::path::Path::new(REFERENCE).exists(),
        "{REFERENCE} missing: install containernetworking-plugins (tests/install-deps.sh)"
    );
    enter_test_host();
    let bin = Arc::new(plugin_dir());
    let address = |i: usize| format!("10.50.{}.{}/16", i / 200, 2 + i % 200);
    let stop = Arc::new(AtomicBool::new(false));
    // How many reference ADDs have completed.
    let added = Arc::new(AtomicUsize::new(0));
    let mine = firewall_conf(&address(999));
    // CNI-FORWARD and CNI-ADMIN exist before the reference starts, as on a
    // node that switches: otherwise its own check-then-create (`iptables -N`)
    // can lose to our first ADD creating them, which is its race, not our DEL's.
    for cmd in ["ADD", "DEL"] {
        let out = call(cmd, &mine, &bin);
        assert_eq!(out.status, 0, "our first {cmd}: {out:?}");
    }
    let ours = {
        let (stop, added, bin) = (stop.clone(), added.clone(), bin.clone());
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                let mut outcomes = vec![call("ADD", &mine, &bin), call("DEL", &mine, &bin)];
                // The reference's newest (complete) address too: CNI-FORWARD
                // is then left with no container at all.
                if let Some(newest) = added.load(Ordering::Relaxed).checked_sub(1) {
                    let theirs =
                        firewall_conf(&format!("10.50.{}.{}/16", newest / 200, 2 + newest % 200));
                    outcomes.push(call("DEL", &theirs, &bin));
                }
                failures.extend(outcomes.into_iter().filter(|o| o.status != 0));
                rounds += 1;
            }
            (rounds, failures)
        })
    };
    let mut failures = Vec::new();
    for i in 0..60 {
        let out = harness::run_other_plugin(
            REFERENCE,
            "ADD",
            &format!("ref-{i}"),
            "/run/netns/fw-none",
            &firewall_conf(&address(i)),
        );
        added.store(i + 1, Ordering::Relaxed);
        if !out.status.success() {
            failures.push(format!(
                "ADD {i}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (rounds, ours_failed) = ours.join().expect("our loop");
    assert!(rounds > 0, "our DEL loop ran");
    assert!(
        failures.is_empty(),
        "{} of 60 reference ADDs failed: {failures:#?}",
        failures.len()
    );
    assert!(ours_failed.is_empty(), "{ours_failed:#?}");
}

/// A container's interface in prevResult carries a name the pod chose (a
/// Multus selection's `interface`); taken as "the bridge", it became host
/// FORWARD isolation rules that nothing removes. Only an interface without a
/// sandbox names the bridge.
#[test]
fn a_pod_chosen_interface_name_never_becomes_host_forward_rules() {
    enter_test_host();
    let ns = Netns::new();
    let conf = |interfaces: Value| {
        json!({"cniVersion": "1.0.0", "name": "fw-evil", "type": "firewall",
               "backend": "iptables", "ingressPolicy": "same-bridge",
               "prevResult": {"cniVersion": "1.0.0", "interfaces": interfaces,
                   "ips": [{"address": "10.53.0.2/24", "interface": 0}]}})
        .to_string()
    };
    let call = |command: &str, c: &str| harness::Call::new("firewall", command, ns.path(), c);
    // The host bridge after the pod's interface: the bridge is named.
    let both = conf(json!([{"name": "evil0", "sandbox": ns.path()}, {"name": "cni-fwh"}]));
    call("ADD", &both).run().ok();
    let rules = filter();
    assert!(rules.contains("-i cni-fwh ! -o cni-fwh"), "{rules}");
    assert!(!rules.contains("evil0"), "{rules}");
    call("DEL", &both).run().ok();
    // Only the pod's interface: refused, nothing named after it.
    let only_pod = conf(json!([{"name": "evil1", "sandbox": ns.path()}]));
    let e = call("ADD", &only_pod).run().err(7);
    assert!(
        e["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("no host interface"),
        "{e}"
    );
    assert!(!filter().contains("evil1"), "{}", filter());
}

/// ADD with `backend: "nftables"`, DEL with the key unset while iptables is
/// installed (what detection picks): the nftables rules go all the same. And
/// the other way: ADD with iptables, DEL unset, the address rules go.
#[test]
fn del_without_a_backend_removes_the_rules_of_either_backend() {
    enter_test_host();
    let bin = plugin_dir();
    let conf = |backend: Option<&str>| {
        let mut c = json!({"cniVersion": "1.0.0", "name": "fw-net", "type": "firewall",
                           "prevResult": {"cniVersion": "1.0.0",
                                          "ips": [{"address": "10.54.0.7/24"}, {"address": "fd00:54::7/64"}]}});
        if let Some(b) = backend {
            c["backend"] = json!(b);
        }
        c.to_string()
    };
    let ruleset = || run_in(None, "nft", &["list", "ruleset"]);
    call("ADD", &conf(Some("nftables")), &bin).ok();
    assert!(
        ruleset().contains("table inet cni_firewall"),
        "{}",
        ruleset()
    );
    call("DEL", &conf(None), &bin).ok();
    let rules = ruleset();
    assert!(
        !rules.contains("table inet cni_firewall"),
        "DEL without a backend leaves no nftables rule\n{rules}"
    );

    call("ADD", &conf(Some("iptables")), &bin).ok();
    assert!(filter().contains("-A CNI-FORWARD -s 10.54.0.7/32 -j ACCEPT"));
    call("DEL", &conf(None), &bin).ok();
    let v6 = run_in(None, "ip6tables-save", &["-t", "filter"]);
    for table in [filter(), v6] {
        assert!(
            !table.contains("10.54.0.7") && !table.contains("fd00:54::7"),
            "{table}"
        );
    }
}

/// GC with a backend: three attachments of `fw-gc` and one of `fw-other`, each
/// recorded at ADD in `dataDir`. GC without a valid list changes nothing; GC
/// keeping ctr-a removes ctr-b's and ctr-d's rules and records only; DEL after
/// GC succeeds.
fn gc_removes_only_the_unkept_attachment(backend: &str, rules: impl Fn() -> String) {
    let bin = plugin_dir();
    let data = harness::TempDir::new("fw-gc");
    let conf = |net: &str, ip: &str| {
        json!({"cniVersion": "1.1.0", "name": net, "type": "firewall", "backend": backend,
               "dataDir": data.0,
               "prevResult": {"cniVersion": "1.1.0", "ips": [{"address": ip}]}})
        .to_string()
    };
    let attachments = [
        ("fw-gc", "ctr-a", "10.56.0.2"),
        ("fw-gc", "ctr-b", "10.56.0.3"),
        ("fw-other", "ctr-c", "10.56.0.4"),
        ("fw-gc", "ctr-d", "10.56.0.5"),
    ];
    let attach = |cmd: &str, (net, id, ip): (&str, &str, &str)| {
        harness::Call::new(
            "firewall",
            cmd,
            "/run/netns/fw-none",
            &conf(net, &format!("{ip}/24")),
        )
        .set("CNI_CONTAINERID", id)
        .path(&bin)
        .run()
        .ok();
    };
    for a in attachments {
        attach("ADD", a);
    }
    let record = |id: &str| harness::has_record(&data.0, id, "eth0");
    let gc = |valid: Option<Value>| {
        let c = json!({"cniVersion": "1.1.0", "name": "fw-gc", "type": "firewall",
                       "backend": backend, "dataDir": data.0});
        harness::Call::gc("firewall", &c, valid)
            .path(&bin)
            .run()
            .ok();
    };
    let before = rules();
    gc(None);
    assert_eq!(rules(), before, "GC without a valid list changes nothing");
    gc(Some(json!([{"containerID": "ctr-a", "ifname": "eth0"}])));
    let after = rules();
    for (_, id, ip) in attachments {
        let kept = !["ctr-b", "ctr-d"].contains(&id);
        assert_eq!(after.contains(ip), kept, "{id}\n{after}");
        assert_eq!(record(id), kept, "{id}'s record");
    }
    for a in attachments {
        attach("DEL", a);
    }
    let left = rules();
    assert!(!left.contains("10.56.0."), "{left}");
    for (_, id, _) in attachments {
        assert!(!record(id), "{id}'s record");
    }
}

#[test]
fn gc_removes_the_rules_of_unkept_attachments_iptables() {
    enter_test_host();
    gc_removes_only_the_unkept_attachment("iptables", filter);
}

#[test]
fn gc_removes_the_rules_of_unkept_attachments_nftables() {
    enter_test_host();
    gc_removes_only_the_unkept_attachment("nftables", || run_in(None, "nft", &["list", "ruleset"]));
}

/// On iptables-nft our ADD remembers its rules' handles in the attachment's
/// record and DEL deletes them by handle; where they are not there (another
/// writer's rules) both fall back to reading CNI-FORWARD. Crossed with the
/// reference (Debian's binary) in both directions and both families: a
/// repeated ADD of ours adds nothing, the reference's DEL removes what we
/// added, our DEL removes what the reference added (with a stale record of
/// ours, and without any), and the shared chains stay.
#[test]
fn remembered_handles_cross_with_the_references_add_and_del() {
    const REFERENCE: &str = "/usr/lib/cni/firewall";
    assert!(
        std::path::Path::new(REFERENCE).exists(),
        "{REFERENCE} missing: install containernetworking-plugins (tests/install-deps.sh)"
    );
    enter_test_host();
    let bin = plugin_dir();
    let data = bin.0.join("fw-records");
    let conf = json!({"cniVersion": "1.0.0", "name": "fw-cross", "type": "firewall",
                      "backend": "iptables", "dataDir": data,
                      "prevResult": {"cniVersion": "1.0.0",
                                     "ips": [{"address": "10.52.0.5/24"}, {"address": "fd00:52::5/64"}]}})
    .to_string();
    let ours = |cmd: &str| {
        let out = harness::Call::new("firewall", cmd, "/run/netns/fw-none", &conf)
            .path(&bin)
            .run();
        assert_eq!(out.status, 0, "our {cmd}: {out:?}");
    };
    let theirs = |cmd: &str| {
        let out = harness::run_other_plugin(REFERENCE, cmd, "ctr-1", "/run/netns/fw-none", &conf);
        assert!(out.status.success(), "reference {cmd}: {out:?}");
    };
    let rules = [
        "-A CNI-FORWARD -d 10.52.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        "-A CNI-FORWARD -s 10.52.0.5/32 -j ACCEPT",
        "-A CNI-FORWARD -d fd00:52::5/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        "-A CNI-FORWARD -s fd00:52::5/128 -j ACCEPT",
    ];
    let count = |what: &str| {
        let tables = format!(
            "{}\n{}",
            filter(),
            run_in(None, "ip6tables-save", &["-t", "filter"])
        );
        for rule in rules {
            let n = tables.lines().filter(|l| *l == rule).count();
            assert_eq!(
                n,
                usize::from(what.ends_with("there")),
                "{what}: {rule}\n{tables}"
            );
        }
        for line in SHARED {
            assert_eq!(
                tables.lines().filter(|l| *l == line).count(),
                2,
                "{what}: {line}"
            );
        }
    };
    let record = || {
        std::fs::read_dir(&data)
            .expect("records")
            .flatten()
            .map(|f| std::fs::read_to_string(f.path()).expect("record"))
            .collect::<String>()
    };
    let nft = run_in(None, "iptables", &["--version"]).contains("nf_tables");
    ours("ADD");
    count("our ADD: there");
    if nft {
        assert!(record().contains("\"handles\""), "{}", record());
    }
    ours("ADD");
    count("our repeated ADD: there");
    theirs("DEL");
    count("the reference's DEL of our ADD: gone");
    theirs("ADD");
    count("the reference's ADD after: there");
    ours("DEL");
    count("our DEL with a stale record: gone");
    theirs("ADD");
    count("the reference's ADD: there");
    ours("DEL");
    count("our DEL without a record: gone");
    ours("DEL");
    count("our DEL again: gone");
}
