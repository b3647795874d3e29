//! What an operator is told when something is off: a user not root is told
//! to run as root (by the plugin, which names the capability, or by
//! cnitool), STATUS below spec 1.1.0 says it was skipped, a directory given
//! to the doctor that is not there is an error, and `--version` names the
//! commit and the reference releases matched.

use crate::harness;

use harness::{BIN, Netns, Outcome, TempDir, enter_test_host};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A node any user may read: testdata's bridge-net (host-local in `store`),
/// a copy of the binary with a link per plugin, a result cache.
struct Node {
    dir: TempDir,
}

impl Node {
    fn new() -> Node {
        let dir = TempDir::new("hints");
        let node = Node { dir };
        for sub in ["", "conf", "bin", "cache", "store"] {
            let d = node.path(sub);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let text = std::fs::read_to_string("testdata/bridge.conflist").expect("testdata");
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        v["plugins"][0]["ipam"]["dataDir"] = serde_json::json!(node.path("store"));
        node.conf("bridge.conflist", &v);
        let bin = node.path("bin");
        let copy = bin.join("cni-multi");
        let ok = Command::new("cp").arg(BIN).arg(&copy).status().expect("cp");
        assert!(ok.success());
        let list = Command::new(BIN).arg("--list").output().expect("--list");
        for name in String::from_utf8_lossy(&list.stdout).split_whitespace() {
            std::os::unix::fs::symlink("cni-multi", bin.join(name)).expect("link");
        }
        node
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.0.join(sub)
    }

    fn conf(&self, file: &str, v: &serde_json::Value) {
        std::fs::write(self.path("conf").join(file), v.to_string()).expect("write conf");
    }

    /// `cnitool ARGS` of the node's copy, as root or as the user nobody.
    fn cnitool(&self, as_nobody: bool, args: &[&str]) -> Outcome {
        let copy = self.path("bin").join("cni-multi");
        let mut cmd = if as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                .arg(&copy);
            c
        } else {
            Command::new(&copy)
        };
        cmd.arg("cnitool")
            .arg("--cache-dir")
            .arg(self.path("cache"))
            .args(args)
            .env_clear()
            .env("NETCONFPATH", self.path("conf"))
            .env("CNI_PATH", self.path("bin"))
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Outcome::of(cmd.spawn().expect("spawn cnitool"))
    }
}

fn assert_hint(out: &Outcome, what: &str, verb: &str) {
    assert_eq!(out.status, 1, "{verb}: {out:?}");
    assert!(
        out.stderr
            .trim_end()
            .ends_with(&format!("({what}: run as root)")),
        "{verb}: {}",
        out.stderr
    );
}

#[test]
fn a_user_denied_by_the_kernel_or_the_files_is_told_to_run_as_root() {
    enter_test_host();
    let node = Node::new();
    let ns = Netns::new();
    // Creating the bridge needs CAP_NET_ADMIN: the plugin says so in its
    // error's details, and cnitool adds no second hint.
    let add = node.cnitool(true, &["add", "bridge-net", ns.path()]);
    assert_eq!(add.status, 1, "{add:?}");
    let text = add.stderr.trim_end();
    assert!(
        text.ends_with(
            "Operation not permitted; run as root: this needs CAP_NET_ADMIN to change the network"
        ),
        "{text}"
    );
    assert_eq!(text.matches("run as root").count(), 1, "{text}");
    // Root's attachment: its cache entry is root's (0600).
    let added = node.cnitool(false, &["add", "bridge-net", ns.path()]);
    assert_eq!(added.status, 0, "{added:?}");
    for verb in ["check", "del", "gc"] {
        let out = node.cnitool(true, &[verb, "bridge-net", ns.path()]);
        assert_hint(&out, "permission denied", verb);
    }
    let netns_dir = node.path("named");
    let netns_dir = netns_dir.to_str().expect("utf-8");
    let made = node.cnitool(true, &["netns", "--dir", netns_dir, "add", "x"]);
    assert_hint(&made, "permission denied", "netns add");
    // Root is never told to become root.
    let del = node.cnitool(false, &["del", "bridge-net", ns.path()]);
    assert_eq!(del.status, 0, "{del:?}");
    let missing = node.cnitool(true, &["add", "no-such-net", ns.path()]);
    assert_eq!(missing.status, 1);
    assert!(!missing.stderr.contains("run as root"), "{missing:?}");
}

#[test]
fn status_below_1_1_0_says_it_was_skipped() {
    enter_test_host();
    let node = Node::new();
    let out = node.cnitool(false, &["status", "bridge-net"]);
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "cnitool: network \"bridge-net\" is cniVersion 1.0.0: STATUS skipped (plugins answer STATUS from 1.1.0)"
    );
    let mut v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(node.path("conf").join("bridge.conflist")).expect("read"),
    )
    .expect("JSON");
    v["cniVersion"] = "1.1.0".into();
    v["name"] = "bridge-11".into();
    node.conf("bridge-11.conflist", &v);
    let out = node.cnitool(false, &["status", "bridge-11"]);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(!out.stderr.contains("skipped"), "{out:?}");
}

#[test]
fn the_doctor_refuses_a_directory_given_that_is_not_there() {
    enter_test_host();
    let node = Node::new();
    let gone = node.path("gone");
    let gone = gone.to_str().expect("utf-8");
    let file = node.path("conf").join("bridge.conflist");
    let file = file.to_str().expect("utf-8");
    for (flag, dir, why) in [
        ("--cache-dir", gone, "No such file or directory"),
        ("--conf-dir", gone, "No such file or directory"),
        ("--cni-path", gone, "No such file or directory"),
        ("--conf-dir", file, "not a directory"),
    ] {
        let out = node.cnitool(false, &["doctor", flag, dir]);
        assert_eq!(out.status, 2, "{flag} {dir}: {out:?}");
        assert!(
            out.stderr
                .contains(&format!("cannot inspect the node: {flag} {dir}"))
                && out.stderr.contains(why),
            "{flag} {dir}: {}",
            out.stderr
        );
    }
    // Directories from the environment (the defaults the units set) may be
    // absent: a node that never ran a pod has none.
    let mut cmd = Command::new(BIN);
    cmd.args(["cnitool", "doctor", "--min-age", "0", "--cache-dir"])
        .arg(node.path("cache"))
        .env_clear()
        .env("NETCONFPATH", gone)
        .env("CNI_PATH", node.path("gone-too"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let fresh = Outcome::of(cmd.spawn().expect("doctor"));
    assert_eq!(fresh.status, 0, "{fresh:?}");
    assert!(
        fresh.stdout.contains("no stale CNI state found"),
        "{fresh:?}"
    );
}

/// `git rev-parse --short=12 HEAD` of the source tree, or `unknown`.
fn commit() -> String {
    let out = Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "rev-parse",
            "--short=12",
            "HEAD",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => "unknown".into(),
    }
}

#[test]
fn version_names_the_commit_and_the_reference_releases() {
    let first = format!("{} (commit {})", env!("CARGO_PKG_VERSION"), commit());
    for (args, name) in [
        (&["--version"][..], "cni-multi"),
        (&["cnitool", "--version"][..], "cni-multi cnitool"),
        (&["install", "--version"][..], "cni-multi install"),
    ] {
        let out = Command::new(BIN).args(args).output().expect("--version");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}");
        assert_eq!(
            text.lines().next(),
            Some(format!("{name} {first}").as_str()),
            "{text}"
        );
        for reference in [
            "CNI spec versions 0.1.0 to 1.1.0",
            "containernetworking/plugins v1.9.1",
            "containernetworking/cni v1.3.0",
            "flannel-io/cni-plugin v1.9.1-flannel1",
        ] {
            assert!(
                text.contains(reference),
                "{args:?} lacks {reference}: {text}"
            );
        }
    }
    // Scripts take the version as the first line's second word.
    let out = Command::new(BIN)
        .arg("--version")
        .output()
        .expect("--version");
    let text = String::from_utf8_lossy(&out.stdout);
    let word = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1));
    assert_eq!(word, Some(env!("CARGO_PKG_VERSION")));
}
