//! The flanneld lane's world: one underlay segment (a bridge in a "switch"
//! namespace), nodes as namespaces attached to it, pods added on a node through
//! our `flannel` plugin, and long-running processes (daemons) in a namespace,
//! killed on drop and their logs printed when the test panics. Every namespace
//! is anonymous (held by a thread, as `harness::Netns`) and every file lives in
//! a `TempDir`, so parallel tests share no name and leave nothing behind.
//! Included with `#[path]`, beside `mod harness;`.
#![allow(dead_code)]

use crate::harness::{BIN, Call, Netns, Outcome, TempDir, in_netns, plugin_dir};
use nix::sched::{CloneFlags, setns, unshare};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Polls `ok` every 50 ms; panics naming `what` once `limit` has passed.
pub fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `program` set to run inside the namespace at `ns`. With `as_netns_exec` it
/// also gets a mount namespace of its own with that namespace's /sys, as
/// `ip netns exec` gives, and is killed (SIGKILL) when the thread that spawned
/// it ends: a daemon never outlives its test, even one killed by a timeout.
pub fn command_in(ns: &str, program: &str, as_netns_exec: bool) -> Command {
    let mut cmd = Command::new(program);
    let fd = File::open(ns).unwrap_or_else(|e| panic!("open netns {ns}: {e}"));
    // SAFETY: between fork and exec only setns(2), unshare(2), mount(2),
    // umount2(2) and prctl(2) run, on C string literals and an fd the closure
    // owns; nothing allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            setns(fd.as_fd(), CloneFlags::CLONE_NEWNET)?;
            if as_netns_exec {
                use nix::mount::{MntFlags, MsFlags, mount, umount2};
                let none: Option<&std::ffi::CStr> = None;
                unshare(CloneFlags::CLONE_NEWNS)?;
                let private = MsFlags::MS_REC | MsFlags::MS_PRIVATE;
                mount(none, c"/", none, private, none)?;
                umount2(c"/sys", MntFlags::MNT_DETACH)?;
                mount(
                    Some(c"sysfs"),
                    c"/sys",
                    Some(c"sysfs"),
                    MsFlags::empty(),
                    none,
                )?;
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            }
            Ok(())
        });
    }
    cmd
}

/// Runs `program args` in `ns` to completion (never panics on its failure).
pub fn exec_in(ns: &str, program: &str, args: &[&str]) -> Output {
    command_in(ns, program, false)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("spawn {program}: {e}"))
}

/// As `exec_in`, panicking with stderr unless it succeeds; returns stdout.
pub fn sh_in(ns: &str, program: &str, args: &[&str]) -> String {
    let out = exec_in(ns, program, args);
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The last `lines` lines of a log file (or why it cannot be read).
pub fn log_tail(path: &std::path::Path, lines: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

// ------------------------------------------------------------- the segment

/// One layer-2 segment: the bridge `br0` in a switch namespace, which also
/// holds the segment's first address (`gateway`, every node's default route).
pub struct Underlay {
    switch: Netns,
    net: ipnet::Ipv4Net,
    /// The segment's IPv6 prefix, when it is dual-stack.
    net6: Option<ipnet::Ipv6Net>,
    /// The host number the next `attach` gets (the switch has 1).
    next: Mutex<u32>,
}

impl Underlay {
    /// A segment on `cidr` (IPv4, e.g. "10.250.0.0/24").
    pub fn new(cidr: &str) -> Underlay {
        Underlay::make(cidr, None)
    }

    /// A dual-stack segment: every attachment also gets an address of `cidr6`.
    pub fn dual(cidr: &str, cidr6: &str) -> Underlay {
        let net6: ipnet::Ipv6Net = cidr6
            .parse()
            .unwrap_or_else(|e| panic!("underlay cidr {cidr6}: {e}"));
        Underlay::make(cidr, Some(net6.trunc()))
    }

    fn make(cidr: &str, net6: Option<ipnet::Ipv6Net>) -> Underlay {
        let net: ipnet::Ipv4Net = cidr
            .parse()
            .unwrap_or_else(|e| panic!("underlay cidr {cidr}: {e}"));
        let u = Underlay {
            switch: Netns::new(),
            net: net.trunc(),
            net6,
            next: Mutex::new(2),
        };
        let gw = format!("{}/{}", u.gateway(), u.net.prefix_len());
        u.sh("ip", &["link", "add", "br0", "type", "bridge"]);
        u.sh("ip", &["addr", "add", &gw, "dev", "br0"]);
        if let Some(gw6) = u.gateway6() {
            let gw6 = format!("{gw6}/{}", u.net6.map_or(64, |n| n.prefix_len()));
            u.sh("ip", &["addr", "add", &gw6, "dev", "br0", "nodad"]);
        }
        u.sh("ip", &["link", "set", "br0", "up"]);
        u.sh("ip", &["link", "set", "lo", "up"]);
        u
    }

    /// The switch's own address on the segment.
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.net.network()) + 1)
    }

    /// The switch's IPv6 address, on a dual-stack segment.
    pub fn gateway6(&self) -> Option<Ipv6Addr> {
        self.net6
            .map(|n| Ipv6Addr::from(u128::from(n.network()) + 1))
    }

    /// The IPv6 address the attachment with host number `host` gets.
    fn host6(&self, host: u32) -> Option<Ipv6Addr> {
        self.net6
            .map(|n| Ipv6Addr::from(u128::from(n.network()) + u128::from(host)))
    }

    pub fn prefix_len(&self) -> u8 {
        self.net.prefix_len()
    }

    /// The switch namespace's path.
    pub fn switch_path(&self) -> &str {
        self.switch.path()
    }

    /// Runs a command in the switch namespace; panics on failure.
    pub fn sh(&self, program: &str, args: &[&str]) -> String {
        sh_in(self.switch.path(), program, args)
    }

    /// Plugs `ns` into the segment: a veth `eth0` there (one per namespace)
    /// with the next free address, up, `lo` up; its peer a port of `br0`.
    pub fn attach(&self, ns: &Netns) -> (String, IpAddr) {
        let host = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let host = *next;
            *next += 1;
            host
        };
        let ip = Ipv4Addr::from(u32::from(self.net.network()) + host);
        assert!(
            self.net.hosts().any(|h| h == ip),
            "underlay {} has no address left for another attachment",
            self.net
        );
        let port = format!("p{host}");
        self.sh(
            "ip",
            &[
                "link",
                "add",
                &port,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                ns.path(),
            ],
        );
        self.sh("ip", &["link", "set", &port, "master", "br0", "up"]);
        let cidr = format!("{ip}/{}", self.net.prefix_len());
        sh_in(ns.path(), "ip", &["addr", "add", &cidr, "dev", "eth0"]);
        if let (Some(ip6), Some(net6)) = (self.host6(host), self.net6) {
            let cidr6 = format!("{ip6}/{}", net6.prefix_len());
            sh_in(
                ns.path(),
                "ip",
                &["addr", "add", &cidr6, "dev", "eth0", "nodad"],
            );
        }
        sh_in(ns.path(), "ip", &["link", "set", "eth0", "up"]);
        sh_in(ns.path(), "ip", &["link", "set", "lo", "up"]);
        ("eth0".into(), IpAddr::V4(ip))
    }
}

// --------------------------------------------------------------- processes

/// A long-running process in a namespace (as `ip netns exec` runs it), its
/// stdout and stderr appended to `log`. Killed on drop; when the test is
/// panicking, its log's tail is printed. Spawn it from the test's own thread:
/// it is killed when the thread that spawned it ends.
pub struct Proc {
    pub name: String,
    pub log: PathBuf,
    ns: String,
    program: String,
    args: Vec<String>,
    child: Option<Child>,
}

impl Proc {
    /// Starts `program args` in the namespace at `ns`, logging to `log`.
    pub fn spawn(name: &str, ns: &str, log: PathBuf, program: &str, args: &[&str]) -> Proc {
        let mut p = Proc {
            name: name.into(),
            log,
            ns: ns.into(),
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        p.restart();
        p
    }

    /// Starts it again with the same command (after a kill), the log appended.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "{} is still running", self.name);
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap_or_else(|e| panic!("log {}: {e}", self.log.display()));
        let err = log.try_clone().expect("clone log fd");
        let child = command_in(&self.ns, &self.program, true)
            .args(&self.args)
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {} ({}): {e}", self.name, self.program));
        self.child = Some(child);
    }

    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// Whether it is still running (false after it exited or was killed).
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// `kill -9` and reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Sends `signal` and waits (at most `limit`) for the exit, which it returns.
    pub fn signal(&mut self, signal: Signal, limit: Duration) -> ExitStatus {
        let mut child = self
            .child
            .take()
            .unwrap_or_else(|| panic!("{} is not running", self.name));
        let _ = kill(Pid::from_raw(child.id() as i32), signal);
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} did not exit within {limit:?} of {signal}; log:\n{}",
                    self.name,
                    log_tail(&self.log, 40)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until its log contains `needle`; panics with the log (and
    /// whether it exited) after `limit`.
    pub fn wait_log(&mut self, needle: &str, limit: Duration) {
        let start = Instant::now();
        while !self.log().contains(needle) {
            let running = self.running();
            if start.elapsed() > limit || !running {
                panic!(
                    "{}: no {needle:?} in its log after {:?} (running: {}); log:\n{}",
                    self.name,
                    start.elapsed(),
                    running,
                    log_tail(&self.log, 60)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!(
                "--- {} ({}), last lines of its log ---\n{}",
                self.name,
                self.log.display(),
                log_tail(&self.log, 60)
            );
        }
    }
}

// ------------------------------------------------------------------- nodes

/// A node: a namespace on the underlay (`eth0`, default route via the
/// switch), a directory of its own (its subnet.env, the flannel plugin's and
/// host-local's state, logs) and a plugin directory for its CNI calls.
pub struct Node {
    pub name: String,
    pub ns: Netns,
    pub ip: IpAddr,
    /// Its IPv6 address on a dual-stack underlay.
    pub ip6: Option<Ipv6Addr>,
    pub dir: TempDir,
    bin: TempDir,
}

impl Node {
    pub fn new(underlay: &Underlay, name: &str) -> Node {
        let ns = Netns::new();
        let (_, ip) = underlay.attach(&ns);
        let gw = underlay.gateway().to_string();
        sh_in(ns.path(), "ip", &["route", "add", "default", "via", &gw]);
        let ip6 = underlay.gateway6().map(|gw6| {
            let gw6 = gw6.to_string();
            sh_in(
                ns.path(),
                "ip",
                &["-6", "route", "add", "default", "via", &gw6],
            );
            let IpAddr::V4(v4) = ip else {
                panic!("underlay addresses are IPv4")
            };
            let host = u32::from(v4) - u32::from(underlay.net.network());
            underlay.host6(host).expect("a dual-stack underlay")
        });
        Node {
            name: name.into(),
            ns,
            ip,
            ip6,
            dir: TempDir::new(&format!("node-{name}")),
            bin: plugin_dir(),
        }
    }

    pub fn path(&self) -> &str {
        self.ns.path()
    }

    /// The subnet.env of this node: flanneld's `--subnet-file`, the plugin's `subnetFile`.
    pub fn subnet_env(&self) -> PathBuf {
        self.dir.0.join("subnet.env")
    }

    /// A key of this node's subnet.env (`FLANNEL_SUBNET`, ...), if the file has it.
    pub fn subnet_env_value(&self, key: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.subnet_env()).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
    }

    /// Runs a command in the node; panics unless it succeeds; returns stdout.
    pub fn sh(&self, program: &str, args: &[&str]) -> String {
        sh_in(self.path(), program, args)
    }

    /// Runs a command in the node to completion, whatever its outcome.
    pub fn exec(&self, program: &str, args: &[&str]) -> Output {
        exec_in(self.path(), program, args)
    }

    /// A daemon in the node, logging to `<node dir>/<name>.log`.
    pub fn spawn(&self, name: &str, program: &str, args: &[&str]) -> Proc {
        let log = self.dir.0.join(format!("{name}.log"));
        let name = format!("{}/{name}", self.name);
        Proc::spawn(&name, self.path(), log, program, args)
    }

    /// `cni-multi flanneld --etcd-endpoints <endpoints> --subnet-file <ours> <extra>`.
    pub fn flanneld(&self, endpoints: &str, extra: &[&str]) -> Proc {
        let subnet_file = self.subnet_env().display().to_string();
        let mut args = vec![
            "flanneld",
            "--etcd-endpoints",
            endpoints,
            "--subnet-file",
            &subnet_file,
        ];
        args.extend_from_slice(extra);
        self.spawn("flanneld", BIN, &args)
    }

    /// The flannel network config of this node's pods (network `cbr0`).
    fn pod_conf(&self) -> String {
        json!({
            "cniVersion": "1.0.0", "name": "cbr0", "type": "flannel",
            "subnetFile": self.subnet_env(),
            "dataDir": self.dir.0.join("flannel-data"),
            "delegate": {"hairpinMode": true, "isDefaultGateway": true},
            "ipam": {"dataDir": self.dir.0.join("ipam")}
        })
        .to_string()
    }

    /// A pod on this node: a new namespace, flannel ADD (panics with the
    /// plugin's error when it fails, e.g. while subnet.env is missing).
    pub fn add_pod(&self, name: &str) -> Pod {
        self.try_add_pod(name)
            .unwrap_or_else(|o| panic!("flannel ADD of pod {name} on {}: {o:?}", self.name))
    }

    /// As `add_pod`, the failed ADD's outcome returned instead.
    pub fn try_add_pod(&self, name: &str) -> Result<Pod, Outcome> {
        let mut pod = Pod {
            name: name.into(),
            ns: Netns::new(),
            ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            ip6: None,
            node: self.name.clone(),
            node_ns: self.path().into(),
            bin: self.bin.0.clone(),
            conf: self.pod_conf(),
            servers: Mutex::new(Vec::new()),
        };
        let out = pod.plugin("ADD");
        if out.status != 0 {
            return Err(out);
        }
        let result = out.ok();
        pod.ip = crate::harness::first_ip(&result)
            .parse()
            .unwrap_or_else(|e| panic!("pod address in {result}: {e}"));
        pod.ip6 = result["ips"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|ip| ip["address"].as_str()?.split('/').next()?.parse().ok())
            .find(IpAddr::is_ipv6);
        Ok(pod)
    }
}

// -------------------------------------------------------------------- pods

/// A pod: its namespace (`eth0` from the flannel plugin) and address.
pub struct Pod {
    pub name: String,
    pub ns: Netns,
    pub ip: IpAddr,
    /// Its IPv6 address, when the network is dual-stack.
    pub ip6: Option<IpAddr>,
    /// The node's name and namespace, its plugin directory and the network
    /// config: what DEL runs with.
    pub node: String,
    node_ns: String,
    bin: PathBuf,
    conf: String,
    servers: Mutex<Vec<(std::sync::Arc<AtomicBool>, JoinHandle<()>)>>,
}

impl Pod {
    pub fn path(&self) -> &str {
        self.ns.path()
    }

    /// `cni-multi flannel` run in the node (the host side: `cni0` is made
    /// there) with `command` for this pod.
    fn plugin(&self, command: &str) -> Outcome {
        let bin = self.bin.display().to_string();
        let call = Call::new("flannel", command, self.path(), &self.conf)
            .set("CNI_CONTAINERID", &self.name)
            .set("CNI_PATH", &bin);
        let fd = File::open(&self.node_ns).expect("open node netns");
        Outcome::of(call.spawn_with(|cmd| {
            // SAFETY: between fork and exec only setns(2) runs, on an fd the
            // closure owns.
            unsafe {
                cmd.pre_exec(move || {
                    setns(fd.as_fd(), CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
                });
            }
        }))
    }

    /// flannel DEL (must succeed); the pod's namespace goes with it.
    pub fn del(self) {
        self.plugin("DEL").ok();
    }

    /// Runs a command in the pod; panics unless it succeeds; returns stdout.
    pub fn sh(&self, program: &str, args: &[&str]) -> String {
        sh_in(self.path(), program, args)
    }

    /// Whether one ping to `ip` is answered within 2 s.
    pub fn ping(&self, ip: IpAddr) -> bool {
        let ip = ip.to_string();
        exec_in(self.path(), "ping", &["-c", "1", "-W", "2", &ip])
            .status
            .success()
    }

    /// A TCP server on `port` answering each connection with the source
    /// address it saw (stopped when the pod is dropped).
    pub fn tcp_echo_server(&self, port: u16) {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let file = File::open(self.path()).expect("open pod netns");
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let bound = setns(file.as_fd(), CloneFlags::CLONE_NEWNET)
                .map_err(std::io::Error::from)
                // [::] takes both families (IPv4 peers come v4-mapped).
                .and_then(|_| TcpListener::bind((Ipv6Addr::UNSPECIFIED, port)))
                .and_then(|l| l.set_nonblocking(true).map(|_| l));
            let listener = match bound {
                Ok(l) => {
                    let _ = ready_tx.send(Ok(()));
                    l
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return;
                }
            };
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut conn, peer)) => {
                        let seen = peer.ip().to_canonical();
                        let _ = conn.write_all(seen.to_string().as_bytes());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            other => panic!("tcp server in pod {} on {port}: {other:?}", self.name),
        }
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((stop, handle));
    }

    /// What a `tcp_echo_server` at `ip:port` answers a connection from this
    /// pod (the source address it saw), or None if nothing answers in 2 s.
    pub fn tcp_connect(&self, ip: IpAddr, port: u16) -> Option<String> {
        let addr = SocketAddr::new(ip, port);
        in_netns(Some(self.path()), move || {
            let limit = Duration::from_secs(2);
            let mut s = TcpStream::connect_timeout(&addr, limit).ok()?;
            s.set_read_timeout(Some(limit)).ok()?;
            let mut out = String::new();
            s.read_to_string(&mut out).ok()?;
            Some(out)
        })
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let servers = std::mem::take(self.servers.get_mut().unwrap_or_else(|e| e.into_inner()));
        for (stop, handle) in servers {
            stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
        }
    }
}
