//! Integration test harness: each test gets its own "host" network namespace (the
//! test thread unshares one) and container namespaces held by parked threads, so
//! tests run in parallel and never touch the root namespace.

#![allow(dead_code)]

pub mod dhcp_lan;
pub mod doctor;
pub mod etcd_cluster;
pub mod firewalld;
pub mod underlay;

use nix::sched::{CloneFlags, setns, unshare};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;

pub const BIN: &str = env!("CARGO_BIN_EXE_cni-multi");
pub const VERSIONS: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// Moves the calling test thread into a fresh network namespace: the test's host.
/// Every process the test spawns starts there.
pub fn enter_test_host() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "integration tests need root (they create network namespaces)"
    );
    unshare(CloneFlags::CLONE_NEWNET).expect("unshare(CLONE_NEWNET) for the test host");
}

/// A container network namespace, alive as long as this value.
pub struct Netns {
    path: PathBuf,
    stop: Option<mpsc::Sender<()>>,
    holder: Option<JoinHandle<()>>,
}

impl Netns {
    /// A new namespace, created from the calling thread's (the host's).
    pub fn new() -> Netns {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let made = unshare(CloneFlags::CLONE_NEWNET).map(|_| nix::unistd::gettid());
            let _ = ready_tx.send(made);
            let _ = stop_rx.recv();
        });
        let tid = ready_rx
            .recv()
            .expect("netns holder thread")
            .expect("unshare for container netns");
        Netns {
            path: PathBuf::from(format!("/proc/{}/task/{tid}/ns/net", std::process::id())),
            stop: Some(stop_tx),
            holder: Some(holder),
        }
    }

    pub fn path(&self) -> &str {
        self.path.to_str().unwrap_or_default()
    }

    /// Runs a command inside this namespace and returns its stdout.
    pub fn sh(&self, program: &str, args: &[&str]) -> String {
        run_in(Some(&self.path), program, args)
    }

    /// Ends the namespace now (as when a container is gone before DEL).
    pub fn destroy(mut self) {
        self.stop_holder();
    }

    fn stop_holder(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.holder.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.stop_holder();
    }
}

/// A namespace bind-mounted at a path, as containerd and CRI-O pin theirs
/// (`cnitool netns add` in a private directory): `destroy` unmounts and
/// removes it, so the path is gone as after a runtime deleted the sandbox.
pub struct PinnedNetns {
    dir: TempDir,
    path: PathBuf,
}

impl PinnedNetns {
    pub fn new() -> PinnedNetns {
        let dir = TempDir::new("pinned");
        let out = Command::new(BIN)
            .args(["cnitool", "netns", "--dir"])
            .arg(&dir.0)
            .args(["add", "pod"])
            .output()
            .expect("cnitool netns add");
        assert!(out.status.success(), "{out:?}");
        let path = dir.0.join("pod");
        PinnedNetns { dir, path }
    }

    pub fn path(&self) -> &str {
        self.path.to_str().unwrap_or_default()
    }

    pub fn sh(&self, program: &str, args: &[&str]) -> String {
        run_in(Some(&self.path), program, args)
    }

    /// Unmounts and removes the namespace's file (the namespace ends).
    pub fn destroy(self) {
        self.delete();
    }

    fn delete(&self) {
        if self.path.exists() {
            let _ = Command::new(BIN)
                .args(["cnitool", "netns", "--dir"])
                .arg(&self.dir.0)
                .args(["del", "pod"])
                .output();
        }
        // `netns add` made the directory a mount point (as iproute2 does
        // /run/netns): unmounted, the TempDir can remove it.
        let _ = nix::mount::umount2(&self.dir.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

impl Drop for PinnedNetns {
    fn drop(&mut self) {
        self.delete();
    }
}

/// The host's `eth0` (one end of a veth pair, both up): a master for macvlan
/// and a NAD's device. The test host is a namespace of its own, so the name is free.
#[allow(dead_code)]
pub fn make_eth0() {
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "eth0",
            "type",
            "veth",
            "peer",
            "name",
            "eth0-peer",
        ],
    );
    run_in(None, "ip", &["link", "set", "eth0", "up"]);
    run_in(None, "ip", &["link", "set", "eth0-peer", "up"]);
}

/// Runs a command in the host namespace (or in `netns`) and returns its stdout;
/// panics on failure, so a test never asserts on an empty string by accident.
pub fn run_in(netns: Option<&Path>, program: &str, args: &[&str]) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some(ns) = netns {
        let fd = File::open(ns).expect("open netns for command");
        // SAFETY: between fork and exec only setns(2), an async-signal-safe syscall,
        // runs; the fd is owned by the parent and outlives the spawn.
        unsafe {
            cmd.pre_exec(move || {
                setns(fd.as_fd(), CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
            });
        }
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One plugin invocation: environment plus stdin.
#[derive(Clone, Debug, Default)]
pub struct Call {
    pub plugin: String,
    pub env: BTreeMap<String, String>,
    pub stdin: String,
}

/// What a plugin invocation printed and returned.
#[derive(Debug)]
pub struct Outcome {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }

    /// Asserts success and returns the parsed stdout (or Null when empty).
    pub fn ok(&self) -> Value {
        assert_eq!(
            self.status, 0,
            "expected success, got {}: {} {}",
            self.status, self.stdout, self.stderr
        );
        if self.stdout.is_empty() {
            Value::Null
        } else {
            self.json()
        }
    }

    /// Asserts a CNI error with this code; returns the error JSON.
    pub fn err(&self, code: u64) -> Value {
        assert_eq!(self.status, 1, "expected exit 1: {self:?}");
        let e = self.json();
        assert_eq!(e["code"].as_u64(), Some(code), "wrong code: {e}");
        e
    }
}

impl Call {
    /// ADD/DEL/CHECK with the usual attachment env.
    pub fn new(plugin: &str, command: &str, netns: &str, stdin: &str) -> Call {
        let mut env = BTreeMap::new();
        env.insert("CNI_COMMAND".into(), command.into());
        env.insert("CNI_CONTAINERID".into(), "ctr-1".into());
        env.insert("CNI_NETNS".into(), netns.into());
        env.insert("CNI_IFNAME".into(), "eth0".into());
        env.insert("CNI_PATH".into(), "/nonexistent".into());
        // Runtimes pass their PATH; netfilter tools are found through it.
        env.insert(
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into()),
        );
        Call {
            plugin: plugin.into(),
            env,
            stdin: stdin.into(),
        }
    }

    /// GC of `conf` (a network config of cniVersion 1.1.0) as a runtime sends
    /// it: no attachment env, `valid` as `cni.dev/valid-attachments` when given.
    pub fn gc(plugin: &str, conf: &serde_json::Value, valid: Option<serde_json::Value>) -> Call {
        let mut conf = conf.clone();
        if let Some(v) = valid {
            conf["cni.dev/valid-attachments"] = v;
        }
        Call::new(plugin, "GC", "", &conf.to_string())
            .unset("CNI_CONTAINERID")
            .unset("CNI_IFNAME")
            .unset("CNI_NETNS")
    }

    pub fn set(mut self, key: &str, value: &str) -> Call {
        self.env.insert(key.into(), value.into());
        self
    }

    pub fn unset(mut self, key: &str) -> Call {
        self.env.remove(key);
        self
    }

    /// Starts `cni-multi <plugin>` with exactly this environment, stdin written.
    pub fn spawn(&self) -> std::process::Child {
        self.spawn_with(|_| {})
    }

    /// Runs it in working directory `dir` (where relative config paths resolve).
    pub fn run_in_dir(&self, dir: &Path) -> Outcome {
        Outcome::of(self.spawn_with(|c| {
            c.current_dir(dir);
        }))
    }

    /// As `spawn`, the command first adjusted (working directory, pre_exec).
    pub fn spawn_with(&self, adjust: impl FnOnce(&mut Command)) -> std::process::Child {
        let mut command = Command::new(BIN);
        adjust(&mut command);
        let mut child = command
            .arg(&self.plugin)
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cni-multi");
        if let Some(mut stdin) = child.stdin.take() {
            // A plugin may exit before reading (VERSION); a broken pipe is fine.
            let _ = stdin.write_all(self.stdin.as_bytes());
        }
        child
    }

    /// Runs `cni-multi <plugin>` to completion.
    pub fn run(&self) -> Outcome {
        Outcome::of(self.spawn())
    }

    /// Runs it with `source` bound over `target` in a private mount
    /// namespace: a fixed path (sysfs, /etc) read from a fake tree, the
    /// host's own left as it is.
    pub fn run_with_bind(&self, source: &Path, target: &str) -> Outcome {
        use nix::mount::{MsFlags, mount};
        use std::ffi::{CStr, CString};
        use std::os::unix::ffi::OsStrExt;
        let source = CString::new(source.as_os_str().as_bytes()).expect("source path");
        let target = CString::new(target).expect("target path");
        let none: Option<&CStr> = None;
        Outcome::of(self.spawn_with(move |cmd| {
            // SAFETY: between fork and exec only unshare(2) and mount(2) run,
            // on strings made before the fork; nothing allocates or locks.
            unsafe {
                cmd.pre_exec(move || {
                    unshare(CloneFlags::CLONE_NEWNS)?;
                    let private = MsFlags::MS_REC | MsFlags::MS_PRIVATE;
                    mount(none, c"/", none, private, none)?;
                    let bind = MsFlags::MS_BIND;
                    mount(Some(source.as_c_str()), target.as_c_str(), none, bind, none)?;
                    Ok(())
                });
            }
        }))
    }
}

impl Outcome {
    /// Waits for a spawned plugin.
    pub fn of(child: std::process::Child) -> Outcome {
        let out = child.wait_with_output().expect("wait for cni-multi");
        Outcome {
            status: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A private temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "cni-multi-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).expect("create temp dir");
        register_with_leftovers_check();
        TempDir(p)
    }
}

impl Drop for TempDir {
    /// Unmounts whatever is mounted under the directory (pinned namespaces,
    /// the directory itself made a mount point by `netns add`), then removes
    /// it: also when the test panicked, so nothing of a test stays in /tmp.
    fn drop(&mut self) {
        // Again until none is left: unmounting one can uncover another
        // (a propagated copy hidden under it).
        for _ in 0..8 {
            let points = mounts_under(&self.0);
            if points.is_empty() {
                break;
            }
            for point in points {
                let _ = nix::mount::umount2(&point, nix::mount::MntFlags::MNT_DETACH);
            }
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Under `tests/leftovers.sh` (which sets `CNI_MULTI_TEST_RUN` to a directory
/// of its own), leaves this process's pid there: the names of its temporary
/// directories carry it, so the check after the run finds what this run left
/// in /tmp and nothing of other runs on the machine.
fn register_with_leftovers_check() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Some(run) = std::env::var_os("CNI_MULTI_TEST_RUN") {
            let mark = Path::new(&run).join(std::process::id().to_string());
            std::fs::write(&mark, b"").expect("register with the leftovers check");
        }
    });
}

/// The mount points at or under `dir` in the calling thread's mount
/// namespace, deepest first (so each unmounts before what it sits on).
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let table = std::fs::read_to_string("/proc/thread-self/mountinfo").unwrap_or_default();
    let mut points: Vec<PathBuf> = table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|p| PathBuf::from(p.replace("\\040", " ")))
        .filter(|p| p.starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    points
}

/// A CNI_PATH directory with every plugin name linked to the binary under test,
/// so delegation (IPAM) runs in-process as it does from /opt/cni/bin.
pub fn plugin_dir() -> TempDir {
    let dir = TempDir::new("bin");
    let out = Command::new(BIN)
        .arg("--list")
        .output()
        .expect("cni-multi --list");
    for name in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        std::os::unix::fs::symlink(BIN, dir.0.join(name)).expect("symlink plugin");
    }
    dir
}

impl Call {
    /// Sets CNI_PATH to a plugin directory.
    pub fn path(self, dir: &TempDir) -> Call {
        let p = dir.0.to_string_lossy().into_owned();
        self.set("CNI_PATH", &p)
    }
}

/// Whether this kernel can create a link of this kind in the test's host
/// namespace (`ip link add … type <kind> …`); Err carries the reason to print.
/// `on_parent` puts it on a veth `probe-parent`; `options` follow the kind.
pub fn kernel_supports(kind: &str, on_parent: bool, options: &[&str]) -> Result<(), String> {
    let parent = [
        "link",
        "add",
        "probe-parent",
        "type",
        "veth",
        "peer",
        "name",
        "probe-peer",
    ];
    let _ = Command::new("ip").args(parent).output();
    let mut args = vec!["link", "add"];
    if on_parent {
        args.extend_from_slice(&["link", "probe-parent"]);
    }
    args.extend_from_slice(&["probe-link", "type", kind]);
    args.extend_from_slice(options);
    let out = Command::new("ip")
        .args(&args)
        .output()
        .map_err(|e| e.to_string())?;
    let _ = Command::new("ip")
        .args(["link", "del", "probe-link"])
        .output();
    let _ = Command::new("ip")
        .args(["link", "del", "probe-parent"])
        .output();
    if out.status.success() {
        Ok(())
    } else {
        let what = if options.is_empty() {
            kind.to_string()
        } else {
            format!("{kind} ({})", options.join(" "))
        };
        Err(format!(
            "kernel cannot create {what} links: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether the kernel must have every feature the tests use: set by the
/// stock-kernel lane (tests/kernel/run.sh), where a kernel skip hides a bug.
pub fn kernel_required() -> bool {
    std::env::var("CNI_MULTI_REQUIRE_KERNEL").as_deref() == Ok("1")
}

/// A test skipped because this machine lacks what it needs: a kernel feature
/// (a link kind, a protocol) or a tool (or a tool's flavour, as the nf_tables
/// iptables). Prints why (visible with --nocapture and in CI logs). With
/// CNI_MULTI_REQUIRE_KERNEL=1 (the stock-kernel lane, which installs the tools
/// and puts the nf_tables iptables first on PATH) nothing may be missing: the
/// test fails.
pub fn skip(test: &str, reason: &str) {
    assert!(
        !kernel_required(),
        "{test}: CNI_MULTI_REQUIRE_KERNEL=1 but {reason}"
    );
    eprintln!("SKIP {test}: {reason}");
}

/// Runs `f` on a new thread inside the namespace at `netns` (None: the caller's).
pub fn in_netns<T: Send + 'static>(
    netns: Option<&str>,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let file = netns.map(|p| File::open(p).expect("open netns"));
    std::thread::spawn(move || {
        if let Some(f) = &file {
            setns(f.as_fd(), CloneFlags::CLONE_NEWNET).expect("setns");
        }
        f()
    })
    .join()
    .expect("netns thread")
}

/// A TCP server in `netns` on `port` answering every connection with `reply`;
/// it lives as long as the test process (the thread blocks in accept).
pub fn tcp_server(netns: &str, port: u16, reply: &'static str) {
    let (tx, rx) = mpsc::channel();
    let file = File::open(netns).expect("open netns");
    std::thread::spawn(move || {
        setns(file.as_fd(), CloneFlags::CLONE_NEWNET).expect("setns");
        let listener = std::net::TcpListener::bind(("::", port))
            .or_else(|_| std::net::TcpListener::bind(("0.0.0.0", port)))
            .expect("bind");
        let _ = tx.send(());
        for mut conn in listener.incoming().flatten() {
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    rx.recv().expect("server ready");
}

/// A UDP server in `netns` on `port` answering every datagram with `reply`.
pub fn udp_server(netns: &str, port: u16, reply: &'static str) {
    let (tx, rx) = mpsc::channel();
    let file = File::open(netns).expect("open netns");
    std::thread::spawn(move || {
        setns(file.as_fd(), CloneFlags::CLONE_NEWNET).expect("setns");
        let sock = std::net::UdpSocket::bind(("0.0.0.0", port)).expect("bind udp");
        let _ = tx.send(());
        let mut buf = [0u8; 64];
        while let Ok((_, from)) = sock.recv_from(&mut buf) {
            let _ = sock.send_to(reply.as_bytes(), from);
        }
    });
    rx.recv().expect("server ready");
}

/// What a TCP connection from `netns` (None: the caller's) to `addr` reads, if it connects.
pub fn tcp_fetch(netns: Option<&str>, addr: &str) -> Option<String> {
    let addr: std::net::SocketAddr = addr.parse().expect("socket address");
    in_netns(netns, move || {
        use std::io::Read;
        let mut s =
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)).ok()?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    })
}

/// As `tcp_fetch`, tried again for up to `seconds` while nothing answers: a
/// fresh IPv6 address can still be in duplicate address detection, which a
/// slow (emulated) machine stretches.
pub fn tcp_fetch_soon(netns: Option<&str>, addr: &str, seconds: u64) -> Option<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        let got = tcp_fetch(netns, addr);
        if got.is_some() || std::time::Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The reply to one UDP datagram from `netns` to `addr`, if any.
pub fn udp_fetch(netns: Option<&str>, addr: &str) -> Option<String> {
    let addr: std::net::SocketAddr = addr.parse().expect("socket address");
    in_netns(netns, move || {
        let sock = std::net::UdpSocket::bind(("0.0.0.0", 0)).ok()?;
        sock.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .ok()?;
        sock.send_to(b"ping", addr).ok()?;
        let mut buf = [0u8; 64];
        let (n, _) = sock.recv_from(&mut buf).ok()?;
        Some(String::from_utf8_lossy(&buf[..n]).into_owned())
    })
}

/// One table of `iptables-save`, without its comment lines.
pub fn iptables_table(table: &str) -> String {
    run_in(None, "iptables-save", &["-t", table])
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `nft list ruleset` of the test's host namespace.
pub fn nft_ruleset() -> String {
    run_in(None, "nft", &["list", "ruleset"])
}

/// The first `n` hex digits of SHA-512 of `s`, computed independently with sha512sum.
pub fn sha512_prefix(s: &str, n: usize) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("printf %s '{s}' | sha512sum"))
        .output()
        .expect("sha512sum");
    String::from_utf8_lossy(&out.stdout)[..n].to_string()
}

/// A peer namespace at 192.0.2.2 behind the host's 192.0.2.1 (on `host_if`),
/// with a default route through the host: a client or a remote server.
pub fn peer_netns(host_if: &str) -> Netns {
    let peer = Netns::new();
    veth_into(&peer, host_if, "p0");
    run_in(None, "ip", &["addr", "add", "192.0.2.1/24", "dev", host_if]);
    run_in(None, "ip", &["link", "set", host_if, "up"]);
    peer.sh("ip", &["addr", "add", "192.0.2.2/24", "dev", "p0"]);
    peer.sh("ip", &["link", "set", "p0", "up"]);
    peer.sh("ip", &["link", "set", "lo", "up"]);
    peer.sh("ip", &["route", "add", "default", "via", "192.0.2.1"]);
    peer
}

/// A veth pair from the test's host (`host_if`, left down) into `ns`
/// (`peer_if`): the wire most tests put between the host and a peer.
pub fn veth_into(ns: &Netns, host_if: &str, peer_if: &str) {
    let args = [
        "link", "add", host_if, "type", "veth", "peer", "name", peer_if,
    ];
    let mut args = args.to_vec();
    args.extend(["netns", ns.path()]);
    run_in(None, "ip", &args);
}

/// The plugin most chains start with: a gateway bridge `bridge`, addresses
/// from host-local's `subnet` kept in `data_dir` (`@STORE@` for a
/// `Runtime`'s store). `merged` adds or overrides keys.
pub fn bridge_host_local(bridge: &str, subnet: &str, data_dir: &str) -> Value {
    serde_json::json!({"type": "bridge", "bridge": bridge, "isGateway": true,
        "ipam": {"type": "host-local", "subnet": subnet, "dataDir": data_dir}})
}

/// `plugin` (a `bridge_host_local`) with host-local's default route too.
pub fn with_default_route(mut plugin: Value) -> Value {
    plugin["ipam"]["routes"] = serde_json::json!([{"dst": "0.0.0.0/0"}]);
    plugin
}

/// `base` with the keys of `extra` set (both JSON objects).
pub fn merged(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

/// A cnitool setup for one test: conf dir, cache dir, host-local store, plugins.
pub struct Runtime {
    pub conf: TempDir,
    pub cache: TempDir,
    pub store: TempDir,
    pub bin: TempDir,
}

impl Runtime {
    pub fn new(tag: &str) -> Runtime {
        Runtime {
            conf: TempDir::new(&format!("{tag}-conf")),
            cache: TempDir::new(&format!("{tag}-cache")),
            store: TempDir::new(&format!("{tag}-store")),
            bin: plugin_dir(),
        }
    }

    /// Writes a conflist; `@STORE@` in it becomes the store directory.
    pub fn write_list(&self, file: &str, list: &Value) {
        let text = list
            .to_string()
            .replace("@STORE@", &self.store.0.to_string_lossy());
        std::fs::write(self.conf.0.join(file), text).expect("write conflist");
    }

    /// `cni-multi cnitool <args>` with this setup, CAP_ARGS and PATH (default: ours).
    pub fn command(&self, args: &[&str], caps: &Value, path: Option<&str>) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("cnitool")
            .arg("--cache-dir")
            .arg(&self.cache.0)
            .args(args)
            .env_clear()
            .env("NETCONFPATH", &self.conf.0)
            .env("CNI_PATH", &self.bin.0)
            .env("CAP_ARGS", caps.to_string())
            .env(
                "PATH",
                path.map(String::from)
                    .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    pub fn run(&self, args: &[&str], caps: &Value) -> Outcome {
        Outcome::of(
            self.command(args, caps, None)
                .spawn()
                .expect("spawn cnitool"),
        )
    }
}

/// The first address of a result, without its prefix length.
pub fn first_ip(result: &Value) -> String {
    let address = result["ips"][0]["address"]
        .as_str()
        .expect("result has an address");
    address.split('/').next().unwrap_or(address).to_string()
}

/// dnsmasq rewrites its lease file in place (truncate, then write): a read
/// can catch it half written. Two equal reads in a row are a whole file.
pub fn stable_read(path: &std::path::Path) -> String {
    let read = || std::fs::read_to_string(path).unwrap_or_default();
    let mut last = read();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = read();
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// Runs a plugin binary of another implementation (the reference's, in
/// /usr/lib/cni) as a runtime would: a clean environment, the config on stdin.
pub fn run_other_plugin(
    binary: &str,
    command: &str,
    container_id: &str,
    netns: &str,
    conf: &str,
) -> std::process::Output {
    std::process::Command::new(binary)
        .env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", container_id)
        .env("CNI_NETNS", netns)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/usr/lib/cni")
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(conf.as_bytes())?;
            }
            child.wait_with_output()
        })
        .unwrap_or_else(|e| panic!("run {binary}: {e}"))
}

/// The container ID cnitool (and bench/libcni) derives from a netns path.
pub fn cnitool_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

/// Whether a chained plugin's `dataDir` holds a record of (containerID, ifname)
/// on some network (`<id>@<ifname>@<network hash>.json`).
pub fn has_record(dir: &Path, id: &str, ifname: &str) -> bool {
    let prefix = format!("{id}@{ifname}@");
    std::fs::read_dir(dir).is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    })
}

/// `cni-multi cnitool ARGS` against its own config dir, result cache and
/// plugin dir (plus `env`), as the doctor's tests run every command.
pub fn cnitool_in(
    conf: &Path,
    cache: &Path,
    bin: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> Outcome {
    let child = Command::new(BIN)
        .arg("cnitool")
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_clear()
        .env("NETCONFPATH", conf)
        .env("CNI_PATH", bin)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cnitool");
    Outcome::of(child)
}

/// bench/libcni (cnitool's command line on Go's libcni 1.1, as runtimes run
/// plugins) built against Debian's libcni source package into
/// `target/<name>`; None when Go or the package is missing.
pub fn libcni_driver(name: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gopath = Path::new("/usr/share/gocode");
    let libcni = gopath.join("src/github.com/containernetworking/cni/libcni");
    if !libcni.is_dir() {
        return None;
    }
    let out = root.join("target").join(name);
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(root.join("bench/libcni"))
        .env("GO111MODULE", "off")
        .env("GOPATH", gopath)
        .env("GOCACHE", root.join("target/go-cache"))
        .status()
        .is_ok_and(|s| s.success());
    built.then_some(out)
}
