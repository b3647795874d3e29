//! The acceptance test of `cnitool doctor`: attachments leak on purpose
//! through the chain a runtime writes (bridge with ipMasq and host-local,
//! tuning, portmap with TCP and UDP hostPorts, firewall, bandwidth; a multus
//! pod with two extra networks), made by our plugins and by the reference's
//! (/usr/lib/cni). Leaks: the pod's pinned namespace deleted without DEL; the
//! cache file removed, then the namespace deleted; ADD killed by SIGKILL at
//! each point, then the namespace deleted. After each, `doctor` must name
//! every difference of the node's state from before the ADD (iptables nat,
//! filter and mangle; nftables; links; the files of the cache, the host-local
//! store, the plugins' dataDirs and multus's cniDir), `--fix` must bring the
//! node back to that state exactly, and a second run must find nothing; ten
//! live pods on the same networks keep their state and their hostPorts.

mod harness;

use harness::{
    Netns, Outcome, PinnedNetns, Runtime, TempDir, enter_test_host, peer_netns, run_in,
    sha512_prefix, tcp_fetch, tcp_server, udp_fetch, udp_server,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const REFERENCE: &str = "/usr/lib/cni";

/// One test host: its network, dirs, and the pods that must stay alive.
struct Host {
    rt: Runtime,
    /// The dataDirs of tuning, portmap, firewall and bandwidth.
    data: TempDir,
    /// More directories whose files are node state (multus's cniDir).
    more: Vec<PathBuf>,
    net: String,
    /// Environment every cnitool call of this host gets (multus's pod args).
    env: Vec<(String, String)>,
    live_ids: Vec<String>,
    /// Everything that went wrong, reported together at the end.
    problems: Vec<String>,
}

/// bridge (ipMasq, host-local) + tuning + portmap + firewall + bandwidth, named `net`.
fn chain(net: &str, bridge: &str, subnet: &str, data: &Path) -> Value {
    let data = data.to_string_lossy();
    json!({
        "cniVersion": "1.0.0",
        "name": net,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": true,
             "hairpinMode": true,
             "ipam": {"type": "host-local", "subnet": subnet, "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "tuning", "mtu": 1400, "dataDir": format!("{data}/tuning")},
            {"type": "portmap", "capabilities": {"portMappings": true},
             "dataDir": format!("{data}/portmap")},
            {"type": "firewall", "backend": "iptables", "dataDir": format!("{data}/firewall")},
            {"type": "bandwidth", "ingressRate": 8_000_000, "ingressBurst": 80_000,
             "egressRate": 8_000_000, "egressBurst": 80_000,
             "dataDir": format!("{data}/bandwidth")}
        ]
    })
}

fn container_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

fn mappings(tcp: u16, udp: u16) -> Value {
    json!({"portMappings": [
        {"hostPort": tcp, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": udp, "containerPort": 53, "protocol": "udp"}
    ]})
}

impl Host {
    fn new(tag: &str, net: &str, list: impl Fn(&Path) -> Value) -> Host {
        let rt = Runtime::new(tag);
        let data = TempDir::new(&format!("{tag}-data"));
        rt.write_list("10-leaks.conflist", &list(&data.0));
        run_in(None, "ip", &["link", "set", "lo", "up"]);
        Host {
            rt,
            data,
            more: vec![],
            net: net.into(),
            env: vec![],
            live_ids: vec![],
            problems: vec![],
        }
    }

    /// `cni-multi cnitool <args>` with plugins from `cni_path`.
    fn cnitool(&self, args: &[&str], caps: &Value, cni_path: &str) -> Command {
        let mut cmd = self.rt.command(args, caps, None);
        cmd.env("CNI_PATH", cni_path);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn run(&self, args: &[&str], caps: &Value, cni_path: &str) -> Outcome {
        Outcome::of(self.cnitool(args, caps, cni_path).spawn().expect("cnitool"))
    }

    fn ours(&self) -> String {
        self.rt.bin.0.to_string_lossy().into_owned()
    }

    /// `doctor --json --min-age 0 <args>`: exit status and findings.
    fn doctor(&self, args: &[&str], cni_path: &str) -> (i32, Vec<Value>, String) {
        let mut all = vec!["doctor", "--json", "--min-age", "0"];
        all.extend_from_slice(args);
        // Not the pod's environment: the doctor runs as an operator would.
        let mut cmd = self.rt.command(&all, &json!({}), None);
        cmd.env("CNI_PATH", cni_path);
        let out = Outcome::of(cmd.spawn().expect("cnitool doctor"));
        let findings = serde_json::from_str::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v["findings"].as_array().cloned())
            .unwrap_or_default();
        (out.status, findings, out.stderr)
    }

    /// Ten pods on the network with a TCP and a UDP hostPort each, a server behind each.
    fn live_pods(&mut self, n: u16, base: u16) -> Vec<(Netns, u16)> {
        let mut pods = vec![];
        for i in 0..n {
            let ns = Netns::new();
            let out = self.run(
                &["add", &self.net, ns.path()],
                &mappings(base + i, base + 100 + i),
                &self.ours(),
            );
            assert_eq!(out.status, 0, "live pod {i}: {out:?}");
            let reply: &'static str = Box::leak(format!("live-{i}").into_boxed_str());
            tcp_server(ns.path(), 80, reply);
            udp_server(ns.path(), 53, reply);
            self.live_ids.push(container_id(ns.path()));
            pods.push((ns, base + i));
        }
        pods
    }

    /// The node state: one line per object, counters dropped.
    fn snapshot(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for table in ["nat", "filter", "mangle"] {
            for line in run_in(None, "iptables-save", &["-t", table]).lines() {
                if line.starts_with('#') {
                    continue;
                }
                let line = match line.find(" [") {
                    Some(i) if line.starts_with(':') => &line[..i],
                    _ => line,
                };
                out.insert(format!("iptables {table} {line}"));
            }
        }
        nft_lines(&mut out);
        for line in run_in(None, "ip", &["-o", "link"]).lines() {
            let name = line.split(": ").nth(1).unwrap_or_default();
            let name = name.split('@').next().unwrap_or_default();
            out.insert(format!("link {name}"));
        }
        let mut roots = vec![
            self.rt.cache.0.clone(),
            self.rt.store.0.clone(),
            self.data.0.clone(),
        ];
        roots.extend(self.more.iter().cloned());
        for root in roots {
            files(&root, &mut out);
        }
        out
    }

    /// The snapshot once the kernel has torn down the deleted namespace (it
    /// does so asynchronously: host veths whose peer was in it linger a moment).
    fn settled_snapshot(&self, before: &BTreeSet<String>) -> BTreeSet<String> {
        let mut after = self.snapshot();
        for _ in 0..40 {
            if !after.difference(before).any(|i| i.starts_with("link veth")) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            after = self.snapshot();
        }
        after
    }

    /// Runs the doctor after a leak made since `before` and records every
    /// difference it does not name, does not remove, or live state it touches.
    fn judge(&mut self, scenario: &str, before: &BTreeSet<String>, cni_path: &str) {
        let after = self.settled_snapshot(before);
        let added: Vec<&String> = after.difference(before).collect();
        let (status, found, stderr) = self.doctor(&[], cni_path);
        let want = i32::from(!found.is_empty());
        if status != want {
            self.problems.push(format!(
                "{scenario}: doctor exited {status} with {} findings: {stderr}",
                found.len()
            ));
        }
        for item in &added {
            if !found.iter().any(|f| names(f, item)) {
                self.problems
                    .push(format!("{scenario}: not found by doctor: {item}"));
            }
        }
        for f in &found {
            if self.live_ids.iter().any(|id| f["containerId"] == *id) {
                self.problems
                    .push(format!("{scenario}: a live pod's state listed: {f}"));
            }
        }
        let (status, fixed, stderr) = self.doctor(&["--fix"], cni_path);
        if status != 0 {
            let left: Vec<&Value> = fixed.iter().filter(|f| f["fixed"] != true).collect();
            self.problems.push(format!(
                "{scenario}: doctor --fix exited {status}, not fixed {left:?}: {stderr}"
            ));
        }
        let now = self.snapshot();
        for item in now.difference(before) {
            self.problems
                .push(format!("{scenario}: left after --fix: {item}"));
        }
        for item in before.difference(&now) {
            self.problems.push(format!(
                "{scenario}: removed by --fix (was there before): {item}"
            ));
        }
        let (status, again, stderr) = self.doctor(&[], cni_path);
        if status != 0 || !again.is_empty() {
            self.problems.push(format!(
                "{scenario}: second doctor exited {status}: {again:?} {stderr}"
            ));
        }
    }

    /// A pod ADDed through `cni_path`, in a namespace pinned as runtimes pin
    /// theirs; with `forget_cache` its cache file is removed before the
    /// namespace goes.
    fn leak(&mut self, scenario: &str, forget_cache: bool, ports: (u16, u16), cni_path: &str) {
        let before = self.snapshot();
        let ns = PinnedNetns::new();
        let id = container_id(ns.path());
        let out = self.run(
            &["add", &self.net, ns.path()],
            &mappings(ports.0, ports.1),
            cni_path,
        );
        assert_eq!(out.status, 0, "{scenario}: {out:?}");
        if forget_cache {
            let results = self.rt.cache.0.join("results");
            let file = results.join(format!("{}-{id}-eth0", self.net));
            std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
        ns.destroy();
        self.judge(scenario, &before, cni_path);
    }

    /// The control: a pod ADDed and DELed as it should be leaves no
    /// difference and no finding (the snapshot itself is free of noise).
    fn control(&mut self, cni_path: &str) {
        let before = self.snapshot();
        let ns = PinnedNetns::new();
        for command in ["add", "del"] {
            let out = self.run(
                &[command, &self.net, ns.path()],
                &mappings(18502, 18602),
                cni_path,
            );
            assert_eq!(out.status, 0, "control {command}: {out:?}");
        }
        ns.destroy();
        let scenario = "control: ADD then DEL";
        let now = self.settled_snapshot(&before);
        assert_eq!(now, before, "{scenario}");
        self.judge(scenario, &before, cni_path);
    }

    /// An ADD killed by strace at the `n`th `call` of one of its processes,
    /// then its namespace deleted as a runtime does when the sandbox failed.
    fn killed_add(&mut self, call: &str, n: usize, max: usize) {
        let before = self.snapshot();
        let ns = PinnedNetns::new();
        let cmd = self.cnitool(
            &["add", &self.net, ns.path()],
            &mappings(18500, 18600),
            &self.ours(),
        );
        // strace counts per process: each of cnitool, the plugins and
        // iptables-restore dies at its own `n`th `call`, the first one wins.
        let _ = Command::new("strace")
            .args(["-f", "-qq", "-o", "/dev/null"])
            .arg(format!("--inject={call}:signal=KILL:when={n}"))
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .env_clear()
            .envs(
                cmd.get_envs()
                    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("strace");
        ns.destroy();
        let scenario = format!("ADD killed at {call} {n} of {max}");
        self.judge(&scenario, &before, &self.ours());
    }

    fn assert_no_problems(&self) {
        // DOCTOR_LEAKS_ALL=1 shows every problem, not the first 300.
        let limit = match std::env::var_os("DOCTOR_LEAKS_ALL") {
            Some(_) => usize::MAX,
            None => 300,
        };
        let shown: Vec<&str> = self
            .problems
            .iter()
            .take(limit)
            .map(String::as_str)
            .collect();
        assert!(
            self.problems.is_empty(),
            "{} problems (the first {} here):\n{}",
            self.problems.len(),
            shown.len(),
            shown.join("\n")
        );
    }
}

/// The nftables ruleset as `nft <family> <table> <chain> <line>`, counters
/// dropped; the tables iptables-nft keeps (already in iptables-save) left out.
fn nft_lines(out: &mut BTreeSet<String>) {
    let text = run_in(None, "nft", &["list", "ruleset"]);
    let (mut table, mut chain) = (String::new(), String::new());
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("table ") {
            table = rest.trim_end_matches(" {").to_string();
            chain.clear();
        } else if let Some(rest) = t.strip_prefix("chain ") {
            chain = rest.trim_end_matches(" {").to_string();
        }
        let mut parts = table.split(' ');
        let family = parts.next().unwrap_or_default();
        let name = parts.next().unwrap_or_default();
        let iptables_nft = matches!(family, "ip" | "ip6")
            && matches!(name, "nat" | "filter" | "mangle" | "raw" | "security");
        if iptables_nft || t.is_empty() || t == "}" || t.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        let mut normal = Vec::new();
        let mut i = 0;
        while i < words.len() {
            normal.push(words[i]);
            if matches!(words[i], "packets" | "bytes") {
                i += 1;
            }
            i += 1;
        }
        out.insert(format!("nft {table} {chain} {}", normal.join(" ")));
    }
}

/// Every file under `root` as `file <path>` (the doctor's own bookkeeping aside).
fn files(root: &Path, out: &mut BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.file_name().is_some_and(|n| n == "doctor") {
            continue;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => files(&path, out),
            _ => {
                out.insert(format!("file {}", path.display()));
            }
        }
    }
}

/// Chains every attachment's rules go into or through.
const SHARED: &[&str] = &[
    "PREROUTING",
    "POSTROUTING",
    "OUTPUT",
    "INPUT",
    "FORWARD",
    "CNI-FORWARD",
    "CNI-ADMIN",
    "CNI-HOSTPORT-DNAT",
    "CNI-HOSTPORT-SETMARK",
    "CNI-HOSTPORT-MASQ",
    "rule",
    "chain",
];

/// Whether a finding names a snapshot item: a file by its path; an iptables
/// line by its table and the rule text, or a word only this attachment's
/// lines carry (its chain, declared, jumped to or appended to; its address); an nftables line by its table (and chain, if named);
/// a link by its name.
fn names(finding: &Value, item: &str) -> bool {
    let object = finding["object"].as_str().unwrap_or_default();
    let words: Vec<&str> = object.split_whitespace().collect();
    if let Some(path) = item.strip_prefix("file ") {
        return words.contains(&path) || object == path;
    }
    if let Some(name) = item.strip_prefix("link ") {
        return words.contains(&name);
    }
    if let Some(rest) = item.strip_prefix("iptables ") {
        let (table, line) = rest.split_once(' ').unwrap_or_default();
        if !matches!(words.first(), Some(&"iptables")) || words.get(1) != Some(&table) {
            return false;
        }
        let named = words[2..].join(" ");
        if named.is_empty() {
            return false;
        }
        if line.contains(&named) {
            return true;
        }
        // A word of the object that only this attachment's lines carry: its
        // own chain, its address (a shared chain alone names no line).
        let tokens: Vec<&str> = line
            .split_whitespace()
            .map(|w| w.trim_start_matches(':').trim_matches('"'))
            .map(|w| w.split('/').next().unwrap_or(w))
            .collect();
        // An address is named with or without its prefix length.
        return words[2..]
            .iter()
            .map(|w| w.split('/').next().unwrap_or(w))
            .filter(|w| w.len() >= 4 && !SHARED.contains(w))
            .any(|w| tokens.contains(&w));
    }
    if let Some(rest) = item.strip_prefix("nft ") {
        if words.first() != Some(&"nft") || words.len() < 3 {
            return false;
        }
        let table = format!("{} {} ", words[1], words[2]);
        if !rest.starts_with(&table) {
            return false;
        }
        let chain = rest[table.len()..].split(' ').next().unwrap_or_default();
        return match words.get(3) {
            Some(&"chain") => words.get(4) == Some(&chain),
            Some(&"rule") | None => true,
            Some(other) => *other == chain,
        };
    }
    false
}

/// The ten live pods answer on their hostPorts from a client namespace.
fn assert_reachable(client: &Netns, pods: &[(Netns, u16)], when: &str) {
    for (i, (_, port)) in pods.iter().enumerate() {
        let want = Some(format!("live-{i}"));
        let tcp = tcp_fetch(Some(client.path()), &format!("192.0.2.1:{port}"));
        assert_eq!(tcp, want, "{when}: live pod {i} TCP hostPort {port}");
        let udp = udp_fetch(Some(client.path()), &format!("192.0.2.1:{}", port + 100));
        assert_eq!(
            udp,
            want,
            "{when}: live pod {i} UDP hostPort {}",
            port + 100
        );
    }
}

/// Leaks (a) and (b) made through `cni_path`, on a node with ten live pods of ours.
fn leaks_of(tag: &str, bridge: &str, subnet: &str, cni_path: Option<&str>) {
    enter_test_host();
    let net = format!("{tag}-net");
    let mut host = Host::new(tag, &net, |data| chain(&net, bridge, subnet, data));
    let client = peer_netns("to-client");
    let pods = host.live_pods(10, 18000);
    assert_reachable(&client, &pods, "before the leaks");
    let path = cni_path.map(String::from).unwrap_or_else(|| host.ours());
    host.control(&path);
    host.leak("netns deleted without DEL", false, (18500, 18600), &path);
    host.leak(
        "cache file removed, then netns deleted",
        true,
        (18501, 18601),
        &path,
    );
    assert_reachable(&client, &pods, "after the doctor's fixes");
    host.assert_no_problems();
}

#[test]
fn leaks_of_our_plugins_are_found_and_fixed() {
    leaks_of("lko", "cni-lko0", "10.181.0.0/24", None);
}

#[test]
fn leaks_of_the_reference_plugins_are_found_and_fixed_on_a_mixed_node() {
    if !Path::new(REFERENCE).join("bridge").exists() {
        harness::skip("reference", "no reference plugins in /usr/lib/cni");
        return;
    }
    leaks_of("lkr", "cni-lkr0", "10.182.0.0/24", Some(REFERENCE));
}

/// The syscalls that change something: files written, renamed, removed or
/// created (write, rename*, unlinkat, mkdirat, openat with O_CREAT), netlink
/// and nf_tables requests (sendmsg, sendto), a plugin or iptables-restore
/// started (execve), a namespace entered (setns). An ADD killed at any of
/// them may leave half its work; those a full ADD never makes are skipped.
const MUTATING: &str =
    "sendmsg,sendto,write,rename,renameat,renameat2,openat,execve,setns,unlinkat,mkdirat";

/// For each of the MUTATING syscalls a full ADD makes, its largest count in
/// one process of the ADD (cnitool, a plugin, iptables-restore).
fn count_mutating(host: &Host) -> std::collections::BTreeMap<String, usize> {
    let trace = TempDir::new("lks-trace");
    let file = trace.0.join("trace");
    let ns = PinnedNetns::new();
    let cmd = host.cnitool(
        &["add", &host.net, ns.path()],
        &mappings(18700, 18800),
        &host.ours(),
    );
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", &format!("trace={MUTATING}"), "-o"])
        .arg(&file)
        .arg(program)
        .args(args)
        .env_clear()
        .envs(
            cmd.get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
        )
        .stdin(Stdio::null())
        .output()
        .expect("strace");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&file).expect("trace");
    let mut counts = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut words = line.splitn(2, ' ');
        let (pid, call) = (words.next().unwrap_or_default(), words.next().unwrap_or(""));
        let call = call.trim_start();
        if call.starts_with('<') || call.starts_with("+++") || call.starts_with("---") {
            continue;
        }
        let name = call.split('(').next().unwrap_or_default().to_string();
        *counts.entry((pid.to_string(), name)).or_insert(0usize) += 1;
    }
    host.run(
        &["del", &host.net, ns.path()],
        &mappings(18700, 18800),
        &host.ours(),
    )
    .ok();
    // strace counts `when=N` per process and per syscall: N runs up to the
    // largest count of each syscall in one process.
    let mut max = std::collections::BTreeMap::new();
    for ((_, name), n) in counts {
        let m = max.entry(name).or_insert(0);
        *m = n.max(*m);
    }
    max
}

#[test]
fn adds_killed_at_every_mutating_syscall_are_found_and_fixed() {
    if Command::new("strace").arg("-V").output().is_err() {
        harness::skip("adds_killed", "no strace");
        return;
    }
    enter_test_host();
    let net = "lks-net".to_string();
    let mut host = Host::new("lks", &net, |data| {
        chain("lks-net", "cni-lks0", "10.183.0.0/24", data)
    });
    let client = peer_netns("to-client");
    let pods = host.live_pods(1, 18000);
    let counts = count_mutating(&host);
    eprintln!("strace counts of a full ADD (largest per process): {counts:?}");
    assert!(counts.contains_key("execve") && counts.contains_key("sendmsg"));
    // Every syscall of the set at every N of its count, no sampling: 108 ADDs
    // here (execve 1, openat 42, rename 4, sendmsg 1, sendto 39, setns 10,
    // write 11), about 20 seconds; should a count grow past 60, its N are
    // sampled evenly to 60.
    for (call, max) in &counts {
        for n in (1..=*max).step_by(max.div_ceil(60)) {
            host.killed_add(call, n, *max);
        }
    }
    assert_reachable(&client, &pods, "after the killed ADDs");
    host.assert_no_problems();
}

/// multus as a Kubernetes node runs it, from files: the cluster network
/// (bridge with ipMasq) and two NADs (macvlan on eth0, a second bridge).
#[test]
fn multus_leaks_are_found_and_fixed() {
    enter_test_host();
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
    let dirs = [
        TempDir::new("lkm-netd"),
        TempDir::new("lkm-nads"),
        TempDir::new("lkm-pods"),
        TempDir::new("lkm-cnidir"),
    ];
    let paths: Vec<String> = dirs
        .iter()
        .map(|d| d.0.to_string_lossy().into_owned())
        .collect();
    let bin = harness::plugin_dir();
    let bin_dir = bin.0.to_string_lossy().into_owned();
    let mut host = Host::new("lkm", "lkm-multus", |_| {
        json!({"cniVersion": "1.0.0", "name": "lkm-multus", "plugins": [{
            "type": "multus",
            "capabilities": {"io.kubernetes.cri.pod-annotations": true, "portMappings": true},
            "clusterNetwork": "lkm-cluster",
            "confDir": paths[0], "netAttachDefDir": paths[1], "podDir": paths[2],
            "cniDir": paths[3], "binDir": bin_dir
        }]})
    });
    let store = host.rt.store.0.to_string_lossy().into_owned();
    let cluster = json!({"cniVersion": "1.0.0", "name": "lkm-cluster", "plugins": [
        {"type": "bridge", "bridge": "cni-lkm0", "isGateway": true, "ipMasq": true,
         "ipam": {"type": "host-local", "subnet": "10.184.0.0/24", "dataDir": store,
                  "routes": [{"dst": "0.0.0.0/0"}]}}]});
    std::fs::write(dirs[0].0.join("10-cluster.conflist"), cluster.to_string())
        .expect("cluster network");
    let nads = [
        (
            "lkm-macvlan",
            json!({"cniVersion": "1.0.0", "type": "macvlan", "master": "eth0",
            "mode": "bridge", "ipam": {"type": "host-local", "subnet": "10.185.0.0/24",
            "dataDir": store}}),
        ),
        (
            "lkm-data",
            json!({"cniVersion": "1.0.0", "name": "lkm-data", "plugins": [
            {"type": "bridge", "bridge": "cni-lkm1",
             "ipam": {"type": "host-local", "subnet": "10.186.0.0/24", "dataDir": store}}]}),
        ),
    ];
    for (name, config) in &nads {
        let nad = json!({"apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"config": config.to_string()}});
        std::fs::write(
            dirs[1].0.join(format!("default-{name}.json")),
            nad.to_string(),
        )
        .expect("NAD");
    }
    host.more.push(dirs[3].0.clone());
    let annotations = json!({"io.kubernetes.cri.pod-annotations": {
        "k8s.v1.cni.cncf.io/networks": "lkm-macvlan,lkm-data"}});
    let pod_env = |name: &str| {
        vec![(
            "CNI_ARGS".to_string(),
            format!(
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME={name};\
                 K8S_POD_INFRA_CONTAINER_ID={name}-infra;K8S_POD_UID={name}-uid"
            ),
        )]
    };
    // Two live multus pods (each with three interfaces).
    let mut live = vec![];
    for i in 0..2 {
        let ns = Netns::new();
        host.env = pod_env(&format!("live-{i}"));
        let out = host.run(
            &["add", "lkm-multus", ns.path()],
            &annotations,
            &host.ours(),
        );
        assert_eq!(out.status, 0, "live multus pod {i}: {out:?}");
        let links = ns.sh("ip", &["-o", "link"]);
        assert!(links.contains("net1") && links.contains("net2"), "{links}");
        host.live_ids.push(container_id(ns.path()));
        live.push(ns);
    }
    for (scenario, forget) in [
        ("multus: netns deleted without DEL", false),
        ("multus: cache file removed, then netns deleted", true),
    ] {
        host.env = pod_env(if forget { "gone-b" } else { "gone-a" });
        let before = host.snapshot();
        let ns = PinnedNetns::new();
        let id = container_id(ns.path());
        let out = host.run(
            &["add", "lkm-multus", ns.path()],
            &annotations,
            &host.ours(),
        );
        assert_eq!(out.status, 0, "{scenario}: {out:?}");
        if forget {
            let file = host
                .rt
                .cache
                .0
                .join("results")
                .join(format!("lkm-multus-{id}-eth0"));
            std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
        ns.destroy();
        host.judge(scenario, &before, &host.ours());
    }
    for ns in &live {
        let links = ns.sh("ip", &["-o", "link"]);
        assert!(links.contains("net1") && links.contains("net2"), "{links}");
    }
    host.assert_no_problems();
}
