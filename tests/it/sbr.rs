//! sbr end to end: with two interfaces in one netns, replies from the second
//! interface's address leave by that interface (strict rp_filter on the host
//! drops them otherwise); rules and tables as the reference; DEL removes rules.

use crate::harness;

use harness::{
    Netns, Runtime, bridge_host_local, enter_test_host, peer_netns, plugin_dir, run_in, tcp_fetch,
    tcp_server, with_default_route,
};
use serde_json::json;

#[test]
fn replies_leave_by_the_interface_of_their_source_address() {
    enter_test_host();
    let s = Runtime::new("sbr");
    let store = &s.store.0.to_string_lossy();
    let net_a = json!({"cniVersion": "1.0.0", "name": "net-a", "plugins": [
        with_default_route(bridge_host_local("cni-sa", "10.81.0.0/24", store))]});
    let net_b = json!({"cniVersion": "1.0.0", "name": "net-b", "plugins": [
        bridge_host_local("cni-sb", "10.82.0.0/24", store),
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
        // Its own group, so that killing it also ends its `sh` and `sleep`,
        // which hold every fd this test inherited (the build lock's too).
        .process_group(0)
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
    let group = nix::unistd::Pid::from_raw(holder.id() as i32);
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
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

/// The reference's test setup (createDefaultStatus), with veths for its
/// dummies (this kernel may lack the dummy driver): `eth0`
/// (10.0.0.2/24; 10.2.0.0/24 via 10.0.0.5, default via 10.0.0.1) and `net1`
/// with `net1_addrs` and `net1_routes` (the reference's: 192.168.1.209/24;
/// 192.168.2.0/24 via 192.168.1.2).
fn default_status(net1_addrs: &[&str], net1_routes: &[&str]) -> Netns {
    let ns = Netns::new();
    let dev = |name: &str, addrs: &[&str], routes: &[&str]| {
        let peer = format!("p-{name}");
        ns.sh(
            "ip",
            &["link", "add", name, "type", "veth", "peer", "name", &peer],
        );
        ns.sh("ip", &["link", "set", &peer, "up"]);
        ns.sh("ip", &["link", "set", name, "up"]);
        for a in addrs {
            ns.sh("ip", &["addr", "add", a, "dev", name, "nodad"]);
        }
        for r in routes {
            let mut args = vec!["route", "add"];
            args.extend(r.split_whitespace());
            args.extend(["dev", name]);
            ns.sh("ip", &args);
        }
    };
    dev(
        "eth0",
        &["10.0.0.2/24"],
        &["10.2.0.0/24 via 10.0.0.5", "default via 10.0.0.1"],
    );
    dev("net1", net1_addrs, net1_routes);
    ns
}

/// ADD (or `cmd`) of sbr on `net1` with the reference's 0.3.0 config plus `keys`.
fn sbr_net1(
    cmd: &str,
    ns: &Netns,
    keys: serde_json::Value,
    ips: serde_json::Value,
) -> harness::Outcome {
    let prev = json!({"cniVersion": "0.3.0",
        "interfaces": [{"name": "net1", "sandbox": ns.path()}], "ips": ips, "routes": []});
    let mut conf = json!({"cniVersion": "0.3.0", "name": "cni-plugin-sbr-test", "type": "sbr", "prevResult": prev});
    for (k, v) in keys.as_object().expect("keys").clone() {
        conf[k] = v;
    }
    harness::Call::new("sbr", cmd, ns.path(), &conf.to_string())
        .path(&plugin_dir())
        .set("CNI_IFNAME", "net1")
        .run()
}

/// The rules sbr may have added: those not of the kernel's tables.
fn our_rules(ns: &Netns) -> Vec<String> {
    [ns.sh("ip", &["rule"]), ns.sh("ip", &["-6", "rule"])]
        .join("\n")
        .lines()
        .filter(|l| {
            !["local", "main", "default"]
                .iter()
                .any(|t| l.ends_with(&format!("lookup {t}")))
        })
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn works_with_static_ipv4_gateway_configuration() {
    enter_test_host();
    let ns = default_status(&["192.168.1.209/24"], &["192.168.2.0/24 via 192.168.1.2"]);
    let ips = json!([{"version": "4", "address": "192.168.1.209/24", "gateway": "192.168.1.1", "interface": 0}]);
    sbr_net1("ADD", &ns, json!({"gateways": ["192.168.1.254"]}), ips).ok();
    let rules = our_rules(&ns);
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(
        rules[0].contains("from 192.168.1.209 lookup 100"),
        "{rules:?}"
    );
    let table = ns.sh("ip", &["route", "show", "table", "100"]);
    assert!(
        table.contains("default via 192.168.1.254 dev net1"),
        "{table}"
    );
    assert!(
        !table.contains("192.168.1.1 "),
        "not prevResult's gateway: {table}"
    );
}

#[test]
fn works_with_static_ipv6_gateway_configuration() {
    enter_test_host();
    let ns = default_status(&["fd00::10/64"], &[]);
    let ips = json!([{"version": "6", "address": "fd00::10/64", "gateway": "fd00::ffff", "interface": 0}]);
    sbr_net1("ADD", &ns, json!({"gateways": ["fd00::1"]}), ips).ok();
    let rules = our_rules(&ns);
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(rules[0].contains("from fd00::10 lookup 100"), "{rules:?}");
    let table = ns.sh("ip", &["-6", "route", "show", "table", "100"]);
    assert!(table.contains("default via fd00::1 dev net1"), "{table}");
    assert!(
        !table.contains("fd00::ffff"),
        "not prevResult's gateway: {table}"
    );
}

#[test]
fn works_with_dual_stack_static_gateway_configuration() {
    enter_test_host();
    let ns = default_status(
        &["192.168.1.209/24", "fd00::10/64"],
        &["192.168.2.0/24 via 192.168.1.2"],
    );
    let ips = json!([
        {"version": "4", "address": "192.168.1.209/24", "gateway": "192.168.1.1", "interface": 0},
        {"version": "6", "address": "fd00::10/64", "gateway": "fd00::ffff", "interface": 0}]);
    sbr_net1(
        "ADD",
        &ns,
        json!({"gateways": ["192.168.1.254", "fd00::1"]}),
        ips,
    )
    .ok();
    let rules = our_rules(&ns);
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert!(
        rules
            .iter()
            .any(|r| r.contains("from 192.168.1.209 lookup 100")),
        "{rules:?}"
    );
    assert!(
        rules.iter().any(|r| r.contains("from fd00::10 lookup 101")),
        "{rules:?}"
    );
    let v4 = ns.sh("ip", &["route", "show", "table", "100"]);
    assert!(v4.contains("default via 192.168.1.254 dev net1"), "{v4}");
    let v6 = ns.sh("ip", &["-6", "route", "show", "table", "101"]);
    assert!(v6.contains("default via fd00::1 dev net1"), "{v6}");
}

#[test]
fn rejects_multiple_ipv4_gateways() {
    enter_test_host();
    let ns = default_status(&["192.168.1.209/24"], &["192.168.2.0/24 via 192.168.1.2"]);
    let main = ns.sh("ip", &["route"]);
    let ips = json!([{"version": "4", "address": "192.168.1.209/24", "gateway": "192.168.1.1", "interface": 0}]);
    let e = sbr_net1(
        "ADD",
        &ns,
        json!({"gateways": ["192.168.1.1", "192.168.1.254"]}),
        ips,
    )
    .err(7);
    let msg = e["msg"].as_str().expect("msg");
    assert!(msg.contains("multiple IPv4 addresses"), "{msg}");
    assert!(our_rules(&ns).is_empty(), "nothing added");
    assert_eq!(ns.sh("ip", &["route"]), main, "main untouched");
}

#[test]
fn works_with_add_source_hints_enabled() {
    enter_test_host();
    let ns = default_status(&["192.168.1.209/24"], &["192.168.2.0/24 via 192.168.1.2"]);
    let ips = json!([{"version": "4", "address": "192.168.1.209/24", "gateway": "192.168.1.1", "interface": 0}]);
    sbr_net1("ADD", &ns, json!({"addSourceHints": true}), ips).ok();
    let rules = our_rules(&ns);
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(
        rules[0].contains("from 192.168.1.209 lookup 100"),
        "{rules:?}"
    );
    let main = ns.sh("ip", &["route", "show", "table", "main", "dev", "net1"]);
    let subnet = main
        .lines()
        .find(|l| l.starts_with("192.168.1.0/24 "))
        .unwrap_or_else(|| panic!("subnet route kept in main: {main}"));
    assert!(subnet.contains("scope link"), "{subnet}");
    assert!(
        subnet.contains("src 192.168.1.209"),
        "source hint: {subnet}"
    );
    assert!(
        !main.contains("192.168.2.0/24"),
        "non-link-scope routes leave main: {main}"
    );
    let table = ns.sh("ip", &["route", "show", "table", "100"]);
    assert!(table.contains("192.168.1.0/24 dev net1"), "{table}");
    assert!(
        table.contains("192.168.2.0/24 via 192.168.1.2 dev net1"),
        "{table}"
    );
    assert!(
        table.contains("default via 192.168.1.1 dev net1"),
        "{table}"
    );
}

/// Every IPv6 route has universe scope, so with `addSourceHints` the
/// kernel's subnet route leaves main as the reference deletes it, and the
/// hint route takes its place.
#[test]
fn source_hints_keep_an_ipv6_subnet_in_main() {
    enter_test_host();
    let ns = default_status(&["fd00::10/64"], &[]);
    let ips =
        json!([{"version": "6", "address": "fd00::10/64", "gateway": "fd00::1", "interface": 0}]);
    sbr_net1("ADD", &ns, json!({"addSourceHints": true}), ips).ok();
    let main = ns.sh(
        "ip",
        &["-6", "route", "show", "table", "main", "dev", "net1"],
    );
    let subnets: Vec<&str> = main
        .lines()
        .filter(|l| l.starts_with("fd00::/64 "))
        .collect();
    assert_eq!(subnets.len(), 1, "{main}");
    assert!(subnets[0].contains("src fd00::10"), "{main}");
    let table = ns.sh("ip", &["-6", "route", "show", "table", "100"]);
    assert!(table.contains("fd00::/64 dev net1"), "{table}");
    assert!(table.contains("default via fd00::1 dev net1"), "{table}");
    sbr_net1("DEL", &ns, json!({"addSourceHints": true}), json!([])).ok();
    assert!(our_rules(&ns).is_empty(), "DEL removes the rule");
}
