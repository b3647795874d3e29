//! `cnitool doctor --fix` on the node shapes where it once harmed live pods:
//! each test performs the hazard and checks that the live pod keeps its cache
//! entry, reservation, rules and files, and still reaches its gateway.

mod harness;

use harness::{
    BIN, Call, Netns, Outcome, PinnedNetns, Runtime, TempDir, cnitool_id, enter_test_host,
    first_ip, iptables_table, run_in,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

const NET: &str = "hz-net";

/// bridge (ipMasq) + portmap (iptables) + tuning (mtu), named `hz-net`.
struct Node {
    rt: Runtime,
    tuning: TempDir,
    subnet: String,
}

impl Node {
    fn new(tag: &str, subnet: &str) -> Node {
        let rt = Runtime::new(tag);
        let tuning = TempDir::new(&format!("{tag}-tuning"));
        let bridge = format!("cni-{tag}0");
        rt.write_list(
            "hz.conflist",
            &json!({
                "cniVersion": "1.0.0",
                "name": NET,
                "plugins": [
                    {"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": true,
                     "ipam": {"type": "host-local", "subnet": subnet, "dataDir": "@STORE@"}},
                    {"type": "portmap", "capabilities": {"portMappings": true},
                     "dataDir": "@STORE@/portmap"},
                    {"type": "tuning", "mtu": 1400, "dataDir": tuning.0}
                ]
            }),
        );
        Node {
            rt,
            tuning,
            subnet: subnet.to_string(),
        }
    }

    /// A pod with hostPort `port`; its address.
    fn add(&self, netns: &str, port: u16) -> String {
        let caps = json!({"portMappings": [
            {"hostPort": port, "containerPort": 80, "protocol": "tcp"}]});
        first_ip(&self.rt.run(&["add", NET, netns], &caps).ok())
    }

    fn doctor(&self, args: &[&str]) -> Outcome {
        let mut all = vec!["doctor", "--json", "--min-age", "0", "--repair-after", "1"];
        all.extend_from_slice(args);
        self.rt.run(&all, &json!({}))
    }

    fn cache_file(&self, netns: &str) -> PathBuf {
        self.rt
            .cache
            .0
            .join("results")
            .join(format!("{NET}-{}-eth0", container_id(netns)))
    }

    fn reservation(&self, ip: &str) -> PathBuf {
        self.rt.store.0.join(NET).join(ip)
    }

    fn backup(&self, netns: &str) -> PathBuf {
        self.tuning
            .0
            .join(format!("{}_eth0.json", container_id(netns)))
    }

    fn gateway(&self) -> String {
        let base = self.subnet.split('/').next().unwrap_or_default();
        let (head, _) = base.rsplit_once('.').unwrap_or_default();
        format!("{head}.1")
    }

    /// Everything a live pod holds is there, and it reaches its gateway.
    fn assert_intact(&self, netns: &str, ip: &str, why: &str) {
        let id = container_id(netns);
        assert!(self.cache_file(netns).exists(), "{why}: cache entry");
        assert!(self.reservation(ip).exists(), "{why}: reservation");
        assert!(self.backup(netns).exists(), "{why}: tuning backup");
        let nat = iptables_table("nat");
        assert!(nat.contains(&masq_chain(&id)), "{why}: masquerading\n{nat}");
        assert!(nat.contains(&dnat_chain(&id)), "{why}: hostPort\n{nat}");
        assert!(
            pings(netns, &self.gateway()),
            "{why}: the pod reaches its gateway"
        );
    }
}

fn container_id(netns: &str) -> String {
    cnitool_id(netns)
}

fn masq_chain(id: &str) -> String {
    harness::masq_chain(NET, id)
}

fn dnat_chain(id: &str) -> String {
    harness::dnat_chain(NET, id)
}

fn pings(netns: &str, ip: &str) -> bool {
    Command::new("nsenter")
        .arg(format!("--net={netns}"))
        .args(["ping", "-c", "1", "-W", "2", ip])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn findings(out: &Outcome) -> Vec<Value> {
    out.json()["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
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

    /// The doctor, run in this mount namespace.
    fn doctor(&self, node: &Node) -> Outcome {
        let child = Command::new("nsenter")
            .arg(format!("--mount=/proc/{}/ns/mnt", self.0.id()))
            .arg(BIN)
            .args(["cnitool", "--cache-dir"])
            .arg(&node.rt.cache.0)
            .args(["doctor", "--fix", "--json", "--min-age", "0"])
            .env_clear()
            .env("NETCONFPATH", &node.rt.conf.0)
            .env("CNI_PATH", &node.rt.bin.0)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nsenter the doctor");
        Outcome::of(child)
    }
}

impl PrivateMounts {
    /// The doctor here refuses to judge (exit 2, naming the pod's netns and
    /// `why`), and the live pod keeps everything.
    fn refuses(&self, node: &Node, netns: &str, ip: &str, why: &str) {
        let out = self.doctor(node);
        assert_eq!(out.status, 2, "{out:?}");
        for said in [netns, why, "does not see the host's mounts"] {
            assert!(out.stderr.contains(said), "{said}: {}", out.stderr);
        }
        node.assert_intact(netns, ip, "after the doctor");
        node.rt.run(&["del", NET, netns], &json!({})).ok();
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
    enter_test_host();
    let node = Node::new("hzpm", "10.61.0.0/24");
    let private = PrivateMounts::new("");
    let pod = PinnedNetns::new();
    let ip = node.add(pod.path(), 18061);
    node.assert_intact(pod.path(), &ip, "after ADD");

    private.refuses(&node, pod.path(), &ip, "is not a namespace from here");
}

/// The same doctor where the netns directory is not mounted at all (a
/// container without the hostPath): every pod's path is missing, and it
/// refuses rather than call them dead.
#[test]
fn a_doctor_that_cannot_see_the_netns_directory_refuses() {
    enter_test_host();
    let node = Node::new("hzmd", "10.62.0.0/24");
    let pod = PinnedNetns::new();
    let ip = node.add(pod.path(), 18062);
    let dir = Path::new(pod.path())
        .parent()
        .expect("pinned dir")
        .to_string_lossy()
        .into_owned();
    let private = PrivateMounts::new(&format!("mount -t tmpfs hidden '{dir}' &&"));

    private.refuses(&node, pod.path(), &ip, "is missing from here");
}

/// A cache entry cut short by a crash is listed (with no fix) and keeps the
/// files of its pod, which no other entry names.
#[test]
fn an_unreadable_cache_entry_keeps_its_pods_files_and_is_listed() {
    enter_test_host();
    let node = Node::new("hzur", "10.63.0.0/24");
    let pod = Netns::new();
    let ip = node.add(pod.path(), 18063);
    let entry = node.cache_file(pod.path());
    let text = std::fs::read(&entry).expect("cache entry");
    std::fs::write(&entry, &text[..text.len() / 2]).expect("truncate");

    let out = node.doctor(&["--fix"]);
    assert_eq!(out.status, 1, "{out:?}");
    let found = findings(&out);
    assert_eq!(found.len(), 1, "only the entry itself: {found:?}");
    assert_eq!(found[0]["kind"], "cache");
    assert_eq!(found[0]["fixed"], false);
    assert!(
        found[0]["object"]
            .as_str()
            .is_some_and(|o| o.starts_with(&entry.display().to_string())),
        "{found:?}"
    );
    assert!(node.backup(pod.path()).exists(), "tuning's backup stays");
    assert!(node.reservation(&ip).exists(), "the reservation stays");
    let nat = iptables_table("nat");
    assert!(
        nat.contains(&dnat_chain(&container_id(pod.path()))),
        "{nat}"
    );
    std::fs::write(&entry, &text).expect("restore the entry");
    node.rt.run(&["del", NET, pod.path()], &json!({})).ok();
}

/// A namespace the doctor cannot enter may hold any address: the
/// reservation of a pod whose runtime the doctor does not read (no cache
/// entry) stays while its namespace lives, even when no namespace can be
/// entered (setns fails, injected with strace).
#[test]
fn a_namespace_the_doctor_cannot_enter_keeps_every_address() {
    enter_test_host();
    let node = Node::new("hzne", "10.64.0.0/24");
    let pod = Netns::new();
    let ip = node.add(pod.path(), 18064);
    std::fs::remove_file(node.cache_file(pod.path())).expect("forget the entry");

    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=setns"])
        .args([
            "-e",
            "inject=setns:error=EPERM",
            BIN,
            "cnitool",
            "--cache-dir",
        ])
        .arg(&node.rt.cache.0)
        .args(["doctor", "--fix", "--json", "--min-age", "0"])
        .env_clear()
        .env("NETCONFPATH", &node.rt.conf.0)
        .env("CNI_PATH", &node.rt.bin.0)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Outcome::of(cmd.spawn().expect("strace the doctor"));
    assert!(
        out.stderr.contains("every address counts as in use"),
        "{out:?}"
    );
    // (tuning's backup names no address: with no cache entry it goes on age.)
    assert!(
        findings(&out)
            .iter()
            .all(|f| f["fixed"] != true || f["kind"] == "tuning"),
        "nothing that names the address is removed: {out:?}"
    );
    assert!(node.reservation(&ip).exists(), "the reservation stays");
    assert!(pings(pod.path(), &node.gateway()));
}

/// An admin's files in tuning's dataDir are nobody's backups: never judged.
#[test]
fn an_admins_files_in_tunings_data_dir_survive() {
    enter_test_host();
    let node = Node::new("hzad", "10.65.0.0/24");
    let files = [
        ("settings.json", "{\"retries\": 3}"),
        ("notes.json", "remember to rotate"),
        ("site_eth0.json", "{\"owner\": \"ops\"}"),
        ("empty.json", ""),
    ];
    for (name, text) in files {
        std::fs::write(node.tuning.0.join(name), text).expect("admin file");
    }
    let out = node.doctor(&["--fix"]);
    assert_eq!(out.status, 0, "{out:?}");
    for (name, text) in files {
        let path = node.tuning.0.join(name);
        assert_eq!(
            std::fs::read_to_string(&path).ok().as_deref(),
            Some(text),
            "{name}"
        );
    }
}

/// A `/proc/<pid>/ns/net` whose PID now names a process started after the
/// attachment was cached is not that pod: its missing rules are not
/// re-added for whatever runs there now.
#[test]
fn a_reused_pid_does_not_make_a_dead_pod_alive() {
    enter_test_host();
    let node = Node::new("hzpid", "10.66.0.0/24");
    let pod = Netns::new();
    node.add(pod.path(), 18066);
    let entry = node.cache_file(pod.path());
    let id = container_id(pod.path());
    // The pod goes without a DEL; its rules go too (a flush).
    pod.destroy();
    run_in(None, "iptables", &["-t", "nat", "-F"]);
    run_in(None, "iptables", &["-t", "nat", "-X"]);
    // Another process now has a PID the entry names, started after the ADD.
    let mut later = Command::new("sleep").arg("600").spawn().expect("sleep");
    let mut cached: Value =
        serde_json::from_slice(&std::fs::read(&entry).expect("entry")).expect("cache entry JSON");
    cached["netns"] = json!(format!("/proc/{}/ns/net", later.id()));
    std::fs::write(&entry, cached.to_string()).expect("rewrite entry");
    let before = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&entry)
        .and_then(|f| f.set_modified(before))
        .expect("date the entry back");

    let out = node.doctor(&["--fix"]);
    let _ = later.kill();
    let _ = later.wait();
    assert!(
        findings(&out).iter().all(|f| f["kind"] != "repair"),
        "{out:?}"
    );
    let nat = iptables_table("nat");
    assert!(!nat.contains(&dnat_chain(&id)), "no DNAT re-added:\n{nat}");
    assert!(!nat.contains(&masq_chain(&id)), "no masquerading:\n{nat}");
}

/// libcni's DEL runs portmap's DEL first and removes the cache entry last: a
/// doctor run in between must not re-add the DNAT, or it outlives the pod.
#[test]
fn a_repair_racing_a_del_leaves_no_dnat_once_the_del_finishes() {
    enter_test_host();
    let node = Node::new("hzrace", "10.67.0.0/24");
    let pod = Netns::new();
    node.add(pod.path(), 18067);
    let entry = node.cache_file(pod.path());
    let id = container_id(pod.path());
    let cached: Value =
        serde_json::from_slice(&std::fs::read(&entry).expect("entry")).expect("entry JSON");
    let list: Value = serde_json::from_str(
        &std::fs::read_to_string(node.rt.conf.0.join("hz.conflist")).expect("conf"),
    )
    .expect("conflist");
    let result = cached["result"].clone();
    // Each plugin's DEL as libcni sends it, last plugin first.
    let del = |i: usize| {
        let mut conf = list["plugins"][i].clone();
        conf["name"] = json!(NET);
        conf["cniVersion"] = json!("1.0.0");
        conf["prevResult"] = result.clone();
        if conf["type"] == "portmap" {
            conf["runtimeConfig"] = json!({"portMappings": [
                {"hostPort": 18067, "containerPort": 80, "protocol": "tcp"}]});
        }
        let conf = conf
            .to_string()
            .replace("@STORE@", &node.rt.store.0.to_string_lossy());
        Call::new(conf_type(&list, i), "DEL", pod.path(), &conf)
            .set("CNI_CONTAINERID", &id)
            .set("CNI_PATH", &node.rt.bin.0.to_string_lossy())
            .run()
            .ok();
    };
    del(2);
    del(1);
    assert!(!iptables_table("nat").contains(&dnat_chain(&id)));

    let out = node.doctor(&["--fix"]);
    assert!(
        findings(&out).iter().all(|f| f["kind"] != "repair"),
        "a DEL is under way: {out:?}"
    );
    del(0);
    std::fs::remove_file(&entry).expect("libcni removes the entry last");
    let nat = iptables_table("nat");
    assert!(
        !nat.contains(&dnat_chain(&id)),
        "no DNAT outlives the DEL:\n{nat}"
    );
}

fn conf_type(list: &Value, i: usize) -> &str {
    list["plugins"][i]["type"].as_str().unwrap_or_default()
}

/// A live pod whose rules were flushed is repaired, after a second look.
#[test]
fn a_flushed_live_pod_is_repaired_after_a_second_look() {
    enter_test_host();
    let node = Node::new("hzrep", "10.68.0.0/24");
    let pod = Netns::new();
    let ip = node.add(pod.path(), 18068);
    run_in(None, "iptables", &["-t", "nat", "-F"]);
    let started = std::time::Instant::now();
    let out = node.doctor(&["--fix"]);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "it looked twice"
    );
    let repaired: Vec<Value> = findings(&out)
        .into_iter()
        .filter(|f| f["kind"] == "repair" && f["fixed"] == true)
        .collect();
    assert_eq!(repaired.len(), 2, "portmap and masquerading: {out:?}");
    node.assert_intact(pod.path(), &ip, "after the repair");
    node.rt.run(&["del", NET, pod.path()], &json!({})).ok();
}

/// Plain `doctor` on a young leak says it left young state alone, instead of
/// only "no stale CNI state found".
#[test]
fn the_plain_report_says_how_much_young_state_it_left_alone() {
    enter_test_host();
    let node = Node::new("hzyg", "10.69.0.0/24");
    let pod = PinnedNetns::new();
    node.add(pod.path(), 18069);
    let path = pod.path().to_string();
    pod.destroy();
    let out = node.rt.run(&["doctor"], &json!({}));
    assert_eq!(out.status, 0, "{out:?}");
    assert!(out.stdout.contains("no stale CNI state found"), "{out:?}");
    assert!(
        out.stdout
            .contains("younger than --min-age (300 s) left alone"),
        "{out:?}"
    );
    node.doctor(&["--fix"]);
    assert!(!node.cache_file(&path).exists());
}
