//! `make bench`: what a node gains, measured with one driver for cni-multi and,
//! given REF_DIR, for another plugin directory (e.g. Debian's /usr/lib/cni).
//! Runs inside the private mount + network namespace `bench/run.sh` makes.
//!
//! Every ADD/CHECK/DEL goes through one client, the same for both plugin sets,
//! so the differences are the plugins': `cni-multi cnitool`, and (when Go is
//! there, `--libcni`) bench/libcni, cnitool's command line on Go's libcni, the
//! library containerd, CRI-O and Podman run plugins through. Every measure is
//! taken with each client. Peak RSS and process counts come
//! from ptrace: fork/vfork events are counted, and VmHWM is read at the traced
//! process's exit, so the tracer's own memory never counts.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "layout.rs"]
mod layout;

#[path = "doctor.rs"]
mod doctor;

#[path = "floor.rs"]
mod floor;

type Res<T> = Result<T, String>;

struct Impl {
    label: &'static str,
    plugin_dir: PathBuf,
}

/// The client that runs the plugins.
#[derive(Clone)]
enum Driver {
    Cnitool,
    Libcni(PathBuf),
}

impl Driver {
    fn label(&self) -> &'static str {
        match self {
            Driver::Cnitool => "cnitool",
            Driver::Libcni(_) => "libcni",
        }
    }
}

struct Bench {
    driver: Driver,
    bin: PathBuf,
    work: PathBuf,
    iterations: usize,
    seq: std::cell::Cell<usize>,
}

fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return 0.0;
    }
    let idx = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[idx.min(v.len() - 1)]
}

/// Whether a section is measured: all of them, or those `BENCH_ONLY` names
/// (comma-separated: latency, a scenario's name, floor, floor_chain, rss,
/// processes, scale, scale_chain, scale_chain_nftables, status_gc, parallel,
/// floor_parallel, doctor), for a partial run while working on one.
fn wanted(section: &str) -> bool {
    match std::env::var("BENCH_ONLY") {
        Ok(only) if !only.trim().is_empty() => only.split(',').any(|w| w.trim() == section),
        _ => true,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The scenario whose ADD and DEL rows get their floor (`floor_chain`).
const FLOOR_SCENARIO: &str = "bridge-ipmasq+portmap+bandwidth+tuning";

/// The scenarios: (name, plugin list, capability args).
fn scenarios() -> Vec<(&'static str, Value, Value)> {
    let ipam = |subnet: &str| json!({"type": "host-local", "subnet": subnet, "dataDir": "@STORE@"});
    vec![
        ("loopback", json!([{"type": "loopback"}]), json!({})),
        (
            "bridge+host-local",
            json!([{"type": "bridge", "bridge": "bench-br0", "isGateway": true, "ipam": ipam("10.100.0.0/16")}]),
            json!({}),
        ),
        (
            "ptp+host-local",
            json!([{"type": "ptp", "ipam": ipam("10.101.0.0/16")}]),
            json!({}),
        ),
        (
            "bridge+portmap+bandwidth+tuning",
            json!([
                {"type": "bridge", "bridge": "bench-br1", "isGateway": true, "ipam": ipam("10.102.0.0/16")},
                {"type": "portmap", "capabilities": {"portMappings": true}},
                {"type": "bandwidth", "capabilities": {"bandwidth": true}},
                {"type": "tuning", "sysctl": {"net.core.somaxconn": "512"}}
            ]),
            json!({"portMappings": [{"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}],
                   "bandwidth": {"ingressRate": 100000000, "ingressBurst": 1000000, "egressRate": 100000000, "egressBurst": 1000000}}),
        ),
        // What runtimes write: the bridge masquerades, ports are TCP and UDP.
        (
            "bridge-ipmasq+host-local",
            json!([{"type": "bridge", "bridge": "bench-br6", "isGateway": true, "ipMasq": true,
                    "ipam": ipam("10.107.0.0/16")}]),
            json!({}),
        ),
        (
            "bridge-ipmasq+portmap+bandwidth+tuning",
            json!([
                {"type": "bridge", "bridge": "bench-br7", "isGateway": true, "ipMasq": true, "ipam": ipam("10.108.0.0/16")},
                {"type": "portmap", "capabilities": {"portMappings": true}},
                {"type": "bandwidth", "capabilities": {"bandwidth": true}},
                {"type": "tuning"}
            ]),
            json!({"portMappings": [{"hostPort": 18081, "containerPort": 80, "protocol": "tcp"},
                                    {"hostPort": 18081, "containerPort": 80, "protocol": "udp"}],
                   "bandwidth": {"ingressRate": 100000000, "ingressBurst": 1000000, "egressRate": 100000000, "egressBurst": 1000000}}),
        ),
        // Podman's default network (testdata/podman-default.conflist), as
        // Podman sends its capabilities.
        (
            "podman-default",
            fixture(include_str!("../testdata/podman-default.conflist")),
            json!({"portMappings": [{"hostPort": 18082, "containerPort": 80, "protocol": "tcp"},
                                    {"hostPort": 18082, "containerPort": 80, "protocol": "udp"}]}),
        ),
        // containerd's (testdata/containerd-default.conflist), with the
        // Go-cased capability keys its CRI plugin sends (reference §10.1).
        (
            "containerd-default",
            fixture(include_str!("../testdata/containerd-default.conflist")),
            json!({"portMappings": [{"HostPort": 18083, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""},
                                    {"HostPort": 18083, "ContainerPort": 80, "Protocol": "udp", "HostIP": ""}],
                   "bandwidth": {"IngressRate": 100000000, "IngressBurst": 4294967295u64,
                                 "EgressRate": 100000000, "EgressBurst": 4294967295u64}}),
        ),
    ]
}

/// `iptables-restore --noflush`, as the plugins run it.
fn restore_cmd() -> Command {
    let mut cmd = Command::new("iptables-restore");
    cmd.args(["-w", "--noflush"]).stderr(Stdio::piped());
    cmd
}

/// Runs every command at once, each given its stdin text, with one waiter
/// thread per call, so each call's time ends when it exits, not when the
/// driver gets round to waiting for it. Each call's time (`call_time`) and
/// output; an error if any failed.
fn concurrent<'a>(
    cmds: impl Iterator<Item = (Command, &'a str)>,
    what: &str,
) -> Res<Vec<(f64, std::process::Output)>> {
    let waiters: Vec<_> = cmds
        .map(|(mut cmd, input)| {
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
            let input = input.to_string();
            let t0 = Instant::now();
            let child = cmd.spawn();
            std::thread::spawn(move || {
                let out = child.and_then(|mut c| {
                    if let Some(mut stdin) = c.stdin.take() {
                        std::io::Write::write_all(&mut stdin, input.as_bytes())?;
                    }
                    c.wait_with_output()
                });
                let wall = ms(t0.elapsed());
                let took = out.as_ref().map_or(wall, |o| call_time(&o.stderr, wall));
                (took, out)
            })
        })
        .collect();
    let mut calls = Vec::new();
    for waiter in waiters {
        let (took, out) = waiter
            .join()
            .map_err(|_| "waiter thread failed".to_string())?;
        let out = out.map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("{what}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        calls.push((took, out));
    }
    Ok(calls)
}

fn mean_took(calls: &[(f64, std::process::Output)]) -> f64 {
    calls.iter().map(|c| c.0).sum::<f64>() / calls.len().max(1) as f64
}

/// The libcni client's `elapsed_ns=` (the library call alone, as a runtime
/// process pays it), else the client process's wall time (cnitool's).
fn call_time(stderr: &[u8], wall: f64) -> f64 {
    String::from_utf8_lossy(stderr)
        .lines()
        .find_map(|l| l.strip_prefix("elapsed_ns=")?.trim().parse::<f64>().ok())
        .map_or(wall, |ns| ns / 1e6)
}

/// Port mappings of one container: TCP, and UDP too as runtimes publish them.
fn mappings(port: usize, udp: bool) -> Value {
    let mut list = vec![json!({"hostPort": port, "containerPort": 80, "protocol": "tcp"})];
    if udp {
        list.push(json!({"hostPort": port, "containerPort": 80, "protocol": "udp"}));
    }
    json!({ "portMappings": list })
}

/// A runtime's default conflist as its plugin list, with host-local's store
/// moved into the benchmark's own directory.
fn fixture(text: &str) -> Value {
    let mut list: Value = serde_json::from_str(text).unwrap_or_default();
    let mut plugins = list["plugins"].take();
    if let Some(items) = plugins.as_array_mut() {
        for p in items {
            if p["ipam"]["type"] == "host-local" {
                p["ipam"]["dataDir"] = json!("@STORE@");
            }
        }
    }
    plugins
}

impl Bench {
    fn conf_dir(&self, im: &Impl, name: &str, plugins: &Value) -> Res<PathBuf> {
        self.conf_dir_at(im, name, plugins, "1.0.0")
    }

    fn conf_dir_at(&self, im: &Impl, name: &str, plugins: &Value, version: &str) -> Res<PathBuf> {
        let dir = self
            .work
            .join(format!("conf-{}-{}", im.label, name.replace('+', "-")));
        let store = self.work.join(format!("store-{}", im.label));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let text =
            json!({"cniVersion": version, "name": name.replace('+', "-"), "plugins": plugins})
                .to_string()
                .replace("@STORE@", &store.to_string_lossy());
        std::fs::write(dir.join("net.conflist"), text).map_err(|e| e.to_string())?;
        Ok(dir)
    }

    fn netns(&self) -> Res<String> {
        let n = self.seq.get();
        self.seq.set(n + 1);
        let name = format!("bench{n}");
        let out = Command::new(&self.bin)
            .args(["cnitool", "netns", "add", &name])
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(format!("/run/netns/{name}"))
    }

    fn drop_netns(&self, path: &str) {
        let name = path.rsplit('/').next().unwrap_or_default();
        let _ = Command::new(&self.bin)
            .args(["cnitool", "netns", "del", name])
            .output();
    }

    /// The client running `args` (add|check|del <net> <netns>), as cnitool's
    /// command line: `cni-multi cnitool` or the libcni driver.
    fn cnitool(&self, im: &Impl, conf: &Path, caps: &Value, args: &[&str]) -> Command {
        let cache = self
            .work
            .join(format!("cache-{}-{}", im.label, self.driver.label()));
        let mut cmd = match &self.driver {
            Driver::Cnitool => {
                let mut cmd = Command::new(&self.bin);
                cmd.arg("cnitool").arg("--cache-dir").arg(&cache);
                cmd
            }
            Driver::Libcni(path) => {
                let mut cmd = Command::new(path);
                // It reports the libcni call's own time: a runtime is a
                // long-lived process and pays no client start per pod.
                cmd.env("CNI_CACHE_DIR", &cache)
                    .env("CNI_BENCH_TIMING", "1");
                cmd
            }
        };
        cmd.args(args)
            .env("NETCONFPATH", conf)
            .env("CNI_PATH", &im.plugin_dir)
            .env("CAP_ARGS", caps.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    fn timed(&self, mut cmd: Command) -> Res<f64> {
        let start = Instant::now();
        let out = cmd.output().map_err(|e| e.to_string())?;
        let wall = ms(start.elapsed());
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(call_time(&out.stderr, wall))
    }

    /// Median and p90 of ADD, CHECK, DEL over `iterations` fresh namespaces.
    fn latency(&self, im: &Impl, name: &str, plugins: &Value, caps: &Value) -> Res<Value> {
        let conf = self.conf_dir(im, name, plugins)?;
        let net = name.replace('+', "-");
        let (mut add, mut check, mut del) = (Vec::new(), Vec::new(), Vec::new());
        let mut check_error = None;
        for _ in 0..self.iterations {
            let ns = self.netns()?;
            add.push(self.timed(self.cnitool(im, &conf, caps, &["add", &net, &ns]))?);
            // A plugin whose CHECK is broken (Debian's 1.1.1 portmap checks ip6tables
            // even without IPv6) is reported, not fatal.
            match self.timed(self.cnitool(im, &conf, caps, &["check", &net, &ns])) {
                Ok(t) => check.push(t),
                Err(e) => check_error = Some(e.trim().to_string()),
            }
            del.push(self.timed(self.cnitool(im, &conf, caps, &["del", &net, &ns]))?);
            self.drop_netns(&ns);
        }
        let stat =
            |v: &[f64]| json!({"median_ms": percentile(v, 0.5), "p90_ms": percentile(v, 0.9)});
        let check = match check_error {
            Some(e) => json!({"failed": e}),
            None => stat(&check),
        };
        Ok(json!({"add": stat(&add), "check": check, "del": stat(&del)}))
    }

    /// ADD latency of the first and last 20 of `count` containers on one bridge
    /// with port mappings (with `ipmasq`: a masquerading bridge and TCP+UDP
    /// mappings, as runtimes configure them).
    fn scale(&self, im: &Impl, count: usize, backend: Option<&str>, ipmasq: bool) -> Res<Value> {
        let mut plugins = json!([
            {"type": "bridge", "bridge": "bench-br2", "isGateway": true, "ipMasq": ipmasq,
             "ipam": {"type": "host-local", "subnet": "10.103.0.0/16", "dataDir": "@STORE@"}},
            {"type": "portmap", "capabilities": {"portMappings": true}}
        ]);
        if let Some(backend) = backend {
            plugins[1]["backend"] = json!(backend);
        }
        let conf = self.conf_dir(im, "scale", &plugins)?;
        let mut times = Vec::new();
        let mut spaces = Vec::new();
        for i in 0..count {
            let ns = self.netns()?;
            let caps = mappings(20000 + i, ipmasq);
            times.push(self.timed(self.cnitool(im, &conf, &caps, &["add", "scale", &ns]))?);
            spaces.push((ns, caps));
        }
        for (ns, caps) in &spaces {
            self.timed(self.cnitool(im, &conf, caps, &["del", "scale", ns]))?;
            self.drop_netns(ns);
        }
        let first = percentile(&times[..20.min(times.len())], 0.5);
        let last = percentile(&times[times.len().saturating_sub(20)..], 0.5);
        Ok(
            json!({"containers": count, "first20_median_ms": first, "last20_median_ms": last, "growth": last / first}),
        )
    }

    /// The floor: the first plugin's VERSION through the client, one exec of
    /// the plugin binary (libcni's GetVersionInfo; `cnitool validate`, which
    /// asks it the same, plus cnitool's own process).
    fn floor(&self, im: &Impl) -> Res<Value> {
        let plugins = json!([{"type": "bridge", "bridge": "bench-br10",
                              "ipam": {"type": "host-local", "subnet": "10.112.0.0/16", "dataDir": "@STORE@"}}]);
        let conf = self.conf_dir(im, "floor", &plugins)?;
        let verb = match self.driver {
            Driver::Cnitool => "validate",
            Driver::Libcni(_) => "version",
        };
        let mut times = Vec::new();
        for _ in 0..self.iterations {
            times.push(self.timed(self.cnitool(im, &conf, &json!({}), &[verb, "floor"]))?);
        }
        Ok(json!({"median_ms": percentile(&times, 0.5), "p90_ms": percentile(&times, 0.9)}))
    }

    /// ADD of containers 1..`count` on one bridge(ipMasq)+portmap(TCP+UDP)+
    /// bandwidth network, then their DELs in the same order (the first at full
    /// load, the last near empty). When the first 50 ADDs (and the DEL and
    /// re-ADD of the 50th) project a run over `budget_s`, it is made at
    /// `fallback` containers instead. `nftables`: ipMasq and portmap on
    /// their nftables backends. After each of the first and last 20 ADDs,
    /// the floor: the kernel work of one more pod's ADD and DEL done alone,
    /// and the client's no-op chain (bench/floor.rs).
    fn scale_chain(
        &self,
        im: &Impl,
        (count, fallback, budget_s): (usize, usize, f64),
        nftables: bool,
    ) -> Res<Value> {
        let mut plugins = json!([
            {"type": "bridge", "bridge": "bench-br8", "isGateway": true, "ipMasq": true,
             "ipam": {"type": "host-local", "subnet": "10.110.0.0/16", "dataDir": "@STORE@"}},
            {"type": "portmap", "capabilities": {"portMappings": true}},
            {"type": "bandwidth", "capabilities": {"bandwidth": true}}
        ]);
        let (net, rules) = if nftables {
            plugins[0]["ipMasqBackend"] = json!("nftables");
            plugins[1]["backend"] = json!("nftables");
            ("scale-chain-nft", floor::Rules::Nftables)
        } else {
            ("scale-chain", floor::iptables_rules())
        };
        let conf = self.conf_dir(im, net, &plugins)?;
        let store = self.work.join(format!("floor-store-{}", im.label));
        let site = floor::Site::of(&plugins, rules, store)?;
        let caps = |i: usize| {
            let mut caps = mappings(30000 + i, true);
            caps["bandwidth"] = json!({"ingressRate": 100000000, "ingressBurst": 1000000,
                                       "egressRate": 100000000, "egressBurst": 1000000});
            caps
        };
        let add =
            |i: usize, ns: &str| self.timed(self.cnitool(im, &conf, &caps(i), &["add", net, ns]));
        let del =
            |i: usize, ns: &str| self.timed(self.cnitool(im, &conf, &caps(i), &["del", net, ns]));
        let mut projected_s = None;
        let mut adds = Vec::new();
        let mut spaces = Vec::new();
        let mut floor_first = floor::Samples::default();
        let mut floor_last = floor::Samples::default();
        // The floors' own time, left out of the projection.
        let mut aside = Duration::ZERO;
        let start = Instant::now();
        for i in 0..count {
            let ns = self.netns()?;
            adds.push(add(i, &ns)?);
            spaces.push(ns);
            let taken = Instant::now();
            if i < 20 {
                self.floor_once(im, (&conf, net), &site, &mut floor_first)?;
            } else if i + 20 >= count {
                self.floor_once(im, (&conf, net), &site, &mut floor_last)?;
            }
            aside += taken.elapsed();
            if i + 1 == 50 && count > fallback {
                let redo = del(i, &spaces[i])?;
                adds[i] = add(i, &spaces[i])?;
                let wall_s = start.elapsed().saturating_sub(aside).as_secs_f64();
                let p = projection(&adds, redo, wall_s, count);
                projected_s = Some(p);
                if p > budget_s {
                    progress(&format!(
                        "  projected {p:.0} s for {count} > {budget_s:.0} s: at {fallback}"
                    ));
                    for (j, ns) in spaces.iter().enumerate() {
                        del(j, ns)?;
                        self.drop_netns(ns);
                    }
                    return self
                        .scale_chain(im, (fallback, fallback, budget_s), nftables)
                        .map(|mut v| {
                            v["requested"] = json!(count);
                            v["projected_s"] = json!(p);
                            v
                        });
                }
            }
        }
        let mut dels = Vec::new();
        for (i, ns) in spaces.iter().enumerate() {
            dels.push(del(i, ns)?);
            self.drop_netns(ns);
        }
        let (add_first, add_last) = (first20(&adds), last20(&adds));
        let (del_full, del_empty) = (first20(&dels), last20(&dels));
        Ok(json!({
            // After the first 20 ADDs: the floor of the first ADDs and of the
            // last DELs (near empty); after the last 20: of the last ADDs and
            // the first DELs (full load).
            "floor": {"first20": floor_first.to_json(), "last20": floor_last.to_json(),
                      "rules": rules.label()},
            "containers": adds.len(), "requested": count, "projected_s": projected_s,
            "took_s": start.elapsed().as_secs_f64(),
            "add_first20_median_ms": add_first, "add_last20_median_ms": add_last,
            "add_growth": add_last / add_first,
            "del_full_first20_median_ms": del_full, "del_empty_last20_median_ms": del_empty,
            "del_full_over_empty": del_full / del_empty,
        }))
    }

    /// STATUS of a bridge + host-local network (1.1.0) with `count`
    /// attachments; then GC of it with a tenth of them stale (deleted from
    /// the valid list, still cached) against the DELs of those same
    /// attachments one by one (summed), both at `count` attachments.
    fn status_gc(&self, im: &Impl, count: usize) -> Res<Value> {
        let plugins = json!([{"type": "bridge", "bridge": "bench-br9", "isGateway": true,
                              "ipam": {"type": "host-local", "subnet": "10.111.0.0/16", "dataDir": "@STORE@"}}]);
        let conf = self.conf_dir_at(im, "statusgc", &plugins, "1.1.0")?;
        let none = json!({});
        let run = |args: &[&str]| self.timed(self.cnitool(im, &conf, &none, args));
        let mut spaces = Vec::new();
        for _ in 0..count {
            let ns = self.netns()?;
            run(&["add", "statusgc", &ns])?;
            spaces.push(ns);
        }
        // Each STATUS next to a floor call (the bridge binary's VERSION through
        // the same client), so both are taken under the same load: after 1,000
        // ADDs the kernel is still busy, and a floor from the run's start
        // would make the ratio the machine's drift.
        let floor_verb = match self.driver {
            Driver::Cnitool => "validate",
            Driver::Libcni(_) => "version",
        };
        let mut status = Vec::new();
        let mut floor = Vec::new();
        for _ in 0..self.iterations {
            floor.push(run(&[floor_verb, "statusgc"])?);
            status.push(run(&["status", "statusgc"])?);
        }
        let stale = (count / 10).max(1);
        let (valid, gone) = spaces.split_at(count - stale);
        // The DELs GC replaces, then the same attachments again.
        let mut dels = 0.0;
        for ns in gone {
            dels += run(&["del", "statusgc", ns])?;
        }
        for ns in gone {
            run(&["add", "statusgc", ns])?;
        }
        let mut args = vec!["gc".to_string(), "statusgc".to_string()];
        for ns in valid {
            args.push("--valid".into());
            args.push(format!("{}/eth0", cnitool_container_id(ns)));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let gc = run(&args)?;
        let cached = |ns: &str| {
            self.work
                .join(format!("cache-{}-{}", im.label, self.driver.label()))
                .join("results")
                .join(format!("statusgc-{}-eth0", cnitool_container_id(ns)))
                .exists()
        };
        let stale_left = gone.iter().filter(|ns| cached(ns)).count();
        let valid_kept = valid.iter().filter(|ns| cached(ns)).count();
        if stale_left != 0 || valid_kept != valid.len() {
            return Err(format!(
                "GC left {stale_left} stale attachments cached and kept {valid_kept} of {} valid",
                valid.len()
            ));
        }
        for ns in valid {
            run(&["del", "statusgc", ns])?;
        }
        for ns in &spaces {
            self.drop_netns(ns);
        }
        Ok(json!({
            "attachments": count, "stale": stale,
            "status_median_ms": percentile(&status, 0.5), "status_p90_ms": percentile(&status, 0.9),
            "floor_beside_median_ms": percentile(&floor, 0.5),
            "gc_ms": gc, "dels_sum_ms": dels, "gc_over_dels": gc / dels,
        }))
    }

    /// 30 ADDs at once, then 30 DELs at once: all succeed, distinct IPs, nothing left.
    fn parallel(&self, im: &Impl, n: usize, ipmasq: bool) -> Res<Value> {
        let plugins = parallel_plugins(ipmasq);
        let conf = self.conf_dir(im, "parallel", &plugins)?;
        let spaces: Vec<String> = (0..n).map(|_| self.netns()).collect::<Res<_>>()?;
        let run = |verb: &str| -> Res<(f64, f64, Vec<String>)> {
            let start = Instant::now();
            let cmds = spaces.iter().map(|ns| {
                (
                    self.cnitool(im, &conf, &json!({}), &[verb, "parallel", ns]),
                    "",
                )
            });
            let calls = concurrent(cmds, &format!("parallel {verb}"))?;
            let mut ips = Vec::new();
            for (_, out) in &calls {
                if let Ok(v) = serde_json::from_slice::<Value>(&out.stdout)
                    && let Some(ip) = v["ips"][0]["address"].as_str()
                {
                    ips.push(ip.to_string());
                }
            }
            Ok((ms(start.elapsed()), mean_took(&calls), ips))
        };
        let (add_wall, add_mean, mut ips) = run("add")?;
        let (del_wall, del_mean, _) = run("del")?;
        // What the same concurrency costs without our plugin: each call's
        // iptables-restore alone (a chain with ipMasq's two rules and the jump
        // to it from POSTROUTING, 30 at once, then removed), and the client's
        // VERSION of the bridge binary (one exec each).
        let restore_floor = if ipmasq {
            let inputs: Vec<String> = (0..n)
                .map(|i| {
                    format!(
                        "*nat\n:CNI-BENCH-P{i} - [0:0]\n-A CNI-BENCH-P{i} -d 10.104.0.0/16 -j ACCEPT\n\
                         -A CNI-BENCH-P{i} ! -d 224.0.0.0/4 -j MASQUERADE\n\
                         -A POSTROUTING -s 10.104.200.{i}/32 -j CNI-BENCH-P{i}\nCOMMIT\n"
                    )
                })
                .collect();
            let added = concurrent(
                inputs.iter().map(|input| (restore_cmd(), input.as_str())),
                "parallel restore",
            )?;
            let undo: String = (0..n)
                .map(|i| {
                    format!(
                        "-D POSTROUTING -s 10.104.200.{i}/32 -j CNI-BENCH-P{i}\n-F CNI-BENCH-P{i}\n-X CNI-BENCH-P{i}\n"
                    )
                })
                .collect();
            concurrent(
                std::iter::once((restore_cmd(), format!("*nat\n{undo}COMMIT\n").as_str())),
                "restore",
            )?;
            Some(mean_took(&added))
        } else {
            None
        };
        let version = |_| {
            (
                self.cnitool(im, &conf, &json!({}), &["version", "parallel"]),
                "",
            )
        };
        let version_floor = match self.driver {
            Driver::Libcni(_) => Some(mean_took(&concurrent(
                (0..n).map(version),
                "parallel VERSION",
            )?)),
            Driver::Cnitool => None,
        };
        ips.sort();
        ips.dedup();
        let store = self
            .work
            .join(format!("store-{}", im.label))
            .join("parallel");
        let left = reservations(&store);
        let links = String::from_utf8_lossy(
            &Command::new("ip")
                .args(["-o", "link"])
                .output()
                .map_err(|e| e.to_string())?
                .stdout,
        )
        .lines()
        .filter(|l| l.contains("master bench-br3"))
        .count();
        for ns in &spaces {
            self.drop_netns(ns);
        }
        Ok(json!({
            "containers": n, "distinct_ips": ips.len(), "reservations_left": left, "ports_left": links,
            "add_wall_ms": add_wall, "add_per_call_ms": add_mean, "del_wall_ms": del_wall, "del_per_call_ms": del_mean,
            "restore_alone_per_call_ms": restore_floor, "version_per_call_ms": version_floor
        }))
    }

    /// Peak RSS of the bridge plugin process (ADD, run as a runtime runs it).
    fn rss(&self, im: &Impl) -> Res<f64> {
        let store = self.work.join(format!("store-{}", im.label));
        let conf = json!({"cniVersion": "1.0.0", "name": "rss", "type": "bridge", "bridge": "bench-br4", "isGateway": true,
                          "ipam": {"type": "host-local", "subnet": "10.105.0.0/16", "dataDir": store}})
        .to_string();
        let mut peak: f64 = 0.0;
        for i in 0..5 {
            let ns = self.netns()?;
            let id = format!("rss{i}");
            for verb in ["ADD", "DEL"] {
                let mut cmd = Command::new(im.plugin_dir.join("bridge"));
                cmd.stdout(Stdio::null())
                    .env("CNI_COMMAND", verb)
                    .env("CNI_CONTAINERID", &id)
                    .env("CNI_NETNS", &ns)
                    .env("CNI_IFNAME", "eth0")
                    .env("CNI_PATH", &im.plugin_dir);
                let traced = trace::run(cmd, conf.as_bytes())?;
                peak = peak.max(traced.first_hwm_kb as f64 / 1024.0);
            }
            self.drop_netns(&ns);
        }
        Ok(peak)
    }

    /// Processes that exist for one bridge+portmap ADD, the client included
    /// (with `ipmasq`: a masquerading bridge on `backend` too, TCP+UDP mappings).
    fn processes(&self, im: &Impl, backend: &str, ipmasq: bool) -> Res<usize> {
        let mut plugins = json!([
            {"type": "bridge", "bridge": "bench-br5", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.106.0.0/16", "dataDir": "@STORE@"}},
            {"type": "portmap", "backend": backend, "capabilities": {"portMappings": true}}
        ]);
        if ipmasq {
            plugins[0]["ipMasq"] = json!(true);
            plugins[0]["ipMasqBackend"] = json!(backend);
        }
        let name = format!("procs-{backend}-{ipmasq}");
        let conf = self.conf_dir(im, &name, &plugins)?;
        let caps = mappings(19090, ipmasq);
        let ns = self.netns()?;
        let cmd = self.cnitool(im, &conf, &caps, &["add", &name, &ns]);
        let traced = trace::run(cmd, b"")?;
        self.timed(self.cnitool(im, &conf, &caps, &["del", &name, &ns]))?;
        self.drop_netns(&ns);
        if traced.status != 0 {
            return Err(format!("traced ADD exited {}", traced.status));
        }
        Ok(traced.processes)
    }
}

/// The parallel rows' network: a bridge, masquerading with `ipmasq`.
fn parallel_plugins(ipmasq: bool) -> Value {
    json!([{"type": "bridge", "bridge": "bench-br3", "isGateway": true, "ipMasq": ipmasq,
            "ipam": {"type": "host-local", "subnet": "10.104.0.0/16", "dataDir": "@STORE@"}}])
}

/// cnitool's (and bench/libcni's) container ID for a netns path.
fn cnitool_container_id(netns: &str) -> String {
    use sha2::{Digest, Sha512};
    let hex: String = Sha512::digest(netns.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("cnitool-{}", &hex[..20])
}

/// The addresses reserved in one network's host-local store: the files
/// named by an address (not its lock, last-reserved or owner index files).
fn reservations(store: &Path) -> usize {
    std::fs::read_dir(store)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.parse::<std::net::IpAddr>().is_ok())
                })
                .count()
        })
        .unwrap_or(0)
}

/// `dir` made a plugin directory of `bin`: a symlink to it for each plugin
/// it lists, as `make install` lays them out.
fn plugin_dir(bin: &Path, dir: &Path) -> Res<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let names = Command::new(bin)
        .arg("--list")
        .output()
        .map_err(|e| format!("{} --list: {e}", bin.display()))?;
    for name in String::from_utf8_lossy(&names.stdout).split_whitespace() {
        std::os::unix::fs::symlink(bin, dir.join(name)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Whether BENCH_ONLY names the doctor row alone: no client is run, and the
/// row is merged into the results already there.
fn doctor_only() -> bool {
    std::env::var("BENCH_ONLY")
        .is_ok_and(|only| !only.trim().is_empty() && only.split(',').all(|w| w.trim() == "doctor"))
}

/// A line on stderr with the seconds since the run began: a run stopped
/// early still tells how far it got, and with which figures.
fn progress(what: &str) {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(Instant::now);
    eprintln!("bench: [{:.0} s] {what}", start.elapsed().as_secs_f64());
}

/// Waits (at most 90 s) until the CPUs are at least 90% idle over a second:
/// the rows before leave deferred kernel work behind (a thousand namespaces
/// and veths destroyed by workqueues after their DELs returned), which would
/// otherwise be timed in the rows that follow.
fn settle() {
    fn busy_idle() -> Option<(u64, u64)> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu = stat.lines().next()?.strip_prefix("cpu ")?;
        let v: Vec<u64> = cpu
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal
        let idle = v.get(3)? + v.get(4)?;
        let total: u64 = v.iter().take(8).sum();
        Some((total, idle))
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(90) {
        let Some((t0, i0)) = busy_idle() else { return };
        std::thread::sleep(Duration::from_secs(1));
        let Some((t1, i1)) = busy_idle() else { return };
        let (dt, di) = (t1.saturating_sub(t0), i1.saturating_sub(i0));
        if dt == 0 || di * 10 >= dt * 9 {
            break;
        }
    }
    progress(&format!(
        "  settled in {:.0} s",
        start.elapsed().as_secs_f64()
    ));
}

fn first20(v: &[f64]) -> f64 {
    percentile(&v[..20.min(v.len())], 0.5)
}

fn last20(v: &[f64]) -> f64 {
    percentile(&v[v.len().saturating_sub(20)..], 0.5)
}

/// Seconds a scale run of `count` containers would take, from its first ADDs
/// (`adds`, taking `wall_s` with their namespaces): ADD time grows linearly
/// (least squares over those ADDs), a DEL costs what `del_ms` does against
/// the last ADD, namespaces cost what they did.
fn projection(adds: &[f64], del_ms: f64, wall_s: f64, count: usize) -> f64 {
    let k = adds.len() as f64;
    let mean_i = (k - 1.0) / 2.0;
    let mean_t = adds.iter().sum::<f64>() / k;
    let (mut cov, mut var) = (0.0, 0.0);
    for (i, t) in adds.iter().enumerate() {
        cov += (i as f64 - mean_i) * (t - mean_t);
        var += (i as f64 - mean_i).powi(2);
    }
    let slope = (cov / var).max(0.0);
    let base = mean_t - slope * mean_i;
    let n = count as f64;
    let add_ms = n * base + slope * n * (n - 1.0) / 2.0;
    let del_factor = del_ms / adds[adds.len() - 1].max(0.001);
    let other_ms = (wall_s * 1000.0 - adds.iter().sum::<f64>()).max(0.0) / k * n;
    (add_ms * (1.0 + del_factor) + other_ms) / 1000.0
}

fn installed_size(dir: &Path, ours: Option<&Path>) -> u64 {
    if let Some(bin) = ours {
        return std::fs::metadata(bin).map(|m| m.len()).unwrap_or(0);
    }
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::symlink_metadata(e.path()).ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn run() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let mut bin = PathBuf::from("target/cni-multi");
    let mut ref_dir: Option<PathBuf> = None;
    let mut out = PathBuf::from("bench/results");
    let mut iterations = 30;
    let mut scale = 1000;
    let mut budget = 600.0;
    let mut fallback = 300;
    let mut libcni: Option<PathBuf> = None;
    let mut layout: Option<PathBuf> = None;
    let mut doctor_bin: Option<PathBuf> = None;
    let mut noop: Option<PathBuf> = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--bin" => bin = PathBuf::from(val()?),
            "--ref" => ref_dir = Some(PathBuf::from(val()?)).filter(|p| !p.as_os_str().is_empty()),
            "--out" => out = PathBuf::from(val()?),
            "--iterations" => iterations = val()?.parse().map_err(|e| format!("{e}"))?,
            "--scale" => scale = val()?.parse().map_err(|e| format!("{e}"))?,
            "--budget" => budget = val()?.parse().map_err(|e| format!("{e}"))?,
            "--fallback" => fallback = val()?.parse().map_err(|e| format!("{e}"))?,
            "--layout" => layout = Some(PathBuf::from(val()?)),
            "--noop" => noop = Some(PathBuf::from(val()?)).filter(|p| !p.as_os_str().is_empty()),
            "--doctor-bin" => {
                doctor_bin = Some(PathBuf::from(val()?)).filter(|p| !p.as_os_str().is_empty())
            }
            "--libcni" => {
                libcni = Some(PathBuf::from(val()?)).filter(|p| !p.as_os_str().is_empty())
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let bin = std::fs::canonicalize(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let work = std::env::temp_dir().join(format!("cni-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let ours_dir = work.join("bin");
    plugin_dir(&bin, &ours_dir)?;
    // The floors' no-op plugin, alone in a plugin directory of its own.
    if let Some(noop) = &noop {
        let dir = work.join("noop-bin");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::copy(noop, dir.join("bench-noop"))
            .map_err(|e| format!("{}: {e}", noop.display()))?;
    }
    let _ = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status();
    let mut impls = vec![Impl {
        label: "cni-multi",
        plugin_dir: ours_dir.clone(),
    }];
    if let Some(dir) = &ref_dir {
        impls.push(Impl {
            label: "reference",
            plugin_dir: dir.clone(),
        });
    }
    if let Some(out) = layout {
        let path = libcni.ok_or("--layout needs the libcni client (Go)")?;
        let b = Bench {
            driver: Driver::Libcni(std::fs::canonicalize(&path).map_err(|e| e.to_string())?),
            bin: bin.clone(),
            work: work.clone(),
            iterations,
            seq: std::cell::Cell::new(0),
        };
        layout::generate(&b, &impls[0], &bin, &out)?;
        let _ = std::fs::remove_dir_all(&work);
        return Ok(());
    }
    // libcni first: its table is the headline (what runtimes see).
    let mut drivers = Vec::new();
    if let Some(path) = &libcni {
        let path = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        drivers.push(Driver::Libcni(path));
    }
    // BENCH_CLIENTS=libcni leaves the cnitool client out (half the run).
    if std::env::var("BENCH_CLIENTS").map_or(true, |c| c.split(',').any(|w| w.trim() == "cnitool"))
    {
        drivers.push(Driver::Cnitool);
    }
    let mut seq = 0;
    let mut by_driver = serde_json::Map::new();
    // The doctor row is no client's measure: a run of it alone leaves the
    // clients' figures of the last full run as they are.
    if doctor_only() {
        drivers.clear();
    }
    for (i, driver) in drivers.into_iter().enumerate() {
        let first = i == 0;
        progress(&format!("client {}", driver.label()));
        let b = Bench {
            driver: driver.clone(),
            bin: bin.clone(),
            work: work.clone(),
            iterations,
            seq: std::cell::Cell::new(seq),
        };
        let results = measure(&b, &impls, &bin, scale, (budget, fallback), first)?;
        seq = b.seq.get();
        by_driver.insert(driver.label().into(), json!(results));
    }
    let mut report = match previous(&out) {
        Some(report) if doctor_only() => report,
        _ => json!({"date": date(), "machine": machine(), "iterations": iterations,
                    "drivers": by_driver}),
    };
    // Last: the node it builds (a thousand namespaces, their rules) stays in
    // the bench's namespace until the bench ends.
    if wanted("doctor") {
        let (key, judge) = match &doctor_bin {
            Some(path) => (
                doctor::OTHER,
                std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?,
            ),
            None => (doctor::UNDER_TEST, bin.clone()),
        };
        // The doctor runs its DELs with its own plugins, in its own process,
        // as where it is installed; the node's plugins are the binary's under test.
        let judge_dir = if judge == bin {
            ours_dir.clone()
        } else {
            let dir = work.join("doctor-bin");
            plugin_dir(&judge, &dir)?;
            dir
        };
        let (live, dead) = (scale, (scale / 10).max(1));
        progress(&format!("doctor ({live} live attachments, {dead} dead)"));
        if !report["doctor"].is_object() {
            report["doctor"] = json!({});
        }
        report["doctor"][key] =
            doctor::row((&bin, &ours_dir), (&judge, &judge_dir), &work, live, dead)?;
    }
    let table = markdown(&report);
    println!("{table}");
    std::fs::write(
        out.with_extension("json"),
        serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(out.with_extension("md"), &table).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// The report of the last run, when there is one to add the doctor row to.
fn previous(out: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(out.with_extension("json")).ok()?;
    serde_json::from_str::<Value>(&text)
        .ok()
        .filter(Value::is_object)
}

/// Every measure of one client, for each plugin set.
fn measure<'a>(
    b: &Bench,
    impls: &'a [Impl],
    bin: &Path,
    scale: usize,
    (budget, fallback): (f64, usize),
    first_client: bool,
) -> Res<BTreeMap<&'a str, Value>> {
    // The first scale rows stay at 300 containers (fewer with a smaller --scale).
    let (big, scale) = (scale, scale.min(300));
    let mut results: BTreeMap<&str, Value> = BTreeMap::new();
    for im in impls {
        settle();
        progress(&format!("{} ({})", im.label, im.plugin_dir.display()));
        let mut r = serde_json::Map::new();
        let mut lat = serde_json::Map::new();
        for (name, plugins, caps) in scenarios() {
            if !wanted("latency") && !wanted(name) {
                continue;
            }
            progress(&format!("  {name}"));
            lat.insert(name.into(), b.latency(im, name, &plugins, &caps)?);
        }
        r.insert("latency".into(), Value::Object(lat));
        if wanted("floor_chain") {
            for (name, plugins, caps) in scenarios().into_iter().filter(|s| s.0 == FLOOR_SCENARIO) {
                progress(&format!(
                    "  floor of {name} (kernel work alone, no-op plugins)"
                ));
                r.insert(
                    "floor_chain".into(),
                    b.chain_floor(im, name, &plugins, &caps)?,
                );
                progress(&format!("{}", r["floor_chain"]));
            }
        }
        if wanted("floor") {
            progress("  floor (VERSION through the client)");
            r.insert("floor".into(), b.floor(im)?);
            progress(&format!("{}", r["floor"]));
        }
        if wanted("rss") {
            progress("  peak RSS");
            r.insert("peak_rss_mb".into(), json!(b.rss(im)?));
            progress(&format!("{}", r["peak_rss_mb"]));
        }
        if wanted("processes") {
            progress("  processes");
            r.insert(
                "processes_bridge_portmap_iptables".into(),
                json!(b.processes(im, "iptables", false)?),
            );
            r.insert(
                "processes_ipmasq_portmap_iptables".into(),
                json!(b.processes(im, "iptables", true)?),
            );
            if im.label == "cni-multi" {
                r.insert(
                    "processes_bridge_portmap_nftables".into(),
                    json!(b.processes(im, "nftables", false)?),
                );
                r.insert(
                    "processes_ipmasq_portmap_nftables".into(),
                    json!(b.processes(im, "nftables", true)?),
                );
            }
        }
        let ours_bin = (im.label == "cni-multi").then_some(bin);
        r.insert(
            "installed_bytes".into(),
            json!(installed_size(&im.plugin_dir, ours_bin)),
        );
        if wanted("scale") {
            progress(&format!("  scale ({scale} containers)"));
            r.insert("scale".into(), b.scale(im, scale, None, false)?);
            progress(&format!("  scale ({scale} containers, ipMasq, TCP+UDP)"));
            r.insert("scale_ipmasq".into(), b.scale(im, scale, None, true)?);
            if im.label == "cni-multi" {
                progress(&format!("  scale ({scale} containers, nftables backend)"));
                r.insert(
                    "scale_nftables".into(),
                    b.scale(im, scale, Some("nftables"), false)?,
                );
            }
        }
        if wanted("scale_chain") {
            progress(&format!(
                "  scale ({big} containers, ipMasq, TCP+UDP, bandwidth; ADD and DEL)"
            ));
            r.insert(
                "scale_chain".into(),
                b.scale_chain(im, (big, fallback.min(big), budget), false)?,
            );
            progress(&format!("{}", r["scale_chain"]));
        }
        // The reference (1.1.1) has no nftables backend; one client's run
        // (libcni's when it is there) keeps the bench's length in bounds.
        if im.label == "cni-multi" && first_client && wanted("scale_chain_nftables") {
            progress(&format!(
                "  scale ({big} containers, ipMasq and portmap on nftables, TCP+UDP, bandwidth)"
            ));
            r.insert(
                "scale_chain_nftables".into(),
                b.scale_chain(im, (big, fallback.min(big), budget), true)?,
            );
            progress(&format!("{}", r["scale_chain_nftables"]));
        }
        // The reference (1.1.1) answers VERSION with 1.0.0 at most: no STATUS, no GC.
        if im.label == "cni-multi" && wanted("status_gc") {
            progress(&format!("  STATUS and GC ({big} attachments)"));
            r.insert("status_gc".into(), b.status_gc(im, big)?);
            progress(&format!("{}", r["status_gc"]));
        }
        if wanted("parallel") {
            settle();
            progress("  30 parallel");
            r.insert("parallel".into(), b.parallel(im, 30, false)?);
            progress("  30 parallel, ipMasq");
            r.insert("parallel_ipmasq".into(), b.parallel(im, 30, true)?);
            progress(&format!("{} {}", r["parallel"], r["parallel_ipmasq"]));
        }
        if wanted("floor_parallel") {
            settle();
            progress("  floor of 30 parallel bridge(ipMasq) ADDs");
            r.insert(
                "floor_parallel".into(),
                b.parallel_floor(im, &parallel_plugins(true), 30)?,
            );
            progress(&format!("{}", r["floor_parallel"]));
        }
        results.insert(im.label, Value::Object(r));
    }
    Ok(results)
}

fn date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("")
        .trim()
        .to_string();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cores} cores, {cpu}, Linux {}", kernel.trim())
}

fn markdown(report: &Value) -> String {
    let mut s = format!(
        "Machine: {}; date: {}; {} iterations per latency.\n",
        report["machine"].as_str().unwrap_or(""),
        report["date"].as_str().unwrap_or(""),
        report["iterations"]
    );
    for (driver, title) in [
        (
            "libcni",
            "Driven by Go's libcni (bench/libcni), as containerd, CRI-O and Podman drive plugins (the library call's time, without the client process's start)",
        ),
        ("cnitool", "Driven by `cni-multi cnitool`"),
    ] {
        let r = &report["drivers"][driver];
        if !r.is_null() {
            s.push_str(&format!("\n### {title}\n\n"));
            s.push_str(&table(r));
        }
    }
    s.push_str(&doctor::markdown(&report["doctor"]));
    s
}

/// The table of one client's results.
fn table(r: &Value) -> String {
    let ours = &r["cni-multi"];
    let refr = &r["reference"];
    let has_ref = !refr.is_null();
    let mut s = String::new();
    if has_ref {
        s.push_str("| Measure | cni-multi | reference | cni-multi / reference |\n| --- | --- | --- | --- |\n");
    } else {
        s.push_str("| Measure | cni-multi |\n| --- | --- |\n");
    }
    let row = |s: &mut String, label: String, a: f64, b: Option<f64>, unit: &str| match b
        .filter(|_| has_ref)
    {
        Some(b) => s.push_str(&format!(
            "| {label} | {a:.2}{unit} | {b:.2}{unit} | {:.3} |\n",
            if b > 0.0 { a / b } else { 0.0 }
        )),
        None if has_ref => s.push_str(&format!("| {label} | {a:.2}{unit} | – | – |\n")),
        None => s.push_str(&format!("| {label} | {a:.2}{unit} |\n")),
    };
    let num = |v: &Value| v.as_f64().unwrap_or(0.0);
    for (name, _, _) in scenarios() {
        for verb in ["add", "check", "del"] {
            if !refr["latency"][name][verb]["failed"].is_null()
                || !ours["latency"][name][verb]["failed"].is_null()
            {
                s.push_str(&format!(
                    "| {name} {} | see note: CHECK fails in one implementation | | |\n",
                    verb.to_uppercase()
                ));
                continue;
            }
            for (stat, key) in [("median", "median_ms"), ("p90", "p90_ms")] {
                let a = num(&ours["latency"][name][verb][key]);
                let b = num(&refr["latency"][name][verb][key]);
                row(
                    &mut s,
                    format!("{name} {} {stat}", verb.to_uppercase()),
                    a,
                    Some(b),
                    " ms",
                );
                if stat == "median" && ours["floor_chain"]["scenario"] == name && verb != "check" {
                    let cell = |v: &Value| {
                        let row = v["latency"][name][verb][key].as_f64();
                        floor::cell(row, &v["floor_chain"][verb])
                    };
                    let plugins = &ours["floor_chain"]["plugins"];
                    let label = format!(
                        "floor: its kernel work alone + the client's own ({plugins} no-op plugins)"
                    );
                    floor::line(&mut s, &label, [cell(ours), cell(refr)], has_ref);
                }
            }
        }
    }
    row(
        &mut s,
        "peak RSS of the bridge plugin process".into(),
        num(&ours["peak_rss_mb"]),
        Some(num(&refr["peak_rss_mb"])),
        " MB",
    );
    row(
        &mut s,
        "processes for one bridge+portmap ADD (iptables)".into(),
        num(&ours["processes_bridge_portmap_iptables"]),
        Some(num(&refr["processes_bridge_portmap_iptables"])),
        "",
    );
    row(
        &mut s,
        "processes for one bridge+portmap ADD (nftables)".into(),
        num(&ours["processes_bridge_portmap_nftables"]),
        None,
        "",
    );
    // Client excluded: what the plugins start.
    row(
        &mut s,
        "processes for one bridge(ipMasq)+portmap(TCP+UDP) ADD, client excluded (iptables)".into(),
        num(&ours["processes_ipmasq_portmap_iptables"]) - 1.0,
        Some(num(&refr["processes_ipmasq_portmap_iptables"]) - 1.0),
        "",
    );
    row(
        &mut s,
        "same, client excluded (nftables)".into(),
        num(&ours["processes_ipmasq_portmap_nftables"]) - 1.0,
        None,
        "",
    );
    row(
        &mut s,
        "installed size".into(),
        num(&ours["installed_bytes"]) / 1e6,
        Some(num(&refr["installed_bytes"]) / 1e6),
        " MB",
    );
    let sc = |v: &Value, k: &str| num(&v["scale"][k]);
    row(
        &mut s,
        format!(
            "first 20 of {} ADDs (bridge+portmap), median",
            ours["scale"]["containers"]
        ),
        sc(ours, "first20_median_ms"),
        Some(sc(refr, "first20_median_ms")),
        " ms",
    );
    row(
        &mut s,
        "last 20, median".into(),
        sc(ours, "last20_median_ms"),
        Some(sc(refr, "last20_median_ms")),
        " ms",
    );
    row(
        &mut s,
        "last 20 / first 20".into(),
        sc(ours, "growth"),
        Some(sc(refr, "growth")),
        "",
    );
    let scm = |v: &Value, k: &str| num(&v["scale_ipmasq"][k]);
    row(
        &mut s,
        "bridge(ipMasq)+portmap(TCP+UDP): first 20, median".into(),
        scm(ours, "first20_median_ms"),
        Some(scm(refr, "first20_median_ms")),
        " ms",
    );
    row(
        &mut s,
        "ipMasq: last 20, median".into(),
        scm(ours, "last20_median_ms"),
        Some(scm(refr, "last20_median_ms")),
        " ms",
    );
    row(
        &mut s,
        "ipMasq: last 20 / first 20".into(),
        scm(ours, "growth"),
        Some(scm(refr, "growth")),
        "",
    );
    let scn = |k: &str| num(&ours["scale_nftables"][k]);
    row(
        &mut s,
        "same, portmap on nftables: first 20, median".into(),
        scn("first20_median_ms"),
        None,
        " ms",
    );
    row(
        &mut s,
        "nftables: last 20, median".into(),
        scn("last20_median_ms"),
        None,
        " ms",
    );
    row(
        &mut s,
        "nftables: last 20 / first 20".into(),
        scn("growth"),
        None,
        "",
    );
    let p = |v: &Value, k: &str| num(&v["parallel"][k]);
    row(
        &mut s,
        "30 parallel ADDs, per call".into(),
        p(ours, "add_per_call_ms"),
        Some(p(refr, "add_per_call_ms")),
        " ms",
    );
    row(
        &mut s,
        "30 parallel DELs, per call".into(),
        p(ours, "del_per_call_ms"),
        Some(p(refr, "del_per_call_ms")),
        " ms",
    );
    let pm = |v: &Value, k: &str| num(&v["parallel_ipmasq"][k]);
    row(
        &mut s,
        "30 parallel bridge(ipMasq) ADDs, per call".into(),
        pm(ours, "add_per_call_ms"),
        Some(pm(refr, "add_per_call_ms")),
        " ms",
    );
    let cell = |v: &Value| {
        let row = v["parallel_ipmasq"]["add_per_call_ms"].as_f64();
        floor::cell(row, &v["floor_parallel"]["add"])
    };
    if !ours["floor_parallel"].is_null() {
        floor::line(
            &mut s,
            "floor: 30 pods' kernel work alone + the client's own (a no-op plugin), 30 at once; per call",
            [cell(ours), cell(refr)],
            has_ref,
        );
    }
    row(
        &mut s,
        "30 parallel bridge(ipMasq) DELs, per call".into(),
        pm(ours, "del_per_call_ms"),
        Some(pm(refr, "del_per_call_ms")),
        " ms",
    );
    row(
        &mut s,
        "30 parallel: distinct IPs".into(),
        p(ours, "distinct_ips"),
        Some(p(refr, "distinct_ips")),
        "",
    );
    row(
        &mut s,
        "30 parallel: reservations + ports left after DEL".into(),
        p(ours, "reservations_left") + p(ours, "ports_left"),
        Some(p(refr, "reservations_left") + p(refr, "ports_left")),
        "",
    );
    new_rows(&mut s, ours, refr, has_ref);
    s
}

/// The rows of the floor, the 1,000-container chain, STATUS and GC: a cell
/// says "(at N)" where its run fell back to fewer containers, "n/a" where the
/// implementation has no such call.
fn new_rows(s: &mut String, ours: &Value, refr: &Value, has_ref: bool) {
    let num = |v: &Value| v.as_f64();
    let cell = |v: Option<f64>, unit: &str, at: Option<u64>| match v {
        Some(v) => match at {
            Some(n) => format!("{v:.2}{unit} (at {n})"),
            None => format!("{v:.2}{unit}"),
        },
        None => "n/a".to_string(),
    };
    // `at`: the counts of runs that fell back. A figure of the first ADDs or
    // the last DELs does not depend on the count: its ratio holds across counts.
    let line = |s: &mut String,
                label: &str,
                a: Option<f64>,
                b: Option<f64>,
                unit: &str,
                at: [Option<u64>; 2]| {
        let any_count = label.contains("first 20 ADDs") || label.contains("(near empty)");
        let ratio = match (a, b) {
            (Some(a), Some(b)) if b > 0.0 && (any_count || at[0] == at[1]) => {
                format!("{:.3}", a / b)
            }
            (Some(_), Some(_)) => "– (not the same count)".to_string(),
            _ => "n/a".to_string(),
        };
        if has_ref {
            s.push_str(&format!(
                "| {label} | {} | {} | {ratio} |\n",
                cell(a, unit, at[0]),
                cell(b, unit, at[1])
            ));
        } else {
            s.push_str(&format!("| {label} | {} |\n", cell(a, unit, at[0])));
        }
    };
    let pf = |v: &Value, k: &str| num(&v["parallel_ipmasq"][k]);
    for (label, key) in [
        (
            "30 parallel bridge(ipMasq) ADDs: their iptables-restore alone, 30 at once, per call",
            "restore_alone_per_call_ms",
        ),
        (
            "30 parallel: the bridge binary's VERSION through the client, 30 at once, per call",
            "version_per_call_ms",
        ),
    ] {
        line(s, label, pf(ours, key), pf(refr, key), " ms", [None, None]);
    }
    let floor = |v: &Value| num(&v["floor"]["median_ms"]);
    line(
        s,
        "floor: the bridge binary's VERSION through the client (one exec), median",
        floor(ours),
        floor(refr),
        " ms",
        [None, None],
    );
    let over_floor = |v: &Value, x: Option<f64>| Some(x? / floor(v)?);
    for (key, what) in [
        ("scale_chain", ""),
        ("scale_chain_nftables", ", ipMasq and portmap on nftables"),
    ] {
        if ours[key].is_null() && refr[key].is_null() {
            continue;
        }
        let chain = |v: &Value, k: &str| num(&v[key][k]);
        let requested = [ours, refr]
            .iter()
            .find_map(|v| v[key]["requested"].as_u64())
            .unwrap_or(0);
        let fell_back = |v: &Value| {
            let n = v[key]["containers"].as_u64();
            n.filter(|&n| n != requested)
        };
        let at = [fell_back(ours), fell_back(refr)];
        let plugins = 3;
        let prefix =
            format!("{requested} containers bridge(ipMasq)+portmap(TCP+UDP)+bandwidth{what}");
        // Each row, and the floor taken where it was: after the first 20 ADDs
        // (1-20 pods: the first ADDs, the last DELs) or after the last 20.
        let alone = format!("kernel work alone + the client's own ({plugins} no-op plugins)");
        for (label, k, unit, floor_at) in [
            (
                format!("{prefix}: first 20 ADDs, median"),
                "add_first20_median_ms",
                " ms",
                ("add", Some("first20")),
            ),
            (
                "same: last 20 ADDs, median".into(),
                "add_last20_median_ms",
                " ms",
                ("add", Some("last20")),
            ),
            (
                "same: ADD last 20 / first 20".into(),
                "add_growth",
                "",
                ("add", None),
            ),
            (
                "same: first 20 DELs (full load), median".into(),
                "del_full_first20_median_ms",
                " ms",
                ("del", Some("last20")),
            ),
            (
                "same: last 20 DELs (near empty), median".into(),
                "del_empty_last20_median_ms",
                " ms",
                ("del", Some("first20")),
            ),
            (
                "same: DEL full load / near empty".into(),
                "del_full_over_empty",
                "",
                ("del", None),
            ),
        ] {
            line(s, &label, chain(ours, k), chain(refr, k), unit, at);
            let (verb, taken) = floor_at;
            let floors = |v: &Value, when: &str| v[key]["floor"][when][verb].clone();
            let (label, cells) = match taken {
                Some(when) => {
                    let load = if when == "first20" {
                        "1-20 pods"
                    } else {
                        "the last 20 ADDs' load"
                    };
                    let cell = |v: &Value| floor::cell(chain(v, k), &floors(v, when));
                    (
                        format!("floor at {load}: {alone}"),
                        [cell(ours), cell(refr)],
                    )
                }
                None => {
                    let cell = |v: &Value| {
                        floor::growth_cell(chain(v, k), &floors(v, "first20"), &floors(v, "last20"))
                    };
                    (
                        "the floor's own growth".to_string(),
                        [cell(ours), cell(refr)],
                    )
                }
            };
            floor::line(s, &label, cells, has_ref);
        }
        line(
            s,
            "same: first 20 ADDs / floor",
            over_floor(ours, chain(ours, "add_first20_median_ms")),
            over_floor(refr, chain(refr, "add_first20_median_ms")),
            "",
            at,
        );
    }
    let sg = |v: &Value, k: &str| num(&v["status_gc"][k]);
    let attachments = ours["status_gc"]["attachments"].as_u64().unwrap_or(0);
    let stale = ours["status_gc"]["stale"].as_u64().unwrap_or(0);
    let rows: [(String, Option<f64>, &str); 8] = [
        (
            format!("STATUS of bridge+host-local (1.1.0) with {attachments} attachments, median"),
            sg(ours, "status_median_ms"),
            " ms",
        ),
        (
            "floor, taken beside each STATUS, median".into(),
            sg(ours, "floor_beside_median_ms"),
            " ms",
        ),
        (
            "STATUS / that floor".into(),
            sg(ours, "status_median_ms")
                .zip(sg(ours, "floor_beside_median_ms"))
                .map(|(s, f)| s / f),
            "",
        ),
        (
            format!("GC of it: {attachments} cached, {stale} stale (not in the valid list)"),
            sg(ours, "gc_ms"),
            " ms",
        ),
        (
            format!("the {stale} DELs GC replaces, summed"),
            sg(ours, "dels_sum_ms"),
            " ms",
        ),
        (format!("GC / {stale} DELs"), sg(ours, "gc_over_dels"), ""),
        ("GC / floor".into(), over_floor(ours, sg(ours, "gc_ms")), ""),
        ("STATUS p90".into(), sg(ours, "status_p90_ms"), " ms"),
    ];
    for (label, a, unit) in rows {
        line(s, &label, a, None, unit, [None, None]);
    }
}

/// Process tracing with ptrace: counts processes and reads the first one's peak RSS at exit.
mod trace {
    use nix::libc;
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    pub struct Traced {
        pub processes: usize,
        pub first_hwm_kb: u64,
        pub status: i32,
    }

    fn hwm_kb(pid: i32) -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// One stop of a tracee, past the first process's first (where the
    /// options are set): its pid, and the ptrace event (0: a signal or a step).
    pub struct Stop {
        pub pid: i32,
        pub first: i32,
        pub event: i32,
    }

    /// Runs `cmd` under ptrace, `stdin` written to it, `opts` set at its first
    /// stop (so every process it starts is traced too). `on_stop` sees every
    /// later stop and says whether the tracee single-steps (true) or runs on;
    /// `on_exit` sees each exit. Signals other than ptrace's own are
    /// delivered. Returns the first process's exit code (128 when killed).
    pub fn follow(
        mut cmd: Command,
        stdin: &[u8],
        opts: libc::c_int,
        mut on_stop: impl FnMut(Stop) -> bool,
        mut on_exit: impl FnMut(i32),
    ) -> Result<i32, String> {
        // SAFETY: only ptrace(2), async-signal-safe, runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        let first = child.id() as i32;
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin);
        }
        let mut status_code = -1;
        let mut set_options = true;
        loop {
            let mut status = 0;
            // SAFETY: plain waitpid on our tracees.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
            if pid < 0 {
                break;
            }
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                on_exit(pid);
                if pid == first {
                    status_code = if libc::WIFEXITED(status) {
                        libc::WEXITSTATUS(status)
                    } else {
                        128
                    };
                }
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            let event = (status >> 16) & 0xff;
            let mut deliver = 0;
            let mut step = false;
            if pid == first && set_options {
                // SAFETY: pid is our stopped tracee.
                unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, opts as libc::c_long) };
                set_options = false;
            } else {
                if event == 0 && sig != libc::SIGTRAP && sig != libc::SIGSTOP {
                    deliver = sig;
                }
                step = on_stop(Stop { pid, first, event });
            }
            let request = if step {
                libc::PTRACE_SINGLESTEP
            } else {
                libc::PTRACE_CONT
            };
            // SAFETY: pid is a stopped tracee of ours.
            unsafe { libc::ptrace(request, pid, 0, deliver as libc::c_long) };
        }
        let _ = child.wait();
        Ok(status_code)
    }

    pub fn run(cmd: Command, stdin: &[u8]) -> Result<Traced, String> {
        let opts = libc::PTRACE_O_TRACEFORK
            | libc::PTRACE_O_TRACEVFORK
            | libc::PTRACE_O_TRACECLONE
            | libc::PTRACE_O_TRACEEXIT;
        let mut processes = 1;
        let mut hwm = 0;
        let on_stop = |stop: Stop| {
            let Stop { pid, first, event } = stop;
            if event == libc::PTRACE_EVENT_FORK || event == libc::PTRACE_EVENT_VFORK {
                processes += 1;
            } else if event == libc::PTRACE_EVENT_EXIT && pid == first {
                hwm = hwm_kb(pid);
                if std::env::var_os("BENCH_RSS_DETAIL").is_some() {
                    let status =
                        std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                    for l in status.lines().filter(|l| {
                        l.starts_with("Vm") || l.starts_with("Rss") || l.starts_with("Threads")
                    }) {
                        eprintln!("  {l}");
                    }
                    let maps = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
                        .unwrap_or_default();
                    eprintln!("{maps}");
                }
            }
            false
        };
        let status = follow(cmd, stdin, opts, on_stop, |_| {})?;
        Ok(Traced {
            processes,
            first_hwm_kb: hwm,
            status,
        })
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bench: {e}");
        std::process::exit(1);
    }
}
