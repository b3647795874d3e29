//! `cnitool doctor` and firewalld zone sources of dead and ownerless
//! attachments. As tests/firewalld.rs (whose bus and firewalld fixtures
//! these are): a private `dbus-daemon` with a system-bus-like policy and
//! Debian's real firewalld on it, confined to its own network and mount
//! namespaces; cnitool finds the bus through DBUS_SYSTEM_BUS_ADDRESS and
//! zone sources are read back with dbus-send.

#[path = "harness/firewalld.rs"]
mod firewalld;
mod harness;

use firewalld::{Bus, Firewalld, ZONE, tools_missing};
use harness::{Netns, Outcome, PinnedNetns, Runtime, enter_test_host, sha512_prefix};
use serde_json::{Value, json};

fn container_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

#[test]
fn firewalld_sources_of_dead_and_ownerless_attachments_are_removed() {
    let test = "firewalld_sources_of_dead_and_ownerless_attachments_are_removed";
    if tools_missing(test) {
        return;
    }
    enter_test_host();
    let bus = Bus::start();
    let _fw = Firewalld::start(&bus);
    let rt = Runtime::new("fwz");
    let list = json!({
        "cniVersion": "1.0.0", "name": "fwz-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-fwz0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.149.0.0/24", "dataDir": "@STORE@"}},
            {"type": "firewall", "backend": "firewalld", "dataDir": "@STORE@/firewall"}
        ]
    });
    rt.write_list("fwz.conflist", &list);
    let cnitool = |args: &[&str]| -> Outcome {
        let mut cmd = rt.command(args, &json!({}), None);
        cmd.env("DBUS_SYSTEM_BUS_ADDRESS", &bus.address);
        Outcome::of(cmd.spawn().expect("spawn cnitool"))
    };
    let doctor = |args: &[&str], status: i32| -> Vec<Value> {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = cnitool(&all);
        assert_eq!(out.status, status, "{out:?}");
        out.json()["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["kind"] == "firewall")
            .cloned()
            .collect()
    };
    let (gone, forgotten, live) = (PinnedNetns::new(), PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    let sources: Vec<String> = paths
        .iter()
        .map(|p| {
            let out = cnitool(&["add", "fwz-net", p]).ok();
            format!("{}/32", harness::first_ip(&out))
        })
        .collect();
    // An operator's source outside the network's subnet is never judged.
    let operator = "192.0.2.7/32";
    let added = bus.send(
        &format!("{ZONE}.addSource"),
        &["string:trusted".into(), format!("string:{operator}")],
    );
    assert!(added.status.success());
    let mut all = sources.clone();
    all.push(operator.to_string());
    all.sort();
    let mut listed = bus.sources("trusted");
    listed.sort();
    assert_eq!(listed, all);

    gone.destroy();
    std::fs::remove_file(
        rt.cache
            .0
            .join("results")
            .join(format!("fwz-net-{}-eth0", ids[1])),
    )
    .expect("rm cache file");
    forgotten.destroy();

    assert_eq!(doctor(&[], 0), Vec::<Value>::new());
    let found = doctor(&["--min-age", "0"], 1);
    let finding = |i: usize, owned: bool, action: &str| {
        let (network, id, ifname) = if owned {
            ("fwz-net", ids[i].as_str(), "eth0")
        } else {
            ("", "", "")
        };
        json!({
            "kind": "firewall", "network": network, "containerId": id, "ifname": ifname,
            "object": format!("firewalld zone trusted source {}", sources[i]),
            "action": action, "fixed": false
        })
    };
    assert_eq!(
        found,
        vec![
            finding(0, true, "removed by the DEL of its dead attachment"),
            finding(1, false, "remove the zone source"),
        ]
    );

    let fixed = doctor(&["--fix", "--min-age", "0"], 0);
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    let mut left = bus.sources("trusted");
    left.sort();
    let mut want = vec![sources[2].clone(), operator.to_string()];
    want.sort();
    assert_eq!(left, want);
    assert_eq!(doctor(&["--min-age", "0"], 0), Vec::<Value>::new());
    cnitool(&["del", "fwz-net", live.path()]).ok();
}

/// Anyone on the system bus may broadcast a signal named `Reloaded`: twenty
/// of them from uid 65534 give the watcher no pass; firewalld's own reload
/// gives one.
#[test]
fn spoofed_reload_signals_from_another_user_cause_no_pass() {
    let test = "spoofed_reload_signals_from_another_user_cause_no_pass";
    if tools_missing(test) {
        return;
    }
    enter_test_host();
    // A system-bus-like policy where any user may connect and send signals.
    let bus = Bus::with(
        None,
        r#"</policy><policy context="default"><allow user="*"/><allow send_type="signal"/><allow send_destination="org.freedesktop.DBus"/><allow receive_sender="org.freedesktop.DBus"/>"#,
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bus.dir.0, std::fs::Permissions::from_mode(0o755))
        .expect("chmod bus dir");
    let _fw = Firewalld::start(&bus);
    let rt = Runtime::new("fwspoof");
    let log_dir = harness::TempDir::new("fwspoof-log");
    let log = log_dir.0.join("watcher.log");
    let file = std::fs::File::create(&log).expect("log");
    let mut watcher = rt
        .command(
            &["doctor", "--fix", "--on-firewalld-reload", "--min-age", "0"],
            &json!({}),
            None,
        )
        .env("DBUS_SYSTEM_BUS_ADDRESS", &bus.address)
        .stdout(file.try_clone().expect("log fd"))
        .stderr(file)
        .spawn()
        .expect("spawn the watcher");
    let passes = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("no stale CNI state found")
            .count()
    };
    let wait_for = |n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while passes() < n && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        passes()
    };
    assert_eq!(wait_for(1), 1, "the first pass");

    for _ in 0..20 {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg("dbus-send")
            .arg(format!("--bus={}", bus.address))
            .args([
                "--type=signal",
                firewalld::FIREWALLD_PATH,
                "org.fedoraproject.FirewallD1.Reloaded",
            ])
            .output()
            .expect("dbus-send as nobody");
        assert!(
            out.status.success(),
            "the bus takes nobody's signal: {out:?}"
        );
    }
    std::thread::sleep(std::time::Duration::from_secs(3));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(passes(), 1, "no pass for spoofed signals:\n{text}");
    assert!(!text.contains("firewalld reloaded"), "{text}");

    let reload = bus.send("org.fedoraproject.FirewallD1.reload", &[]);
    assert!(reload.status.success(), "{reload:?}");
    assert_eq!(wait_for(2), 2, "firewalld's own reload gives a pass");
    let _ = watcher.kill();
    let _ = watcher.wait();
}
