//! A test's own DHCP "LAN" (a namespace with dnsmasq on `lan0`, 10.77.0.1/24,
//! range .100-.199, reached through its veth peer `lan-m`) and its own dhcp
//! daemon on a socket in a temporary directory: shared by the dhcp tests
//! (included with `#[path]`, beside `mod harness;`).
#![allow(dead_code)]

use crate::harness::{self, BIN, Netns, TempDir, run_in, veth_into};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- the LAN

/// The LAN namespace with (optionally) dnsmasq serving it.
pub struct Lan {
    pub ns: Netns,
    pub dnsmasq: Option<Child>,
    pub dir: PathBuf,
}

impl Lan {
    /// `lan-m` (host) <-> `lan0` (LAN, 10.77.0.1/24); dnsmasq with `options`
    /// (`--dhcp-option=...`) and `lease` time when `serve`.
    pub fn new(dir: &TempDir, serve: bool, lease: &str, options: &[&str]) -> Lan {
        let ns = Netns::new();
        veth_into(&ns, "lan-m", "lan0");
        run_in(None, "ip", &["link", "set", "lan-m", "up"]);
        ns.sh("ip", &["addr", "add", "10.77.0.1/24", "dev", "lan0"]);
        ns.sh("ip", &["link", "set", "lan0", "up"]);
        ns.sh("ip", &["link", "set", "lo", "up"]);
        let mut lan = Lan {
            ns,
            dnsmasq: None,
            dir: dir.0.clone(),
        };
        if serve {
            lan.start_dnsmasq(lease, options);
        }
        lan
    }

    pub fn leases_path(&self) -> PathBuf {
        self.dir.join("dnsmasq.leases")
    }

    pub fn start_dnsmasq(&mut self, lease: &str, options: &[&str]) {
        let pid_file = self.dir.join("dnsmasq.pid");
        let _ = std::fs::remove_file(&pid_file);
        let mut args = vec![
            "--keep-in-foreground".to_string(),
            "--conf-file=/dev/null".into(),
            "--user=root".into(),
            "--group=root".into(),
            "--port=0".into(),
            "--interface=lan0".into(),
            "--bind-interfaces".into(),
            format!("--dhcp-range=10.77.0.100,10.77.0.199,255.255.255.0,{lease}"),
            format!("--dhcp-leasefile={}", self.leases_path().display()),
            format!("--pid-file={}", pid_file.display()),
            "--dhcp-authoritative".into(),
            // dnsmasq pings a fresh address before offering it and serves no
            // one else meanwhile: 3 s per new address, whatever the client
            // (20 containers at once would take a minute).
            "--no-ping".into(),
            "--dhcp-option=3,10.77.0.1".into(),
            "--log-dhcp".into(),
            format!("--log-facility={}", self.dir.join("dnsmasq.log").display()),
        ];
        args.extend(options.iter().map(|o| format!("--dhcp-option={o}")));
        let netns = File::open(self.ns.path()).expect("open LAN netns");
        let mut cmd = Command::new("dnsmasq");
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only setns(2), an async-signal-safe
        // syscall, runs; the fd is owned by this frame and outlives the spawn.
        unsafe {
            cmd.pre_exec(move || {
                nix::sched::setns(netns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(std::io::Error::from)
            });
        }
        self.dnsmasq = Some(cmd.spawn().expect("spawn dnsmasq"));
        wait_for("dnsmasq to start", Duration::from_secs(10), || {
            pid_file.exists() && self.leases_path().exists()
        });
    }

    /// dnsmasq's lease file: `expiry mac ip hostname client-id` per lease.
    pub fn leases(&self) -> Vec<DnsmasqLease> {
        harness::stable_read(&self.leases_path())
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                Some(DnsmasqLease {
                    expiry: f.first()?.parse().ok()?,
                    ip: f.get(2)?.to_string(),
                    hostname: f.get(3)?.to_string(),
                    client_id: f.get(4)?.to_string(),
                })
            })
            .collect()
    }

    pub fn lease_of(&self, ip: &str) -> Option<DnsmasqLease> {
        self.leases().into_iter().find(|l| l.ip == ip)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("dnsmasq.log")).unwrap_or_default()
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        if let Some(mut child) = self.dnsmasq.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[derive(Debug, Clone)]
pub struct DnsmasqLease {
    pub expiry: u64,
    pub ip: String,
    pub hostname: String,
    pub client_id: String,
}

// ---------------------------------------------------------------- the daemon

pub struct Daemon {
    pub child: Option<Child>,
    pub socket: PathBuf,
    pub log: PathBuf,
    pub args: Vec<String>,
    /// The umask the daemon starts with (the test's own when None).
    pub umask: Option<u32>,
}

impl Daemon {
    /// `cni-multi dhcp daemon -socketpath <dir>/dhcp.sock -statedir <dir>/state <extra>`.
    pub fn start(dir: &TempDir, extra: &[&str]) -> Daemon {
        Daemon::start_with(dir, extra, None, None)
    }

    /// As `start`, the daemon started with this umask and/or `-hostprefix`
    /// (which the socket path is under too).
    pub fn start_with(
        dir: &TempDir,
        extra: &[&str],
        umask: Option<u32>,
        hostprefix: Option<&Path>,
    ) -> Daemon {
        let socket = dir.0.join("dhcp.sock");
        let mut args = vec![
            "-socketpath".to_string(),
            socket.display().to_string(),
            "-statedir".into(),
            dir.0.join("state").display().to_string(),
        ];
        let socket = match hostprefix {
            Some(prefix) => {
                args.extend(["-hostprefix".to_string(), prefix.display().to_string()]);
                let mut joined = prefix.as_os_str().to_os_string();
                joined.push(socket.as_os_str());
                PathBuf::from(joined)
            }
            None => socket,
        };
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut d = Daemon {
            child: None,
            socket,
            log: dir.0.join("daemon.log"),
            args,
            umask,
        };
        d.restart();
        d
    }

    /// Starts the daemon again with the same flags (after a kill).
    pub fn restart(&mut self) {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("daemon log");
        let mut cmd = Command::new(BIN);
        cmd.args(["dhcp", "daemon"])
            .args(&self.args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        if let Some(mask) = self.umask {
            // SAFETY: between fork and exec only umask(2), an async-signal-safe
            // syscall that cannot fail, runs.
            unsafe {
                cmd.pre_exec(move || {
                    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(mask));
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().expect("spawn the dhcp daemon");
        self.child = Some(child);
        let socket = self.socket.clone();
        wait_for("the daemon's socket", Duration::from_secs(10), || {
            std::os::unix::net::UnixStream::connect(&socket).is_ok()
        });
    }

    pub fn pid(&self) -> i32 {
        self.child
            .as_ref()
            .map(|c| i32::try_from(c.id()).expect("pid"))
            .expect("daemon running")
    }

    pub fn signal(&mut self, signal: Signal) -> std::process::ExitStatus {
        kill(Pid::from_raw(self.pid()), signal).expect("signal the daemon");
        let mut child = self.child.take().expect("daemon running");
        child.wait().expect("wait for the daemon")
    }

    pub fn proc_status(&self, key: &str) -> u64 {
        let text =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("daemon status");
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in /proc/<daemon>/status"))
    }

    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .expect("daemon fds")
            .count()
    }

    pub fn rss_kb(&self) -> u64 {
        self.proc_status("VmRSS:")
    }

    pub fn threads(&self) -> u64 {
        self.proc_status("Threads:")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            stop(child);
        }
    }
}

/// SIGTERM, and SIGKILL when that does not end it within 5 s: a test that
/// fails must not leave a daemon behind.
pub fn stop(mut child: Child) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    let _ = kill(pid, Signal::SIGTERM);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The output of a process expected to end by itself (killed after 10 s).
pub fn finish(mut child: Child) -> std::process::Output {
    let start = Instant::now();
    while matches!(child.try_wait(), Ok(None)) {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// A spawned process stopped (as `stop`) when dropped.
pub struct Reaped(pub Option<Child>);

impl Reaped {
    pub fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }

    pub fn wait(mut self) -> std::process::ExitStatus {
        self.0
            .take()
            .expect("child")
            .wait()
            .expect("wait for child")
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            stop(child);
        }
    }
}

pub fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
