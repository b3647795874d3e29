//! GC removes the rules of unkept attachments only, on either backend.

use super::*;

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

/// On an iptables-nft host GC reads the nat table over netlink: no
/// `iptables-save` runs (strace sees every execve), and the unkept
/// attachment's rules go while the kept one's stay.
#[test]
fn on_iptables_nft_gc_reads_the_table_without_iptables_save() {
    use std::io::Write as _;
    enter_test_host();
    if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
        harness::skip(
            "on_iptables_nft_gc_reads_the_table_without_iptables_save",
            "iptables is not the nf_tables flavour",
        );
        return;
    }
    let bin = plugin_dir();
    let conf = |ip: &str, port: u16| {
        direct(
            json!({"name": "pm-gcx", "cniVersion": "1.1.0", "backend": "iptables"}),
            &[&format!("{ip}/24")],
            maps(&[(port, 80, "tcp", "")]),
        )
    };
    call("ADD", "ctr-a", &conf("10.42.0.2", 7201), &bin).ok();
    call("ADD", "ctr-b", &conf("10.42.0.3", 7202), &bin).ok();
    let c = json!({"cniVersion": "1.1.0", "name": "pm-gcx", "type": "portmap",
                   "backend": "iptables"});
    let gc = harness::Call::gc(
        "portmap",
        &c,
        Some(json!([{"containerID": "ctr-a", "ifname": "eth0"}])),
    )
    .path(&bin);
    let log = bin.0.join("execs");
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve", "-o"])
        .arg(&log)
        .arg(harness::BIN)
        .arg("portmap")
        .env_clear()
        .envs(&gc.env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("strace");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(gc.stdin.as_bytes())
        .expect("conf");
    Outcome::of(child).ok();
    let execs = std::fs::read_to_string(&log).expect("strace log");
    assert!(!execs.contains("-save\""), "GC ran a save: {execs}");
    let table = nat();
    assert!(table.contains("10.42.0.2:80"), "{table}");
    assert!(!table.contains("10.42.0.3:80"), "{table}");
    call("DEL", "ctr-a", &conf("10.42.0.2", 7201), &bin).ok();
}
