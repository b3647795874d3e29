//! Other installers write their own files over plugin names in a shared
//! /opt/cni/bin (kube-flannel's `cp -f`, Ansible's `install`, Go's
//! os.WriteFile, Python's shutil.copyfile, tarballs, dd). On a directory
//! `cni-multi install` laid out, each such write must cost that one name: the
//! binary keeps its bytes, every other name still runs cni-multi, and the
//! name holds the foreign file. `install` then reports the name as clobbered
//! and takes it back with `--force`, and `--rollback` gives it back again.

use crate::harness;

use harness::{BIN, TempDir};
use std::path::Path;
use std::process::Command;

/// A stand-in for another project's plugin, longer than a stub, so even a
/// write that does not truncate (`dd conv=notrunc`) leaves only its bytes.
fn foreign_plugin() -> Vec<u8> {
    let mut text = String::from("#!/bin/sh\necho 'I am flannel-cni-plugin'\n");
    while text.len() < 1024 {
        text.push_str("# padding of the foreign plugin\n");
    }
    text.into_bytes()
}

fn run(cmd: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new(cmd).args(args).output().expect("spawn");
    eprintln!(
        "{cmd} {args:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn install(dir: &Path, args: &[&str]) -> String {
    let mut all = vec![
        "install",
        "--verbose",
        "--dir",
        dir.to_str().expect("utf-8"),
    ];
    all.extend(args);
    let out = run(BIN, &all);
    assert!(out.status.success(), "install {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `cnitool doctor --json` over a node whose CNI_PATH is `dir` (no networks,
/// an empty cache, in the test's own network namespace): its plugin-dir rows.
fn doctor_plugin_dir(dir: &Path) -> Vec<(String, String)> {
    let empty = TempDir::new("foreign-conf");
    let out = Command::new(BIN)
        .args(["cnitool", "doctor", "--json", "--cache-dir"])
        .arg(&empty.0)
        .env("CNI_PATH", dir)
        .env("NETCONFPATH", &empty.0)
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let rows = v["findings"].as_array().cloned().unwrap_or_default();
    rows.iter()
        .filter(|f| f["kind"] == "plugin-dir")
        .map(|f| {
            let object = f["object"].as_str().unwrap_or_default();
            let name = Path::new(object).file_name().unwrap_or_default();
            (
                name.to_string_lossy().into_owned(),
                f["action"].as_str().unwrap_or_default().into(),
            )
        })
        .collect()
}

fn answers_version(plugin: &Path) -> bool {
    Command::new(plugin)
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("supportedVersions")
        })
}

/// Installs into a fresh directory, lets `write(foreign, name)` run, then
/// checks that only `flannel` changed, and that install reports, repairs and
/// rolls back.
fn one_name_only(write: impl Fn(&Path, &Path)) {
    harness::enter_test_host();
    let dir = TempDir::new("foreign-bin");
    let stage = TempDir::new("foreign-src");
    install(&dir.0, &[]);
    let binary = std::fs::read(BIN).expect("read the binary");
    let foreign = stage.0.join("flannel");
    std::fs::write(&foreign, foreign_plugin()).expect("write");
    std::fs::set_permissions(
        &foreign,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let target = dir.0.join("flannel");

    write(&foreign, &target);

    assert!(
        std::fs::read(dir.0.join("cni-multi")).expect("read") == binary,
        "the binary's bytes changed: the write went through the plugin name"
    );
    let names = String::from_utf8(run(BIN, &["--list"]).stdout).expect("utf-8");
    let others: Vec<&str> = names.lines().filter(|n| *n != "flannel").collect();
    assert!(others.len() >= 15, "{others:?}");
    for name in &others {
        assert!(
            answers_version(&dir.0.join(name)),
            "{name} no longer runs cni-multi"
        );
    }
    assert_eq!(std::fs::read(&target).expect("read"), foreign_plugin());
    let said = run(target.to_str().expect("utf-8"), &[]);
    assert!(String::from_utf8_lossy(&said.stdout).contains("I am flannel-cni-plugin"));

    let found = doctor_plugin_dir(&dir.0);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "flannel");
    assert!(found[0].1.contains("another installer's file"), "{found:?}");
    let report = install(&dir.0, &[]);
    assert!(report.contains("flannel: clobbered"), "{report}");
    assert_eq!(
        std::fs::read(&target).expect("read"),
        foreign_plugin(),
        "kept without --force"
    );

    let repaired = install(&dir.0, &["--force"]);
    assert!(repaired.contains("flannel: replaced"), "{repaired}");
    assert!(answers_version(&target), "--force takes the name back");
    assert_eq!(doctor_plugin_dir(&dir.0), []);
    assert!(install(&dir.0, &[]).contains("nothing to change"));

    install(&dir.0, &["--rollback"]);
    assert_eq!(
        std::fs::read(&target).expect("read"),
        foreign_plugin(),
        "--rollback gives the foreign file back"
    );
    assert!(std::fs::read(dir.0.join("cni-multi")).expect("read") == binary);
}

fn sh(script: &str, foreign: &Path, target: &Path) {
    let out = Command::new("sh")
        .args(["-ec", script, "sh"])
        .arg(foreign)
        .arg(target)
        .output()
        .expect("sh");
    assert!(out.status.success(), "{script}: {out:?}");
}

#[test]
fn cp_over_a_plugin_name_costs_that_name_only() {
    one_name_only(|src, dst| sh(r#"cp "$1" "$2""#, src, dst));
}

#[test]
fn cp_force_over_a_plugin_name_costs_that_name_only() {
    // kube-flannel's install: `cp -f /flannel /opt/cni/bin/flannel`.
    one_name_only(|src, dst| sh(r#"cp -f "$1" "$2""#, src, dst));
}

#[test]
fn install_1_over_a_plugin_name_costs_that_name_only() {
    one_name_only(|src, dst| sh(r#"install -m 0755 "$1" "$2""#, src, dst));
}

#[test]
fn an_o_trunc_write_through_a_plugin_name_costs_that_name_only() {
    // What Go's os.WriteFile and a shell's `>` do: open(O_WRONLY|O_CREAT|O_TRUNC).
    one_name_only(|src, dst| sh(r#"cat "$1" > "$2""#, src, dst));
}

#[test]
fn shutil_copyfile_over_a_plugin_name_costs_that_name_only() {
    one_name_only(|src, dst| {
        sh(
            r#"python3 -c 'import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])' "$1" "$2""#,
            src,
            dst,
        )
    });
}

#[test]
fn tar_x_over_a_plugin_name_costs_that_name_only() {
    one_name_only(|src, dst| {
        sh(
            r#"t=$(dirname "$1")/plugins.tar
               tar -C "$(dirname "$1")" -cf "$t" flannel
               tar -C "$(dirname "$2")" -xf "$t""#,
            src,
            dst,
        )
    });
}

#[test]
fn dd_conv_notrunc_over_a_plugin_name_costs_that_name_only() {
    one_name_only(|src, dst| sh(r#"dd if="$1" of="$2" conv=notrunc status=none"#, src, dst));
}

#[test]
fn a_binary_clobbered_through_a_link_is_reported_and_repaired() {
    harness::enter_test_host();
    // The symbolic-link layout (`--links`, and every install before stubs):
    // `cp -f` writes through the link into the binary every name runs.
    let dir = TempDir::new("foreign-bin");
    let stage = TempDir::new("foreign-src");
    install(&dir.0, &["--links"]);
    let foreign = stage.0.join("flannel");
    std::fs::write(&foreign, foreign_plugin()).expect("write");
    sh(r#"cp -f "$1" "$2""#, &foreign, &dir.0.join("flannel"));
    assert_eq!(
        std::fs::read(dir.0.join("cni-multi")).expect("read"),
        foreign_plugin(),
        "the links layout lets the write through"
    );
    assert!(!answers_version(&dir.0.join("bridge")));
    let found = doctor_plugin_dir(&dir.0);
    assert!(
        found
            .iter()
            .any(|(n, a)| n == "cni-multi" && a.contains("not the bytes")),
        "{found:?}"
    );

    let report = install(&dir.0, &[]);
    assert!(report.contains("cni-multi: damaged"), "{report}");
    let binary = std::fs::read(BIN).expect("read the binary");
    assert!(std::fs::read(dir.0.join("cni-multi")).expect("read") == binary);
    let names = String::from_utf8(run(BIN, &["--list"]).stdout).expect("utf-8");
    for name in names.lines() {
        assert!(
            answers_version(&dir.0.join(name)),
            "{name} does not run cni-multi"
        );
    }
    // The repair is not journaled: a rollback goes back to the links, never
    // to the damaged bytes.
    install(&dir.0, &["--rollback"]);
    assert!(std::fs::read(dir.0.join("cni-multi")).expect("read") == binary);
    assert!(answers_version(&dir.0.join("bridge")));
    assert!(
        std::fs::symlink_metadata(dir.0.join("bridge"))
            .expect("stat")
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_name_left_to_another_installer_is_neither_taken_nor_reported() {
    harness::enter_test_host();
    let dir = TempDir::new("foreign-bin");
    let stage = TempDir::new("foreign-src");
    install(&dir.0, &["--leave", "flannel,multus"]);
    let foreign = stage.0.join("flannel");
    std::fs::write(&foreign, foreign_plugin()).expect("write");
    sh(r#"cp -f "$1" "$2""#, &foreign, &dir.0.join("flannel"));
    // As a DaemonSet's installer runs at every start: --force, --leave.
    let again = install(&dir.0, &["--force", "--leave", "flannel,multus"]);
    assert!(
        again.contains("flannel: left to another installer"),
        "{again}"
    );
    assert_eq!(
        std::fs::read(dir.0.join("flannel")).expect("read"),
        foreign_plugin()
    );
    assert!(
        answers_version(&dir.0.join("multus")),
        "a free left name is installed"
    );
    assert_eq!(doctor_plugin_dir(&dir.0), []);
}
