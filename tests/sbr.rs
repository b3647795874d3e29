//! sbr end to end: with two interfaces in one netns, replies from the second
//! interface's address leave by that interface (strict rp_filter on the host
//! drops them otherwise); rules and tables as the reference; DEL removes rules.

mod harness;

use harness::{
    Netns, Runtime, enter_test_host, peer_netns, plugin_dir, run_in, tcp_fetch, tcp_server,
};
use serde_json::json;

#[test]
fn replies_leave_by_the_interface_of_their_source_address() {
    enter_test_host();
    let s = Runtime::new("sbr");
    let net_a = json!({"cniVersion": "1.0.0", "name": "net-a", "plugins": [
        {"type": "bridge", "bridge": "cni-sa", "isGateway": true,
         "ipam": {"type": "host-local", "subnet": "10.81.0.0/24", "dataDir": s.store.0, "routes": [{"dst": "0.0.0.0/0"}]}}]});
    let net_b = json!({"cniVersion": "1.0.0", "name": "net-b", "plugins": [
        {"type": "bridge", "bridge": "cni-sb", "isGateway": true,
         "ipam": {"type": "host-local", "subnet": "10.82.0.0/24", "dataDir": s.store.0}},
        {"type": "sbr"}]});
    std::fs::write(s.conf.0.join("a.conflist"), net_a.to_string()).expect("conf");
    std::fs::write(s.conf.0.join("b.conflist"), net_b.to_string()).expect("conf");
    // A client at 192.0.2.2 behind the host; strict reverse-path filtering on the host.
    let client = peer_netns("to-cl");
    run_in(None, "sysctl", &["-w", "net.ipv4.conf.all.rp_filter=1"]);

    let ns = Netns::new();
    s.run(&["add", "net-a", ns.path()], &json!({})).ok();
    s.run(&["-i", "net1", "add", "net-b", ns.path()], &json!({}))
        .ok();
    tcp_server(ns.path(), 80, "hello");

    let rules = ns.sh("ip", &["rule"]);
    assert!(rules.contains("from 10.82.0.2 lookup 100"), "{rules}");
    let table = ns.sh("ip", &["route", "show", "table", "100"]);
    assert!(table.contains("default via 10.82.0.1 dev net1"), "{table}");
    assert!(table.contains("10.82.0.0/24 dev net1"), "{table}");
    let main = ns.sh("ip", &["route"]);
    assert!(
        !main.contains("net1"),
        "net1's routes moved out of main: {main}"
    );

    assert_eq!(
        tcp_fetch(Some(client.path()), "10.82.0.2:80").as_deref(),
        Some("hello"),
        "via net1"
    );
    assert_eq!(
        tcp_fetch(Some(client.path()), "10.81.0.2:80").as_deref(),
        Some("hello"),
        "via eth0"
    );

    // Without the rule, replies from 10.82.0.2 take eth0's default route and
    // the host's rp_filter drops them: the rule is what made it work.
    let rules_only = ns.sh("ip", &["rule"]);
    for line in rules_only.lines().filter(|l| l.contains("10.82.0.2")) {
        let spec: Vec<&str> = line.split_whitespace().skip(1).collect();
        let mut args = vec!["rule", "del"];
        args.extend(spec);
        ns.sh("ip", &args);
    }
    assert_eq!(
        tcp_fetch(Some(client.path()), "10.82.0.2:80"),
        None,
        "no rule: replies dropped"
    );
    s.run(&["-i", "net1", "del", "net-b", ns.path()], &json!({}))
        .ok();
    assert!(!ns.sh("ip", &["rule"]).contains("10.82.0.2"));
}

#[test]
fn a_fixed_table_gets_only_rules() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    ns.sh(
        "ip",
        &["link", "add", "eth0", "type", "veth", "peer", "name", "p0"],
    );
    ns.sh("ip", &["addr", "add", "10.83.0.5/24", "dev", "eth0"]);
    ns.sh("ip", &["link", "set", "p0", "up"]);
    ns.sh("ip", &["link", "set", "eth0", "up"]);
    let prev = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
                      "ips": [{"address": "10.83.0.5/24", "gateway": "10.83.0.1", "interface": 0}]});
    let conf = json!({"cniVersion": "1.0.0", "name": "sbr-t", "type": "sbr", "table": 500, "prevResult": prev});
    let out = harness::Call::new("sbr", "ADD", ns.path(), &conf.to_string())
        .path(&bin)
        .run()
        .ok();
    assert_eq!(out, prev, "output is prevResult");
    assert!(ns.sh("ip", &["rule"]).contains("from 10.83.0.5 lookup 500"));
    assert!(
        ns.sh("ip", &["route"]).contains("10.83.0.0/24 dev eth0"),
        "main table untouched"
    );
    harness::Call::new("sbr", "DEL", ns.path(), &conf.to_string())
        .path(&bin)
        .run()
        .ok();
    assert!(!ns.sh("ip", &["rule"]).contains("lookup 500"));
    harness::Call::new("sbr", "DEL", ns.path(), &conf.to_string())
        .path(&bin)
        .run()
        .ok();
}

/// A container with `eth0` (a veth end, up) holding `addrs`.
fn container_with_eth0(addrs: &[&str]) -> Netns {
    let ns = Netns::new();
    ns.sh(
        "ip",
        &["link", "add", "eth0", "type", "veth", "peer", "name", "p0"],
    );
    for a in addrs {
        ns.sh("ip", &["addr", "add", a, "dev", "eth0", "nodad"]);
    }
    ns.sh("ip", &["link", "set", "p0", "up"]);
    ns.sh("ip", &["link", "set", "eth0", "up"]);
    ns
}

fn sbr(cmd: &str, ns: &Netns, prev: &serde_json::Value) -> harness::Outcome {
    let conf = json!({"cniVersion": "1.0.0", "name": "sbr-t", "type": "sbr", "prevResult": prev});
    harness::Call::new("sbr", cmd, ns.path(), &conf.to_string())
        .path(&plugin_dir())
        .run()
}

#[test]
fn no_addresses_at_all_is_the_reference_error() {
    enter_test_host();
    let ns = container_with_eth0(&[]);
    let prev =
        json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}]});
    let e = sbr("ADD", &ns, &prev).err(7);
    assert_eq!(e["msg"], "No IP addresses supplied on interface: eth0");
    assert_eq!(ns.sh("ip", &["rule"]).lines().count(), 3, "no rule added");
}

#[test]
fn each_address_takes_a_table_no_rule_or_route_uses() {
    enter_test_host();
    let ns = container_with_eth0(&["10.86.0.5/24", "2001:db8:86::5/64"]);
    // Taken: 100 by an IPv4 rule, 101 by an IPv4 route, 102 by an IPv6
    // route, 104 by an IPv6 rule; none of them is eth0's.
    ns.sh("ip", &["rule", "add", "from", "192.0.2.9", "lookup", "100"]);
    ns.sh(
        "ip",
        &[
            "route",
            "add",
            "198.51.100.0/24",
            "dev",
            "p0",
            "table",
            "101",
        ],
    );
    ns.sh(
        "ip",
        &[
            "-6",
            "route",
            "add",
            "2001:db8:99::/64",
            "dev",
            "p0",
            "table",
            "102",
        ],
    );
    ns.sh(
        "ip",
        &[
            "-6",
            "rule",
            "add",
            "from",
            "2001:db8:98::1",
            "lookup",
            "104",
        ],
    );
    let prev = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
        "ips": [{"address": "10.86.0.5/24", "gateway": "10.86.0.1", "interface": 0},
                {"address": "2001:db8:86::5/64", "gateway": "2001:db8:86::1", "interface": 0}]});
    sbr("ADD", &ns, &prev).ok();
    let rules4 = ns.sh("ip", &["rule"]);
    assert!(rules4.contains("from 10.86.0.5 lookup 103"), "{rules4}");
    let rules6 = ns.sh("ip", &["-6", "rule"]);
    assert!(
        rules6.contains("from 2001:db8:86::5 lookup 105"),
        "{rules6}"
    );
    assert!(
        ns.sh("ip", &["route", "show", "table", "103"])
            .contains("default via 10.86.0.1 dev eth0")
    );
    assert!(
        ns.sh("ip", &["-6", "route", "show", "table", "105"])
            .contains("default via 2001:db8:86::1 dev eth0")
    );
    sbr("DEL", &ns, &prev).ok();
    assert!(!ns.sh("ip", &["rule"]).contains("10.86.0.5"));
    assert!(!ns.sh("ip", &["-6", "rule"]).contains("2001:db8:86::5"));
    assert!(ns.sh("ip", &["rule"]).contains("lookup 100"), "others kept");
}

#[test]
fn routes_of_the_link_itself_are_copied_into_every_table_then_leave_main() {
    enter_test_host();
    let ns = container_with_eth0(&["10.84.0.5/24", "10.84.0.6/24"]);
    // Routes with neither source nor gateway, one per family, and fe80::/64.
    ns.sh("ip", &["route", "add", "10.99.0.0/16", "dev", "eth0"]);
    ns.sh(
        "ip",
        &["-6", "route", "add", "2001:db8:99::/48", "dev", "eth0"],
    );
    let ll = ns.sh("ip", &["-6", "route", "show", "dev", "eth0"]);
    assert!(ll.contains("fe80::/64"), "{ll}");
    let prev = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
        "ips": [{"address": "10.84.0.5/24", "gateway": "10.84.0.1", "interface": 0},
                {"address": "10.84.0.6/24", "interface": 0}]});
    sbr("ADD", &ns, &prev).ok();
    let rules = ns.sh("ip", &["rule"]);
    assert!(rules.contains("from 10.84.0.5 lookup 100"), "{rules}");
    assert!(rules.contains("from 10.84.0.6 lookup 101"), "{rules}");
    for table in ["100", "101"] {
        let v4 = ns.sh("ip", &["route", "show", "table", table]);
        assert!(v4.contains("10.84.0.0/24 dev eth0"), "{table}: {v4}");
        assert!(v4.contains("10.99.0.0/16 dev eth0"), "{table}: {v4}");
        let v6 = ns.sh("ip", &["-6", "route", "show", "table", table]);
        assert!(v6.contains("fe80::/64 dev eth0"), "{table}: {v6}");
        assert!(v6.contains("2001:db8:99::/48 dev eth0"), "{table}: {v6}");
    }
    assert!(
        ns.sh("ip", &["route", "show", "table", "100"])
            .contains("default via 10.84.0.1 dev eth0")
    );
    assert!(
        !ns.sh("ip", &["route", "show", "table", "101"])
            .contains("default"),
        "no gateway, no default route"
    );
    let main4 = ns.sh("ip", &["route", "show", "table", "main"]);
    let main6 = ns.sh("ip", &["-6", "route", "show", "table", "main"]);
    assert!(!main4.contains("eth0"), "{main4}");
    assert!(!main6.contains("eth0"), "{main6}");
}

/// Any user who can open a netns file (a bind mount under /run/netns is 0444)
/// could flock it; the reference's sbr locks that file, so such a user held
/// every ADD and DEL of the pod for a minute and failed them. Ours locks a
/// file of its own that only root can reach.
#[test]
fn a_user_locking_the_netns_file_does_not_stall_sbr() {
    use std::io::BufRead;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    enter_test_host();
    let ns = container_with_eth0(&["10.87.0.5/24"]);
    let dir = harness::TempDir::new("sbr-lock");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let file = dir.0.join("pod-ns");
    std::fs::write(&file, "").expect("mount point");
    let file = file.to_str().expect("utf-8 path").to_string();
    run_in(None, "mount", &["--bind", ns.path(), &file]);
    struct Unmount(String);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _mounted = Unmount(file.clone());
    // The attacker: user nobody holds an exclusive flock on the netns file.
    let mut holder = std::process::Command::new("flock")
        .args(["-x", &file, "sh", "-c", "echo locked; sleep 120"])
        .uid(65534)
        .gid(65534)
        .current_dir("/")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("flock as nobody");
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line.trim(), "locked", "nobody holds the netns file's lock");

    let prev = json!({"cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "sandbox": &file}],
        "ips": [{"address": "10.87.0.5/24", "interface": 0}]});
    let conf = json!({"cniVersion": "1.0.0", "name": "sbr-t", "type": "sbr", "prevResult": prev});
    let call = |cmd: &str| {
        harness::Call::new("sbr", cmd, &file, &conf.to_string())
            .path(&plugin_dir())
            .run()
    };
    call("ADD").ok();
    assert!(
        ns.sh("ip", &["rule"]).contains("from 10.87.0.5 lookup 100"),
        "ADD ran while nobody held the netns file"
    );
    call("DEL").ok();
    assert!(!ns.sh("ip", &["rule"]).contains("10.87.0.5"), "DEL ran too");
    let _ = holder.kill();
    let _ = holder.wait();
}

/// CHECK checks nothing, as the reference's: it succeeds and changes nothing,
/// before ADD and after the rules ADD made are gone.
#[test]
fn check_succeeds_and_changes_nothing() {
    enter_test_host();
    let ns = container_with_eth0(&["10.87.0.5/24"]);
    let prev = json!({"cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
        "ips": [{"address": "10.87.0.5/24", "interface": 0}]});
    // IPv6 link-local routes come and go with DAD by themselves: left out.
    let state = || {
        [
            ns.sh("ip", &["rule"]),
            ns.sh("ip", &["-6", "rule"]),
            ns.sh("ip", &["route", "show", "table", "all"]),
            ns.sh("ip", &["-6", "route", "show", "table", "all"]),
        ]
        .join("\n")
        .lines()
        .filter(|l| !l.contains("fe80:"))
        .collect::<Vec<_>>()
        .join("\n")
    };
    let before = state();
    sbr("CHECK", &ns, &prev).ok();
    assert_eq!(state(), before, "CHECK before ADD changed nothing");
    sbr("ADD", &ns, &prev).ok();
    ns.sh("ip", &["rule", "del", "from", "10.87.0.5", "lookup", "100"]);
    let wrecked = state();
    sbr("CHECK", &ns, &prev).ok();
    assert_eq!(state(), wrecked, "CHECK after ADD changed nothing");
    sbr("DEL", &ns, &prev).ok();
}
