//! Which netfilter tools an ADD or DEL runs: one save and one restore per
//! family on legacy iptables, none on iptables-nft (nf_tables netlink) and
//! with the nftables backend, for portmap and bridge's ipMasq together.

use super::*;

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

/// On an iptables-nft host (the real tools, not wrappers), an ADD, a CHECK
/// and a DEL of bridge (ipMasq, dual stack) + portmap exec nothing but
/// cnitool and the plugins: strace counts every execve of the whole process
/// tree.
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
    for verb in ["add", "check", "del"] {
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
