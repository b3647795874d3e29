//! cnitool on the attachments runtimes made: `--container-id` CHECK and DEL
//! of an attachment Go's libcni made (with what it cached, without the
//! config directory), `ls` of live, dead and unreadable cache entries,
//! `--trace` of every plugin of a chain, `netns exec`, `netns del`'s warning,
//! and netns names that never resolve against the current directory.

use crate::harness;

use harness::{
    BIN, Netns, Outcome, PinnedNetns, Runtime, TempDir, cnitool_id, enter_test_host, run_in, skip,
};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// This test thread (and what it starts) in a mount namespace of its own
/// with an empty /run/netns, so named namespaces never reach the machine's.
fn private_run_netns() {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).expect("unshare mount ns");
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .expect("make / private");
    std::fs::create_dir_all("/run/netns").expect("/run/netns");
    mount(
        Some("tmpfs"),
        "/run/netns",
        Some("tmpfs"),
        MsFlags::empty(),
        None::<&str>,
    )
    .expect("tmpfs on /run/netns");
}

/// A directory of named namespaces (`cnitool netns --dir`), unmounted and
/// removed on drop.
struct NsDir(TempDir);

impl NsDir {
    fn new(tag: &str) -> NsDir {
        NsDir(TempDir::new(tag))
    }

    fn path(&self) -> &Path {
        &self.0.0
    }

    fn arg(&self) -> String {
        self.0.0.to_string_lossy().into_owned()
    }

    fn add(&self, name: &str) -> PathBuf {
        let out = cnitool(&["netns", "--dir", &self.arg(), "add", name], &[]);
        assert_eq!(out.status, 0, "{out:?}");
        self.path().join(name)
    }
}

impl Drop for NsDir {
    fn drop(&mut self) {
        for e in std::fs::read_dir(self.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = umount2(&e.path(), MntFlags::MNT_DETACH);
        }
        let _ = umount2(self.path(), MntFlags::MNT_DETACH);
    }
}

/// `cni-multi cnitool <args>` with a clean env plus `env`.
fn cnitool(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let child = Command::new(BIN)
        .arg("cnitool")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cnitool");
    Outcome::of(child)
}

trait Failed {
    fn failed(&self) -> String;
}

impl Failed for Outcome {
    /// Asserts cnitool failed (exit 1) with a message; returns stderr.
    fn failed(&self) -> String {
        assert_eq!(self.status, 1, "expected failure: {self:?}");
        assert!(self.stderr.starts_with("cnitool: "), "{self:?}");
        self.stderr.clone()
    }
}

fn none() -> Value {
    json!({})
}

/// `ls --json` of these cache dirs: the attachments listed.
fn ls(rt: &Runtime, extra: &[&str]) -> Vec<Value> {
    let mut args = extra.to_vec();
    args.extend(["ls", "--json"]);
    let out = rt.run(&args, &none()).ok();
    out["attachments"].as_array().cloned().unwrap_or_default()
}

/// host-local's reservations in `store` (not its lock and bookkeeping).
fn leases(store: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for net in std::fs::read_dir(store).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(net.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.parse::<std::net::IpAddr>().is_ok() {
                out.push(name);
            }
        }
    }
    out
}

fn nat() -> String {
    run_in(None, "iptables-save", &["-t", "nat"])
}

/// An attachment made through Go's libcni 1.1 (as containerd 1.6 and 1.7
/// run plugins; its cache entry names no netns), then checked and deleted by
/// container ID alone: the namespace is found from the host's view, the
/// config, CNI_ARGS and portMappings come from the cache (the config file is
/// gone by then), and the DEL releases the veth, the lease, the masquerade
/// and hostPort rules and the cache entry.
#[test]
fn container_id_checks_and_deletes_an_attachment_libcni_made() {
    const TEST: &str = "container_id_checks_and_deletes_an_attachment_libcni_made";
    enter_test_host();
    let Some(driver) = harness::libcni_driver("libcni-driver-attachments") else {
        skip(TEST, "Go or Debian's golang-github-appc-cni-dev is missing");
        return;
    };
    let rt = Runtime::new("at-lc");
    let list = json!({"cniVersion": "1.0.0", "name": "lc-net", "plugins": [
        {"type": "bridge", "bridge": "cni-atl0", "isGateway": true, "ipMasq": true,
         "ipam": {"type": "host-local", "subnet": "10.73.0.0/24", "dataDir": "@STORE@"}},
        {"type": "portmap", "capabilities": {"portMappings": true}},
        {"type": "tuning", "mtu": 1400}]});
    rt.write_list("lc.conflist", &list);
    let pod = Netns::new();
    let made = Command::new(&driver)
        .args(["add", "lc-net", pod.path()])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("NETCONFPATH", &rt.conf.0)
        .env("CNI_PATH", &rt.bin.0)
        .env("CNI_CACHE_DIR", &rt.cache.0)
        .env("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=web")
        .env(
            "CAP_ARGS",
            r#"{"portMappings":[{"hostPort":18073,"containerPort":80,"protocol":"tcp"}]}"#,
        )
        .output()
        .expect("libcni-driver");
    assert!(made.status.success(), "{made:?}");
    let id = cnitool_id(pod.path());
    let file = rt.cache.0.join(format!("results/lc-net-{id}-eth0"));
    let cached: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("libcni's entry")).expect("JSON");
    assert!(cached.get("netns").is_none(), "libcni 1.1: {cached}");
    assert!(nat().contains("18073"), "the hostPort rule is there");

    let listed = ls(&rt, &[]);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let a = &listed[0];
    assert_eq!(
        (&a["network"], &a["containerId"], &a["ifname"], &a["state"]),
        (
            &json!("lc-net"),
            &json!(id),
            &json!("eth0"),
            &json!("alive")
        ),
        "{a}"
    );
    assert_eq!(a["netnsCached"], false, "{a}");
    assert_eq!(a["netns"], pod.path(), "found from the host's view: {a}");
    assert!(
        a["addresses"][0]
            .as_str()
            .is_some_and(|s| s.starts_with("10.73.0."))
    );

    rt.run(&["check", "--container-id", &id, "lc-net"], &none())
        .ok();
    // The runtime's config is what counts, not the directory's (gone now).
    std::fs::remove_file(rt.conf.0.join("lc.conflist")).expect("remove conf");
    rt.run(&["del", "--container-id", &id, "lc-net"], &none())
        .ok();
    assert!(!file.exists(), "the cache entry is gone");
    let links = pod.sh("ip", &["-o", "link"]);
    assert!(!links.contains("eth0"), "{links}");
    assert!(leases(&rt.store.0).is_empty(), "{:?}", leases(&rt.store.0));
    let rules = nat();
    assert!(!rules.contains(&id) && !rules.contains("18073"), "{rules}");
    let again = rt.run(&["check", "--container-id", &id, "lc-net"], &none());
    assert!(again.failed().contains("no cached attachment"), "{again:?}");
}

/// A plugin script `name` keeping each call's stdin and CNI_* variables in
/// `<log>/<name>.<COMMAND>.<IFNAME>.{stdin,env}`; ADD answers an address.
fn recorder(bin: &Path, name: &str, log: &Path) {
    let script = format!(
        "#!/bin/sh\n\
         f='{log}/{name}.'\"$CNI_COMMAND.$CNI_IFNAME\"\n\
         cat > \"$f.stdin\"\n\
         env | grep '^CNI_' | sort > \"$f.env\"\n\
         [ \"$CNI_COMMAND\" = VERSION ] && {{ printf '{{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}}'; exit 0; }}\n\
         [ \"$CNI_COMMAND\" = ADD ] && printf '{{\"cniVersion\":\"1.0.0\",\"ips\":[{{\"address\":\"10.74.0.9/24\"}}]}}'\n\
         exit 0\n",
        log = log.display()
    );
    let path = bin.join(name);
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn recorded(log: &Path, name: &str, command: &str, ifname: &str) -> (Value, String) {
    let read = |ext: &str| {
        let path = log.join(format!("{name}.{command}.{ifname}.{ext}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let stdin = serde_json::from_str(&read("stdin")).expect("recorded stdin is JSON");
    (stdin, read("env"))
}

/// `--container-id` runs CHECK and DEL with what the runtime cached, as
/// libcni's DEL of a cached attachment does: its config (not the file's
/// since), CNI_ARGS, capability args (runtimeConfig) and netns, the cached
/// result as prevResult; several interfaces need --ifname; a netns other than
/// the cached one, or --args, is refused.
#[test]
fn container_id_runs_with_the_cached_config_args_capabilities_and_netns() {
    enter_test_host();
    let rt = Runtime::new("at-rec");
    let log = TempDir::new("at-rec-log");
    recorder(&rt.bin.0, "rec1", &log.0);
    recorder(&rt.bin.0, "rec2", &log.0);
    let list = |marker: &str| {
        json!({"cniVersion": "1.0.0", "name": "rec-net", "plugins": [
            {"type": "rec1", "marker": marker, "capabilities": {"portMappings": true}},
            {"type": "rec2"}]})
    };
    rt.write_list("rec.conflist", &list("cached"));
    let pod = PinnedNetns::new();
    let caps =
        json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]});
    let caps_text = caps.to_string();
    for ifname in ["eth0", "net1"] {
        rt.run(
            &[
                "add",
                "--container-id",
                "pod-42",
                "--ifname",
                ifname,
                "--args",
                "IgnoreUnknown=1;K8S_POD_NAME=web",
                "--cap-args",
                &caps_text,
                "rec-net",
                pod.path(),
            ],
            &none(),
        )
        .ok();
    }
    rt.write_list("rec.conflist", &list("changed since"));

    let both = rt.run(&["del", "--container-id", "pod-42", "rec-net"], &none());
    let text = both.failed();
    assert!(
        text.contains("2 cached attachments") && text.contains("--ifname"),
        "{text}"
    );
    let other = rt.run(
        &["check", "--container-id", "pod-42", "-i", "eth0", "rec-net"],
        &none(),
    );
    other.ok();
    let elsewhere = PinnedNetns::new();
    let wrong = rt.run(
        &[
            "check",
            "--container-id",
            "pod-42",
            "-i",
            "eth0",
            "--netns",
            elsewhere.path(),
            "rec-net",
        ],
        &none(),
    );
    assert!(wrong.failed().contains("is in netns"), "{wrong:?}");
    let args = rt.run(
        &[
            "del",
            "--container-id",
            "pod-42",
            "-i",
            "eth0",
            "--args",
            "A=1",
            "rec-net",
        ],
        &none(),
    );
    assert!(args.failed().contains("cached ones are used"), "{args:?}");

    rt.run(
        &["del", "--container-id", "pod-42", "-i", "eth0", "rec-net"],
        &none(),
    )
    .ok();
    for (name, command) in [
        ("rec1", "CHECK"),
        ("rec2", "CHECK"),
        ("rec1", "DEL"),
        ("rec2", "DEL"),
    ] {
        let (stdin, env) = recorded(&log.0, name, command, "eth0");
        assert_eq!(
            stdin["prevResult"]["ips"][0]["address"], "10.74.0.9/24",
            "{name} {command}"
        );
        for line in [
            "CNI_CONTAINERID=pod-42".to_string(),
            format!("CNI_NETNS={}", pod.path()),
            "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=web".to_string(),
        ] {
            assert!(env.lines().any(|l| l == line), "{name} {command}: {env}");
        }
        if name == "rec1" {
            assert_eq!(stdin["marker"], "cached", "{command}: {stdin}");
            assert_eq!(stdin["runtimeConfig"], caps, "{command}: {stdin}");
        }
    }
    let results = rt.cache.0.join("results");
    assert!(!results.join("rec-net-pod-42-eth0").exists());
    assert!(results.join("rec-net-pod-42-net1").exists(), "net1 is kept");
}

/// `ls` lists every entry of every cache directory given: a live attachment
/// (its netns pinned), a dead one (its netns removed without DEL) and a file
/// that is no entry, with network, container, interface, netns, addresses,
/// state and cache directory; a cache directory that does not exist is an error.
#[test]
fn ls_lists_live_dead_and_unreadable_attachments() {
    enter_test_host();
    let rt = Runtime::new("at-ls");
    rt.write_list(
        "ls.conflist",
        &json!({"cniVersion": "1.0.0", "name": "ls-net", "plugins": [
            {"type": "bridge", "bridge": "cni-atls0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.75.0.0/24", "dataDir": "@STORE@"}}]}),
    );
    let other = TempDir::new("at-ls-other");
    let other_arg = other.0.to_string_lossy().into_owned();
    let live = PinnedNetns::new();
    let dead = PinnedNetns::new();
    let dead_path = dead.path().to_string();
    let elsewhere = PinnedNetns::new();
    rt.run(&["add", "ls-net", live.path()], &none()).ok();
    rt.run(&["add", "ls-net", &dead_path], &none()).ok();
    rt.run(
        &["--cache-dir", &other_arg, "add", "ls-net", elsewhere.path()],
        &none(),
    )
    .ok();
    dead.destroy();
    std::fs::write(rt.cache.0.join("results/ls-net-broken-eth0"), "{cut sho").expect("write");

    let cache = rt.cache.0.to_string_lossy().into_owned();
    let listed = ls(&rt, &["--cache-dir", &other_arg]);
    assert_eq!(listed.len(), 4, "{listed:#?}");
    let row = |netns: &str| {
        listed
            .iter()
            .find(|a| a["netns"] == netns)
            .unwrap_or_else(|| panic!("no row of {netns}: {listed:#?}"))
    };
    for (netns, state, dir) in [
        (live.path(), "alive", &cache),
        (dead_path.as_str(), "dead", &cache),
        (elsewhere.path(), "alive", &other_arg),
    ] {
        let a = row(netns);
        assert_eq!(a["state"], state, "{a}");
        assert_eq!(a["cacheDir"], json!(dir), "{a}");
        assert_eq!(a["network"], "ls-net", "{a}");
        assert_eq!(a["containerId"], json!(cnitool_id(netns)), "{a}");
        assert_eq!(a["ifname"], "eth0", "{a}");
        let address = a["addresses"][0].as_str().unwrap_or_default();
        assert!(address.starts_with("10.75.0."), "{a}");
    }
    let broken = listed
        .iter()
        .find(|a| a["state"] == "unreadable")
        .unwrap_or_else(|| panic!("the broken file is listed: {listed:#?}"));
    assert!(
        broken["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("results/ls-net-broken-eth0")),
        "{broken}"
    );

    let table = rt
        .run(&["--cache-dir", &other_arg, "attachments"], &none())
        .stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("NETWORK  CONTAINER"), "{table}");
    assert_eq!(lines.len(), 5, "{table}");
    let line_of = |netns: &str| lines.iter().find(|l| l.contains(netns)).copied();
    assert!(
        line_of(live.path()).is_some_and(|l| l.ends_with(" alive")),
        "{table}"
    );
    assert!(
        line_of(&dead_path).is_some_and(|l| l.ends_with(" dead")),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("unreadable: ") && l.contains("ls-net-broken-eth0")),
        "{table}"
    );

    let missing = rt.run(&["--cache-dir", "/nonexistent-cni-cache", "ls"], &none());
    assert!(missing.failed().contains("does not exist"), "{missing:?}");
    rt.run(&["del", "ls-net", live.path()], &none()).ok();
    rt.run(&["del", "ls-net", &dead_path], &none()).ok();
    rt.run(
        &["--cache-dir", &other_arg, "del", "ls-net", elsewhere.path()],
        &none(),
    )
    .ok();
}

/// A plugin of another implementation (a script): it writes to stderr, and
/// on ADD answers its prevResult's first address.
fn noisy(bin: &Path, name: &str, exit: u8) {
    let script = format!(
        "#!/bin/sh\n\
         cat > /dev/null\n\
         echo \"{name} says hello on stderr\" >&2\n\
         [ \"$CNI_COMMAND\" = VERSION ] && {{ printf '{{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}}'; exit 0; }}\n\
         [ {exit} != 0 ] && [ \"$CNI_COMMAND\" = ADD ] && {{ printf '{{\"code\":7,\"msg\":\"{name} refuses\"}}'; exit {exit}; }}\n\
         [ \"$CNI_COMMAND\" = ADD ] && printf '{{\"cniVersion\":\"1.0.0\",\"ips\":[{{\"address\":\"10.76.0.99/24\"}}]}}'\n\
         exit 0\n"
    );
    let path = bin.join(name);
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `--trace` (and `-v`) shows every plugin of a chain, in order (DEL in
/// reverse), the IPAM plugin bridge delegates to nested under it: its CNI_*
/// variables, stdin, exit status, time, stdout and stderr; the result on
/// stdout is unchanged, and a failing plugin's exit status and answer are shown.
#[test]
fn trace_shows_every_plugin_of_a_chain() {
    enter_test_host();
    let rt = Runtime::new("at-trace");
    noisy(&rt.bin.0, "noisy", 0);
    noisy(&rt.bin.0, "grumpy", 3);
    rt.write_list(
        "trace.conflist",
        &json!({"cniVersion": "1.0.0", "name": "trace-net", "plugins": [
            {"type": "bridge", "bridge": "cni-attr0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.76.0.0/24", "dataDir": "@STORE@"}},
            {"type": "portmap", "capabilities": {"portMappings": true}},
            {"type": "tuning", "mtu": 1400},
            {"type": "noisy"}]}),
    );
    rt.write_list(
        "fail.conflist",
        &json!({"cniVersion": "1.0.0", "name": "fail-net", "plugins": [
            {"type": "noisy"}, {"type": "grumpy"}]}),
    );
    let pod = Netns::new();
    let caps =
        json!({"portMappings": [{"hostPort": 18076, "containerPort": 80, "protocol": "tcp"}]});
    let added = rt.run(&["--trace", "add", "trace-net", pod.path()], &caps);
    let result = added.ok();
    assert_eq!(result["ips"][0]["address"], "10.76.0.99/24", "{result}");
    let trace = &added.stderr;
    let bin = rt.bin.0.display();
    let mut at = 0;
    for (label, plugin, how) in [
        ("1", "bridge", "in-process"),
        ("1.1", "host-local", "in-process"),
        ("2", "portmap", "in-process"),
        ("3", "tuning", "in-process"),
        ("4", "noisy", "exec"),
    ] {
        let head = format!("cnitool: trace [{label}] {plugin} ADD: {how}");
        let start = trace[at..]
            .find(&head)
            .unwrap_or_else(|| panic!("no {head:?} after byte {at}:\n{trace}"))
            + at;
        let end_head = format!("cnitool: trace [{label}] {plugin} ADD: exit status: 0 after ");
        let end = trace[start..]
            .find(&end_head)
            .unwrap_or_else(|| panic!("no {end_head:?}:\n{trace}"))
            + start;
        let run = &trace[start..end];
        for want in [
            "    CNI_COMMAND=ADD\n".to_string(),
            format!("    CNI_CONTAINERID={}\n", cnitool_id(pod.path())),
            format!("    CNI_NETNS={}\n", pod.path()),
            "    CNI_IFNAME=eth0\n".to_string(),
            "    CNI_ARGS (unset)\n".to_string(),
            format!("    CNI_PATH={bin}\n"),
            "    stdin:\n".to_string(),
        ] {
            assert!(
                run.contains(&want),
                "[{label}] {plugin}: no {want:?} in\n{run}"
            );
        }
        if label != "1.1" {
            assert!(run.contains(&format!("\"type\":\"{plugin}\"")), "{run}");
        }
        at = start + head.len();
    }
    assert!(
        trace.contains("\"runtimeConfig\":{\"portMappings\":[{"),
        "{trace}"
    );
    let noisy_end = trace
        .find("cnitool: trace [4] noisy ADD: exit status: 0 after ")
        .unwrap_or_default();
    let tail = &trace[noisy_end..];
    assert!(
        tail.contains("    stdout:\n      {\"cniVersion\":\"1.0.0\",\"ips\"")
            && tail.contains("    stderr:\n      noisy says hello on stderr\n"),
        "{tail}"
    );

    let deleted = rt.run(&["-v", "del", "trace-net", pod.path()], &none());
    deleted.ok();
    let order: Vec<usize> = [
        "[1] noisy DEL",
        "[2] tuning DEL",
        "[3] portmap DEL",
        "[4] bridge DEL",
        "[4.1] host-local DEL",
    ]
    .iter()
    .map(|h| {
        deleted
            .stderr
            .find(&format!("cnitool: trace {h}: "))
            .unwrap_or_else(|| panic!("no {h}: {}", deleted.stderr))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", deleted.stderr);

    let failed = rt.run(&["--trace", "add", "fail-net", pod.path()], &none());
    let text = failed.failed();
    assert!(
        text.contains("cnitool: trace [2] grumpy ADD: exit status: 3 after ")
            && text.contains("{\"code\":7,\"msg\":\"grumpy refuses\"}")
            && text.contains("grumpy says hello on stderr"),
        "{text}"
    );
    rt.run(&["del", "fail-net", pod.path()], &none()).ok();
}

/// `netns exec NAME CMD...` runs CMD itself (no shell: its arguments reach it
/// as given) in the namespace, where /sys shows that namespace's devices, and
/// exits with CMD's status; a name is looked up in the directory only.
#[test]
fn netns_exec_runs_a_command_in_the_namespace() {
    enter_test_host();
    private_run_netns();
    harness::make_eth0();
    let dir = NsDir::new("at-exec");
    let d = dir.arg();
    dir.add("demo");
    let exec = |args: &[&str]| {
        let mut all = vec!["netns", "--dir", &d, "exec"];
        all.extend_from_slice(args);
        cnitool(&all, &[])
    };
    let links = exec(&["demo", "ip", "-o", "link"]);
    assert_eq!(links.status, 0, "{links:?}");
    assert!(
        links.stdout.contains("lo:") && !links.stdout.contains("eth0"),
        "{links:?}"
    );
    let sys = exec(&["demo", "ls", "/sys/class/net"]);
    assert_eq!(
        sys.stdout.split_whitespace().collect::<Vec<_>>(),
        ["lo"],
        "{sys:?}"
    );
    let literal = exec(&["demo", "echo", "$HOME;", "*", "-n"]);
    assert_eq!(literal.stdout, "$HOME; * -n\n", "{literal:?}");
    assert_eq!(exec(&["demo", "sh", "-c", "exit 7"]).status, 7);
    let missing = exec(&["nope", "true"]);
    assert!(
        missing.failed().contains("no namespace \"nope\""),
        "{missing:?}"
    );
    let escape = exec(&["../demo", "true"]);
    assert!(
        escape.failed().contains("invalid namespace name"),
        "{escape:?}"
    );
    let no_cmd = exec(&["demo", "/nonexistent/cmd"]);
    assert!(
        no_cmd.failed().contains("failed to run /nonexistent/cmd"),
        "{no_cmd:?}"
    );
}

/// `netns del` of a namespace that cached attachments still name says so on
/// stderr (naming each, and how to DEL it) before deleting it; without any
/// it says nothing.
#[test]
fn netns_del_warns_about_attachments_left_in_the_namespace() {
    enter_test_host();
    private_run_netns();
    let rt = Runtime::new("at-del");
    rt.write_list(
        "lo.conflist",
        &json!({"cniVersion": "1.0.0", "name": "lo-net", "plugins": [{"type": "loopback"}]}),
    );
    let dir = NsDir::new("at-del-ns");
    let d = dir.arg();
    let leaky = dir.add("leaky");
    dir.add("clean");
    let leaky = leaky.to_string_lossy().into_owned();
    rt.run(
        &["add", "--container-id", "pod-7", "lo-net", &leaky],
        &none(),
    )
    .ok();
    let del = rt.run(&["netns", "--dir", &d, "del", "leaky"], &none());
    assert_eq!(del.status, 0, "{del:?}");
    assert!(
        del.stderr
            .contains("warning: namespace \"leaky\" still has 1 cached attachment")
            && del.stderr.contains("lo-net pod-7 eth0")
            && del
                .stderr
                .contains("cnitool del --container-id pod-7 lo-net"),
        "{del:?}"
    );
    assert!(!Path::new(&leaky).exists());
    let quiet = rt.run(&["netns", "--dir", &d, "del", "clean"], &none());
    assert_eq!((quiet.status, quiet.stderr.as_str()), (0, ""), "{quiet:?}");
    rt.run(&["del", "--container-id", "pod-7", "lo-net"], &none())
        .ok();
}

/// `netns add` of a name that exists says so, and how to remove it, rather
/// than an errno; the namespace there is left alone.
#[test]
fn netns_add_of_an_existing_name_says_it_exists() {
    enter_test_host();
    private_run_netns();
    let dir = NsDir::new("at-again");
    let d = dir.arg();
    let first = dir.add("twice");
    let again = cnitool(&["netns", "--dir", &d, "add", "twice"], &[]);
    let text = again.failed();
    assert!(
        text.contains("namespace \"twice\" already exists")
            && text.contains("cnitool netns del twice")
            && !text.contains("os error"),
        "{text}"
    );
    let still = run_in(Some(&first), "ip", &["-o", "link"]);
    assert!(still.contains("lo:"), "{still}");
}

/// The attack: a namespace file in the current directory named like the
/// namespace the user means (/run/netns/NAME). A bare name is always the one
/// in /run/netns, and a name there that does not exist is reported as such,
/// not as a file of the current directory.
#[test]
fn a_netns_name_never_resolves_against_the_current_directory() {
    enter_test_host();
    private_run_netns();
    let rt = Runtime::new("at-cwd");
    rt.write_list(
        "lo.conflist",
        &json!({"cniVersion": "1.0.0", "name": "lo-net", "plugins": [{"type": "loopback"}]}),
    );
    let trap = NsDir::new("at-cwd-trap");
    let decoy = trap.add("pod");
    std::fs::write(trap.path().join("ghost"), "").expect("plain file");
    assert_eq!(cnitool(&["netns", "add", "pod"], &[]).status, 0);
    let in_cwd = |args: &[&str]| {
        let mut cmd = rt.command(args, &none(), None);
        cmd.current_dir(trap.path());
        Outcome::of(cmd.spawn().expect("spawn cnitool"))
    };
    in_cwd(&["add", "lo-net", "pod"]).ok();
    let up = |path: &Path| run_in(Some(path), "ip", &["-o", "link", "show", "lo"]).contains("UP");
    assert!(
        up(Path::new("/run/netns/pod")),
        "/run/netns/pod got the attachment"
    );
    assert!(
        !up(&decoy),
        "the file in the current directory was left alone"
    );
    let entry = rt.cache.0.join(format!(
        "results/lo-net-{}-eth0",
        cnitool_id("/run/netns/pod")
    ));
    let cached: Value =
        serde_json::from_slice(&std::fs::read(&entry).expect("entry")).expect("JSON");
    assert_eq!(cached["netns"], "/run/netns/pod");
    let ghost = in_cwd(&["add", "lo-net", "ghost"]);
    let text = ghost.failed();
    assert!(
        text.contains("/run/netns/ghost") && !text.contains(&*trap.arg()),
        "{text}"
    );
    in_cwd(&["del", "lo-net", "pod"]).ok();
    assert_eq!(cnitool(&["netns", "del", "pod"], &[]).status, 0);
}
