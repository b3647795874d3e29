//! `cni-multi install` switches a live plugin directory: ADD/DEL run through
//! it without pause while an older build is upgraded and rolled back, and
//! while the reference's plugins are replaced (`--force`) and put back
//! (`--rollback`). No call may fail (ETXTBSY, exec format errors or anything
//! else), and a rollback leaves the directory byte for byte as it was.

use crate::harness;

use harness::{BIN, Netns, Outcome, TempDir, enter_test_host};
use serde_json::json;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `cni-multi install --dir DIR <args>` run by `binary`.
fn install(binary: &Path, dir: &Path, args: &[&str]) -> Outcome {
    let child = Command::new(binary)
        .arg("install")
        .arg("--dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn install");
    let out = Outcome::of(child);
    assert_eq!(out.status, 0, "install {args:?}: {out:?}");
    out
}

/// Copies with cp(1), so no file of this (multi-threaded) process is ever
/// open for writing while a sibling test forks: that alone would make an exec
/// of the copy fail with ETXTBSY.
fn sh(script: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .status()
        .expect("sh");
    assert!(ok.success(), "{script}");
}

/// Every entry under `dir`: type, link target or file bytes, mode.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = e.path();
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        let name = e.file_name().to_string_lossy().into_owned();
        let what = if meta.file_type().is_symlink() {
            format!(
                "link {}",
                std::fs::read_link(&path).expect("readlink").display()
            )
        } else if meta.is_dir() {
            format!("dir {:?}", snapshot(&path))
        } else {
            let bytes = std::fs::read(&path).expect("read");
            let sum: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
            format!(
                "file {:o} {} bytes sum {sum} {:?}",
                meta.permissions().mode(),
                bytes.len(),
                bytes.get(..64)
            )
        };
        out.insert(name, what);
    }
    out
}

/// ADD and DEL of a ptp + host-local network through `cni-multi cnitool`
/// with CNI_PATH = `plugins`, and VERSION of both plugins exec'd directly,
/// in a loop on a thread until stopped; returns
/// the number of calls and every failed one.
struct Loop {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(usize, Vec<String>)>,
}

impl Loop {
    fn start(plugins: &Path) -> Loop {
        let plugins = plugins.to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        // The thread inherits the test's host netns.
        let handle = std::thread::spawn(move || {
            let conf = TempDir::new("conf");
            let cache = TempDir::new("cache");
            let store = TempDir::new("store");
            let list = json!({
                "cniVersion": "1.0.0",
                "name": "ptp-net",
                "plugins": [{
                    "type": "ptp",
                    "ipam": {
                        "type": "host-local",
                        "subnet": "10.23.0.0/24",
                        "dataDir": store.0,
                    }
                }]
            });
            std::fs::write(conf.0.join("ptp.conflist"), list.to_string()).expect("conf");
            let (mut calls, mut failed) = (0, Vec::new());
            while !stopping.load(Ordering::Relaxed) {
                let ns = Netns::new();
                for verb in ["add", "del"] {
                    let out = cnitool(&plugins, &conf.0, &cache.0, verb, ns.path());
                    calls += 1;
                    if out.status != 0 {
                        failed.push(format!(
                            "{verb}: {} {} {}",
                            out.status, out.stdout, out.stderr
                        ));
                    }
                }
                // cnitool retries an exec that fails with ETXTBSY, as libcni
                // does; a runtime that does not would see it here.
                for name in ["ptp", "host-local"] {
                    calls += 1;
                    if let Err(e) = version(&plugins.join(name)) {
                        failed.push(format!("{name} VERSION: {e}"));
                    }
                }
            }
            (calls, failed)
        });
        Loop { stop, handle }
    }

    fn finish(self) -> (usize, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("loop thread")
    }
}

fn cnitool(plugins: &Path, conf: &Path, cache: &Path, verb: &str, netns: &str) -> Outcome {
    let child = Command::new(BIN)
        .args(["cnitool", "--cache-dir"])
        .arg(cache)
        .args([verb, "ptp-net", netns])
        .env_clear()
        .env("NETCONFPATH", conf)
        .env("CNI_PATH", plugins)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cnitool");
    Outcome::of(child)
}

/// Execs a plugin for VERSION once, without retrying.
fn version(plugin: &Path) -> Result<(), String> {
    let child = Command::new(plugin)
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("exec: {e}"))?;
    let out = Outcome::of(child);
    if out.status != 0 || !out.stdout.contains("supportedVersions") {
        return Err(format!("{} {} {}", out.status, out.stdout, out.stderr));
    }
    Ok(())
}

fn settle() {
    std::thread::sleep(Duration::from_millis(400));
}

fn assert_no_failures(calls: usize, failed: &[String]) {
    eprintln!("{calls} calls ran while the directory was switched");
    assert!(calls >= 6, "the loop ran only {calls} calls");
    let busy: Vec<&String> = failed
        .iter()
        .filter(|f| f.contains("busy") || f.contains("ETXTBSY") || f.contains("exec format"))
        .collect();
    assert!(busy.is_empty(), "ETXTBSY or exec format errors: {busy:#?}");
    assert!(
        failed.is_empty(),
        "{} of {calls} calls failed: {failed:#?}",
        failed.len()
    );
}

#[test]
fn an_older_build_is_upgraded_and_rolled_back_under_load() {
    enter_test_host();
    let dir = TempDir::new("opt-cni-bin");
    let older = TempDir::new("older");
    let older_bin = older.0.join("cni-multi");
    sh(&format!(
        "cp {BIN} {0} && printf older >> {0}",
        older_bin.display()
    ));
    install(&older_bin, &dir.0, &[]);
    let running = Loop::start(&dir.0);
    settle();
    for _ in 0..3 {
        let up = install(Path::new(BIN), &dir.0, &["--verbose"]);
        assert!(
            up.stdout
                .contains("cni-multi: replaced (previous cni-multi kept"),
            "{up:?}"
        );
        assert!(up.stdout.contains("ptp: unchanged"), "{up:?}");
        settle();
        let back = install(Path::new(BIN), &dir.0, &["--rollback", "--verbose"]);
        assert!(back.stdout.contains("cni-multi: restored"), "{back:?}");
        settle();
        let bytes = std::fs::read(dir.0.join("cni-multi")).expect("read");
        assert!(bytes.ends_with(b"older"), "the older build is back");
    }
    install(Path::new(BIN), &dir.0, &[]);
    settle();
    let (calls, failed) = running.finish();
    assert_no_failures(calls, &failed);
    let again = install(Path::new(BIN), &dir.0, &[]);
    assert!(again.stdout.contains("nothing to change"), "{again:?}");
    let installed = std::fs::read(dir.0.join("cni-multi")).expect("read");
    assert!(
        installed == std::fs::read(BIN).expect("read"),
        "the current build"
    );
}

#[test]
fn the_reference_is_replaced_with_force_and_rolled_back_under_load() {
    enter_test_host();
    let reference = Path::new("/usr/lib/cni");
    assert!(
        reference.join("ptp").is_file() && reference.join("host-local").is_file(),
        "the reference's plugins (Debian's containernetworking-plugins; tests/install-deps.sh)"
    );
    let dir = TempDir::new("opt-cni-bin");
    sh(&format!(
        "cp -a {}/. {}",
        reference.display(),
        dir.0.display()
    ));
    let before = snapshot(&dir.0);
    let running = Loop::start(&dir.0);
    settle();
    let kept = install(Path::new(BIN), &dir.0, &["--dry-run", "--verbose"]);
    assert!(
        kept.stdout
            .contains("ptp: would keep: not ours, use --force"),
        "{kept:?}"
    );
    for _ in 0..3 {
        let forced = install(Path::new(BIN), &dir.0, &["--force", "-v"]);
        assert!(
            forced.stdout.contains("ptp: replaced (backup kept)"),
            "{forced:?}"
        );
        let stub = std::fs::read_to_string(dir.0.join("ptp")).expect("ptp stub");
        assert!(
            stub.starts_with(&format!("#!{}/cni-multi --stub\n", dir.0.display())),
            "{stub}"
        );
        settle();
        install(Path::new(BIN), &dir.0, &["--rollback"]);
        assert_eq!(
            snapshot(&dir.0),
            before,
            "rollback restores the directory exactly"
        );
        settle();
    }
    let (calls, failed) = running.finish();
    assert_no_failures(calls, &failed);
    assert_eq!(snapshot(&dir.0), before);
}

#[test]
fn uninstall_removes_only_what_was_installed() {
    let dir = TempDir::new("opt-cni-bin");
    std::fs::write(dir.0.join("bridge"), b"#!/bin/sh\necho not ours\n").expect("write");
    std::fs::write(dir.0.join("unrelated"), b"x").expect("write");
    let before = snapshot(&dir.0);
    let dry = install(Path::new(BIN), &dir.0, &["--force", "--dry-run", "-v"]);
    assert!(
        dry.stdout
            .contains("bridge: would replace (keeping a backup)"),
        "{dry:?}"
    );
    assert_eq!(snapshot(&dir.0), before, "--dry-run changes nothing");
    let out = Command::new(BIN)
        .args(["install", "--force", "--dir"])
        .arg(&dir.0)
        .output()
        .expect("install");
    // Every installed name answers VERSION; the stand-in bridge is replaced.
    assert!(out.status.success(), "{out:?}");
    install(Path::new(BIN), &dir.0, &["--uninstall"]);
    assert_eq!(snapshot(&dir.0), before);
}

#[test]
fn a_foreign_name_that_does_not_answer_version_is_reported_not_fatal() {
    let dir = TempDir::new("opt-cni-bin");
    sh(&format!(
        "printf '#!/bin/sh\\necho no >&2\\nexit 3\\n' > {0}/bridge && chmod 755 {0}/bridge",
        dir.0.display()
    ));
    let out = Command::new(BIN)
        .args(["install", "--verbose", "--dir"])
        .arg(&dir.0)
        .output()
        .expect("install");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Which name, what it did, what a plugin does instead.
    let said = format!(
        "{}/bridge (not ours): asked for VERSION (CNI_COMMAND=VERSION), it exited with \
         status 3 and printed nothing on stdout, \"no\" on stderr; a CNI plugin exits 0 \
         printing a JSON object with \"supportedVersions\"",
        dir.0.display()
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("bridge: kept: not ours"));
}

#[test]
fn a_tampered_or_symlinked_state_is_refused() {
    let dir = TempDir::new("opt-cni-bin");
    let state = dir.0.join(".cni-multi");
    std::fs::create_dir(&state).expect("mkdir");
    std::fs::write(
        state.join("state.json"),
        r#"{"owned":{"bridge":{"file":"../../outside"}},"last":{},"binary":""}"#,
    )
    .expect("write");
    let out = Command::new(BIN)
        .args(["install", "--uninstall", "--dir"])
        .arg(&dir.0)
        .output()
        .expect("install");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a file name"),
        "{out:?}"
    );

    std::fs::remove_dir_all(&state).expect("rm");
    let elsewhere = TempDir::new("elsewhere");
    std::os::unix::fs::symlink(&elsewhere.0, &state).expect("symlink");
    let out = Command::new(BIN)
        .args(["install", "--dir"])
        .arg(&dir.0)
        .output()
        .expect("install");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("never followed"),
        "{out:?}"
    );
    assert!(
        std::fs::read_dir(&elsewhere.0)
            .expect("read")
            .next()
            .is_none()
    );
}

/// A rollback that cannot put a replaced plugin back says so and fails; the
/// journal stays, naming what was not restored.
#[test]
fn rollback_fails_loudly_when_a_backup_is_gone() {
    let dir = TempDir::new("opt-cni-bin");
    std::fs::write(dir.0.join("bridge"), b"#!/bin/sh\necho not ours\n").expect("write");
    install(Path::new(BIN), &dir.0, &["--force"]);
    let backup = dir.0.join(".cni-multi/backup/bridge");
    std::fs::remove_file(&backup).expect("the backup");
    let out = Command::new(BIN)
        .args(["install", "--rollback", "--dir"])
        .arg(&dir.0)
        .output()
        .expect("rollback");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr.contains("cannot restore bridge"), "{stderr}");
    assert!(dir.0.join(".cni-multi/state.json").is_file());
}

/// Before a name is replaced, its backup and the journal that names it are
/// on disk for good: the backup directory and the state directory are
/// fsync'd after the backup link and the journal's rename (seen with strace),
/// so a power loss cannot keep the swap and lose what undoes it.
#[test]
fn backups_and_journal_are_durable_before_the_swap() {
    let dir = TempDir::new("opt-cni-bin");
    std::fs::write(dir.0.join("bridge"), b"#!/bin/sh\necho not ours\n").expect("write");
    let log = dir.0.with_extension("strace");
    let out = Command::new("strace")
        .args([
            "-f",
            "-y",
            "-qq",
            "-e",
            "trace=fsync,rename,renameat,renameat2,link,linkat",
        ])
        .arg("-o")
        .arg(&log)
        .arg(BIN)
        .args(["install", "--force", "--dir"])
        .arg(&dir.0)
        .output()
        .expect("strace (tests/install-deps.sh installs it)");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&log).expect("strace log");
    let _ = std::fs::remove_file(&log);
    let d = dir.0.display().to_string();
    let at = |call: &str, arg: String| {
        text.lines()
            .position(|l| l.contains(call) && l.contains(&arg))
    };
    let journal = at("rename", format!("{d}/.cni-multi/state.json"));
    let state_synced = at("fsync(", format!("<{d}/.cni-multi>"));
    let linked = at("link", format!("{d}/.cni-multi/backup/bridge"));
    let backup_synced = at("fsync(", format!("<{d}/.cni-multi/backup>"));
    let swapped = at("rename", format!("\"{d}/bridge\""));
    let (Some(j), Some(js), Some(l), Some(ls), Some(s)) =
        (journal, state_synced, linked, backup_synced, swapped)
    else {
        panic!("{journal:?} {state_synced:?} {linked:?} {backup_synced:?} {swapped:?}:\n{text}");
    };
    assert!(j < js && js < l && l < ls && ls < s, "{text}");
}

/// `install --force` over the reference's plugins, killed (strace injects
/// SIGKILL) at the Nth call of `syscalls`, for every N until one runs
/// through; after each kill `--rollback` puts the directory back byte for
/// byte, and on a copy of the killed directory a re-install leaves every name
/// answering VERSION and `--uninstall` then puts it back too.
fn killed_at_every(syscalls: &str) {
    let reference = Path::new("/usr/lib/cni");
    let mut points = 0;
    for n in 1.. {
        let dir = TempDir::new("crash-bin");
        sh(&format!(
            "cp -a {}/. {}",
            reference.display(),
            dir.0.display()
        ));
        let before = snapshot(&dir.0);
        let killed = Command::new("strace")
            .args(["-f", "-qq", "-o", "/dev/null", "-e"])
            .arg(format!("inject={syscalls}:signal=KILL:when={n}"))
            .args([BIN, "install", "--force", "--dir"])
            .arg(&dir.0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("strace (tests/install-deps.sh)");
        if killed.success() {
            break;
        }
        points += 1;
        let copy = TempDir::new("crash-copy");
        sh(&format!("cp -a {}/. {}", dir.0.display(), copy.0.display()));

        install(Path::new(BIN), &dir.0, &["--rollback"]);
        assert_eq!(
            snapshot(&dir.0),
            before,
            "killed at {syscalls} call {n}, then --rollback"
        );

        install(Path::new(BIN), &copy.0, &["--force"]);
        for e in std::fs::read_dir(&copy.0).expect("read dir").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') && name != "cni-multi" {
                assert!(
                    version(&e.path()).is_ok(),
                    "killed at {syscalls} call {n}, re-installed: {name} does not answer VERSION"
                );
            }
        }
        install(Path::new(BIN), &copy.0, &["--uninstall"]);
        assert_eq!(
            snapshot(&copy.0),
            before,
            "killed at {syscalls} call {n}, re-installed, then --uninstall"
        );
    }
    eprintln!("install killed at {points} calls of {syscalls}");
    assert!(points >= 15, "only {points} calls of {syscalls}");
}

#[test]
fn install_killed_at_any_rename_rolls_back_or_reinstalls() {
    killed_at_every("rename,renameat,renameat2");
}

#[test]
fn install_killed_at_any_backup_link_rolls_back_or_reinstalls() {
    killed_at_every("link,linkat");
}

/// The names install manages: the binary and one per plugin.
fn managed_names() -> usize {
    let out = Command::new(BIN).arg("--list").output().expect("--list");
    1 + String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn a_run_prints_one_summary_line_and_a_dry_run_says_would() {
    let dir = TempDir::new("opt-cni-bin");
    let bin = dir.0.join("bin");
    let n = managed_names();
    let shown = bin.display();
    let dry = install(Path::new(BIN), &bin, &["--dry-run"]);
    assert_eq!(
        dry.stdout,
        format!("cni-multi install: would install {n} names in {shown} ({n} to change)\n"),
        "{dry:?}"
    );
    assert!(!bin.exists(), "--dry-run made {shown}");
    let verbose = install(Path::new(BIN), &bin, &["--dry-run", "--verbose"]);
    assert_eq!(verbose.stdout.lines().count(), n + 1, "{verbose:?}");
    assert!(
        verbose.stdout.contains("\nptp: would install\n"),
        "{verbose:?}"
    );
    assert!(!verbose.stdout.contains("installed"), "{verbose:?}");
    let real = install(Path::new(BIN), &bin, &[]);
    assert_eq!(
        real.stdout,
        format!("cni-multi install: installed {n} names in {shown} ({n} changed)\n"),
        "{real:?}"
    );
    let again = install(Path::new(BIN), &bin, &[]);
    assert_eq!(
        again.stdout,
        format!("cni-multi install: nothing to change in {shown}\n")
    );
    let back = install(Path::new(BIN), &bin, &["--uninstall", "--dry-run"]);
    assert_eq!(
        back.stdout,
        format!("cni-multi install: would uninstall {n} names in {shown} ({n} to remove)\n")
    );
}

/// A user who may read the directory but not the state file (root's, 0600)
/// gets the plan, and nothing is written.
#[test]
fn a_dry_run_works_for_a_user_who_cannot_write() {
    let dir = TempDir::new("opt-cni-bin");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // The build under test may sit where that user cannot reach it.
    let copy = dir.0.join("cni-multi-copy");
    sh(&format!("cp {BIN} {0} && chmod 755 {0}", copy.display()));
    let bin = dir.0.join("bin");
    install(&copy, &bin, &[]);
    std::fs::write(bin.join("bridge"), b"#!/bin/sh\necho theirs\n").expect("write");
    let before = snapshot(&bin);
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(&copy)
        .args(["install", "--dry-run", "--force", "--dir"])
        .arg(&bin)
        .output()
        .expect("setpriv");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("would install {} names", managed_names())),
        "{stdout}"
    );
    assert!(stdout.contains("(1 to change)"), "{stdout}");
    assert!(
        stderr.contains("run as root for the exact plan"),
        "{stderr}"
    );
    assert_eq!(snapshot(&bin), before, "a dry run writes nothing");
}
