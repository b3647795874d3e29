//! `cnitool doctor` on the node shapes where it could harm live pods or
//! remove what is not its own: each test performs one hazard and checks that
//! the live pod keeps what its ADD added (cache entry, reservation, rules,
//! files) and still reaches its gateway (tests/it/harness/doctor.rs's `Node`).

use crate::harness;
use crate::harness::doctor;
use crate::harness::firewalld;

use doctor::{Maker, Node, dnat_chain, findings, masq_chain, under};
use harness::{Call, Outcome, enter_test_host, iptables_table, run_in};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

const NET: &str = "hz-net";

/// bridge (ipMasq) + portmap (iptables) + tuning (mtu), as `hz-net`; pods
/// get hostPorts from `port` on and must reach their gateway.
fn node(tag: &str, subnet: &str, port: u16) -> Node<'static> {
    enter_test_host();
    let mut node = Node::new(
        tag,
        &[json!({"cniVersion": "1.0.0", "name": NET, "plugins": [
            {"type": "bridge", "bridge": format!("cni-{tag}0"), "isGateway": true, "ipMasq": true,
             "ipam": {"type": "host-local", "subnet": subnet, "dataDir": "@STORE@"}},
            {"type": "portmap", "capabilities": {"portMappings": true},
             "dataDir": "@DATA@/portmap"},
            {"type": "tuning", "mtu": 1400, "dataDir": "@DATA@/tuning"}]})],
    );
    node.ports = Some(port);
    node.ping = true;
    node
}

/// `doctor --fix --min-age 0` as an operator runs it.
fn fix(node: &Node) -> Outcome {
    node.doctor(&["--fix", "--min-age", "0"], &Maker::Ours)
}

/// A process that holds a private mount namespace made now (as `unshare -m`
/// or a unit with PrivateMounts), killed when dropped.
struct PrivateMounts(Child);

impl PrivateMounts {
    fn new(setup: &str) -> PrivateMounts {
        let child = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(format!("{setup} exec sleep 600"))
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare -m");
        // Until the namespace is there (and the setup done).
        let own = std::fs::read_link("/proc/self/ns/mnt").ok();
        for _ in 0..100 {
            let theirs = std::fs::read_link(format!("/proc/{}/ns/mnt", child.id())).ok();
            let slept = std::fs::read_to_string(format!("/proc/{}/comm", child.id()))
                .is_ok_and(|c| c.trim() == "sleep");
            if theirs.is_some() && theirs != own && slept {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        PrivateMounts(child)
    }

    /// The doctor, run in this mount namespace, refuses to judge (exit 2,
    /// naming the pod's netns and `why`), and the live pod keeps everything.
    fn refuses(&self, node: Node, why: &str) {
        let args = ["doctor", "--fix", "--json", "--min-age", "0"];
        let cmd = node.cnitool(&args, &json!({}), &Maker::Ours);
        let mount = format!("--mount=/proc/{}/ns/mnt", self.0.id());
        let out = under(&["nsenter", &mount], &cmd)
            .output()
            .expect("nsenter the doctor");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        for said in [
            node.live[0].path.as_str(),
            why,
            "does not see the host's mounts",
        ] {
            assert!(stderr.contains(said), "{said}: {stderr}");
        }
        node.assert_intact(&node.live[0], "after the doctor");
        node.finish();
    }
}

impl Drop for PrivateMounts {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A doctor in a mount namespace made before the pod existed sees the
/// pod's pinned netns as the empty file under the bind mount: it refuses to
/// judge (exit 2, saying why) and the pod keeps everything.
#[test]
fn a_doctor_in_a_private_mount_namespace_refuses_and_the_live_pod_keeps_everything() {
    let mut node = node("hzpm", "10.61.0.0/24", 18061);
    let private = PrivateMounts::new("");
    node.pin_live = true;
    node.add_live(1);
    node.assert_intact(&node.live[0], "after ADD");
    private.refuses(node, "is not a namespace from here");
}

/// The same doctor where the netns directory is not mounted at all (a
/// container without the hostPath): every pod's path is missing, and it
/// refuses rather than call them dead.
#[test]
fn a_doctor_that_cannot_see_the_netns_directory_refuses() {
    let mut node = node("hzmd", "10.62.0.0/24", 18062);
    node.pin_live = true;
    node.add_live(1);
    let dir = std::path::Path::new(&node.live[0].path)
        .parent()
        .expect("pinned dir");
    let private = PrivateMounts::new(&format!("mount -t tmpfs hidden '{}' &&", dir.display()));
    private.refuses(node, "is missing from here");
}

/// A cache entry cut short by a crash is listed (with no fix) and keeps the
/// files of its pod, which no other entry names.
#[test]
fn an_unreadable_cache_entry_keeps_its_pods_files_and_is_listed() {
    let mut node = node("hzur", "10.63.0.0/24", 18063);
    node.add_live(1);
    let entry = node.entry(NET, &node.live[0].id, "eth0");
    let text = std::fs::read(&entry).expect("cache entry");
    std::fs::write(&entry, &text[..text.len() / 2]).expect("truncate");

    let out = fix(&node);
    assert_eq!(out.status, 1, "{out:?}");
    let found = findings(&out);
    assert_eq!(found.len(), 1, "only the entry itself: {found:?}");
    assert_eq!(
        (&found[0]["kind"], &found[0]["fixed"]),
        (&json!("cache"), &json!(false))
    );
    let object = found[0]["object"].as_str().unwrap_or_default();
    assert!(
        object.starts_with(&entry.display().to_string()),
        "{found:?}"
    );
    // Its tuning backup, reservation and rules stay.
    node.assert_intact(&node.live[0], "after the doctor");
    std::fs::write(&entry, &text).expect("restore the entry");
    node.finish();
}

/// A namespace the doctor cannot enter may hold any address: the
/// reservation of a pod whose runtime the doctor does not read (no cache
/// entry) stays while its namespace lives, even when no namespace can be
/// entered (setns fails, injected with strace).
#[test]
fn a_namespace_the_doctor_cannot_enter_keeps_every_address() {
    let node = node("hzne", "10.64.0.0/24", 18064);
    let pod = node.pod(false, &Maker::Ours);
    std::fs::remove_file(node.entry(NET, &pod.id, "eth0")).expect("forget the entry");
    let args = ["doctor", "--fix", "--json", "--min-age", "0"];
    let cmd = node.cnitool(&args, &json!({}), &Maker::Ours);
    let inject = ["-e", "trace=setns", "-e", "inject=setns:error=EPERM"];
    let prefix = [&["strace", "-f", "-qq", "-o", "/dev/null"][..], &inject].concat();
    let mut strace = under(&prefix, &cmd);
    strace.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = Outcome::of(strace.spawn().expect("strace"));
    assert!(
        out.stderr.contains("every address counts as in use"),
        "{out:?}"
    );
    // (tuning's backup names no address: with no cache entry it goes on age.)
    let removed = findings(&out)
        .into_iter()
        .filter(|f| f["fixed"] == true && f["kind"] != "tuning");
    assert_eq!(
        removed.count(),
        0,
        "nothing that names the address is removed: {out:?}"
    );
    assert!(
        node.rt.store.0.join(NET).join(pod.ip()).exists(),
        "the reservation stays"
    );
    assert!(doctor::pings(&pod.path, &pod.gateway().expect("a gateway")));
}

/// An admin's files in tuning's dataDir are nobody's backups: never judged.
#[test]
fn an_admins_files_in_tunings_data_dir_survive() {
    let node = node("hzad", "10.65.0.0/24", 18065);
    let files = [
        ("settings.json", "{\"retries\": 3}"),
        ("notes.json", "remember to rotate"),
        ("site_eth0.json", "{\"owner\": \"ops\"}"),
        ("empty.json", ""),
    ];
    let dir = node.data.0.join("tuning");
    std::fs::create_dir_all(&dir).expect("tuning's dataDir");
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("admin file");
    }
    let out = fix(&node);
    assert_eq!(out.status, 0, "{out:?}");
    for (name, text) in files {
        let now = std::fs::read_to_string(dir.join(name));
        assert_eq!(now.ok().as_deref(), Some(text), "{name}");
    }
}

/// A `/proc/<pid>/ns/net` whose PID now names a process started after the
/// attachment was cached is not that pod: its missing rules are not
/// re-added for whatever runs there now.
#[test]
fn a_reused_pid_does_not_make_a_dead_pod_alive() {
    let node = node("hzpid", "10.66.0.0/24", 18066);
    let mut pod = node.pod(false, &Maker::Ours);
    let entry = node.entry(NET, &pod.id, "eth0");
    // The pod goes without a DEL; its rules go too (a flush).
    pod.destroy();
    run_in(None, "iptables", &["-t", "nat", "-F"]);
    run_in(None, "iptables", &["-t", "nat", "-X"]);
    // Another process now has a PID the entry names, started after the ADD.
    let mut later = Command::new("sleep").arg("600").spawn().expect("sleep");
    let mut cached: Value =
        serde_json::from_slice(&std::fs::read(&entry).expect("entry")).expect("JSON");
    cached["netns"] = json!(format!("/proc/{}/ns/net", later.id()));
    std::fs::write(&entry, cached.to_string()).expect("rewrite entry");
    let before = SystemTime::now() - Duration::from_secs(60);
    let file = std::fs::File::options().write(true).open(&entry);
    file.and_then(|f| f.set_modified(before))
        .expect("date the entry back");

    let out = fix(&node);
    let _ = later.kill();
    let _ = later.wait();
    assert!(
        findings(&out).iter().all(|f| f["kind"] != "repair"),
        "{out:?}"
    );
    let nat = iptables_table("nat");
    assert!(
        !nat.contains(&dnat_chain(NET, &pod.id)),
        "no DNAT re-added:\n{nat}"
    );
    assert!(
        !nat.contains(&masq_chain(NET, &pod.id)),
        "no masquerading:\n{nat}"
    );
}

/// libcni's DEL runs portmap's DEL first and removes the cache entry last: a
/// doctor run in between must not re-add the DNAT, or it outlives the pod.
#[test]
fn a_repair_racing_a_del_leaves_no_dnat_once_the_del_finishes() {
    let node = node("hzrace", "10.67.0.0/24", 18067);
    let pod = node.pod(false, &Maker::Ours);
    let entry = node.entry(NET, &pod.id, "eth0");
    let cached: Value =
        serde_json::from_slice(&std::fs::read(&entry).expect("entry")).expect("JSON");
    let list = std::fs::read_to_string(node.rt.conf.0.join("00-hz-net.conflist")).expect("conf");
    let list: Value = serde_json::from_str(&list).expect("conflist");
    // Each plugin's DEL as libcni sends it, last plugin first.
    let del = |i: usize| {
        let mut conf = list["plugins"][i].clone();
        conf["name"] = json!(NET);
        conf["cniVersion"] = json!("1.0.0");
        conf["prevResult"] = cached["result"].clone();
        if conf["type"] == "portmap" {
            conf["runtimeConfig"] = json!({"portMappings": node.caps_of(pod.k)["portMappings"]});
        }
        let plugin = conf["type"].as_str().unwrap_or_default();
        Call::new(plugin, "DEL", &pod.path, &conf.to_string())
            .set("CNI_CONTAINERID", &pod.id)
            .set("CNI_PATH", &node.rt.bin.0.to_string_lossy())
            .run()
            .ok();
    };
    del(2);
    del(1);
    assert!(!iptables_table("nat").contains(&dnat_chain(NET, &pod.id)));

    let out = fix(&node);
    assert!(
        findings(&out).iter().all(|f| f["kind"] != "repair"),
        "a DEL is under way: {out:?}"
    );
    del(0);
    std::fs::remove_file(&entry).expect("libcni removes the entry last");
    let nat = iptables_table("nat");
    assert!(
        !nat.contains(&dnat_chain(NET, &pod.id)),
        "no DNAT outlives the DEL:\n{nat}"
    );
}

/// A live pod whose rules were flushed is repaired, after a second look.
#[test]
fn a_flushed_live_pod_is_repaired_after_a_second_look() {
    let mut node = node("hzrep", "10.68.0.0/24", 18068);
    node.add_live(1);
    run_in(None, "iptables", &["-t", "nat", "-F"]);
    let started = std::time::Instant::now();
    let out = fix(&node);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "it looked twice"
    );
    let repaired = findings(&out)
        .into_iter()
        .filter(|f| f["kind"] == "repair" && f["fixed"] == true);
    assert_eq!(repaired.count(), 2, "portmap and masquerading: {out:?}");
    node.assert_intact(&node.live[0], "after the repair");
    node.finish();
}

/// Plain `doctor` on a young leak says it left young state alone, instead of
/// only "no stale CNI state found".
#[test]
fn the_plain_report_says_how_much_young_state_it_left_alone() {
    let node = node("hzyg", "10.69.0.0/24", 18069);
    let mut pod = node.pod(true, &Maker::Ours);
    pod.destroy();
    let out = node.cnitool_run(&["doctor"]);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(out.stdout.contains("no stale CNI state found"), "{out:?}");
    let young = "younger than --min-age (300 s) left alone";
    assert!(out.stdout.contains(young), "{out:?}");
    fix(&node);
    assert!(!node.entry(NET, &pod.id, "eth0").exists());
}

/// Entries that cannot be judged (no netns; a `/proc` path whose process is
/// gone) pass; a dead entry whose DEL fails stays a finding, not fixed, and
/// says why; a cache directory that cannot be read exits 2.
#[test]
fn unjudgeable_entries_pass_failed_fixes_stay_findings_and_an_unreadable_cache_exits_2() {
    let node = node("hzuj", "10.70.0.0/24", 18070);
    let results = node.rt.cache.0.join("results");
    std::fs::create_dir_all(&results).expect("results");
    let entry = |id: &str, net: &str, netns: Option<&str>, config: &str| {
        let mut e = json!({"kind": "cniCacheV1", "containerId": id, "ifName": "eth0",
                           "networkName": net, "config": config});
        if let Some(netns) = netns {
            e["netns"] = json!(netns);
        }
        let path = results.join(format!("{net}-{id}-eth0"));
        std::fs::write(&path, e.to_string()).expect("entry");
        path
    };
    entry("c1", NET, None, "");
    // The namespace of a /proc path whose process is gone may live on.
    entry("c3", NET, Some("/proc/0/ns/net"), "");
    let out = node.doctor(&["--min-age", "0"], &Maker::Ours);
    assert_eq!((out.status, findings(&out)), (0, vec![]), "{out:?}");
    let config =
        json!({"cniVersion": "1.0.0", "name": "gone-net", "plugins": [{"type": "nosuchplugin"}]});
    use base64::Engine;
    let config = base64::engine::general_purpose::STANDARD.encode(config.to_string());
    let failing = entry("c2", "gone-net", Some("/nonexistent/netns/c2"), &config);
    let out = fix(&node);
    assert_eq!(out.status, 1, "{out:?}");
    let found = findings(&out);
    assert_eq!(
        (&found[0]["kind"], &found[0]["fixed"]),
        (&json!("cache"), &json!(false))
    );
    for said in ["failed to fix cache", "nosuchplugin"] {
        assert!(out.stderr.contains(said), "{said}: {out:?}");
    }
    assert!(failing.exists());
    // A cache dir that is a file cannot be read.
    let file = node.data.0.join("cache");
    std::fs::write(&file, "x").expect("file");
    let out = harness::cnitool_in(
        &node.rt.conf.0,
        &file,
        &node.rt.bin.0,
        &[],
        &["doctor", "--json"],
    );
    assert_eq!(out.status, 2, "{out:?}");
    assert!(out.stderr.contains("cannot inspect the node"), "{out:?}");
}

/// Anyone on the system bus may broadcast a signal named `Reloaded`: twenty
/// of them from uid 65534 give the watcher no pass; firewalld's own reload
/// gives one.
#[test]
fn spoofed_reload_signals_from_another_user_cause_no_pass() {
    if firewalld::tools_missing("spoofed_reload_signals_from_another_user_cause_no_pass") {
        return;
    }
    let mut node = node("hzsp", "10.72.0.0/24", 18072);
    // A system-bus-like policy where any user may connect and send signals.
    let bus = firewalld::Bus::with(
        None,
        r#"</policy><policy context="default"><allow user="*"/><allow send_type="signal"/><allow send_destination="org.freedesktop.DBus"/><allow receive_sender="org.freedesktop.DBus"/>"#,
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bus.dir.0, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let _fw = firewalld::Firewalld::start(&bus);
    node.env
        .push(("DBUS_SYSTEM_BUS_ADDRESS".into(), bus.address.clone()));
    let log = node.data.0.join("watcher.log");
    let file = std::fs::File::create(&log).expect("log");
    let args = ["doctor", "--fix", "--on-firewalld-reload", "--min-age", "0"];
    let mut watcher = node
        .cnitool(&args, &json!({}), &Maker::Ours)
        .stdout(file.try_clone().expect("log fd"))
        .stderr(file)
        .spawn()
        .expect("spawn the watcher");
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    let passes = || text().matches("no stale CNI state found").count();
    let wait_for = |n: usize| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while passes() < n && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        passes()
    };
    assert_eq!(wait_for(1), 1, "the first pass");
    for _ in 0..20 {
        let out = Command::new("setpriv")
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "dbus-send",
            ])
            .arg(format!("--bus={}", bus.address))
            .args(["--type=signal", firewalld::FIREWALLD_PATH])
            .arg("org.fedoraproject.FirewallD1.Reloaded")
            .output()
            .expect("dbus-send as nobody");
        assert!(
            out.status.success(),
            "the bus takes nobody's signal: {out:?}"
        );
    }
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(passes(), 1, "no pass for spoofed signals:\n{}", text());
    assert!(!text().contains("firewalld reloaded"), "{}", text());
    let reload = bus.send("org.fedoraproject.FirewallD1.reload", &[]);
    assert!(reload.status.success(), "{reload:?}");
    assert_eq!(wait_for(2), 2, "firewalld's own reload gives a pass");
    let _ = watcher.kill();
    let _ = watcher.wait();
}
