//! What one ADD and one DEL read and write does not grow with the pods on the
//! node: each path's cost is traced (strace) at 10 and at 500 attachments
//! already there, and must be the same at both.
//!
//! - host-local: the store's files opened, read, written, listed and removed,
//!   as a sequence of events with the bytes moved;
//! - the nftables backends (portmap, ipMasq, firewall, macspoofchk): the
//!   nfnetlink dump requests sent and the bytes received.

mod harness;

use harness::{BIN, Call, TempDir, enter_test_host};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};

/// `call` run under strace with `syscalls` traced (descriptors decoded,
/// strings left out); the trace's lines, each without its pid.
fn traced(call: &Call, syscalls: &str, netns: Option<&str>) -> (harness::Outcome, Vec<String>) {
    let dir = TempDir::new("o1-trace");
    let out = dir.0.join("trace");
    let mut cmd = Command::new("strace");
    if let Some(ns) = netns {
        cmd = Command::new("nsenter");
        cmd.arg(format!("--net={ns}")).arg("strace");
    }
    cmd.args(["-f", "-qq", "-yy", "-s", "0", "-e", "signal=none"])
        .arg("-e")
        .arg(format!("trace={syscalls}"))
        .arg("-o")
        .arg(&out)
        .arg(BIN)
        .arg(&call.plugin)
        .env_clear()
        .envs(&call.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .expect("strace (tests/install-deps.sh installs it)");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = std::io::Write::write_all(&mut stdin, call.stdin.as_bytes());
    }
    let outcome = harness::Outcome::of(child);
    let text = std::fs::read_to_string(&out).expect("strace output");
    let lines = text
        .lines()
        .map(|l| match l.split_once(' ') {
            Some((pid, rest)) if pid.chars().all(|c| c.is_ascii_digit()) => rest.to_string(),
            _ => l.to_string(),
        })
        .collect();
    (outcome, lines)
}

// ---------------------------------------------------------------- host-local

const HL_SUBNET: &str = "10.77.0.0/16";
/// The measured pod gets the address after this one at every size.
const HL_LAST: &str = "10.77.200.9";

fn hl_conf(data_dir: &Path) -> String {
    json!({"cniVersion": "1.0.0", "name": "o1-net", "type": "bridge",
           "ipam": {"type": "host-local", "subnet": HL_SUBNET, "dataDir": data_dir}})
    .to_string()
}

fn hl_call(cmd: &str, id: &str, stdin: &str) -> Call {
    Call::new("host-local", cmd, "/run/netns/o1-ipam", stdin).set("CNI_CONTAINERID", id)
}

/// What one ADD and one DEL of a new pod do to the store's files with `pods`
/// attachments in it: each a list of `<syscall> <file> <result>` (the
/// store's path as `STORE`, the bytes moved as the result).
fn hl_costs(pods: u32) -> (Vec<String>, Vec<String>) {
    let dir = TempDir::new("o1-hl");
    let stdin = hl_conf(&dir.0);
    let store = dir.0.join("o1-net");
    std::fs::create_dir_all(&store).expect("store");
    // Written as the reference's host-local writes them (reading them is
    // what an index must spare).
    for i in 0..pods {
        let ip = format!("10.77.{}.{}", (i + 2) / 256, (i + 2) % 256);
        std::fs::write(store.join(ip), format!("pod-{i}\r\neth0")).expect("reservation");
    }
    std::fs::write(store.join("last_reserved_ip.0"), HL_LAST).expect("last reserved");
    // The first call after another writer has the index rebuilt.
    hl_call("DEL", "warm-up", &stdin).run().ok();
    let syscalls = "openat,read,pread64,write,pwrite64,getdents64,unlink,unlinkat,\
                    rename,renameat,renameat2,mkdir,mkdirat,rmdir,ftruncate,utimensat";
    let prefix = store.to_string_lossy().into_owned();
    let events = |lines: Vec<String>| -> Vec<String> {
        lines
            .into_iter()
            .filter(|l| l.contains(&prefix))
            .map(|l| l.replace(&prefix, "STORE"))
            .collect()
    };
    let (add, lines) = traced(&hl_call("ADD", "measured", &stdin), syscalls, None);
    let got = add.ok();
    assert_eq!(got["ips"][0]["address"], "10.77.200.10/16", "{got}");
    let add = events(lines);
    let (del, lines) = traced(&hl_call("DEL", "measured", &stdin), syscalls, None);
    del.ok();
    assert!(!store.join("10.77.200.10").exists());
    (add, events(lines))
}

fn summary(events: &[String]) -> String {
    let n = |s: &str| events.iter().filter(|e| e.starts_with(s)).count();
    format!(
        "{} events: {} opens, {} reads, {} writes, {} listings",
        events.len(),
        n("openat("),
        n("read("),
        n("write("),
        n("getdents64(")
    )
}

#[test]
fn host_local_add_and_del_touch_the_same_files_at_10_and_500_pods() {
    enter_test_host();
    let (add_10, del_10) = hl_costs(10);
    let (add_500, del_500) = hl_costs(500);
    for (what, small, big) in [("ADD", &add_10, &add_500), ("DEL", &del_10, &del_500)] {
        assert_eq!(
            small,
            big,
            "host-local {what}: at 10 pods {}, at 500 {}",
            summary(small),
            summary(big)
        );
        // Neither lists the store nor opens a file per reservation.
        assert!(
            !small.iter().any(|e| e.starts_with("getdents64(")),
            "{small:#?}"
        );
        assert!(small.len() < 40, "{what}: {small:#?}");
    }
}
