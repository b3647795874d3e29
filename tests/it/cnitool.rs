//! cnitool and the runtime library: testdata conflists end to end, libcni's
//! cache layout both ways, chaining stdin, GC, STATUS, errors, named netns.

use crate::harness;

use harness::{BIN, Netns, Outcome, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `cni-multi cnitool <args>` with a clean env plus `env`.
fn cnitool(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let child = Command::new(BIN)
        .arg("cnitool")
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cnitool");
    Outcome::of(child)
}

/// A conf dir, a cache dir and a plugin dir for one test.
struct Setup {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    bin: TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            conf: TempDir::new("conf"),
            cache: TempDir::new("cache"),
            store: TempDir::new("store"),
            bin: plugin_dir(),
        }
    }

    /// Copies a testdata config, pointing host-local's dataDir at the test store
    /// (the only change: tests must not write /var/lib/cni).
    fn use_testdata(&self, file: &str) -> Value {
        let text = std::fs::read_to_string(Path::new("testdata").join(file)).expect("testdata");
        let mut v: Value = serde_json::from_str(&text).expect("testdata JSON");
        let plugins: Vec<&mut Value> = match v.get_mut("plugins").and_then(Value::as_array_mut) {
            Some(list) => list.iter_mut().collect(),
            None => Vec::new(),
        };
        for p in plugins {
            if p["ipam"]["type"] == "host-local" {
                p["ipam"]["dataDir"] = json!(self.store.0);
            }
        }
        std::fs::write(self.conf.0.join(file), v.to_string()).expect("write conf");
        v
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("NETCONFPATH", self.conf.0.to_string_lossy().into_owned()),
            ("CNI_PATH", self.bin.0.to_string_lossy().into_owned()),
            // Runtimes pass their PATH: ipMasq finds iptables through it.
            ("PATH", std::env::var("PATH").unwrap_or_default()),
        ]
    }

    fn run(&self, args: &[&str]) -> Outcome {
        let cache = self.cache.0.to_string_lossy().into_owned();
        let mut all = vec!["--cache-dir", cache.as_str()];
        all.extend_from_slice(args);
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        cnitool(&all, &env)
    }

    fn cache_files(&self) -> Vec<String> {
        std::fs::read_dir(self.cache.0.join("results"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn container_id(netns: &str) -> String {
    // cnitool's rule, computed independently with sha512sum.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("printf %s '{netns}' | sha512sum"))
        .output()
        .expect("sha512sum");
    format!("cnitool-{}", &String::from_utf8_lossy(&out.stdout)[..20])
}

#[test]
fn testdata_conflists_add_check_del() {
    enter_test_host();
    let s = Setup::new();
    s.use_testdata("bridge.conflist");
    s.use_testdata("ptp.conflist");
    s.use_testdata("macvlan.conflist");
    std::fs::copy("testdata/loopback.conf", s.conf.0.join("loopback.conf")).expect("copy");
    harness::make_eth0();

    let nat = || {
        run_in(None, "iptables-save", &["-t", "nat"])
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let nat_before = nat();
    let listed = s.run(&["list"]).stdout;
    for line in [
        "bridge-net\t1.0.0\tbridge\t",
        "ptp-net\t1.0.0\tptp\t",
        "macvlan-net\t1.0.0\tmacvlan\t",
    ] {
        assert!(listed.contains(line), "{listed}");
    }
    for (net, address) in [
        ("bridge-net", "10.22.0.2/16"),
        ("ptp-net", "10.23.0.2/24"),
        ("macvlan-net", "192.168.77.10/24"),
        ("lo", "127.0.0.1/8"),
    ] {
        let ns = Netns::new();
        let added = s.run(&["add", net, ns.path()]);
        let out = added.ok();
        assert_eq!(out["cniVersion"], "1.0.0", "{net}");
        assert_eq!(out["ips"][0]["address"], address, "{net}: {out}");
        assert_eq!(s.cache_files().len(), 1, "{net}");
        s.run(&["check", net, ns.path()]).ok();
        s.run(&["del", net, ns.path()]).ok();
        assert!(s.cache_files().is_empty(), "{net}: cache removed after DEL");
        if net != "lo" {
            assert!(
                ns.sh("ip", &["-o", "link"])
                    .lines()
                    .all(|l| !l.contains("eth0")),
                "{net}"
            );
        }
        // A second DEL (no cache any more) still succeeds.
        s.run(&["del", net, ns.path()]).ok();
    }
    assert_eq!(nat(), nat_before, "bridge-net's ipMasq rules are gone");
    let leftovers: Vec<String> = walk(&s.store.0)
        .into_iter()
        .filter(|f| !f.ends_with("/lock") && !f.contains("last_reserved_ip"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn the_cache_file_has_libcni_s_layout_and_a_fixture_is_honoured() {
    enter_test_host();
    let s = Setup::new();
    s.use_testdata("bridge.conflist");
    let conf_bytes = std::fs::read(s.conf.0.join("bridge.conflist")).expect("conf");
    let ns = Netns::new();
    let env = s.env();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=web"));
    env.push((
        "CAP_ARGS",
        r#"{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}"#,
    ));
    let cache = s.cache.0.to_string_lossy().into_owned();
    let out = cnitool(
        &["--cache-dir", &cache, "add", "bridge-net", ns.path()],
        &env,
    )
    .ok();

    let id = container_id(ns.path());
    let file = s
        .cache
        .0
        .join("results")
        .join(format!("bridge-net-{id}-eth0"));
    let meta = std::fs::metadata(&file).expect("cache file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let dir_mode = std::fs::metadata(s.cache.0.join("results"))
        .expect("dir")
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    let text = std::fs::read_to_string(&file).expect("read cache");
    let keys: Vec<&str> = [
        "\"kind\"",
        "\"containerId\"",
        "\"config\"",
        "\"ifName\"",
        "\"networkName\"",
        "\"netns\"",
        "\"cniArgs\"",
        "\"capabilityArgs\"",
        "\"result\"",
    ]
    .into_iter()
    .collect();
    let positions: Vec<usize> = keys.iter().map(|k| text.find(k).expect(k)).collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "libcni key order: {text}"
    );
    assert!(!text.contains('\n'), "compact");
    let v: Value = serde_json::from_str(&text).expect("cache JSON");
    assert_eq!(v["kind"], "cniCacheV1");
    assert_eq!(v["containerId"], id.as_str());
    let decoded = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf %s '{}' | base64 -d",
            v["config"].as_str().expect("config")
        ))
        .output()
        .expect("base64");
    assert_eq!(decoded.stdout, conf_bytes, "config is the conflist, base64");
    assert_eq!(v["ifName"], "eth0");
    assert_eq!(v["networkName"], "bridge-net");
    assert_eq!(v["netns"], ns.path());
    assert_eq!(
        v["cniArgs"],
        json!([["IgnoreUnknown", "1"], ["K8S_POD_NAME", "web"]])
    );
    assert_eq!(v["capabilityArgs"]["portMappings"][0]["hostPort"], 8080);
    assert_eq!(v["result"], out);

    // A fixture written as libcni would, for an attachment cnitool did not add.
    let other = Netns::new();
    let other_id = container_id(other.path());
    let added = harness::Call::new(
        "bridge",
        "ADD",
        other.path(),
        &conf_of(&s, "bridge.conflist", 0),
    )
    .set("CNI_CONTAINERID", &other_id)
    .path(&s.bin)
    .run()
    .ok();
    let fixture = json!({
        "kind": "cniCacheV1",
        "containerId": other_id,
        "config": v["config"],
        "ifName": "eth0",
        "networkName": "bridge-net",
        "netns": other.path(),
        "result": added,
    });
    let fixture_file = s
        .cache
        .0
        .join("results")
        .join(format!("bridge-net-{other_id}-eth0"));
    std::fs::write(&fixture_file, fixture.to_string()).expect("fixture");
    s.run(&["check", "bridge-net", other.path()]).ok();
    // CHECK really uses the cached result: a wrong address in it fails.
    let mut wrong = fixture.clone();
    wrong["result"]["ips"][0]["address"] = json!("10.22.99.99/16");
    std::fs::write(&fixture_file, wrong.to_string()).expect("fixture");
    s.run(&["check", "bridge-net", other.path()]).err_exit();
    std::fs::write(&fixture_file, fixture.to_string()).expect("fixture");
    s.run(&["del", "bridge-net", other.path()]).ok();
    assert!(!fixture_file.exists());
    assert!(
        other
            .sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    s.run(&["del", "bridge-net", ns.path()]).ok();
}

/// The stdin `plugins[index]` of a config file gets from a runtime (name and
/// version of the list), for driving a plugin directly.
fn conf_of(s: &Setup, file: &str, index: usize) -> String {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(s.conf.0.join(file)).expect("conf"))
            .expect("json");
    let mut p = v["plugins"][index].clone();
    p["name"] = v["name"].clone();
    p["cniVersion"] = v["cniVersion"].clone();
    p.to_string()
}

trait ErrExit {
    fn err_exit(&self) -> String;
}

impl ErrExit for Outcome {
    /// Asserts cnitool failed (exit 1) with a message; returns stderr.
    fn err_exit(&self) -> String {
        assert_eq!(self.status, 1, "expected failure: {self:?}");
        assert!(self.stderr.starts_with("cnitool: "), "{self:?}");
        self.stderr.clone()
    }
}

/// A plugin script `name` that logs each call and its stdin under `log`, and
/// answers ADD with a result naming itself.
fn recorder(bin: &Path, name: &str, log: &Path, status_code: Option<u32>) {
    let status = match status_code {
        Some(code) => format!(
            "[ \"$CNI_COMMAND\" = STATUS ] && {{ printf '{{\"code\":{code},\"msg\":\"{name} not ready\"}}'; exit 1; }}\n"
        ),
        None => String::new(),
    };
    let script = format!(
        "#!/bin/sh\n\
         echo \"{name} $CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> '{log}/calls'\n\
         cat > '{log}/{name}.'\"$CNI_COMMAND\"'.'\"$CNI_CONTAINERID\"\n\
         {status}\
         [ \"$CNI_COMMAND\" = VERSION ] && {{ printf '{{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.0.0\",\"1.1.0\"]}}'; exit 0; }}\n\
         [ \"$CNI_COMMAND\" = ADD ] && printf '{{\"cniVersion\":\"1.1.0\",\"dns\":{{\"domain\":\"{name}\"}}}}'\n\
         exit 0\n",
        log = log.display()
    );
    let path = bin.join(name);
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn recorded(log: &Path, name: &str, command: &str, id: &str) -> Value {
    let path: PathBuf = log.join(format!("{name}.{command}.{id}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("recorded stdin is JSON")
}

fn three_plugin_list(s: &Setup, version: &str) {
    let list = json!({
        "cniVersion": version,
        "name": "chain",
        "plugins": [
            {"type": "rec1", "name": "ignored", "cniVersion": "0.3.1", "some": "key"},
            {"type": "rec2", "capabilities": {"portMappings": true, "mac": true}},
            {"type": "rec3", "runtimeConfig": {"kept": true}}
        ]
    });
    std::fs::write(s.conf.0.join("chain.conflist"), list.to_string()).expect("conf");
}

#[test]
fn chaining_gives_each_plugin_the_exact_stdin_and_del_runs_in_reverse() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("reclog");
    for name in ["rec1", "rec2", "rec3"] {
        recorder(&s.bin.0, name, &log.0, None);
    }
    three_plugin_list(&s, "1.1.0");
    let env = s.env();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push((
        "CAP_ARGS",
        r#"{"portMappings":[{"hostPort":80}],"bandwidth":{"ingressRate":1}}"#,
    ));
    let cache = s.cache.0.to_string_lossy().into_owned();
    let netns = "/run/netns/cnitool-chain-test";
    let id = container_id(netns);
    let out = cnitool(&["--cache-dir", &cache, "add", "chain", netns], &env).ok();
    assert_eq!(
        out,
        json!({"cniVersion": "1.1.0", "dns": {"domain": "rec3"}})
    );

    let r1 = |d: &str| json!({"cniVersion": "1.1.0", "dns": {"domain": d}});
    assert_eq!(
        recorded(&log.0, "rec1", "ADD", &id),
        json!({"type": "rec1", "name": "chain", "cniVersion": "1.1.0", "some": "key"})
    );
    assert_eq!(
        recorded(&log.0, "rec2", "ADD", &id),
        json!({
            "type": "rec2", "name": "chain", "cniVersion": "1.1.0",
            "capabilities": {"portMappings": true, "mac": true},
            "runtimeConfig": {"portMappings": [{"hostPort": 80}]},
            "prevResult": r1("rec1")
        })
    );
    assert_eq!(
        recorded(&log.0, "rec3", "ADD", &id),
        json!({
            "type": "rec3", "name": "chain", "cniVersion": "1.1.0",
            "runtimeConfig": {"kept": true},
            "prevResult": r1("rec2")
        })
    );

    cnitool(&["--cache-dir", &cache, "check", "chain", netns], &env).ok();
    for name in ["rec1", "rec2", "rec3"] {
        let stdin = recorded(&log.0, name, "CHECK", &id);
        assert_eq!(
            stdin["prevResult"],
            r1("rec3"),
            "{name}: CHECK gets the cached result"
        );
        assert_eq!(stdin["name"], "chain");
    }
    assert_eq!(
        recorded(&log.0, "rec2", "CHECK", &id)["runtimeConfig"],
        json!({"portMappings": [{"hostPort": 80}]})
    );

    cnitool(&["--cache-dir", &cache, "del", "chain", netns], &env).ok();
    for name in ["rec1", "rec2", "rec3"] {
        assert_eq!(
            recorded(&log.0, name, "DEL", &id)["prevResult"],
            r1("rec3"),
            "{name}"
        );
    }
    let calls = std::fs::read_to_string(log.0.join("calls")).expect("calls");
    let order: Vec<String> = calls
        .lines()
        .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        order,
        [
            "rec1 ADD",
            "rec2 ADD",
            "rec3 ADD",
            "rec1 CHECK",
            "rec2 CHECK",
            "rec3 CHECK",
            "rec3 DEL",
            "rec2 DEL",
            "rec1 DEL"
        ]
    );
    assert!(
        calls.lines().all(|l| l.ends_with(&format!("{id} eth0"))),
        "{calls}"
    );
    assert!(s.cache_files().is_empty());
}

#[test]
fn gc_deletes_exactly_the_attachments_not_valid_and_status_names_the_failing_plugin() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("gclog");
    recorder(&s.bin.0, "rec1", &log.0, None);
    recorder(&s.bin.0, "rec2", &log.0, Some(50));
    recorder(&s.bin.0, "rec3", &log.0, None);
    three_plugin_list(&s, "1.1.0");
    let (keep, drop) = ("/run/netns/gc-keep", "/run/netns/gc-drop");
    s.run(&["add", "chain", keep]).ok();
    s.run(&["add", "chain", drop]).ok();
    assert_eq!(s.cache_files().len(), 2);
    let keep_id = container_id(keep);
    let drop_id = container_id(drop);
    let valid = format!("{keep_id}/eth0");
    s.run(&["gc", "chain", "--valid", &valid]).ok();
    assert_eq!(s.cache_files(), [format!("chain-{keep_id}-eth0")]);
    let calls = std::fs::read_to_string(log.0.join("calls")).expect("calls");
    let dels: Vec<&str> = calls.lines().filter(|l| l.contains(" DEL ")).collect();
    assert_eq!(
        dels,
        [
            format!("rec3 DEL {drop_id} eth0"),
            format!("rec2 DEL {drop_id} eth0"),
            format!("rec1 DEL {drop_id} eth0")
        ]
    );
    let gc_stdin = recorded(&log.0, "rec1", "GC", "");
    assert_eq!(
        gc_stdin["cni.dev/valid-attachments"],
        json!([{"containerID": keep_id, "ifname": "eth0"}])
    );
    assert_eq!(
        gc_stdin["cni.dev/attachments"],
        gc_stdin["cni.dev/valid-attachments"]
    );

    let err = s.run(&["status", "chain"]).err_exit();
    assert!(
        err.contains("type=\"rec2\"") && err.contains("rec2 not ready") && err.contains("code 50"),
        "{err}"
    );
    assert!(!calls.contains("rec3 STATUS"));
}

#[test]
fn broken_inputs_give_clear_errors_and_no_cache_entry() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("errlog");
    recorder(&s.bin.0, "rec1", &log.0, None);
    let write =
        |file: &str, v: Value| std::fs::write(s.conf.0.join(file), v.to_string()).expect("conf");
    let list = |name: &str, t: &str| json!({"cniVersion": "1.0.0", "name": name, "plugins": [{"type": "rec1"}, {"type": t}]});
    std::fs::write(
        s.bin.0.join("garbage"),
        "#!/bin/sh\necho 'this is not json'\n",
    )
    .expect("script");
    std::fs::write(s.bin.0.join("silent"), "#!/bin/sh\nexit 3\n").expect("script");
    std::fs::write(
        s.bin.0.join("grumbling"),
        "#!/bin/sh\necho 'no bridge here' >&2\nexit 4\n",
    )
    .expect("script");
    for f in ["garbage", "silent", "grumbling"] {
        std::fs::set_permissions(s.bin.0.join(f), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    write("a-missing.conflist", list("missing", "nosuchplugin"));
    write("b-garbage.conflist", list("garbage", "garbage"));
    write("c-silent.conflist", list("silent", "silent"));
    write("d-grumbling.conflist", list("grumbling", "grumbling"));
    let ns = "/run/netns/cnitool-err-test";
    for (net, plugin, text) in [
        (
            "missing",
            "nosuchplugin",
            "failed to find plugin \"nosuchplugin\"",
        ),
        ("garbage", "garbage", "not JSON"),
        ("silent", "silent", "netplugin failed with no error message"),
    ] {
        let err = s.run(&["add", net, ns]).err_exit();
        assert!(err.contains(&format!("type=\"{plugin}\"")), "{err}");
        assert!(err.contains(text), "{err}");
        assert!(err.contains(".conflist"), "names the file: {err}");
        assert!(s.cache_files().is_empty(), "{net}: no partial cache entry");
    }
    // A plugin that fails with no JSON error: its stderr is passed on and
    // quoted in the error, with its exit status.
    let out = s.run(&["add", "grumbling", ns]);
    assert_eq!(out.status, 1, "{out:?}");
    assert!(
        out.stderr.starts_with("no bridge here\ncnitool: "),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("netplugin failed: \"no bridge here\\n\": exit status: 4"),
        "{out:?}"
    );
    std::fs::write(
        s.conf.0.join("0-broken.conflist"),
        "{\"name\": \"broken\", ",
    )
    .expect("conf");
    let err = s.run(&["add", "missing", ns]).err_exit();
    assert!(err.contains("0-broken.conflist"), "{err}");
    assert!(s.cache_files().is_empty());
    let err = s.run(&["add", "nonet", ns]).err_exit();
    assert!(
        err.contains("0-broken.conflist") || err.contains("no net configuration"),
        "{err}"
    );
    // validate names the plugin that is missing.
    std::fs::remove_file(s.conf.0.join("0-broken.conflist")).expect("rm");
    let err = s.run(&["validate", "missing"]).err_exit();
    assert!(err.contains("FAIL\tnosuchplugin"), "{err}");
    assert!(err.contains("ok\trec1"), "{err}");
    // Usage errors exit 2 with clap's message.
    assert_eq!(s.run(&["add", "only-one-arg"]).status, 2);
}

#[test]
fn validate_checks_versions_of_our_own_plugins() {
    enter_test_host();
    let s = Setup::new();
    s.use_testdata("chain.conflist");
    let out = s.run(&["validate", "chain-net"]);
    assert_eq!(out.status, 0, "{out:?}");
    for p in ["bridge", "portmap", "bandwidth", "tuning"] {
        assert!(
            out.stdout.contains(&format!("ok\t{p}\tsupports 1.0.0")),
            "{}",
            out.stdout
        );
    }
    let listed = s.run(&["list"]).stdout;
    assert!(
        listed.contains("chain-net\t1.0.0\tbridge -> portmap -> bandwidth -> tuning\t"),
        "{listed}"
    );
}

#[test]
fn named_netns_without_ip() {
    enter_test_host();
    // A private mount namespace for this thread (and the cnitool it starts), so
    // the bind mounts never reach the machine's.
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).expect("unshare mount ns");
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .expect("make / private");
    let dir = TempDir::new("named");
    let d = dir.0.to_string_lossy().into_owned();
    let added = cnitool(&["netns", "--dir", &d, "add", "demo"], &[]);
    assert_eq!(added.status, 0, "{added:?}");
    let path = dir.0.join("demo");
    assert_eq!(added.stdout.trim(), path.to_string_lossy());
    // It is a network namespace other than ours: lo exists there and is down.
    let links = run_in(Some(&path), "ip", &["-o", "link"]);
    assert!(links.contains("lo:") && !links.contains("UP"), "{links}");
    assert_eq!(
        cnitool(&["netns", "--dir", &d, "list"], &[]).stdout.trim(),
        "demo"
    );
    assert_eq!(
        cnitool(&["netns", "--dir", &d, "add", "demo"], &[]).status,
        1
    );
    assert_eq!(
        cnitool(&["netns", "--dir", &d, "add", "../x"], &[]).status,
        1
    );
    assert_eq!(
        cnitool(&["netns", "--dir", &d, "del", "demo"], &[]).status,
        0
    );
    assert!(!path.exists());
    assert!(
        cnitool(&["netns", "--dir", &d, "list"], &[])
            .stdout
            .trim()
            .is_empty()
    );
    // `netns add` made the directory a mount point (as iproute2 does
    // /run/netns): unmounted, the TempDir can remove it.
    let _ = nix::mount::umount2(&dir.0, nix::mount::MntFlags::MNT_DETACH);
}

const TRACE: [(&str, &str); 3] = [
    (
        "TRACEPARENT",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ),
    ("TRACESTATE", "congo=t61rcWkgMzE"),
    ("BAGGAGE", "userId=alice,region=eu"),
];

/// A plugin script that keeps its environment of each verb in
/// `<log>/<name>.<CNI_COMMAND>.env`.
fn env_recorder(bin: &Path, name: &str, log: &Path) {
    let script = format!(
        "#!/bin/sh\n\
         env > '{log}/{name}.'\"$CNI_COMMAND\"'.env'\n\
         cat > /dev/null\n\
         [ \"$CNI_COMMAND\" = VERSION ] && {{ printf '{{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.0.0\",\"1.1.0\"]}}'; exit 0; }}\n\
         [ \"$CNI_COMMAND\" = ADD ] && printf '{{\"cniVersion\":\"1.1.0\"}}'\n\
         exit 0\n",
        log = log.display()
    );
    let path = bin.join(name);
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn trace_context_reaches_every_plugin() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("tracelog");
    env_recorder(&s.bin.0, "envrec", &log.0);
    let list = json!({"cniVersion": "1.1.0", "name": "traced", "plugins": [{"type": "envrec"}]});
    std::fs::write(s.conf.0.join("traced.conflist"), list.to_string()).expect("conf");
    let env = s.env();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend(TRACE);
    let cache = s.cache.0.to_string_lossy().into_owned();
    let netns = "/run/netns/cnitool-trace-test";
    for verb in ["add", "check", "del", "status"] {
        let out = match verb {
            "status" => cnitool(&["--cache-dir", &cache, verb, "traced"], &env),
            _ => cnitool(&["--cache-dir", &cache, verb, "traced", netns], &env),
        };
        out.ok();
        let path = log.0.join(format!("envrec.{}.env", verb.to_uppercase()));
        let seen = std::fs::read_to_string(&path).expect("recorded env");
        for (k, v) in TRACE {
            assert!(
                seen.lines().any(|l| l == format!("{k}={v}")),
                "{verb}: {seen}"
            );
        }
    }
}

/// DEL of a single-plugin `.conf` and of a list alike: an unreadable cache
/// file is deleted and the plugins still get DEL (without prevResult, which
/// they must tolerate); with a good cache the first plugin gets the ADD result.
#[test]
fn del_drops_an_unreadable_cache_file_and_goes_on() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("dellog");
    for name in ["single", "rec1", "rec2"] {
        recorder(&s.bin.0, name, &log.0, None);
    }
    let single = json!({"cniVersion": "1.0.0", "name": "one", "type": "single"});
    std::fs::write(s.conf.0.join("one.conf"), single.to_string()).expect("conf");
    let list = json!({"cniVersion": "1.1.0", "name": "two",
        "plugins": [{"type": "rec1"}, {"type": "rec2"}]});
    std::fs::write(s.conf.0.join("two.conflist"), list.to_string()).expect("conf");
    let netns = "/run/netns/cnitool-del-cache-test";
    let id = container_id(netns);
    for (net, first, last) in [("one", "single", "single"), ("two", "rec1", "rec2")] {
        s.run(&["add", net, netns]).ok();
        s.run(&["del", net, netns]).ok();
        let prev = &recorded(&log.0, first, "DEL", &id)["prevResult"];
        assert_eq!(prev["dns"]["domain"], json!(last), "{net}: {prev}");
        s.run(&["add", net, netns]).ok();
        let file = s.cache.0.join("results").join(format!("{net}-{id}-eth0"));
        assert!(file.exists(), "{}", file.display());
        std::fs::write(&file, "{not json").expect("corrupt the cache");
        s.run(&["del", net, netns]).ok();
        assert!(!file.exists(), "{net}: the unreadable cache file is gone");
        assert!(
            recorded(&log.0, first, "DEL", &id)
                .get("prevResult")
                .is_none(),
            "{net}"
        );
    }
}
