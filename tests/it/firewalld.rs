//! firewall with firewalld: each test starts a private `dbus-daemon` (a
//! system-bus-like policy, listening in a temp dir) and Debian's real
//! firewalld on it, confined to its own network and mount namespaces (its
//! config dirs are tmpfs there, so the host's /etc/firewalld and firewall are
//! never touched). The plugin finds the bus through DBUS_SYSTEM_BUS_ADDRESS;
//! zone sources are read back with dbus-send and in firewalld's nft ruleset.

use crate::harness;
use crate::harness::firewalld;

use firewalld::{Bus, FIREWALLD, Firewalld, ZONE, tools_missing};
use harness::{
    Call, Netns, Outcome, Runtime, TempDir, enter_test_host, first_ip, iptables_table, merged,
};
use serde_json::{Value, json};
use std::process::Child;
use std::time::{Duration, Instant};

/// The firewall plugin called directly with a prevResult of `ips` (on eth0).
fn call(command: &str, ns: &Netns, bus: &str, conf: Value, ips: &[&str]) -> Outcome {
    let prev = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "cni-fwd0"}, {"name": "eth0", "sandbox": ns.path()}],
        "ips": ips.iter().map(|a| json!({"address": a, "interface": 1})).collect::<Vec<_>>(),
    });
    let conf = merged(
        json!({"cniVersion": "1.0.0", "name": "fwd", "type": "firewall", "prevResult": prev}),
        conf,
    );
    Call::new("firewall", command, ns.path(), &conf.to_string())
        .set("DBUS_SYSTEM_BUS_ADDRESS", bus)
        .run()
}

/// cnitool with the bus in its environment (the plugin runs in-process or
/// exec'd, inheriting it).
fn cnitool(rt: &Runtime, bus: &str, args: &[&str]) -> Outcome {
    let mut cmd = rt.command(args, &json!({}), None);
    cmd.env("DBUS_SYSTEM_BUS_ADDRESS", bus);
    Outcome::of(cmd.spawn().expect("spawn cnitool"))
}

fn bridge_network(rt: &Runtime, name: &str, bridge: &str, subnet: &str, firewall: Value) {
    let list = json!({
        "cniVersion": "1.0.0", "name": name,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": true,
             "ipam": {"type": "host-local", "subnet": subnet, "dataDir": "@STORE@"}},
            merged(json!({"type": "firewall"}), firewall)
        ]
    });
    rt.write_list(&format!("{name}.conflist"), &list);
}

#[test]
fn firewalld_backend_makes_the_address_a_trusted_source_check_sees_it_del_removes_it() {
    let test = "firewalld_backend_makes_the_address_a_trusted_source";
    if tools_missing(test) {
        return;
    }
    enter_test_host();
    let bus = Bus::start();
    let fw = Firewalld::start(&bus);
    let rt = Runtime::new("fwd");
    bridge_network(
        &rt,
        "fwd-net",
        "cni-fwd0",
        "10.70.0.0/24",
        json!({"backend": "firewalld"}),
    );
    let filter_before = iptables_table("filter");
    let ns = Netns::new();
    let out = cnitool(&rt, &bus.address, &["add", "fwd-net", ns.path()]).ok();
    let ip = first_ip(&out);
    let source = format!("{ip}/32");
    assert_eq!(bus.sources("trusted"), std::slice::from_ref(&source));
    let rules = fw.ruleset();
    assert!(
        rules.contains(&format!("ip saddr {ip} goto filter_FWD_trusted")),
        "firewalld's rules name the source:\n{rules}"
    );
    assert_eq!(
        iptables_table("filter"),
        filter_before,
        "no iptables rules of ours"
    );
    cnitool(&rt, &bus.address, &["check", "fwd-net", ns.path()]).ok();

    // Taken out behind the plugin's back: CHECK says which address is missing.
    let removed = bus.send(
        &format!("{ZONE}.removeSource"),
        &["string:trusted".into(), format!("string:{source}")],
    );
    assert!(removed.status.success());
    let check = cnitool(&rt, &bus.address, &["check", "fwd-net", ns.path()]);
    assert_ne!(check.status, 0, "{check:?}");
    assert!(
        check.stderr.contains(&format!(
            "failed to find the address {source} in trusted zone"
        )),
        "{check:?}"
    );

    // Put back, then DEL takes it out.
    let added = bus.send(
        &format!("{ZONE}.addSource"),
        &["string:trusted".into(), format!("string:{source}")],
    );
    assert!(added.status.success());
    cnitool(&rt, &bus.address, &["del", "fwd-net", ns.path()]).ok();
    assert!(bus.sources("trusted").is_empty());
    assert!(!fw.ruleset().contains(&format!("ip saddr {ip} ")));
    // Again: already gone is fine.
    cnitool(&rt, &bus.address, &["del", "fwd-net", ns.path()]).ok();
}

#[test]
fn firewalld_zone_is_configurable_for_both_families_add_is_idempotent_and_ingress_policy_isolates()
{
    if tools_missing("firewalld_zone_is_configurable_for_both_families") {
        return;
    }
    enter_test_host();
    let bus = Bus::start();
    let _fw = Firewalld::start(&bus);
    let ns = Netns::new();
    let conf = json!({"backend": "firewalld", "firewalldZone": "internal"});
    let ips = ["10.71.0.5/24", "fd71::5/64"];
    let out = call("ADD", &ns, &bus.address, conf.clone(), &ips).ok();
    assert_eq!(
        out["ips"][1]["address"], "fd71::5/64",
        "prevResult passes through"
    );
    // A second ADD meets ZONE_ALREADY_SET, which is success.
    call("ADD", &ns, &bus.address, conf.clone(), &ips).ok();
    assert_eq!(
        bus.sources("internal"),
        ["10.71.0.5/32".to_string(), "fd71::5/128".into()]
    );
    assert!(bus.sources("trusted").is_empty());
    call("CHECK", &ns, &bus.address, conf.clone(), &ips).ok();
    // DEL from a zone firewalld does not know (INVALID_ZONE), or from one the
    // sources are not in (ZONE_CONFLICT): nothing of this config's is there.
    let unknown = json!({"backend": "firewalld", "firewalldZone": "no-such-zone"});
    call("DEL", &ns, &bus.address, unknown, &ips).ok();
    call(
        "DEL",
        &ns,
        &bus.address,
        json!({"backend": "firewalld"}),
        &ips,
    )
    .ok();
    assert_eq!(
        bus.sources("internal"),
        ["10.71.0.5/32".to_string(), "fd71::5/128".into()]
    );
    call("DEL", &ns, &bus.address, conf.clone(), &ips).ok();
    assert!(bus.sources("internal").is_empty());
    // Not in any zone (UNKNOWN_SOURCE): already gone.
    call("DEL", &ns, &bus.address, conf.clone(), &ips).ok();

    // A zone firewalld does not know: its error, in the reference's words.
    let bad = json!({"backend": "firewalld", "firewalldZone": "no-such-zone"});
    let e = call("ADD", &ns, &bus.address, bad, &ips).err(999);
    assert_eq!(
        e["msg"],
        "failed to add the address 10.71.0.5/32 to no-such-zone zone: INVALID_ZONE: no-such-zone"
    );
    let ctl = json!({"backend": "firewalld", "firewalldZone": "a\nb"});
    call("ADD", &ns, &bus.address, ctl, &ips).err(7);
    // ingressPolicy: the zone source as always, and the isolation stages in
    // iptables, as the reference writes them whatever its backend.
    let policy = json!({"backend": "firewalld", "ingressPolicy": "same-bridge"});
    call("ADD", &ns, &bus.address, policy.clone(), &ips).ok();
    assert_eq!(
        bus.sources("trusted"),
        ["10.71.0.5/32".to_string(), "fd71::5/128".into()]
    );
    let stage = "-A CNI-ISOLATION-STAGE-1 -i cni-fwd0 ! -o cni-fwd0 -m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge)\" -j CNI-ISOLATION-STAGE-2";
    assert!(
        iptables_table("filter").contains(stage),
        "{}",
        iptables_table("filter")
    );
    call("DEL", &ns, &bus.address, policy, &ips).ok();
    assert!(bus.sources("trusted").is_empty());
}

#[test]
fn unset_backend_is_firewalld_when_it_owns_its_name_else_iptables() {
    if tools_missing("unset_backend_is_firewalld_when_it_owns_its_name") {
        return;
    }
    enter_test_host();
    let ns = Netns::new();
    let ips = ["10.72.0.5/24"];
    let filter_before = iptables_table("filter");

    let with_firewalld = Bus::start();
    let _fw = Firewalld::start(&with_firewalld);
    call("ADD", &ns, &with_firewalld.address, json!({}), &ips).ok();
    assert_eq!(with_firewalld.sources("trusted"), ["10.72.0.5/32"]);
    assert_eq!(iptables_table("filter"), filter_before);
    call("CHECK", &ns, &with_firewalld.address, json!({}), &ips).ok();
    call("DEL", &ns, &with_firewalld.address, json!({}), &ips).ok();
    assert!(with_firewalld.sources("trusted").is_empty());

    // A bus where nobody owns the name: the iptables rules.
    let empty = Bus::start();
    call("ADD", &ns, &empty.address, json!({}), &ips).ok();
    let rules = iptables_table("filter");
    assert!(
        rules.contains("-A CNI-FORWARD -s 10.72.0.5/32 -j ACCEPT"),
        "{rules}"
    );
    call("CHECK", &ns, &empty.address, json!({}), &ips).ok();
    call("DEL", &ns, &empty.address, json!({}), &ips).ok();
    // The address rules go; CNI-FORWARD, CNI-ADMIN and their jumps stay, as
    // the reference keeps them.
    let after = iptables_table("filter");
    assert!(!after.contains("10.72.0.5"), "{after}");
    assert!(after.contains(":CNI-FORWARD - [0:0]"), "{after}");
}

#[test]
fn del_succeeds_and_says_so_when_firewalld_or_its_bus_is_gone() {
    if tools_missing("del_succeeds_when_firewalld_is_gone") {
        return;
    }
    enter_test_host();
    let ns = Netns::new();
    let ips = ["10.73.0.5/24"];
    let conf = json!({"backend": "firewalld"});
    let bus = Bus::start();
    let mut fw = Firewalld::start(&bus);
    call("ADD", &ns, &bus.address, conf.clone(), &ips).ok();
    assert_eq!(bus.sources("trusted"), ["10.73.0.5/32"]);
    fw.kill();

    let del = call("DEL", &ns, &bus.address, conf.clone(), &ips);
    del.ok();
    assert!(
        del.stderr.contains("firewalld is not running")
            && del.stderr.contains("has no owner on the system bus"),
        "{del:?}"
    );
    // CHECK and ADD need firewalld: they fail (999, as the reference).
    call("CHECK", &ns, &bus.address, conf.clone(), &ips).err(999);
    call("ADD", &ns, &bus.address, conf.clone(), &ips).err(999);

    // No bus at all.
    let missing = format!("unix:path={}/gone", bus.dir.0.display());
    drop(bus);
    let del = call("DEL", &ns, &missing, conf.clone(), &ips);
    del.ok();
    assert!(
        del.stderr.contains("firewalld is not running") && del.stderr.contains("no system bus"),
        "{del:?}"
    );
    let e = call("ADD", &ns, &missing, conf.clone(), &ips).err(999);
    assert!(
        e["msg"]
            .as_str()
            .is_some_and(|m| m.starts_with("failed to connect to the system bus")),
        "{e}"
    );
    // STATUS reports firewalld's absence as "not available".
    let status =
        json!({"cniVersion": "1.1.0", "name": "fwd", "type": "firewall", "backend": "firewalld"});
    Call::new("firewall", "STATUS", ns.path(), &status.to_string())
        .set("DBUS_SYSTEM_BUS_ADDRESS", &missing)
        .run()
        .err(50);
}

/// firewalld answers removeSource with an error that does not say the source
/// is gone (here the bus's AccessDenied): DEL fails with it, and the source
/// it could not remove is still there for the runtime's retry.
#[test]
fn del_fails_when_remove_source_is_denied() {
    if tools_missing("del_fails_when_remove_source_is_denied") {
        return;
    }
    enter_test_host();
    let ns = Netns::new();
    let ips = ["10.74.0.5/24"];
    let conf = json!({"backend": "firewalld"});
    let deny = format!(
        r#"<deny send_destination="{FIREWALLD}" send_interface="{ZONE}" send_member="removeSource"/>"#
    );
    let bus = Bus::with(None, &deny);
    let _fw = Firewalld::start(&bus);
    call("ADD", &ns, &bus.address, conf.clone(), &ips).ok();
    let e = call("DEL", &ns, &bus.address, conf.clone(), &ips).err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with("failed to remove the address 10.74.0.5/32 from trusted zone: ")
            && msg.contains("removeSource"),
        "{e}"
    );
    assert_eq!(bus.sources("trusted"), ["10.74.0.5/32"]);
    // With the backend unset (firewalld owns its name), the same.
    call("DEL", &ns, &bus.address, json!({}), &ips).err(999);
    assert_eq!(bus.sources("trusted"), ["10.74.0.5/32"]);
}

/// The bus found through an abstract socket, also as the second entry of an
/// address list: DEL reaches it and learns that firewalld has no owner there
/// (a bus it could not reach would be "no system bus"). An address it cannot
/// use is an error, not an absent bus.
#[test]
fn the_bus_is_reached_at_an_abstract_address_and_in_an_address_list() {
    if tools_missing("the_bus_is_reached_at_an_abstract_address") {
        return;
    }
    enter_test_host();
    let ns = Netns::new();
    let ips = ["10.75.0.5/24"];
    let conf = json!({"backend": "firewalld"});
    let name = format!("cni-multi-test-bus-{}", std::process::id());
    let bus = Bus::with(Some(&format!("unix:abstract={name}")), "");
    assert!(bus.address.starts_with("unix:abstract="), "{}", bus.address);
    let gone = format!("unix:path={}/gone", bus.dir.0.display());
    for address in [bus.address.clone(), format!("{gone};{}", bus.address)] {
        let del = call("DEL", &ns, &address, conf.clone(), &ips);
        del.ok();
        assert!(
            del.stderr.contains("has no owner on the system bus"),
            "{address}: {del:?}"
        );
    }
    for unusable in ["tcp:host=127.0.0.1,port=1", "unix:tmpdir=/tmp", "nonsense"] {
        let e = call("DEL", &ns, unusable, conf.clone(), &ips).err(999);
        assert!(
            e["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("failed to connect to the system bus")),
            "{unusable}: {e}"
        );
    }
}

/// GC with firewalld: two recorded attachments of `fwd` and one of
/// `fwd-other`; GC without a valid list changes nothing, GC keeping ctr-a
/// removes ctr-b's source and record only; DEL after GC succeeds.
#[test]
fn gc_removes_the_sources_of_unkept_attachments() {
    let test = "gc_removes_the_sources_of_unkept_attachments";
    if tools_missing(test) {
        return;
    }
    enter_test_host();
    let bus = Bus::start();
    let _fw = Firewalld::start(&bus);
    let data = TempDir::new("fwd-gc");
    let ns = Netns::new();
    let attachments = [
        ("fwd", "ctr-a", "10.71.0.2"),
        ("fwd", "ctr-b", "10.71.0.3"),
        ("fwd-other", "ctr-c", "10.71.0.4"),
    ];
    let run = |command: &str, net: &str, id: &str, ip: &str| {
        let conf = json!({"cniVersion": "1.1.0", "name": net, "type": "firewall",
                          "backend": "firewalld", "dataDir": data.0,
                          "prevResult": {"cniVersion": "1.1.0",
                                         "ips": [{"address": format!("{ip}/24")}]}});
        Call::new("firewall", command, ns.path(), &conf.to_string())
            .set("CNI_CONTAINERID", id)
            .set("DBUS_SYSTEM_BUS_ADDRESS", &bus.address)
            .run()
            .ok();
    };
    for (net, id, ip) in attachments {
        run("ADD", net, id, ip);
    }
    let gc = |valid: Option<Value>| {
        let mut c = json!({"cniVersion": "1.1.0", "name": "fwd", "type": "firewall",
                           "backend": "firewalld", "dataDir": data.0});
        if let Some(v) = valid {
            c["cni.dev/valid-attachments"] = v;
        }
        Call::new("firewall", "GC", "", &c.to_string())
            .unset("CNI_CONTAINERID")
            .unset("CNI_IFNAME")
            .unset("CNI_NETNS")
            .set("DBUS_SYSTEM_BUS_ADDRESS", &bus.address)
            .run()
            .ok();
    };
    let sources = || {
        let mut s = bus.sources("trusted");
        s.sort();
        s
    };
    let all: Vec<String> = attachments.iter().map(|a| format!("{}/32", a.2)).collect();
    assert_eq!(sources(), all);
    gc(None);
    assert_eq!(sources(), all, "GC without a valid list changes nothing");
    gc(Some(json!([{"containerID": "ctr-a", "ifname": "eth0"}])));
    assert_eq!(sources(), vec![all[0].clone(), all[2].clone()]);
    assert!(!harness::has_record(&data.0, "ctr-b", "eth0"));
    assert!(
        harness::has_record(&data.0, "ctr-a", "eth0")
            && harness::has_record(&data.0, "ctr-c", "eth0")
    );
    for (net, id, ip) in attachments {
        run("DEL", net, id, ip);
    }
    assert!(sources().is_empty());
}

/// The doctor watching firewalld's reloads, killed when dropped.
struct Watcher {
    child: Child,
    log: std::path::PathBuf,
}

impl Watcher {
    fn start(rt: &Runtime, bus: &str, dir: &TempDir) -> Watcher {
        let log = dir.0.join("watcher.log");
        let file = std::fs::File::create(&log).expect("watcher log");
        let args = ["doctor", "--fix", "--on-firewalld-reload", "--min-age", "0"];
        let child = rt
            .command(&args, &json!({}), None)
            .env("DBUS_SYSTEM_BUS_ADDRESS", bus)
            .stdout(file.try_clone().expect("log fd"))
            .stderr(file)
            .spawn()
            .expect("spawn the watcher");
        Watcher { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its exit status, waiting `within` at most.
    fn exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `zone` lists `source` (false while firewalld cannot answer).
fn has_source(bus: &Bus, zone: &str, source: &str) -> bool {
    let out = bus.send(&format!("{ZONE}.getSources"), &[format!("string:{zone}")]);
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&format!("\"{source}\""))
}

fn wait_for(within: Duration, what: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    what()
}

/// `cnitool doctor --fix --on-firewalld-reload`: the first run repairs what
/// is missing, a firewalld reload (which drops the runtime sources) brings
/// the pod's source back, nothing happens without one, and the watcher fails
/// when the bus goes away.
#[test]
fn the_watcher_repairs_after_each_firewalld_reload_and_fails_when_the_bus_goes() {
    let test = "the_watcher_repairs_after_each_firewalld_reload";
    if tools_missing(test) {
        return;
    }
    enter_test_host();
    let mut bus = Bus::start();
    let _fw = Firewalld::start(&bus);
    let rt = Runtime::new("fww");
    bridge_network(
        &rt,
        "fww-net",
        "cni-fww0",
        "10.72.0.0/24",
        json!({"backend": "firewalld"}),
    );
    let ns = Netns::new();
    let out = cnitool(&rt, &bus.address, &["add", "fww-net", ns.path()]).ok();
    let source = format!("{}/32", first_ip(&out));
    assert!(has_source(&bus, "trusted", &source));
    let remove = || {
        let removed = bus.send(
            &format!("{ZONE}.removeSource"),
            &["string:trusted".into(), format!("string:{source}")],
        );
        assert!(removed.status.success(), "{removed:?}");
    };

    // Missing when it starts: its first run puts it back.
    remove();
    let dir = TempDir::new("fww-watcher");
    let mut watcher = Watcher::start(&rt, &bus.address, &dir);
    assert!(
        wait_for(Duration::from_secs(60), || has_source(
            &bus, "trusted", &source
        )),
        "the first run repairs: {}",
        watcher.log()
    );

    // Gone again: nothing until firewalld reloads.
    remove();
    std::thread::sleep(Duration::from_secs(1));
    assert!(!has_source(&bus, "trusted", &source), "{}", watcher.log());
    let reload = bus.send(&format!("{FIREWALLD}.reload"), &[]);
    assert!(reload.status.success(), "{reload:?}");
    assert!(
        wait_for(Duration::from_secs(60), || has_source(
            &bus, "trusted", &source
        )),
        "repaired after the reload: {}",
        watcher.log()
    );
    assert!(
        watcher.log().contains("firewalld reloaded"),
        "{}",
        watcher.log()
    );
    assert!(watcher.exit(Duration::ZERO).is_none(), "it keeps running");

    cnitool(&rt, &bus.address, &["del", "fww-net", ns.path()]).ok();
    let _ = bus.daemon.kill();
    let _ = bus.daemon.wait();
    let status = watcher.exit(Duration::from_secs(30));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(3),
        "it fails when the bus goes: {}",
        watcher.log()
    );
}
