//! `cnitool doctor` and firewalld zone sources of dead and ownerless
//! attachments. As tests/firewalld.rs (whose bus and firewalld fixtures
//! these are): a private `dbus-daemon` with a system-bus-like policy and
//! Debian's real firewalld on it, confined to its own network and mount
//! namespaces; cnitool finds the bus through DBUS_SYSTEM_BUS_ADDRESS and
//! zone sources are read back with dbus-send.

mod harness;

use harness::{
    Netns, Outcome, PinnedNetns, Runtime, TempDir, enter_test_host, sha512_prefix, skip,
};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const FIREWALLD: &str = "org.fedoraproject.FirewallD1";
const FIREWALLD_PATH: &str = "/org/fedoraproject/FirewallD1";
const ZONE: &str = "org.fedoraproject.FirewallD1.zone";

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this machine has what the tests run (tests/install-deps.sh installs it).
fn tools_missing(test: &str) -> bool {
    for tool in ["dbus-daemon", "dbus-send", "firewalld", "unshare"] {
        if !have(tool) {
            skip(test, &format!("{tool} is not installed"));
            return true;
        }
    }
    false
}

/// A private message bus with the system bus's kind of policy: root may own
/// any name and call anything.
struct Bus {
    /// Holds the socket and config while the daemon runs.
    _dir: TempDir,
    daemon: Child,
    address: String,
}

impl Bus {
    fn start() -> Bus {
        Bus::with(None, "")
    }

    /// A bus listening at `listen` (else a socket in its temp dir), with
    /// `rules` appended to root's policy (later rules win).
    fn with(listen: Option<&str>, rules: &str) -> Bus {
        let dir = TempDir::new("bus");
        let listen = listen.map_or_else(
            || format!("unix:path={}", dir.0.join("system_bus_socket").display()),
            str::to_string,
        );
        let conf = dir.0.join("bus.conf");
        std::fs::write(
            &conf,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>{listen}</listen>
  <auth>EXTERNAL</auth>
  <policy user="root">
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
    {rules}
  </policy>
</busconfig>
"#
            ),
        )
        .expect("write bus config");
        let mut daemon = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", conf.display()))
            .args(["--nofork", "--print-address"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn dbus-daemon");
        // It prints its address once it listens.
        let mut line = String::new();
        let stdout = daemon.stdout.take().expect("dbus-daemon stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("dbus-daemon address");
        assert!(line.starts_with("unix:"), "dbus-daemon said {line:?}");
        Bus {
            _dir: dir,
            daemon,
            address: line.trim().to_string(),
        }
    }

    /// `dbus-send --print-reply` of a method on firewalld's object.
    fn send(&self, member: &str, args: &[String]) -> std::process::Output {
        Command::new("dbus-send")
            .arg(format!("--bus={}", self.address))
            .args([
                "--print-reply",
                &format!("--dest={FIREWALLD}"),
                FIREWALLD_PATH,
            ])
            .arg(member)
            .args(args)
            .output()
            .expect("run dbus-send")
    }

    /// The sources of `zone`, as firewalld lists them.
    fn sources(&self, zone: &str) -> Vec<String> {
        let out = self.send(&format!("{ZONE}.getSources"), &[format!("string:{zone}")]);
        assert!(
            out.status.success(),
            "getSources: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().strip_prefix("string \""))
            .map(|s| s.trim_end_matches('"').to_string())
            .collect()
    }

    fn firewalld_state(&self) -> Option<String> {
        let out = self.send(
            "org.freedesktop.DBus.Properties.Get",
            &[format!("string:{FIREWALLD}"), "string:state".into()],
        );
        let text = String::from_utf8_lossy(&out.stdout);
        out.status.success().then(|| text.trim().to_string())
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// Debian's firewalld on `bus`, in a network namespace of its own (rules it
/// writes land there) and a mount namespace where /etc/firewalld and
/// /var/log are private tmpfs; its configuration directory is a temp dir.
struct Firewalld {
    child: Option<Child>,
    dir: TempDir,
}

impl Firewalld {
    fn start(bus: &Bus) -> Firewalld {
        let dir = TempDir::new("firewalld");
        let etc = dir.0.join("etc");
        std::fs::create_dir_all(&etc).expect("firewalld config dir");
        std::fs::write(
            etc.join("firewalld.conf"),
            "DefaultZone=public\nFirewallBackend=nftables\nLogDenied=off\n",
        )
        .expect("firewalld.conf");
        let log = std::fs::File::create(dir.0.join("log")).expect("firewalld log");
        let script = format!(
            "for d in /etc/firewalld /var/log; do [ -d $d ] && mount -t tmpfs cni-test $d; done; \
             exec firewalld --nofork --nopid --log-target console \
             --system-config {} --default-config /usr/lib/firewalld",
            etc.display()
        );
        let child = Command::new("unshare")
            .args(["--net", "--mount", "sh", "-c", &script])
            .env("DBUS_SYSTEM_BUS_ADDRESS", &bus.address)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log fd"))
            .stderr(log)
            .spawn()
            .expect("spawn firewalld");
        let mut fw = Firewalld {
            child: Some(child),
            dir,
        };
        // Python starting on a busy machine: give it time, but not forever.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if bus
                .firewalld_state()
                .is_some_and(|s| s.contains("\"RUNNING\""))
            {
                return fw;
            }
            let exited = fw.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "firewalld did not come up ({exited:?}): {}",
                fw.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("log")).unwrap_or_default()
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Firewalld {
    fn drop(&mut self) {
        self.kill();
    }
}

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
