//! portmap end to end with the iptables backend: reachability from a client,
//! the host (localhost and its address), the container itself (hairpin), UDP,
//! hostIP; reference rule forms; DEL/GC restore the table; Go-written rules are
//! removed; execs per ADD; concurrency.

use crate::harness;

use harness::{
    Netns, Outcome, Runtime, TempDir, enter_test_host, first_ip, iptables_table, merged,
    nft_ruleset, peer_netns, plugin_dir, run_in, sha512_prefix, tcp_fetch, tcp_fetch_soon,
    tcp_server, udp_fetch, udp_server,
};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn nat() -> String {
    iptables_table("nat")
}

/// Whether a saved nat line is one of portmap's shared chains, their rules or
/// their jumps: the reference never removes them, nor do we.
fn is_shared(line: &str) -> bool {
    const SHARED: [&str; 3] = [
        "CNI-HOSTPORT-DNAT",
        "CNI-HOSTPORT-MASQ",
        "CNI-HOSTPORT-SETMARK",
    ];
    SHARED.iter().any(|c| {
        line.starts_with(&format!(":{c} "))
            || (["-A PREROUTING ", "-A OUTPUT ", "-A POSTROUTING "]
                .iter()
                .any(|p| line.starts_with(p))
                && line.ends_with(&format!("-j {c}")))
    }) || line.starts_with("-A CNI-HOSTPORT-MASQ ")
        || line.starts_with("-A CNI-HOSTPORT-SETMARK ")
}

/// The nat table without portmap's shared chains (which stay after the last
/// DEL): what must be as it was once every container is gone.
fn nat_but_shared() -> String {
    nat()
        .lines()
        .filter(|l| !is_shared(l))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ruleset() -> String {
    nft_ruleset()
}

/// bridge (hairpin) + portmap with `portmap_extra` keys, as `pm-net`.
fn network(portmap_extra: Value) -> Runtime {
    let rt = Runtime::new("pm");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "pm-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-pm0", "isGateway": true, "hairpinMode": true,
             "ipam": {"type": "host-local", "subnet": "10.40.0.0/24", "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            merged(json!({"type": "portmap", "capabilities": {"portMappings": true}}), portmap_extra)
        ]
    });
    rt.write_list("pm.conflist", &list);
    rt
}

fn maps(list: &[(u16, u16, &str, &str)]) -> Value {
    json!({"portMappings": list.iter().map(|(h, c, p, ip)| {
        let mut m = json!({"hostPort": h, "containerPort": c, "protocol": p});
        if !ip.is_empty() { m["hostIP"] = json!(ip); }
        m
    }).collect::<Vec<_>>()})
}

/// A client namespace at 192.0.2.2 reaching the host at 192.0.2.1.
fn client() -> Netns {
    peer_netns("to-client")
}

/// A container on `net` with a TCP, a UDP and a hostIP (192.0.2.1) mapping and a
/// server behind each; returns it, its mappings and its IP.
fn mapped_container(net: &Runtime) -> (Netns, Value, String) {
    let ns = Netns::new();
    let caps = maps(&[
        (8080, 80, "tcp", ""),
        (5353, 53, "udp", ""),
        (9090, 90, "tcp", "192.0.2.1"),
    ]);
    let out = net.run(&["add", "pm-net", ns.path()], &caps).ok();
    let ip = first_ip(&out);
    tcp_server(ns.path(), 80, "hello");
    tcp_server(ns.path(), 90, "ninety");
    udp_server(ns.path(), 53, "udp-hello");
    (ns, caps, ip)
}

/// The mappings of `mapped_container` answer from the client, the host
/// (localhost and its address) and the container itself (hairpin); the hostIP
/// one only on its IP.
fn assert_reachable(client: &Netns, ns: &Netns) {
    let hello = Some("hello".to_string());
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080"),
        hello,
        "client -> host port"
    );
    assert_eq!(
        udp_fetch(Some(client.path()), "192.0.2.1:5353"),
        Some("udp-hello".into()),
        "UDP"
    );
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:9090"),
        Some("ninety".into()),
        "hostIP mapping"
    );
    assert_eq!(
        tcp_fetch(None, "127.0.0.1:8080"),
        hello,
        "host via localhost"
    );
    assert_eq!(
        tcp_fetch(None, "192.0.2.1:8080"),
        hello,
        "host via its address"
    );
    assert_eq!(
        tcp_fetch(Some(ns.path()), "192.0.2.1:8080"),
        hello,
        "hairpin"
    );
    assert_eq!(
        tcp_fetch(None, "10.40.0.1:9090"),
        None,
        "hostIP mapping only on that IP"
    );
}

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

/// Wrappers for the netfilter tools that log each run, then run the real tool
/// (`run_real`) or fail; returns (their dir, the log, a PATH with them first).
/// Asked for their flavour (`-V`, not logged) they answer nf_tables when `tag`
/// says `nft`, else legacy, whose state needs iptables-save.
fn logging_wrappers(tag: &str, run_real: bool) -> (TempDir, std::path::PathBuf, String) {
    let flavour = if tag.contains("nft") {
        "nf_tables"
    } else {
        "legacy"
    };
    let wrappers = TempDir::new(tag);
    let log = wrappers.0.join("execs");
    for tool in [
        "iptables-save",
        "iptables-restore",
        "ip6tables-save",
        "ip6tables-restore",
        "iptables",
        "ip6tables",
        "nft",
    ] {
        let then = if run_real {
            let real = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {tool}"))
                .output()
                .expect("which");
            format!(
                "exec {} \"$@\"",
                String::from_utf8_lossy(&real.stdout).trim()
            )
        } else {
            "exit 1".to_string()
        };
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = -V ] && {{ echo '{tool} v1.8.9 ({flavour})'; exit 0; }}\n\
             echo {tool} >> '{}'\n{then}\n",
            log.display()
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
    (wrappers, log, path)
}

#[test]
fn one_add_runs_one_save_and_one_restore_per_family() {
    enter_test_host();
    let net = network(json!({}));
    // Not named like the nf_tables flavour: the state is read with iptables-save.
    let (_wrappers, log, path) = logging_wrappers("pm-wrap", true);
    let ns = Netns::new();
    let caps = maps(&[(8080, 80, "tcp", ""), (8081, 81, "udp", "")]);
    let child = net
        .command(&["add", "pm-net", ns.path()], &caps, Some(&path))
        .spawn()
        .expect("cnitool");
    Outcome::of(child).ok();
    let execs = std::fs::read_to_string(&log).unwrap_or_default();
    let count = |t: &str| execs.lines().filter(|l| *l == t).count();
    assert_eq!(count("iptables-restore"), 1, "{execs}");
    assert_eq!(count("iptables-save"), 1, "{execs}");
    assert_eq!(
        count("ip6tables-restore") + count("ip6tables-save"),
        0,
        "no IPv6 address: {execs}"
    );
    assert_eq!(
        count("iptables") + count("ip6tables"),
        0,
        "never one process per rule: {execs}"
    );
    let _ = std::fs::remove_file(&log);
    let child = net
        .command(&["del", "pm-net", ns.path()], &caps, Some(&path))
        .spawn()
        .expect("cnitool");
    Outcome::of(child).ok();
    let execs = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        execs.lines().filter(|l| l.ends_with("-restore")).count() <= 2,
        "{execs}"
    );
}

#[test]
fn with_iptables_nft_adds_and_dels_run_no_iptables_tool() {
    enter_test_host();
    if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
        harness::skip(
            "with_iptables_nft_adds_and_dels_run_no_iptables_tool",
            "iptables is not the nf_tables flavour",
        );
        return;
    }
    let net = network(json!({}));
    // The wrappers say they are the nf_tables flavour, as the real tools are
    // (xtables-nft-multi): the rules then go over netlink. (Elsewhere the
    // wrappers say legacy, whose rules go through iptables-restore.)
    let (_wrappers, log, path) = logging_wrappers("pm-wrap-nft", true);
    let before = nat_but_shared();
    let (a, b) = (Netns::new(), Netns::new());
    let ports = [
        maps(&[(8080, 80, "tcp", "")]),
        maps(&[(8081, 80, "tcp", "")]),
    ];
    // First ADD on an empty table (creates the shared chains), then a second.
    for (ns, caps) in [(&a, &ports[0]), (&b, &ports[1])] {
        let _ = std::fs::remove_file(&log);
        let child = net
            .command(&["add", "pm-net", ns.path()], caps, Some(&path))
            .spawn()
            .expect("cnitool");
        Outcome::of(child).ok();
        let execs = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(execs, "", "{}", ns.path());
    }
    let table = nat();
    for expected in [
        "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
        "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
        "-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ",
        "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE",
        "-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000",
    ] {
        assert_eq!(table.matches(expected).count(), 1, "{expected}\n{table}");
    }
    assert_eq!(table.matches("--dports 808").count(), 2, "{table}");
    for (ns, caps) in [(&a, &ports[0]), (&b, &ports[1])] {
        net.run(&["check", "pm-net", ns.path()], caps).ok();
        let _ = std::fs::remove_file(&log);
        let child = net
            .command(&["del", "pm-net", ns.path()], caps, Some(&path))
            .spawn()
            .expect("cnitool");
        Outcome::of(child).ok();
        let execs = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(execs, "", "{}", ns.path());
    }
    assert_eq!(
        nat_but_shared(),
        before,
        "the last DEL leaves the table as it found it, but for the shared chains"
    );
    // A DEL with nothing of the container's to remove reads the state over
    // netlink and starts no process at all.
    let _ = std::fs::remove_file(&log);
    let child = net
        .command(&["del", "pm-net", a.path()], &ports[0], Some(&path))
        .spawn()
        .expect("cnitool");
    Outcome::of(child).ok();
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default(), "");
}

/// bridge (isGateway, ipMasq, dual stack) + portmap (snat), as `pmq-net`,
/// both on the backend `backend` names.
fn masq_network(backend: &str) -> Runtime {
    let rt = Runtime::new("pmq");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "pmq-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-pmq0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": backend,
             "ipam": {"type": "host-local", "dataDir": "@STORE@", "ranges": [
                 [{"subnet": "10.46.0.0/24"}], [{"subnet": "fd46::/64"}]]}},
            {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true,
             "backend": backend}
        ]
    });
    rt.write_list("pmq.conflist", &list);
    rt
}

/// The nat tables of both families, without portmap's shared chains.
fn nat_tables_but_shared() -> String {
    let v6 = run_in(None, "ip6tables-save", &["-t", "nat"]);
    format!("{}\n{v6}", nat_but_shared())
        .lines()
        .filter(|l| !l.starts_with('#') && !is_shared(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs one `verb` of the masquerading network with the logging wrappers
/// first on PATH, and asserts that it started no iptables tool: with
/// iptables-nft both plugins write and delete their rules over netlink.
fn run_counting_tools(
    net: &Runtime,
    verb: &str,
    ns: &Netns,
    caps: &Value,
    (log, path): (&std::path::Path, &str),
) -> Value {
    let _ = std::fs::remove_file(log);
    let child = net
        .command(&[verb, "pmq-net", ns.path()], caps, Some(path))
        .spawn()
        .expect("cnitool");
    let out = Outcome::of(child).ok();
    let execs = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(execs, "", "{verb}: no restore, no save, no other tool");
    out
}

#[test]
fn bridge_ipmasq_and_portmap_add_run_no_iptables_tool() {
    enter_test_host();
    if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
        harness::skip(
            "bridge_ipmasq_and_portmap_add_run_no_iptables_tool",
            "iptables is not the nf_tables flavour",
        );
        return;
    }
    let net = masq_network("iptables");
    let (_wrappers, log, path) = logging_wrappers("pmq-wrap-nft", true);
    let before = nat_tables_but_shared();
    let caps = maps(&[(8080, 80, "tcp", ""), (5353, 53, "udp", "")]);
    let (a, b) = (Netns::new(), Netns::new());
    // The first ADD finds empty nat tables, the second portmap's shared chains.
    for ns in [&a, &b] {
        // Both plugins' rules below came over netlink.
        let out = run_counting_tools(&net, "add", ns, &caps, (&log, &path));
        let ips: Vec<String> = out["ips"]
            .as_array()
            .expect("ips")
            .iter()
            .map(|ip| {
                let a = ip["address"].as_str().expect("address");
                a.split('/').next().unwrap_or(a).to_string()
            })
            .collect();
        let tables = format!(
            "{}\n{}",
            nat(),
            run_in(None, "ip6tables-save", &["-t", "nat"])
        );
        for ip in &ips {
            let jump = format!("-A POSTROUTING -s {ip}/");
            assert_eq!(tables.matches(&jump).count(), 1, "{jump}\n{tables}");
            let dnat = format!(
                "--to-destination {}:80",
                if ip.contains(':') {
                    format!("[{ip}]")
                } else {
                    ip.clone()
                }
            );
            assert_eq!(tables.matches(&dnat).count(), 1, "{dnat}\n{tables}");
        }
    }
    for ns in [&a, &b] {
        net.run(&["check", "pmq-net", ns.path()], &caps).ok();
        net.run(&["del", "pmq-net", ns.path()], &caps).ok();
    }
    assert_eq!(nat_tables_but_shared(), before);
}

/// DEL finds the container's chains over nf_tables netlink and deletes its
/// entry rules and jumps by handle: no tool, for the first container's rules
/// (made with the shared chains) and the second's.
#[test]
fn bridge_ipmasq_and_portmap_del_run_no_iptables_tool() {
    enter_test_host();
    if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
        harness::skip(
            "bridge_ipmasq_and_portmap_del_run_no_iptables_tool",
            "iptables is not the nf_tables flavour",
        );
        return;
    }
    let net = masq_network("iptables");
    let (_wrappers, log, path) = logging_wrappers("pmq-del-wrap-nft", true);
    let before = nat_tables_but_shared();
    let caps = maps(&[(8081, 80, "tcp", ""), (5354, 53, "udp", "")]);
    let (a, b) = (Netns::new(), Netns::new());
    for ns in [&a, &b] {
        net.run(&["add", "pmq-net", ns.path()], &caps).ok();
    }
    for ns in [&a, &b] {
        run_counting_tools(&net, "del", ns, &caps, (&log, &path));
    }
    assert_eq!(nat_tables_but_shared(), before);
}

/// On an iptables-nft host (the real tools, not wrappers), an ADD and a DEL
/// of bridge (ipMasq, dual stack) + portmap exec nothing but cnitool and the
/// plugins: strace counts every execve of the whole process tree.
#[test]
fn bridge_ipmasq_and_portmap_on_iptables_nft_exec_no_iptables_process() {
    enter_test_host();
    if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
        harness::skip(
            "bridge_ipmasq_and_portmap_on_iptables_nft_exec_no_iptables_process",
            "iptables is not the nf_tables flavour",
        );
        return;
    }
    let net = masq_network("iptables");
    let caps = maps(&[(8082, 80, "tcp", ""), (5355, 53, "udp", "")]);
    let ns = Netns::new();
    let log = net.conf.0.join("execs");
    for verb in ["add", "del"] {
        let cnitool = net.command(&[verb, "pmq-net", ns.path()], &caps, None);
        let mut traced = Command::new("strace");
        traced
            .args(["-f", "-qq", "-e", "trace=execve", "-o"])
            .arg(&log)
            .arg(cnitool.get_program())
            .args(cnitool.get_args())
            .env_clear()
            .envs(cnitool.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let out = Outcome::of(traced.spawn().expect("strace"));
        if verb == "add" {
            let result = out.ok();
            assert_eq!(result["ips"].as_array().map(Vec::len), Some(2));
            let tables = format!(
                "{}\n{}",
                nat(),
                run_in(None, "ip6tables-save", &["-t", "nat"])
            );
            assert_eq!(tables.matches("-j MASQUERADE").count(), 4, "{tables}");
            assert_eq!(tables.matches("-j DNAT").count(), 4, "{tables}");
        } else {
            out.ok();
        }
        let execs = std::fs::read_to_string(&log).expect("strace log");
        let programs: Vec<&str> = execs
            .lines()
            .filter(|l| l.contains("execve(") && !l.contains("= -1"))
            .filter_map(|l| l.split('"').nth(1))
            .collect();
        assert!(!programs.is_empty(), "{execs}");
        assert!(
            programs.iter().all(|p| p.ends_with("/cni-multi")
                || p.ends_with("/bridge")
                || p.ends_with("/portmap")
                || p.ends_with("/host-local")),
            "{verb} ran a process that is no plugin: {programs:?}"
        );
    }
}

#[test]
fn bridge_ipmasq_and_portmap_with_nftables_run_no_iptables_tool() {
    enter_test_host();
    let net = masq_network("nftables");
    let (wrappers, log, _) = logging_wrappers("pmq-nft-wrap", false);
    // Only the wrappers on PATH: any netfilter tool run would be logged.
    let path = wrappers.0.to_string_lossy().into_owned();
    let before = ruleset();
    let caps = maps(&[(8080, 80, "tcp", ""), (5353, 53, "udp", "")]);
    let ns = Netns::new();
    let add = net
        .command(&["add", "pmq-net", ns.path()], &caps, Some(&path))
        .spawn()
        .expect("cnitool");
    let ip = first_ip(&Outcome::of(add).ok());
    let rules = ruleset();
    for expected in [
        format!("ip saddr {ip} ip daddr != 10.46.0.0/24 masquerade"),
        format!("tcp dport 8080 dnat to {ip}:80"),
        format!("udp dport 5353 dnat to {ip}:53"),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    let del = net
        .command(&["del", "pmq-net", ns.path()], &caps, Some(&path))
        .spawn()
        .expect("cnitool");
    Outcome::of(del).ok();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_default(),
        "",
        "no netfilter process"
    );
    assert_eq!(ruleset(), before);
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
fn bad_configs_are_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let prev = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.40.0.5/24"}]});
    for (extra, code) in [
        (json!({"markMasqBit": 32}), 7),
        (
            json!({"markMasqBit": 5, "externalSetMarkChain": "KUBE-MARK-MASQ"}),
            7,
        ),
        (json!({"externalSetMarkChain": "bad chain"}), 7),
        (
            json!({"conditionsV4": ["-s", "10.0.0.0/8"], "conditionsV6": ["ip6", "saddr", "::1"]}),
            7,
        ),
        (
            json!({"backend": "iptables", "conditionsV4": ["ip", "saddr", "1.2.3.4"]}),
            7,
        ),
        (
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 0, "containerPort": 80, "protocol": "tcp"}]}}),
            7,
        ),
        (
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "icmp"}]}}),
            7,
        ),
    ] {
        let mut c = json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap", "prevResult": prev,
                           "runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "tcp"}]}});
        if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        harness::Call::new("portmap", "ADD", "/run/netns/pm-none", &c.to_string())
            .path(&bin)
            .run()
            .err(code);
    }
    // Not chained: an error; chained without mappings: prevResult back, no rules.
    let before = nat();
    let c = json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap"});
    harness::Call::new("portmap", "ADD", "/run/netns/pm-none", &c.to_string())
        .path(&bin)
        .run()
        .err(7);
    let mut chained = c.clone();
    chained["prevResult"] = prev.clone();
    let out = harness::Call::new("portmap", "ADD", "/run/netns/pm-none", &chained.to_string())
        .path(&bin)
        .run()
        .ok();
    assert_eq!(out, prev);
    assert_eq!(nat(), before);
}

#[test]
fn nftables_backend_reachability_rules_and_del_restore_the_ruleset() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({"backend": "nftables"}));
    let before = ruleset();
    let (ns, caps, ip) = mapped_container(&net);
    assert_reachable(&client, &ns);
    let id = format!("cnitool-{}", sha512_prefix(ns.path(), 20));
    let rules = ruleset();
    for expected in [
        "table ip cni_hostport {".to_string(),
        "comment \"CNI portmap plugin\"".into(),
        format!("tcp dport 8080 dnat to {ip}:80 comment \"{id}\""),
        format!("ip daddr 192.0.2.1 tcp dport 9090 dnat to {ip}:90 comment \"{id}\""),
        format!("ip saddr {ip} ip daddr {ip} masquerade comment \"{id}\""),
        format!("ip saddr 127.0.0.1 ip daddr {ip} masquerade comment \"{id}\""),
        "fib daddr type local jump hostports_all".into(),
        "jump hostip_hostports".into(),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(ruleset(), before, "DEL leaves the ruleset as it was");
    assert_eq!(tcp_fetch(Some(client.path()), "192.0.2.1:8080"), None);
}

#[test]
fn nftables_backend_runs_no_process_and_cycles_leave_nothing() {
    enter_test_host();
    let net = network(json!({"backend": "nftables"}));
    let (wrappers, log, _) = logging_wrappers("pm-nft-wrap", false);
    // Only the wrappers on PATH: any netfilter tool run would be logged.
    let path = wrappers.0.to_string_lossy().into_owned();
    let before = ruleset();
    for i in 0..100u16 {
        let ns = Netns::new();
        let caps = maps(&[(8000 + i, 80, "tcp", ""), (9000 + i, 53, "udp", "")]);
        let add = net
            .command(&["add", "pm-net", ns.path()], &caps, Some(&path))
            .spawn()
            .expect("cnitool");
        Outcome::of(add).ok();
        if i == 0 {
            assert!(
                ruleset().contains("tcp dport 8000 dnat to"),
                "{}",
                ruleset()
            );
        }
        let del = net
            .command(&["del", "pm-net", ns.path()], &caps, Some(&path))
            .spawn()
            .expect("cnitool");
        Outcome::of(del).ok();
    }
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_default(),
        "",
        "no netfilter process"
    );
    assert_eq!(ruleset(), before);
}

#[test]
fn nftables_ipmasq_for_bridge() {
    enter_test_host();
    let (bin, store) = (plugin_dir(), TempDir::new("nft-masq"));
    let c = json!({
        "cniVersion": "1.0.0", "name": "nmasq", "type": "bridge", "bridge": "cni-nm0",
        "isGateway": true, "ipMasq": true, "ipMasqBackend": "nftables",
        "ipam": {"type": "host-local", "subnet": "10.41.0.0/24", "dataDir": store.0}
    });
    let before = ruleset();
    let ns = Netns::new();
    harness::Call::new("bridge", "ADD", ns.path(), &c.to_string())
        .set("CNI_CONTAINERID", "nm1")
        .path(&bin)
        .run()
        .ok();
    let rules = ruleset();
    let instance = format!(
        "{}-{}",
        sha512_prefix("nmasq", 16),
        sha512_prefix("eth0:nm1", 16)
    );
    for expected in [
        "table inet cni_plugins_masquerade {".to_string(),
        "comment \"Masquerading for plugins from github.com/containernetworking/plugins\"".into(),
        format!(
            "ip saddr 10.41.0.2 ip daddr != 10.41.0.0/24 masquerade comment \"{instance}, net: nmasq, if: eth0, id: nm1\""
        ),
        "ip daddr 224.0.0.0/4 return".into(),
        "ip6 daddr ff00::/8 return".into(),
        "goto masq_checks".into(),
    ] {
        assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    }
    let path = ns.path().to_string();
    ns.destroy();
    harness::Call::new("bridge", "DEL", &path, &c.to_string())
        .set("CNI_CONTAINERID", "nm1")
        .path(&bin)
        .run()
        .ok();
    assert_eq!(ruleset(), before);
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

/// An SCTP socket (one-to-one style); Err where the kernel has no SCTP.
fn sctp_socket() -> nix::Result<std::os::fd::OwnedFd> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType, socket};
    socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::Sctp,
    )
}

/// An SCTP server in `netns` on `port` answering every association with
/// `reply`; it lives as long as the test process (the thread blocks in accept).
fn sctp_server(netns: &str, port: u16, reply: &'static str) {
    use nix::sys::socket::{
        Backlog, MsgFlags, SockaddrIn, accept, bind, listen, send, setsockopt, sockopt,
    };
    use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
    let (tx, rx) = std::sync::mpsc::channel();
    let file = std::fs::File::open(netns).expect("open netns");
    std::thread::spawn(move || {
        nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
        let sock = sctp_socket().expect("SCTP socket");
        setsockopt(&sock, sockopt::ReuseAddr, &true).expect("SO_REUSEADDR");
        bind(
            sock.as_raw_fd(),
            &SockaddrIn::from(std::net::SocketAddrV4::new(
                std::net::Ipv4Addr::UNSPECIFIED,
                port,
            )),
        )
        .expect("bind sctp");
        listen(&sock, Backlog::new(8).expect("backlog")).expect("listen sctp");
        let _ = tx.send(());
        while let Ok(fd) = accept(sock.as_raw_fd()) {
            // SAFETY: accept(2) just returned this descriptor; nothing else owns it.
            let conn = unsafe { OwnedFd::from_raw_fd(fd) };
            let _ = send(conn.as_raw_fd(), reply.as_bytes(), MsgFlags::empty());
        }
    });
    rx.recv().expect("sctp server ready");
}

/// What an SCTP association from `netns` (None: the caller's) to `addr` reads
/// until the server closes it, if it is established within 3 s.
fn sctp_fetch(netns: Option<&str>, addr: &str) -> Option<String> {
    use nix::sys::socket::{MsgFlags, SockaddrIn, connect, recv, setsockopt, sockopt};
    use nix::sys::time::{TimeVal, TimeValLike};
    use std::os::fd::AsRawFd;
    let addr: std::net::SocketAddrV4 = addr.parse().expect("IPv4 socket address");
    harness::in_netns(netns, move || {
        let sock = sctp_socket().ok()?;
        // SO_SNDTIMEO bounds connect(2) for SCTP as for TCP.
        setsockopt(&sock, sockopt::SendTimeout, &TimeVal::seconds(3)).ok()?;
        setsockopt(&sock, sockopt::ReceiveTimeout, &TimeVal::seconds(3)).ok()?;
        connect(sock.as_raw_fd(), &SockaddrIn::from(addr)).ok()?;
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            match recv(sock.as_raw_fd(), &mut buf, MsgFlags::empty()) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) => return None,
            }
        }
        Some(String::from_utf8_lossy(&out).into_owned())
    })
}

/// SCTP mappings get the reference's rules everywhere; where the kernel has
/// SCTP (the stock-kernel lane requires it) an SCTP server in the container
/// answers through the mapped port, from a client and from the host's address,
/// and after DEL the port is no longer mapped.
#[test]
fn sctp_mappings_get_rules_and_are_reachable_where_the_kernel_has_sctp() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({}));
    let before = nat_but_shared();
    let ns = Netns::new();
    let caps = maps(&[(3868, 3868, "sctp", "")]);
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    let rules = nat();
    assert!(
        rules.contains("-p sctp -m sctp --dport 3868 -j DNAT --to-destination"),
        "{rules}"
    );
    assert!(
        rules.contains("-m multiport --dports 3868 -j CNI-DN-"),
        "{rules}"
    );
    let sctp = sctp_socket();
    if let Err(e) = sctp {
        harness::skip(
            "sctp_mappings_get_rules_and_are_reachable_where_the_kernel_has_sctp",
            &format!("kernel has no SCTP sockets ({e}); only the rules were checked"),
        );
    } else {
        drop(sctp);
        sctp_server(ns.path(), 3868, "sctp-hello");
        assert_eq!(
            sctp_fetch(Some(client.path()), "192.0.2.1:3868").as_deref(),
            Some("sctp-hello"),
            "client -> host SCTP port"
        );
        assert_eq!(
            sctp_fetch(None, "192.0.2.1:3868").as_deref(),
            Some("sctp-hello"),
            "host via its address"
        );
    }
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(
        nat_but_shared(),
        before,
        "DEL leaves the nat table as it was, but for the shared chains"
    );
    if sctp_socket().is_ok() {
        assert_eq!(
            sctp_fetch(Some(client.path()), "192.0.2.1:3868"),
            None,
            "no longer mapped after DEL"
        );
    }
}

/// containerd (go-cni) sends its PortMapping struct without JSON tags: the keys
/// arrive capitalised, and Go's decoder (so the reference) reads them.
#[test]
fn go_cased_mappings_as_containerd_sends_them_are_published_and_removed() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({}));
    let before = nat_but_shared();
    let ns = Netns::new();
    let caps = json!({"portMappings": [
        {"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""},
        {"HostPort": 5353, "ContainerPort": 53, "Protocol": "udp", "HostIP": ""},
        {"HostPort": 9090, "ContainerPort": 90, "Protocol": "tcp", "HostIP": "192.0.2.1"}]});
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    tcp_server(ns.path(), 80, "hello");
    tcp_server(ns.path(), 90, "ninety");
    udp_server(ns.path(), 53, "udp-hello");
    assert_reachable(&client, &ns);
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(
        nat_but_shared(),
        before,
        "DEL leaves the nat table as it was, but for the shared chains"
    );
}

/// A mapping that names no usable port (a key nobody reads, here `host_port`)
/// fails ADD with code 7 naming the entry, instead of publishing nothing while
/// the runtime believes the port is mapped; DEL of that config still succeeds.
#[test]
fn a_mapping_without_a_usable_host_port_fails_add_and_del_still_succeeds() {
    enter_test_host();
    let net = network(json!({}));
    let before = nat_but_shared();
    let bin = plugin_dir();
    let maps = json!([{"host_port": 8080, "containerPort": 80, "protocol": "tcp"}]);
    let c = json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap",
                   "runtimeConfig": {"portMappings": maps},
                   "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.40.0.5/24"}]}});
    let call = |command| {
        harness::Call::new("portmap", command, "/run/netns/pm-none", &c.to_string())
            .path(&bin)
            .run()
    };
    let err = call("ADD").err(7);
    let msg = err["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("runtimeConfig.portMappings[0]"), "{err}");
    call("DEL").ok();
    // The same through a runtime: the chain's ADD fails, its DEL cleans up.
    let ns = Netns::new();
    let caps = json!({"portMappings": maps});
    let add = net.run(&["add", "pm-net", ns.path()], &caps);
    assert!(
        add.status == 1 && add.stderr.contains("runtimeConfig.portMappings[0]"),
        "{add:?}"
    );
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    assert_eq!(nat_but_shared(), before);
    assert!(!run_in(None, "ip", &["-o", "link"]).contains("veth"));
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

/// A portmap config called directly (no runtime): `extra` keys, the
/// container's addresses as prevResult and its mappings.
fn direct(extra: Value, addresses: &[&str], mappings: Value) -> String {
    let ips: Vec<Value> = addresses.iter().map(|a| json!({"address": a})).collect();
    merged(
        json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap",
               "runtimeConfig": {"portMappings": mappings["portMappings"]},
               "prevResult": {"cniVersion": "1.0.0", "ips": ips}}),
        extra,
    )
    .to_string()
}

fn call(command: &str, id: &str, conf: &str, bin: &TempDir) -> Outcome {
    harness::Call::new("portmap", command, "/run/netns/pm-none", conf)
        .set("CNI_CONTAINERID", id)
        .path(bin)
        .run()
}

/// nft-syntax conditions are encoded over netlink (nft reads them back as
/// written) and gate the mapping: a source outside `ip saddr` is not
/// forwarded; one inside, arriving on the named interface, is; the host's own
/// traffic (no input interface) is not.
#[test]
fn nft_conditions_are_encoded_and_only_matching_traffic_is_forwarded() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let caps = maps(&[(8080, 80, "tcp", "")]);
    let net = network(json!({"conditionsV4": ["ip saddr 10.99.0.0/16"]}));
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected = format!("ip saddr 10.99.0.0/16 tcp dport 8080 dnat to {ip}:80");
    assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080"),
        None,
        "a source outside the condition's network is not forwarded"
    );
    assert_eq!(
        tcp_fetch(None, &format!("{ip}:80")).as_deref(),
        Some("hello"),
        "the server answers directly"
    );
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();

    let net = network(
        json!({"conditionsV4": ["ip", "saddr", "192.0.2.0/24", "iifname", "\"to-client\""]}),
    );
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected =
        format!("ip saddr 192.0.2.0/24 iifname \"to-client\" tcp dport 8080 dnat to {ip}:80");
    assert!(rules.contains(&expected), "missing {expected}\n{rules}");
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080").as_deref(),
        Some("hello"),
        "a source inside, on the named interface, is forwarded"
    );
    assert_eq!(
        tcp_fetch(None, "192.0.2.1:8080"),
        None,
        "the host's own connection has no input interface"
    );
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
}

/// A client namespace at fd00:c::2 reaching the host at fd00:c::1, with
/// duplicate address detection off so the addresses work at once.
fn client6() -> Netns {
    for key in ["all", "default"] {
        run_in(
            None,
            "sysctl",
            &["-qw", &format!("net.ipv6.conf.{key}.accept_dad=0")],
        );
    }
    run_in(None, "sysctl", &["-qw", "net.ipv6.conf.all.forwarding=1"]);
    let peer = Netns::new();
    let link = ["link", "add", "to-client6", "type", "veth", "peer", "name"];
    run_in(
        None,
        "ip",
        &[&link[..], &["p0", "netns", peer.path()]].concat(),
    );
    run_in(
        None,
        "ip",
        &["addr", "add", "fd00:c::1/64", "dev", "to-client6", "nodad"],
    );
    run_in(None, "ip", &["link", "set", "to-client6", "up"]);
    peer.sh("ip", &["addr", "add", "fd00:c::2/64", "dev", "p0", "nodad"]);
    peer.sh("ip", &["link", "set", "p0", "up"]);
    peer.sh("ip", &["link", "set", "lo", "up"]);
    peer.sh("ip", &["-6", "route", "add", "default", "via", "fd00:c::1"]);
    peer
}

/// bridge (IPv6 only) + portmap with nftables and these `conditionsV6`.
fn network6(conditions_v6: Value) -> Runtime {
    let rt = Runtime::new("pm6");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "pm-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-pm6", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "fd00:40::/64", "dataDir": "@STORE@",
                      "routes": [{"dst": "::/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": true},
             "backend": "nftables", "conditionsV6": conditions_v6}
        ]
    });
    rt.write_list("pm.conflist", &list);
    rt
}

/// The IPv6 twin of the test above: `conditionsV6` gate IPv6 traffic to the
/// mapping as `conditionsV4` gate IPv4.
#[test]
fn nft_conditions_v6_gate_ipv6_traffic_to_the_mapping() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client6();
    let caps = maps(&[(8080, 80, "tcp", "")]);
    let net = network6(json!(["ip6 saddr fd00:99::/64"]));
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    assert!(ip.starts_with("fd00:40::"), "{ip}");
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected = "ip6 saddr fd00:99::/64 tcp dport 8080 dnat";
    assert!(rules.contains(expected), "missing {expected}\n{rules}");
    assert_eq!(
        tcp_fetch(Some(client.path()), "[fd00:c::1]:8080"),
        None,
        "a source outside the condition's network is not forwarded"
    );
    assert_eq!(
        tcp_fetch(Some(client.path()), &format!("[{ip}]:80")).as_deref(),
        Some("hello"),
        "the server answers the client directly"
    );
    net.run(&["check", "pm-net", ns.path()], &caps).ok();
    net.run(&["del", "pm-net", ns.path()], &caps).ok();

    let net = network6(json!([
        "ip6",
        "saddr",
        "fd00:c::/64",
        "iifname",
        "\"to-client6\""
    ]));
    let ns = Netns::new();
    let ip = first_ip(&net.run(&["add", "pm-net", ns.path()], &caps).ok());
    tcp_server(ns.path(), 80, "hello");
    let rules = ruleset();
    let expected = "ip6 saddr fd00:c::/64 iifname \"to-client6\" tcp dport 8080 dnat";
    assert!(rules.contains(expected), "missing {expected}\n{rules}");
    // The first container had this address: the host may still hold a
    // reachable neighbour entry naming its MAC (IPv6 has no gratuitous ARP),
    // and would send the forwarded traffic there for up to ~45 s.
    run_in(None, "ip", &["-6", "neigh", "flush", "dev", "cni-pm6"]);
    assert_eq!(
        tcp_fetch_soon(Some(client.path()), "[fd00:c::1]:8080", 30).as_deref(),
        Some("hello"),
        "a source inside, on the named interface, is forwarded to {ip}"
    );
    assert_eq!(
        tcp_fetch(None, "[fd00:c::1]:8080"),
        None,
        "the host's own connection has no input interface"
    );
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
}

/// A condition cni-multi cannot encode is refused with code 7 naming its word
/// (never dropped, which would open the port to everyone), before any rule.
#[test]
fn nft_conditions_that_cannot_be_encoded_are_refused_naming_the_token() {
    enter_test_host();
    let bin = plugin_dir();
    let before = ruleset();
    let caps = maps(&[(8080, 80, "tcp", "")]);
    for (extra, token) in [
        (
            json!({"conditionsV4": ["ip saddr 10.0.0.0/8", "counter"]}),
            "\"counter\"",
        ),
        (
            json!({"conditionsV6": ["ip6 saddr fd00::/8 meta skuid 0"]}),
            "\"skuid\"",
        ),
        (json!({"conditionsV4": ["ip6 saddr fd00::/8"]}), "\"ip6\""),
        (
            json!({"conditionsV4": ["ip saddr { 10.0.0.1, 10.0.0.2 }"]}),
            "\"{\"",
        ),
        (
            json!({"conditionsV4": ["ip daddr 300.0.0.1"]}),
            "\"300.0.0.1\"",
        ),
    ] {
        let key = extra
            .as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default();
        let conf = direct(extra, &["10.40.0.5/24", "fd00:40::5/64"], caps.clone());
        let err = call("ADD", "ctr-1", &conf, &bin).err(7);
        let msg = err["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(token) && msg.contains(&key), "{err}");
    }
    assert_eq!(ruleset(), before, "nothing was written");
}

/// A host-IP mapping, in `hostip_hostports`, is consulted before any wildcard
/// mapping of the same port, whichever was added first (the reference appends
/// both to `hostports`, so an earlier wildcard would shadow it).
#[test]
fn nft_host_ip_mapping_is_not_shadowed_by_an_earlier_wildcard_on_the_same_port() {
    enter_test_host();
    run_in(None, "ip", &["link", "set", "lo", "up"]);
    let client = client();
    let net = network(json!({"backend": "nftables"}));
    let wild = Netns::new();
    let wild_caps = maps(&[(8080, 80, "tcp", "")]);
    net.run(&["add", "pm-net", wild.path()], &wild_caps).ok();
    tcp_server(wild.path(), 80, "wildcard");
    let pinned = Netns::new();
    let pinned_caps = maps(&[(8080, 80, "tcp", "192.0.2.1")]);
    net.run(&["add", "pm-net", pinned.path()], &pinned_caps)
        .ok();
    tcp_server(pinned.path(), 80, "host-ip");
    // The host-IP rule is in `hostip_hostports`, which `hostports_all` jumps to first.
    let rules = ruleset();
    let chain = rules
        .split("chain hostip_hostports {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .unwrap_or_default();
    assert!(chain.contains("ip daddr 192.0.2.1"), "{rules}");
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080").as_deref(),
        Some("host-ip"),
        "the host-IP mapping answers on its IP\n{}",
        ruleset()
    );
    assert_eq!(
        tcp_fetch(None, "10.40.0.1:8080").as_deref(),
        Some("wildcard"),
        "the wildcard answers on the host's other addresses"
    );
    net.run(&["check", "pm-net", pinned.path()], &pinned_caps)
        .ok();
    net.run(&["del", "pm-net", pinned.path()], &pinned_caps)
        .ok();
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080").as_deref(),
        Some("wildcard"),
        "without it, the wildcard takes the port"
    );
    net.run(&["del", "pm-net", wild.path()], &wild_caps).ok();
}

/// A second ADD of the same attachment replaces its rules: one set remains,
/// CHECK passes, and DEL removes them all.
#[test]
fn nft_second_add_of_the_same_attachment_leaves_exactly_one_set_of_rules() {
    enter_test_host();
    let bin = plugin_dir();
    let before = ruleset();
    let conf = direct(
        json!({"backend": "nftables"}),
        &["10.40.0.5/24"],
        maps(&[(8080, 80, "tcp", ""), (9090, 90, "tcp", "192.0.2.1")]),
    );
    let mine = || {
        let rules = ruleset();
        let lines: Vec<String> = rules
            .lines()
            .filter(|l| l.contains("comment \"ctr-1\""))
            .map(|l| l.trim().to_string())
            .collect();
        lines
    };
    call("ADD", "ctr-1", &conf, &bin).ok();
    let first = mine();
    // Two DNAT rules and the two masquerade rules (hairpin, localhost).
    assert_eq!(first.len(), 4, "{first:?}");
    call("ADD", "ctr-1", &conf, &bin).ok();
    let mut second = mine();
    assert_eq!(second.len(), 4, "{second:?}\n{}", ruleset());
    let mut first = first;
    first.sort();
    second.sort();
    assert_eq!(first, second);
    call("CHECK", "ctr-1", &conf, &bin).ok();
    call("DEL", "ctr-1", &conf, &bin).ok();
    assert!(mine().is_empty());
    assert_eq!(ruleset(), before);
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

/// Loads conntrack entries into the calling thread's namespace: one conntrack(8)
/// command a line (`-I …`), in one run (`-R`) so thousands take a moment.
fn conntrack_load(commands: &[String]) {
    let dir = TempDir::new("ct");
    let file = dir.0.join("entries");
    std::fs::write(&file, commands.join("\n") + "\n").expect("write conntrack commands");
    run_in(
        None,
        "conntrack",
        &["-R", file.to_str().expect("utf-8 path")],
    );
}

/// `-I` of a UDP (or `tcp`) entry to `dport` of the test's own sources, which
/// nothing else in the namespace uses.
fn ct_entry(family: &str, proto: &str, src: &str, sport: u16, dport: u16) -> String {
    let dst = if family == "ipv6" {
        "fd77::2"
    } else {
        "192.0.2.1"
    };
    let state = if proto == "tcp" {
        " --state ESTABLISHED"
    } else {
        ""
    };
    format!("-I -p {proto} -s {src} -d {dst} --sport {sport} --dport {dport} --timeout 600{state}")
}

/// `n` UDP entries to ports 6000-6999 from 10.77.x.y: what a busy node holds.
fn unrelated_udp(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let src = format!("10.77.{}.{}", i / 250, i % 250 + 1);
            ct_entry(
                "ipv4",
                "udp",
                &src,
                30000 + (i % 1000) as u16,
                6000 + (i % 1000) as u16,
            )
        })
        .collect()
}

/// The original tuples of the test's entries (sources 10.77.0.0/16, fd77::/16)
/// in both families: `udp src=… dst=… sport=… dport=…`.
fn test_conntrack_tuples() -> std::collections::BTreeSet<String> {
    let keys = ["src=", "dst=", "sport=", "dport="];
    ["ipv4", "ipv6"]
        .iter()
        .flat_map(|f| {
            run_in(None, "conntrack", &["-L", "-f", f])
                .lines()
                .map(|line| {
                    let mut words = line.split_whitespace();
                    let proto = words.next().unwrap_or_default().to_string();
                    let orig: Vec<&str> = words
                        .filter(|w| keys.iter().any(|k| w.starts_with(k)))
                        .take(4)
                        .collect();
                    format!("{proto} {}", orig.join(" "))
                })
                .collect::<Vec<_>>()
        })
        .filter(|t| t.contains("src=10.77.") || t.contains("src=fd77:"))
        .collect()
}

#[test]
fn a_udp_mapping_removes_exactly_the_conntrack_entries_of_its_host_port() {
    enter_test_host();
    let net = network(json!({}));
    let mut entries = unrelated_udp(2000);
    let stale: Vec<String> = (1..=3)
        .map(|i| ct_entry("ipv4", "udp", &format!("10.77.200.{i}"), 40000 + i, 5454))
        .collect();
    entries.extend(stale.iter().cloned());
    // Near misses: the port as source, TCP to it, and IPv6 to it (the container
    // has IPv4 only: the reference flushes the families of its addresses).
    entries.push(ct_entry("ipv4", "udp", "10.77.201.1", 5454, 6000));
    entries.push(ct_entry("ipv4", "tcp", "10.77.201.2", 40000, 5454));
    entries.push(ct_entry("ipv6", "udp", "fd77::1", 40000, 5454));
    conntrack_load(&entries);
    let before = test_conntrack_tuples();
    assert_eq!(before.len(), 2006, "entries loaded");
    let ns = Netns::new();
    net.run(
        &["add", "pm-net", ns.path()],
        &maps(&[(5454, 53, "udp", "")]),
    )
    .ok();
    let after = test_conntrack_tuples();
    let gone: Vec<&String> = before.difference(&after).collect();
    assert_eq!(gone.len(), 3, "removed: {gone:#?}");
    assert!(
        gone.iter()
            .all(|t| t.starts_with("udp src=10.77.200.") && t.ends_with("dport=5454")),
        "removed: {gone:#?}"
    );
    assert!(
        after.is_subset(&before),
        "nothing new among the test's entries"
    );
}

/// DEL drops the UDP conntrack entries to its mappings' host ports (as the
/// reference's DEL): a host port a new pod takes over would otherwise keep
/// sending to the old pod until the entries expire. TCP, and other ports, stay.
#[test]
fn del_removes_the_conntrack_entries_of_its_udp_host_ports() {
    enter_test_host();
    let net = network(json!({}));
    let ns = Netns::new();
    let caps = maps(&[(5455, 53, "udp", ""), (5456, 80, "tcp", "")]);
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    // Flows to the mapped ports, loaded after ADD (whose flush would take them).
    let mut entries: Vec<String> = (1..=3)
        .map(|i| ct_entry("ipv4", "udp", &format!("10.77.202.{i}"), 40000 + i, 5455))
        .collect();
    entries.push(ct_entry("ipv4", "tcp", "10.77.203.1", 40000, 5456));
    entries.push(ct_entry("ipv4", "udp", "10.77.203.2", 40000, 5457));
    conntrack_load(&entries);
    let before = test_conntrack_tuples();
    assert_eq!(before.len(), 5, "entries loaded: {before:#?}");
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    let after = test_conntrack_tuples();
    let gone: Vec<&String> = before.difference(&after).collect();
    assert_eq!(gone.len(), 3, "removed: {gone:#?}");
    assert!(
        gone.iter()
            .all(|t| t.starts_with("udp src=10.77.202.") && t.ends_with("dport=5455")),
        "removed: {gone:#?}"
    );
}

/// A namespace without conntrack entries is not dumped (each dump walks the
/// host's whole hash table); one with entries is.
#[test]
fn the_udp_conntrack_flush_skips_the_dump_when_the_table_is_empty() {
    use cni_multi::netlink::conntrack::delete_by_dport;
    enter_test_host();
    // conntrack(8) loads the module (and its per-namespace count) if missing.
    let _ = std::process::Command::new("conntrack").arg("-C").output();
    let ns = Netns::new();
    let ipv4 = nix::libc::NFPROTO_IPV4 as u8;
    let done = harness::in_netns(Some(ns.path()), move || delete_by_dport(ipv4, 17, &[5460]))
        .expect("delete in an empty table");
    assert!(done.table_empty, "{done:?}");
    assert_eq!((done.received, done.deleted), (0, 0));
    let path = ns.path().to_string();
    harness::in_netns(Some(&path), || {
        conntrack_load(&[ct_entry("ipv4", "udp", "10.77.201.1", 40000, 5460)]);
    });
    let done = harness::in_netns(Some(ns.path()), move || delete_by_dport(ipv4, 17, &[5460]))
        .expect("delete in a table with an entry");
    assert!(!done.table_empty, "{done:?}");
    // A filtered flush does not say how many it deleted: the table does.
    assert!(done.flushed || done.deleted == 1, "{done:?}");
    let left = harness::in_netns(Some(&path), test_conntrack_tuples);
    assert!(left.is_empty(), "{left:#?}");
}

#[test]
fn the_udp_conntrack_flush_receives_only_the_matching_entries() {
    use cni_multi::netlink::conntrack::{Dump, delete_by_dport_with};
    enter_test_host();
    let mut entries = unrelated_udp(2000);
    for (i, port) in [5454u16, 5454, 5454, 5455, 5455, 5456, 5456]
        .iter()
        .enumerate()
    {
        entries.push(ct_entry(
            "ipv4",
            "udp",
            &format!("10.77.200.{}", i + 1),
            40000,
            *port,
        ));
    }
    conntrack_load(&entries);
    let ipv4 = nix::libc::NFPROTO_IPV4 as u8;
    // Kernel-filtered dump: only the five entries to delete cross the socket.
    let done =
        delete_by_dport_with(Dump::Filtered, ipv4, 17, &[5454, 5455]).expect("filtered delete");
    assert!(done.filtered, "the kernel took the filter: {done:?}");
    assert_eq!((done.received, done.deleted), (5, 5), "{done:?}");
    // The full dump (the fallback) removes the same kind of entries, reading all.
    let done = delete_by_dport_with(Dump::Full, ipv4, 17, &[5456]).expect("full dump delete");
    assert!(!done.filtered);
    assert_eq!(done.deleted, 2, "{done:?}");
    assert!(done.received >= 2000, "{done:?}");
    let left = test_conntrack_tuples();
    assert_eq!(left.len(), 2000, "only the unrelated entries stay");
    assert!(left.iter().all(|t| !t.contains("dport=545")), "{left:#?}");
}

/// The default way (a filtered flush where the kernel takes it, else the
/// filtered dump) deletes exactly the entries to the ports, of the family, in
/// every zone, as the reference's per-entry deletes do.
#[test]
fn the_udp_conntrack_flush_deletes_only_the_ports_entries() {
    use cni_multi::netlink::conntrack::delete_by_dport;
    enter_test_host();
    let mut entries = unrelated_udp(300);
    for (i, port) in [5457u16, 5457, 5458].iter().enumerate() {
        entries.push(ct_entry(
            "ipv4",
            "udp",
            &format!("10.77.203.{}", i + 1),
            40000,
            *port,
        ));
    }
    // The same port over TCP, over IPv6, and UDP in another zone.
    entries.push(ct_entry("ipv4", "tcp", "10.77.203.9", 40000, 5457));
    entries.push(ct_entry("ipv6", "udp", "fd77::9", 40000, 5457));
    entries.push(ct_entry("ipv4", "udp", "10.77.203.10", 40000, 5457) + " --zone 7");
    conntrack_load(&entries);
    let ipv4 = nix::libc::NFPROTO_IPV4 as u8;
    let done = delete_by_dport(ipv4, 17, &[5457, 5458]).expect("delete");
    assert!(done.flushed || done.deleted == 4, "{done:?}");
    let left = test_conntrack_tuples();
    assert_eq!(left.len(), 302, "{left:#?}");
    assert!(
        left.iter()
            .filter(|t| t.contains("dport=5457") || t.contains("dport=5458"))
            .all(|t| t.starts_with("tcp ") || t.contains("fd77::9")),
        "{left:#?}"
    );
}

/// CHECK validates as ADD does: every config or capability ADD refuses, CHECK
/// refuses with the same code and message, even with the container's rules in
/// place (a CHECK that skipped the validation would find them and pass).
#[test]
fn check_refuses_every_config_add_refuses_with_the_same_error() {
    enter_test_host();
    let bin = plugin_dir();
    let good = direct(json!({}), &["10.40.0.5/24"], maps(&[(8080, 80, "tcp", "")]));
    call("ADD", "ctr-1", &good, &bin).ok();
    call("CHECK", "ctr-1", &good, &bin).ok();
    let mapping = |m: Value| json!({"runtimeConfig": {"portMappings": [m]}});
    let other_ifname = json!({"prevResult": {"cniVersion": "1.0.0",
        "interfaces": [{"name": "eth1", "sandbox": "/run/netns/pm-none"}],
        "ips": [{"address": "10.40.0.5/24", "interface": 0}]}});
    for extra in [
        mapping(json!({"hostPort": 0, "containerPort": 80, "protocol": "tcp"})),
        mapping(json!({"hostPort": 70000, "containerPort": 80, "protocol": "tcp"})),
        mapping(json!({"hostPort": 8080, "containerPort": 0, "protocol": "tcp"})),
        mapping(json!({"host_port": 8080, "containerPort": 80, "protocol": "tcp"})),
        mapping(json!({"hostPort": 8080, "containerPort": 80, "protocol": "icmp"})),
        mapping(json!({"hostPort": 8080, "containerPort": 80, "hostIP": "bogus"})),
        json!({"markMasqBit": 32}),
        json!({"markMasqBit": 5, "externalSetMarkChain": "KUBE-MARK-MASQ"}),
        json!({"externalSetMarkChain": "bad chain"}),
        json!({"backend": "ebtables"}),
        json!({"conditionsV4": ["-s", "10.0.0.0/8"], "conditionsV6": ["ip6", "saddr", "::1"]}),
        json!({"backend": "iptables", "conditionsV4": ["ip", "saddr", "1.2.3.4"]}),
        json!({"conditionsV4": ["-s", "10.0.0.0/8\n-A x"]}),
        json!({"conditionsV4": ["ip saddr 10.0.0.0/8", "counter"]}),
        other_ifname,
        json!({"prevResult": null}),
    ] {
        let conf = merged(serde_json::from_str(&good).expect("json"), extra.clone()).to_string();
        let add = call("ADD", "ctr-2", &conf, &bin);
        assert_eq!(add.status, 1, "ADD took {extra}: {add:?}");
        let refused = add.json();
        let check = call("CHECK", "ctr-1", &conf, &bin);
        assert_eq!(check.status, 1, "CHECK took {extra}: {check:?}");
        assert_eq!(check.json(), refused, "{extra}");
    }
    call("DEL", "ctr-1", &good, &bin).ok();
}

/// GC of one backend: three attachments of `pm-gc` and one of `pm-other`. GC
/// without a valid list changes nothing; GC keeping ctr-a removes ctr-b's and
/// ctr-d's rules (and with nftables their records) only; DEL after GC succeeds.
fn gc_removes_only_the_unkept_attachment(backend: &str, rules: impl Fn() -> String) {
    let bin = plugin_dir();
    let data = TempDir::new("pm-gc");
    let attachments = [
        ("pm-gc", "ctr-a", "10.41.0.2", 7101),
        ("pm-gc", "ctr-b", "10.41.0.3", 7102),
        ("pm-other", "ctr-c", "10.41.0.4", 7103),
        ("pm-gc", "ctr-d", "10.41.0.5", 7104),
    ];
    let conf = |net: &str, ip: &str, port: u16| {
        direct(
            json!({"name": net, "cniVersion": "1.1.0", "backend": backend, "dataDir": data.0}),
            &[&format!("{ip}/24")],
            maps(&[(port, 80, "tcp", "")]),
        )
    };
    for (net, id, ip, port) in attachments {
        call("ADD", id, &conf(net, ip, port), &bin).ok();
    }
    let record = |id: &str| harness::has_record(&data.0, id, "eth0");
    let gc = |valid: Option<Value>| {
        let c = json!({"cniVersion": "1.1.0", "name": "pm-gc", "type": "portmap",
                       "backend": backend, "dataDir": data.0});
        harness::Call::gc("portmap", &c, valid)
            .path(&bin)
            .run()
            .ok();
    };
    let before = rules();
    gc(None);
    assert_eq!(rules(), before, "GC without a valid list changes nothing");
    gc(Some(json!([{"containerID": "ctr-a", "ifname": "eth0"}])));
    let after = rules();
    for (_, id, ip, port) in attachments {
        let kept = !["ctr-b", "ctr-d"].contains(&id);
        assert_eq!(after.contains(ip), kept, "{id}\n{after}");
        assert_eq!(after.contains(&port.to_string()), kept, "{id}\n{after}");
        if backend == "nftables" {
            assert_eq!(record(id), kept, "{id}'s record");
        }
    }
    for (net, id, ip, port) in attachments {
        call("DEL", id, &conf(net, ip, port), &bin).ok();
    }
    let left = rules();
    assert!(!left.contains("10.41.0."), "{left}");
    for (_, id, ..) in attachments {
        assert!(!record(id), "{id}'s record");
    }
}

#[test]
fn gc_removes_the_rules_of_unkept_attachments_iptables() {
    enter_test_host();
    gc_removes_only_the_unkept_attachment("iptables", nat);
}

#[test]
fn gc_removes_the_rules_of_unkept_attachments_nftables() {
    enter_test_host();
    gc_removes_only_the_unkept_attachment("nftables", ruleset);
}
