//! The iptables backend: reachability from a client, the host and the
//! container itself; the reference's rule forms; DEL and GC restore the nat
//! table; rules the Go portmap wrote are removed; concurrency; a node shared
//! with the reference.

use super::*;

#[test]
fn mapped_ports_are_reachable_from_everywhere_and_del_removes_the_container_rules() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({}));
    let before = nat_but_shared();
    let (ns, caps, ip) = mapped_container(&net);
    assert_reachable(&client, &ns);

    // The reference's rules, names and comments.
    let id = format!("cnitool-{}", sha512_prefix(ns.path(), 20));
    let dn = format!("CNI-DN-{}", sha512_prefix(&format!("pm-net{id}"), 21));
    let rules = nat();
    let comment = format!("--comment \"dnat name: \\\"pm-net\\\" id: \\\"{id}\\\"\"");
    for expected in [
        "-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ".to_string(),
        "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT".into(),
        "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT".into(),
        "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE".into(),
        "-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000".into(),
        format!("-A CNI-HOSTPORT-DNAT -p tcp -m comment {comment} -m multiport --dports 8080,9090 -j {dn}"),
        format!("-A CNI-HOSTPORT-DNAT -p udp -m comment {comment} -m multiport --dports 5353 -j {dn}"),
        format!("-A {dn} -s 10.40.0.0/24 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK"),
        format!("-A {dn} -s 127.0.0.1/32 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK"),
        format!("-A {dn} -p tcp -m tcp --dport 8080 -j DNAT --to-destination {ip}:80"),
        format!("-A {dn} -d 192.0.2.1/32 -p tcp -m tcp --dport 9090 -j DNAT --to-destination {ip}:90"),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    let localnet = run_in(
        None,
        "sysctl",
        &["-n", "net.ipv4.conf.cni-pm0.route_localnet"],
    );
    assert_eq!(localnet.trim(), "1");

    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(
        nat_but_shared(),
        before,
        "DEL leaves the nat table as it was, but for the shared chains"
    );
    assert_eq!(tcp_fetch(Some(client.path()), "192.0.2.1:8080"), None);
}

#[test]
fn hundred_add_del_cycles_and_gc_leave_only_the_shared_chains() {
    enter_test_host();
    let net = network(json!({}));
    let before = nat_but_shared();
    let caps = maps(&[(8080, 80, "tcp", ""), (8443, 443, "tcp", "")]);
    for i in 0..100 {
        let ns = Netns::new();
        net.run(&["add", "pm-net", ns.path()], &caps).ok();
        if i % 10 == 0 {
            net.run(&["check", "pm-net", ns.path()], &caps).ok();
        }
        net.run(&["del", "pm-net", ns.path()], &caps).ok();
    }
    assert_eq!(nat_but_shared(), before);
    // GC: two attachments, one valid; the other's rules go, then the last's with DEL.
    let (a, b) = (Netns::new(), Netns::new());
    net.run(
        &["add", "pm-net", a.path()],
        &maps(&[(7001, 80, "tcp", "")]),
    )
    .ok();
    net.run(
        &["add", "pm-net", b.path()],
        &maps(&[(7002, 80, "tcp", "")]),
    )
    .ok();
    let keep = format!("cnitool-{}/eth0", sha512_prefix(a.path(), 20));
    net.run(&["gc", "pm-net", "--valid", &keep], &json!({}))
        .ok();
    let rules = nat();
    assert!(
        rules.contains("--dports 7001 ") && !rules.contains("--dports 7002 "),
        "{rules}"
    );
    net.run(&["del", "pm-net", a.path()], &json!({})).ok();
    assert_eq!(nat_but_shared(), before);
}

#[test]
fn rules_written_by_the_go_portmap_are_removed_by_del() {
    enter_test_host();
    let before = nat_but_shared();
    let id = "go-pod";
    let dn = format!("CNI-DN-{}", sha512_prefix(&format!("pm-net{id}"), 21));
    let comment = format!("dnat name: \"pm-net\" id: \"{id}\"");
    // Exactly what the reference's one-iptables-call-per-rule leaves behind.
    let calls: Vec<Vec<&str>> = vec![
        vec!["-N", "CNI-HOSTPORT-SETMARK"],
        vec![
            "-A",
            "CNI-HOSTPORT-SETMARK",
            "-m",
            "comment",
            "--comment",
            "CNI portfwd masquerade mark",
            "-j",
            "MARK",
            "--set-xmark",
            "0x2000/0x2000",
        ],
        vec!["-N", "CNI-HOSTPORT-MASQ"],
        vec![
            "-A",
            "CNI-HOSTPORT-MASQ",
            "-m",
            "mark",
            "--mark",
            "0x2000/0x2000",
            "-j",
            "MASQUERADE",
        ],
        vec![
            "-I",
            "POSTROUTING",
            "1",
            "-m",
            "comment",
            "--comment",
            "CNI portfwd requiring masquerade",
            "-j",
            "CNI-HOSTPORT-MASQ",
        ],
        vec!["-N", "CNI-HOSTPORT-DNAT"],
        vec![
            "-A",
            "PREROUTING",
            "-m",
            "addrtype",
            "--dst-type",
            "LOCAL",
            "-j",
            "CNI-HOSTPORT-DNAT",
        ],
        vec![
            "-A",
            "OUTPUT",
            "-m",
            "addrtype",
            "--dst-type",
            "LOCAL",
            "-j",
            "CNI-HOSTPORT-DNAT",
        ],
        vec!["-N", &dn],
        vec![
            "-A",
            &dn,
            "-p",
            "tcp",
            "--dport",
            "8080",
            "-s",
            "10.40.0.9/24",
            "-j",
            "CNI-HOSTPORT-SETMARK",
        ],
        vec![
            "-A",
            &dn,
            "-p",
            "tcp",
            "--dport",
            "8080",
            "-s",
            "127.0.0.1",
            "-j",
            "CNI-HOSTPORT-SETMARK",
        ],
        vec![
            "-A",
            &dn,
            "-p",
            "tcp",
            "--dport",
            "8080",
            "-j",
            "DNAT",
            "--to-destination",
            "10.40.0.9:80",
        ],
        vec![
            "-A",
            "CNI-HOSTPORT-DNAT",
            "-m",
            "comment",
            "--comment",
            &comment,
            "-m",
            "multiport",
            "-p",
            "tcp",
            "--destination-ports",
            "8080",
            "-j",
            &dn,
        ],
    ];
    for args in &calls {
        let mut full = vec!["-t", "nat"];
        full.extend_from_slice(args);
        run_in(None, "iptables", &full);
    }
    let bin = plugin_dir();
    let conf = json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap",
                      "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}});
    harness::Call::new("portmap", "DEL", "", &conf.to_string())
        .set("CNI_CONTAINERID", id)
        .path(&bin)
        .run()
        .ok();
    assert_eq!(nat_but_shared(), before);
}

#[test]
fn thirty_two_concurrent_adds_all_work() {
    enter_test_host();
    let client = client();
    let net = network(json!({}));
    let namespaces: Vec<Netns> = (0..32).map(|_| Netns::new()).collect();
    let children: Vec<_> = namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            let caps = maps(&[(10000 + i as u16, 80, "tcp", "")]);
            net.command(&["add", "pm-net", ns.path()], &caps, None)
                .spawn()
                .expect("cnitool")
        })
        .collect();
    for child in children {
        Outcome::of(child).ok();
    }
    for (i, ns) in namespaces.iter().enumerate() {
        tcp_server(ns.path(), 80, "hello");
        let got = tcp_fetch(Some(client.path()), &format!("192.0.2.1:{}", 10000 + i));
        assert_eq!(got.as_deref(), Some("hello"), "container {i}");
    }
    let jumps = nat()
        .lines()
        .filter(|l| l.starts_with("-A PREROUTING") && l.contains("CNI-HOSTPORT-DNAT"))
        .count();
    assert_eq!(jumps, 1, "shared entry rules exist once");
}

#[test]
fn a_udp_flow_started_before_the_mapping_reaches_the_container_after_add() {
    enter_test_host();
    let client = client();
    let net = network(json!({}));
    // Another pod's mapping already exists, so the nat hooks (and conntrack) are live.
    let other = Netns::new();
    net.run(
        &["add", "pm-net", other.path()],
        &maps(&[(7000, 80, "tcp", "")]),
    )
    .ok();
    let ns = Netns::new();
    udp_server(ns.path(), 53, "udp-hello");
    // The client's flow (fixed source port) to host port 5353 starts before the
    // mapping exists: the host answers nothing, but conntrack remembers the flow.
    let send = |expect_reply: bool| {
        harness::in_netns(Some(client.path()), move || {
            let sock = std::net::UdpSocket::bind("192.0.2.2:40053").expect("bind");
            sock.set_read_timeout(Some(std::time::Duration::from_millis(if expect_reply {
                2000
            } else {
                300
            })))
            .expect("timeout");
            sock.send_to(b"ping", "192.0.2.1:5353").expect("send");
            let mut buf = [0u8; 64];
            sock.recv_from(&mut buf)
                .ok()
                .map(|(n, _)| String::from_utf8_lossy(&buf[..n]).into_owned())
        })
    };
    assert_eq!(send(false), None);
    let entries = std::fs::read_to_string("/proc/thread-self/net/nf_conntrack").unwrap_or_default();
    assert!(
        entries.contains("dport=5353"),
        "the flow is tracked: {entries}"
    );
    net.run(
        &["add", "pm-net", ns.path()],
        &maps(&[(5353, 53, "udp", "")]),
    )
    .ok();
    assert_eq!(
        send(true).as_deref(),
        Some("udp-hello"),
        "stale entry flushed by ADD"
    );
}

/// A DEL that cannot read the table (iptables-save fails) must not report
/// success over rules it never saw: the error names the tool and its message.
/// With the real tools back, the same DEL removes everything.
#[test]
fn del_fails_naming_the_tool_when_iptables_save_fails() {
    enter_test_host();
    let net = network(json!({}));
    let before = nat_but_shared();
    let ns = Netns::new();
    let caps = maps(&[(8080, 80, "tcp", "")]);
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    // Real tools, but an iptables-save that fails (legacy flavour: state is read with it).
    let (wrappers, _log, path) = logging_wrappers("pm-wrap-save", true);
    std::fs::write(
        wrappers.0.join("iptables-save"),
        "#!/bin/sh\n[ \"$1\" = -V ] && { echo 'iptables-save v1.8.9 (legacy)'; exit 0; }\n\
         echo 'iptables-save: cannot read the table: Permission denied' >&2\nexit 4\n",
    )
    .expect("failing save");
    let child = net
        .command(&["del", "pm-net", ns.path()], &caps, Some(&path))
        .spawn()
        .expect("cnitool");
    let out = Outcome::of(child);
    assert_eq!(out.status, 1, "{out:?}");
    assert!(
        out.stderr.contains("iptables-save -t nat failed")
            && out
                .stderr
                .contains("cannot read the table: Permission denied"),
        "{out:?}"
    );
    assert_ne!(
        nat_but_shared(),
        before,
        "nothing was removed without reading the table"
    );
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(nat_but_shared(), before);
}

/// CHECK compares the destination word by word: a rule to `:8080` does not
/// stand for a mapping to `:80`, nor one on another host IP.
#[test]
fn iptables_check_compares_exact_destinations() {
    enter_test_host();
    let bin = plugin_dir();
    let added = direct(
        json!({"backend": "iptables"}),
        &["10.40.0.2/24"],
        maps(&[(8080, 8080, "tcp", ""), (9090, 90, "tcp", "192.0.2.10")]),
    );
    call("ADD", "ctr-1", &added, &bin).ok();
    call("CHECK", "ctr-1", &added, &bin).ok();
    for other in [
        maps(&[(8080, 80, "tcp", ""), (9090, 90, "tcp", "192.0.2.10")]),
        maps(&[(8080, 8080, "tcp", ""), (9090, 90, "tcp", "192.0.2.1")]),
        maps(&[(8080, 8080, "udp", ""), (9090, 90, "tcp", "192.0.2.10")]),
        maps(&[(808, 8080, "tcp", ""), (9090, 90, "tcp", "192.0.2.10")]),
    ] {
        // Same multiport entry rules (same ports), different DNAT rules.
        let conf = direct(json!({"backend": "iptables"}), &["10.40.0.2/24"], other);
        let out = call("CHECK", "ctr-1", &conf, &bin);
        assert_ne!(out.status, 0, "CHECK passed for {conf}\n{}", nat());
    }
    call("DEL", "ctr-1", &added, &bin).ok();
}

/// The CNI-HOSTPORT-DNAT entry rules name every mapping's port grouped by
/// protocol, in the v4 and the v6 table alike, as the reference builds them
/// (host-IP mappings of the other family included).
#[test]
fn entry_rules_group_all_mappings_by_protocol_in_both_families() {
    enter_test_host();
    let bin = plugin_dir();
    let conf = direct(
        json!({"backend": "iptables"}),
        &["10.40.0.5/24", "fd00:40::5/64"],
        maps(&[
            (8080, 80, "tcp", ""),
            (9090, 90, "tcp", "192.0.2.1"),
            (7070, 70, "tcp", "fd00::1"),
            (5353, 53, "udp", ""),
        ]),
    );
    call("ADD", "ctr-1", &conf, &bin).ok();
    let dn = format!("CNI-DN-{}", sha512_prefix("pm-netctr-1", 21));
    let v6 = run_in(None, "ip6tables-save", &["-t", "nat"]);
    for (family, table) in [("v4", nat()), ("v6", v6)] {
        for expected in [
            format!(
                "-p tcp -m comment --comment \"dnat name: \\\"pm-net\\\" id: \\\"ctr-1\\\"\" -m multiport --dports 8080,9090,7070 -j {dn}"
            ),
            format!(
                "-p udp -m comment --comment \"dnat name: \\\"pm-net\\\" id: \\\"ctr-1\\\"\" -m multiport --dports 5353 -j {dn}"
            ),
        ] {
            assert!(
                table.contains(&expected),
                "{family}: missing {expected}\n{table}"
            );
        }
    }
    let v4 = nat();
    assert!(
        !v4.contains("--dport 7070"),
        "no v4 DNAT for a v6 host IP\n{v4}"
    );
    call("CHECK", "ctr-1", &conf, &bin).ok();
    call("DEL", "ctr-1", &conf, &bin).ok();
}

/// The shared chains and their jumps stay after the last DEL and after a GC
/// that removes the last attachment, as the reference leaves them.
#[test]
fn the_shared_chains_and_their_jumps_stay_after_the_last_del_and_gc() {
    enter_test_host();
    let net = network(json!({}));
    let shared = [
        ":CNI-HOSTPORT-DNAT - [0:0]",
        ":CNI-HOSTPORT-MASQ - [0:0]",
        ":CNI-HOSTPORT-SETMARK - [0:0]",
        "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
        "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
        "-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ",
        "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE",
        "-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000",
    ];
    let caps = maps(&[(8080, 80, "tcp", "")]);
    let ns = Netns::new();
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    let after_del = nat();
    let after_gc = {
        let other = Netns::new();
        net.run(&["add", "pm-net", other.path()], &caps).ok();
        // A valid list without it: every attachment of the network is stale.
        net.run(&["gc", "pm-net", "--valid", "none/eth0"], &json!({}))
            .ok();
        nat()
    };
    for (when, table) in [("DEL", after_del), ("GC", after_gc)] {
        for line in shared {
            assert_eq!(
                table.lines().filter(|l| *l == line).count(),
                1,
                "after the last {when}: {line}\n{table}"
            );
        }
        assert!(!table.contains("CNI-DN-"), "after {when}:\n{table}");
    }
}

/// A node where the reference's portmap (Go, one iptables call per rule) and
/// ours share the nat table: while our DEL removes the last container again
/// and again, every one of 60 reference ADDs succeeds (a DEL of ours that
/// removed the shared chains could pull CNI-HOSTPORT-DNAT from under the
/// reference between its `-N` and its `-A`).
#[test]
fn reference_portmap_adds_all_succeed_while_our_dels_loop() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    const REFERENCE: &str = "/usr/lib/cni/portmap";
    assert!(
        std::path::Path::new(REFERENCE).exists(),
        "{REFERENCE} missing: install containernetworking-plugins (tests/install-deps.sh)"
    );
    enter_test_host();
    let bin = Arc::new(plugin_dir());
    let conf = |i: usize| {
        direct(
            json!({"backend": "iptables"}),
            &[&format!("10.40.{}.{}/16", i / 200, 2 + i % 200)],
            maps(&[(10000 + i as u16, 80, "tcp", "")]),
        )
    };
    let stop = Arc::new(AtomicBool::new(false));
    // How many reference ADDs have completed.
    let added = Arc::new(AtomicUsize::new(0));
    let (mine, theirs) = (conf(999), conf(0));
    // The shared chains exist before the reference starts, as on a node that
    // switches: otherwise its own check-then-create (`iptables -N`) can lose
    // to our first ADD creating them, which is its race, not our DEL's.
    for cmd in ["ADD", "DEL"] {
        let out = call(cmd, "ours", &mine, &bin);
        assert_eq!(out.status, 0, "our first {cmd}: {out:?}");
    }
    let ours = {
        let (stop, added, bin) = (stop.clone(), added.clone(), bin.clone());
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                let mut outcomes = vec![
                    call("ADD", "ours", &mine, &bin),
                    call("DEL", "ours", &mine, &bin),
                ];
                // The reference's newest (complete) attachment too: the table
                // is then left with no container at all.
                if let Some(newest) = added.load(Ordering::Relaxed).checked_sub(1) {
                    outcomes.push(call("DEL", &format!("ref-{newest}"), &theirs, &bin));
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
            "/run/netns/pm-none",
            &conf(i),
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
