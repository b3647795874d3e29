//! The manual pages `cni-multi --generate-man DIR` writes from the clap
//! definitions (the .deb ships them; tests/deb-check.sh checks they are in
//! it): one per command, each naming every option and subcommand, and each
//! rendered by man(1) without a warning.

use crate::harness;

use harness::{BIN, TempDir};
use std::process::Command;

const PAGES: [&str; 5] = [
    "cni-multi.1",
    "cni-multi-cnitool.1",
    "cni-multi-install.1",
    "flanneld.8",
    "cni-multi-dhcp-daemon.8",
];

fn generate(dir: &std::path::Path) -> String {
    let out = Command::new(BIN)
        .arg("--generate-man")
        .arg(dir)
        .output()
        .expect("--generate-man");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_page_per_command_names_every_option_and_subcommand() {
    let dir = TempDir::new("man");
    let listed = generate(&dir.0);
    for page in PAGES {
        assert!(
            listed.contains(&format!("/{page}\n")),
            "{page} not listed: {listed}"
        );
    }
    let read = |page: &str| std::fs::read_to_string(dir.0.join(page)).expect("page");
    let cnitool = read("cni-multi-cnitool.1");
    assert!(
        cnitool.starts_with(".TH \"CNI\\-MULTI\\-CNITOOL\" \"1\" "),
        "{cnitool}"
    );
    assert!(
        cnitool.contains("\n.SH NAME\ncni\\-multi\\-cnitool \\- "),
        "{cnitool}"
    );
    assert!(
        cnitool.contains("\n.SH SYNOPSIS\n.B cni\\-multi cnitool\n"),
        "{cnitool}"
    );
    for option in [
        "conf\\-dir",
        "cni\\-path",
        "cache\\-dir",
        "ifname",
        "args",
        "cap\\-args",
    ] {
        assert!(
            cnitool.contains(&format!("\n\\fB\\-\\-{option}\\fR")),
            "--{option}"
        );
    }
    for sub in [
        "add",
        "check",
        "del",
        "gc",
        "status",
        "list",
        "validate",
        "doctor",
        "netns add",
    ] {
        assert!(
            cnitool.contains(&format!("\n.SS \"cni\\-multi cnitool {sub}")),
            "{sub}: {cnitool}"
        );
    }
    // A subcommand's own options are under it.
    let doctor = &cnitool[cnitool
        .find(".SS \"cni\\-multi cnitool doctor")
        .expect("doctor")..];
    assert!(
        doctor.contains("\\fB\\-\\-min\\-age\\fR \\fISECONDS\\fR"),
        "{doctor}"
    );
    let install = read("cni-multi-install.1");
    for option in [
        "dry\\-run",
        "verbose",
        "force",
        "rollback",
        "uninstall",
        "leave",
    ] {
        assert!(
            install.contains(&format!("\\fB\\-\\-{option}\\fR")),
            "--{option}"
        );
    }
    let top = read("cni-multi.1");
    for sub in ["cnitool", "install", "flanneld", "bridge", "dhcp daemon"] {
        assert!(top.contains(&format!(".SS \"cni\\-multi {sub}")), "{sub}");
    }
    let flanneld = read("flanneld.8");
    assert!(flanneld.starts_with(".TH \"FLANNELD\" \"8\""), "{flanneld}");
    assert!(
        flanneld.contains("\\fB\\-\\-etcd\\-endpoints\\fR \\fIURLS\\fR"),
        "{flanneld}"
    );
}

#[test]
fn man_renders_every_page_without_a_warning() {
    let dir = TempDir::new("man");
    generate(&dir.0);
    for page in PAGES {
        let path = dir.0.join(page);
        // As lintian runs it (manpage-has-errors-from-man).
        let out = Command::new("man")
            .args(["--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z"])
            .arg(&path)
            .env("MANWIDTH", "80")
            .output();
        let out = match out {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                panic!("man is not installed (tests/install-deps.sh installs man-db)")
            }
            other => other.expect("man"),
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "{page}: {stderr}"
        );
        let text = Command::new("man")
            .arg("-l")
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .output()
            .expect("man");
        let shown = String::from_utf8_lossy(&text.stdout);
        assert!(
            shown.contains("NAME") && shown.contains("SYNOPSIS"),
            "{page}: {shown}"
        );
        // whatis reads the NAME line (lintian: bad-whatis-entry).
        if let Ok(o) = Command::new("lexgrog").arg(&path).output() {
            let said = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success() && said.contains(" - "), "{page}: {said}");
        }
    }
}
