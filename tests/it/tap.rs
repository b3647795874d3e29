//! tap end to end: a persistent tap in the container with owner, group, MTU,
//! MAC, a bridge in the container, IPAM; CHECK; DEL idempotence.

use crate::harness;

use harness::{Call, Netns, Outcome, TempDir, enter_test_host, plugin_dir};
use serde_json::{Value, json};
use std::io::Write;
use std::os::unix::process::CommandExt;

const LABEL: &str = "system_u:system_r:container_t:s0";
const EXEC_ATTR: &str = "/proc/thread-self/attr/exec";

/// What the kernel answers the reference's exec-label write (go-selinux's
/// SetExecLabel: open the thread's attr/exec for writing, write the label),
/// asked from a thread that ends at once, so a label it takes goes nowhere:
/// Ok when the kernel takes it, else the error as Go prints it.
fn kernel_on_exec_label(label: &str) -> Result<(), String> {
    let label = label.to_string();
    std::thread::spawn(move || {
        let go = |op: &str, e: std::io::Error| format!("{op} {EXEC_ATTR}: {}", go_errno(&e));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(EXEC_ATTR)
            .map_err(|e| go("open", e))?;
        f.write_all(label.as_bytes()).map_err(|e| go("write", e))
    })
    .join()
    .expect("label thread")
}

/// An errno as Go's syscall.Errno prints it: strerror, lower-cased first letter.
fn go_errno(e: &std::io::Error) -> String {
    let text = nix::errno::Errno::from_raw(e.raw_os_error().expect("an OS error")).desc();
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// ADD with selinuxContext fails as the reference's does where the kernel
/// refuses the label (its error, wrapped as the reference wraps it), and is
/// refused (7) where the kernel would take it: no `ip` runs to carry it.
fn expect_label_outcome(add: &Outcome, kernel: Result<(), String>) {
    match kernel {
        Err(refusal) => {
            let e = add.err(999);
            assert_eq!(e["msg"], format!("failed set socket label: {refusal}"));
        }
        Ok(()) => {
            let e = add.err(7);
            assert!(
                e["msg"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("not supported"),
                "{e}"
            );
        }
    }
}

fn call(cmd: &str, ns: &Netns, c: &Value, bin: &TempDir) -> Call {
    Call::new("tap", cmd, ns.path(), &c.to_string()).path(bin)
}

fn tap_json(ns: &Netns) -> Value {
    let out = ns.sh("ip", &["-j", "-d", "addr", "show", "dev", "eth0"]);
    serde_json::from_str::<Value>(&out).expect("ip json")[0].clone()
}

#[test]
fn tap_with_owner_group_mtu_mac_and_ipam() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = json!({
        "cniVersion": "1.0.0", "name": "tap-net", "type": "tap",
        "owner": 42420, "group": 42421, "mtu": 1300, "mac": "0a:58:0a:33:00:05",
        "ipam": {"type": "static", "addresses": [{"address": "10.33.0.5/24"}]}
    });
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert_eq!(
        out["interfaces"],
        json!([{"name": "eth0", "mac": "0a:58:0a:33:00:05", "sandbox": ns.path()}])
    );
    assert_eq!(
        out["ips"],
        json!([{"address": "10.33.0.5/24", "interface": 0}])
    );
    let tap = tap_json(&ns);
    assert_eq!(tap["linkinfo"]["info_kind"], "tun", "{tap}");
    let data = &tap["linkinfo"]["info_data"];
    assert_eq!(data["type"], "tap", "{tap}");
    assert_eq!(data["user"], 42420, "{tap}");
    assert_eq!(data["group"], 42421, "{tap}");
    assert_eq!(
        data["pi"], true,
        "reference netlink path keeps packet info: {tap}"
    );
    assert_eq!(data["persist"], true, "{tap}");
    assert_eq!(data["vnet_hdr"], true, "{tap}");
    assert_eq!(tap["mtu"], 1300);
    assert_eq!(tap["addr_info"][0]["local"], "10.33.0.5");

    let mut checked = c.clone();
    checked["prevResult"] = out;
    call("CHECK", &ns, &checked, &bin).run().ok();
    call("DEL", &ns, &c, &bin).run().ok();
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0"))
    );
    call("DEL", &ns, &c, &bin).run().ok();
}

#[test]
fn tap_without_ipam_joins_a_bridge_in_the_container() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    ns.sh("ip", &["link", "add", "br-vm", "type", "bridge"]);
    let c = json!({
        "cniVersion": "1.0.0", "name": "tap-net", "type": "tap",
        "bridge": "br-vm", "multiQueue": true
    });
    let out = call("ADD", &ns, &c, &bin).run().ok();
    assert!(out.get("ips").is_none(), "{out}");
    let tap = tap_json(&ns);
    assert_eq!(tap["master"], "br-vm");
    assert_eq!(tap["linkinfo"]["info_data"]["multi_queue"], true, "{tap}");
    assert!(
        tap["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("UP"))),
        "{tap}"
    );
    // A second ADD with the same name fails and leaves the first tap alone.
    call("ADD", &ns, &c, &bin).run().err(999);
    assert_eq!(tap_json(&ns)["master"], "br-vm");
    call("DEL", &ns, &c, &bin).run().ok();
    // selinuxContext: never ignored; what the kernel says to the label decides.
    let mut selinux = c.clone();
    selinux["selinuxContext"] = json!(LABEL);
    let e = call("ADD", &ns, &selinux, &bin).run();
    expect_label_outcome(&e, kernel_on_exec_label(LABEL));
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0")),
        "no tap made"
    );
    // DEL does not care about the label.
    call("DEL", &ns, &selinux, &bin).run().ok();
    // A missing bridge: clear error, no tap left.
    let mut no_bridge = c.clone();
    no_bridge["bridge"] = json!("nope");
    call("ADD", &ns, &no_bridge, &bin).run().err(999);
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("tap"))
    );
}

/// selinuxContext where /proc is read-only (a private mount namespace, as in
/// some containers): the reference's exec-label open fails with EROFS, and so
/// must ours, with that error; no text the plugin makes up.
#[test]
fn selinux_context_reports_the_kernels_refusal_where_proc_is_read_only() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let c = json!({
        "cniVersion": "1.0.0", "name": "tap-net", "type": "tap", "selinuxContext": LABEL
    });
    let child = call("ADD", &ns, &c, &bin).spawn_with(|cmd| {
        // SAFETY: between fork and exec only unshare(2) and mount(2) run, with
        // static C strings: async-signal-safe, nothing allocated.
        unsafe {
            cmd.pre_exec(|| {
                use nix::libc::{
                    CLONE_NEWNS, MS_BIND, MS_PRIVATE, MS_RDONLY, MS_REC, MS_REMOUNT, mount, unshare,
                };
                let none = std::ptr::null();
                if unshare(CLONE_NEWNS) != 0
                    || mount(none, c"/".as_ptr(), none, MS_REC | MS_PRIVATE, none.cast()) != 0
                    || mount(
                        c"/proc".as_ptr(),
                        c"/proc".as_ptr(),
                        none,
                        MS_REMOUNT | MS_BIND | MS_RDONLY,
                        none.cast(),
                    ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    let erofs = std::io::Error::from_raw_os_error(nix::libc::EROFS);
    expect_label_outcome(
        &Outcome::of(child),
        Err(format!("open {EXEC_ATTR}: {}", go_errno(&erofs))),
    );
    assert!(
        ns.sh("ip", &["-o", "link"])
            .lines()
            .all(|l| !l.contains("eth0")),
        "no tap made"
    );
}
