//! A private message bus and Debian's real firewalld on it, confined to the
//! test's own network and mount namespaces (its config dirs are tmpfs there,
//! so the host's /etc/firewalld and firewall are never touched): shared by
//! the firewalld tests (included with `#[path]`, beside `mod harness;`).
#![allow(dead_code)]

use crate::harness::{TempDir, run_in, skip};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const FIREWALLD: &str = "org.fedoraproject.FirewallD1";
pub const FIREWALLD_PATH: &str = "/org/fedoraproject/FirewallD1";
pub const ZONE: &str = "org.fedoraproject.FirewallD1.zone";

pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this machine has what the tests run (tests/install-deps.sh installs it).
pub fn tools_missing(test: &str) -> bool {
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
pub struct Bus {
    pub dir: TempDir,
    pub daemon: Child,
    pub address: String,
}

impl Bus {
    pub fn start() -> Bus {
        Bus::with(None, "")
    }

    /// A bus listening at `listen` (else a socket in its temp dir), with
    /// `rules` appended to root's policy (later rules win).
    pub fn with(listen: Option<&str>, rules: &str) -> Bus {
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
            dir,
            daemon,
            address: line.trim().to_string(),
        }
    }

    /// `dbus-send --print-reply` of a method on firewalld's object.
    pub fn send(&self, member: &str, args: &[String]) -> std::process::Output {
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
    pub fn sources(&self, zone: &str) -> Vec<String> {
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

    pub fn firewalld_state(&self) -> Option<String> {
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
pub struct Firewalld {
    pub child: Option<Child>,
    pub dir: TempDir,
}

impl Firewalld {
    pub fn start(bus: &Bus) -> Firewalld {
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

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("log")).unwrap_or_default()
    }

    /// firewalld's own nft ruleset, read in its network namespace.
    pub fn ruleset(&self) -> String {
        let pid = self.child.as_ref().expect("running").id();
        run_in(
            Some(std::path::Path::new(&format!("/proc/{pid}/ns/net"))),
            "nft",
            &["list", "ruleset"],
        )
    }

    pub fn kill(&mut self) {
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
