//! argv[0] dispatch, `--help`/`--list`/`--version`, unknown names, and symlinks.sh.

use crate::harness;

use harness::{BIN, TempDir};
use std::process::Command;

fn list() -> Vec<String> {
    let out = Command::new(BIN)
        .arg("--list")
        .output()
        .expect("run --list");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

const PRODUCT: [&str; 20] = [
    "bridge",
    "ptp",
    "macvlan",
    "ipvlan",
    "vlan",
    "host-device",
    "loopback",
    "dummy",
    "tap",
    "host-local",
    "static",
    "dhcp",
    "portmap",
    "bandwidth",
    "tuning",
    "firewall",
    "sbr",
    "vrf",
    "flannel",
    "multus",
];

#[test]
fn every_product_plugin_is_registered() {
    let names = list();
    for p in PRODUCT {
        assert!(names.iter().any(|n| n == p), "{p} missing from --list");
    }
}

#[test]
fn help_lists_every_plugin_and_unknown_names_fail_clearly() {
    let out = Command::new(BIN).arg("--help").output().expect("help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for name in list() {
        assert!(help.contains(&format!("  {name} ")), "--help lacks {name}");
    }
    let out = Command::new(BIN).arg("macvla").output().expect("unknown");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown plugin or command \"macvla\""),
        "{err}"
    );
    assert!(
        err.contains("macvlan"),
        "the error lists the plugins: {err}"
    );
    let out = Command::new(BIN)
        .arg("--version")
        .output()
        .expect("version");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("cni-multi "));
}

#[test]
fn symlinks_dispatch_on_their_exact_name() {
    let dir = TempDir::new("links");
    std::fs::copy(BIN, dir.0.join("cni-multi")).expect("copy binary");
    let status = Command::new("./symlinks.sh")
        .arg(&dir.0)
        .status()
        .expect("symlinks.sh");
    assert!(status.success());
    let want = "\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]";
    for name in list() {
        let link = dir.0.join(&name);
        let target = std::fs::read_link(&link).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(target.to_str(), Some("cni-multi"));
        let out = Command::new(&link)
            .env_clear()
            .env("CNI_COMMAND", "VERSION")
            .output()
            .expect("run link");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(want),
            "{name}"
        );
        // Without CNI_COMMAND the link names itself: dispatch used argv[0].
        let out = Command::new(&link).env_clear().output().expect("about");
        let about = String::from_utf8_lossy(&out.stderr);
        assert!(
            about.starts_with(&format!("CNI {name} plugin ")),
            "{name}: {about}"
        );
    }
}
