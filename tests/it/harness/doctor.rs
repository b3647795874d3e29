//! The scenario runner of `cnitool doctor`'s tests (included with `#[path]`,
//! beside `mod harness;`). A `Node` is a test host: its networks, the live
//! pods that must come through untouched, and what counts as its state
//! (`snapshot`: iptables, nftables, links, the files of its directories). A
//! `Scenario` makes pods (`Maker`: cnitool with our plugins or the
//! reference's, Go's libcni), does something to them (`Fate`: netns deleted =
//! dead, cache entry removed = ownerless, ...; a flush for repair) and says
//! what `doctor --json` finds: rows, or every difference the leak made.
//! `Node::run` performs it and checks what holds for all: the node was clean
//! before, young state is left alone, `--fix` fixes every finding and brings
//! the node's state back to what it was exactly, a second `--fix` finds and
//! changes nothing. Problems are named by scenario and reported together by
//! `Node::finish`, which also checks, DELs and clears the live pods.
#![allow(dead_code)]

use crate::harness::{
    Netns, Outcome, PinnedNetns, Runtime, TempDir, cnitool_id, first_ip, merged, run_in,
    sha512_prefix, tcp_fetch, tcp_server, udp_fetch, udp_server,
};
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub const BY_DEL: &str = "removed by the DEL of its dead attachment";
pub const REFERENCE: &str = "/usr/lib/cni";

/// The reference's per-container masquerading chain in `nat`.
pub fn masq_chain(network: &str, id: &str) -> String {
    format!("CNI-{}", sha512_prefix(&format!("{network}{id}"), 24))
}

/// The reference's per-container hostPort DNAT chain in `nat`.
pub fn dnat_chain(network: &str, id: &str) -> String {
    format!("CNI-DN-{}", sha512_prefix(&format!("{network}{id}"), 21))
}

/// A finding as `doctor --json` prints it, not fixed.
pub fn row(
    kind: &str,
    net: &str,
    id: &str,
    ifname: &str,
    object: impl ToString,
    action: &str,
) -> Value {
    json!({"kind": kind, "network": net, "containerId": id, "ifname": ifname,
           "object": object.to_string(), "action": action, "fixed": false})
}

/// A finding that names no attachment.
pub fn unowned(kind: &str, object: impl ToString, action: &str) -> Value {
    row(kind, "", "", "", object, action)
}

/// The findings of a `doctor --json` run (none when it printed no JSON).
pub fn findings(out: &Outcome) -> Vec<Value> {
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_default();
    v["findings"].as_array().cloned().unwrap_or_default()
}

/// Whether `netns` reaches `ip` (one ping).
pub fn pings(netns: &str, ip: &str) -> bool {
    Command::new("nsenter")
        .arg(format!("--net={netns}"))
        .args(["ping", "-c", "1", "-W", "2", ip])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `cmd` run under `prefix` (strace, nsenter): the same arguments
/// after the prefix's, and the same environment.
pub fn under(prefix: &[&str], cmd: &Command) -> Command {
    let mut out = Command::new(prefix[0]);
    out.args(&prefix[1..])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env_clear()
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))));
    out
}

/// Runs each row on a thread of its own in a test host of its own, and fails
/// naming every row that failed.
pub fn table(rows: &[(&str, fn())]) {
    let failed: Vec<&str> = rows
        .iter()
        .filter(|(_, row)| {
            let row = *row;
            std::thread::spawn(move || {
                crate::harness::enter_test_host();
                row()
            })
            .join()
            .is_err()
        })
        .map(|(name, _)| *name)
        .collect();
    assert!(failed.is_empty(), "rows failed: {failed:?}");
}

/// How a scenario's pods are made (and DELed, and which plugins the doctor runs).
#[derive(Clone)]
pub enum Maker {
    /// cnitool with our plugins.
    Ours,
    /// cnitool with the reference's plugins (/usr/lib/cni); the doctor runs them too.
    Reference,
    /// cnitool with our plugins and this PATH (another iptables flavour first).
    Path(String),
    /// Go's libcni 1.1 (bench/libcni built against Debian's libcni).
    Libcni(PathBuf),
}

/// What is done to a scenario's pod after its ADD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fate {
    /// Dead: its pinned namespace deleted without DEL.
    Dead,
    /// Ownerless: its cache entries removed, then its namespace deleted.
    Ownerless,
    /// Its cache entries removed while it lives on: its state is kept (and
    /// left on the node when the scenario ends).
    Forgotten,
    /// Its cache entries removed and its addresses given up; it lives on.
    Abandoned,
    /// Its namespace unpinned but held by a descriptor (no task, no mount):
    /// its cache entries kept (dead) or removed (ownerless).
    Held { ownerless: bool },
    /// ADD killed by strace at the `n`th such syscall of one of its
    /// processes, then its namespace deleted.
    Killed(&'static str, usize),
    /// ADD then DEL, then its namespace deleted: the control.
    Deleted,
}

/// When a scenario's hooks run: the pods made, their fates done (and the
/// flush), the findings fixed and the node compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stage {
    Made,
    Leaked,
    Fixed,
}

type Rows<'a> = Box<dyn Fn(&Node, &[Pod]) -> Vec<Value> + 'a>;
type Hook<'a> = Box<dyn Fn(&Node, &[Pod]) + 'a>;

pub struct Scenario<'a> {
    pub name: String,
    pub pods: Vec<Fate>,
    pub maker: Option<Maker>,
    pub flush: Vec<&'a [&'a str]>,
    /// The findings of these kinds (all when empty), in order or `sorted`;
    /// None: every difference of the node is named by a finding, none names
    /// a pod that is not the scenario's leak.
    pub rows: Option<(&'a [&'a str], Rows<'a>)>,
    pub sorted: bool,
    pub hooks: Vec<(Stage, Hook<'a>)>,
}

impl<'a> Scenario<'a> {
    pub fn new(name: &str, pods: &[Fate]) -> Scenario<'a> {
        Scenario {
            name: name.to_string(),
            pods: pods.to_vec(),
            maker: None,
            flush: vec![],
            rows: None,
            sorted: false,
            hooks: vec![],
        }
    }

    pub fn rows(
        mut self,
        kinds: &'a [&'a str],
        f: impl Fn(&Node, &[Pod]) -> Vec<Value> + 'a,
    ) -> Self {
        self.rows = Some((kinds, Box::new(f)));
        self
    }

    pub fn sorted(mut self) -> Self {
        self.sorted = true;
        self
    }

    pub fn by(mut self, maker: Maker) -> Self {
        self.maker = Some(maker);
        self
    }

    pub fn flush(mut self, command: &'a [&'a str]) -> Self {
        self.flush.push(command);
        self
    }

    /// Runs `f` at `stage`.
    pub fn on(mut self, stage: Stage, f: impl Fn(&Node, &[Pod]) + 'a) -> Self {
        self.hooks.push((stage, Box::new(f)));
        self
    }
}

/// A pod's network namespace: a task's, or pinned at a path as runtimes pin them.
enum Ns {
    Task(Netns),
    Pinned(PinnedNetns),
}

/// A pod: its namespace (None once deleted) and its attachments.
pub struct Pod {
    ns: Option<Ns>,
    held: Option<std::fs::File>,
    pub path: String,
    pub id: String,
    /// Its number on the node (hostPorts, Kubernetes pod name).
    pub k: u16,
    pub nets: Vec<(String, String)>,
    pub results: Vec<Value>,
    pub maker: Maker,
    /// What its ADD added to the node (live pods) and its links then.
    pub items: BTreeSet<String>,
    links: String,
}

impl Pod {
    pub fn ip(&self) -> String {
        first_ip(&self.results[0])
    }

    pub fn sh(&self, program: &str, args: &[&str]) -> String {
        run_in(Some(Path::new(&self.path)), program, args)
    }

    /// Deletes its namespace (a pinned one's path goes too).
    pub fn destroy(&mut self) {
        self.ns = None;
    }

    /// A finding of this pod on its first network.
    pub fn row(&self, kind: &str, ifname: &str, object: impl ToString, action: &str) -> Value {
        row(kind, &self.nets[0].0, &self.id, ifname, object, action)
    }

    pub fn gateway(&self) -> Option<String> {
        self.results[0]["ips"][0]["gateway"]
            .as_str()
            .map(String::from)
    }

    /// Its host links (no sandbox) whose names start with `prefix`.
    pub fn host_links(&self, prefix: &str) -> Vec<String> {
        let all = self
            .results
            .iter()
            .filter_map(|r| r["interfaces"].as_array());
        let host = all.flatten().filter(|i| i["sandbox"].is_null());
        let names = host.filter_map(|i| i["name"].as_str());
        names
            .filter(|n| n.starts_with(prefix))
            .map(String::from)
            .collect()
    }

    /// The items of the node's state only it has: its host links (veth,
    /// IFB), its reservations; and any that names its container ID.
    fn left(&self, store: &Path, now: &BTreeSet<String>) -> Vec<String> {
        let links = [self.host_links("veth"), self.host_links("bwp")].concat();
        let mut mine: BTreeSet<String> = links.iter().map(|l| format!("link {l}")).collect();
        for (r, (net, _)) in self.results.iter().zip(&self.nets) {
            if let Some(ip) = r["ips"][0]["address"].as_str() {
                let ip = ip.split('/').next().unwrap_or_default();
                mine.insert(format!("file {}", store.join(net).join(ip).display()));
            }
        }
        let named = |i: &&String| mine.contains(*i) || i.contains(&self.id);
        now.iter().filter(named).cloned().collect()
    }
}

pub struct Node<'a> {
    pub rt: Runtime,
    /// `@DATA@` in the lists: the plugins' dataDirs.
    pub data: TempDir,
    /// The attachments every pod gets: (network, ifname).
    pub nets: Vec<(String, String)>,
    pub maker: Maker,
    /// Environment of every cnitool run, the doctor's too.
    pub env: Vec<(String, String)>,
    /// Capability args of every pod (besides its hostPorts).
    pub caps: Value,
    /// Pod k's hostPorts: TCP `ports + k` to 80, UDP `ports + 100 + k` to 53.
    pub ports: Option<u16>,
    /// Pods get a Kubernetes pod's CNI_ARGS (multus).
    pub k8s: bool,
    pub pin_live: bool,
    /// Live pods must reach their gateway.
    pub ping: bool,
    /// More directories and probes whose output is node state.
    pub roots: Vec<PathBuf>,
    pub probes: Vec<Box<dyn Fn() -> Vec<String> + 'a>>,
    pub live: Vec<Pod>,
    /// Where live pods' hostPorts are reached from (servers behind them).
    pub client: Option<Netns>,
    count: Cell<u16>,
    problems: RefCell<Vec<String>>,
}

impl<'a> Node<'a> {
    /// A node with these conflists (`@STORE@`, `@DATA@` and `@BIN@` in them
    /// filled in); every pod attaches to each, ifnames eth0, net1, ...
    pub fn new(tag: &str, lists: &[Value]) -> Node<'a> {
        let mut node = Node {
            rt: Runtime::new(tag),
            data: TempDir::new(&format!("{tag}-data")),
            nets: vec![],
            maker: Maker::Ours,
            env: vec![],
            caps: json!({}),
            ports: None,
            k8s: false,
            pin_live: false,
            ping: false,
            roots: vec![],
            probes: vec![],
            live: vec![],
            client: None,
            count: Cell::new(0),
            problems: RefCell::new(vec![]),
        };
        for (i, list) in lists.iter().enumerate() {
            let name = list["name"].as_str().expect("a list's name").to_string();
            node.write(&node.rt.conf.0, &format!("{i:02}-{name}.conflist"), list);
            let ifname = if i == 0 {
                "eth0".into()
            } else {
                format!("net{i}")
            };
            node.nets.push((name, ifname));
        }
        run_in(None, "ip", &["link", "set", "lo", "up"]);
        node
    }

    /// Writes a config file into `dir` (`@STORE@`, `@DATA@`, `@BIN@` filled in).
    pub fn write(&self, dir: &Path, file: &str, config: &Value) {
        let text = config
            .to_string()
            .replace("@STORE@", &self.rt.store.0.to_string_lossy())
            .replace("@DATA@", &self.data.0.to_string_lossy())
            .replace("@BIN@", &self.rt.bin.0.to_string_lossy());
        std::fs::create_dir_all(dir).expect("config dir");
        std::fs::write(dir.join(file), text).expect("write config");
    }

    /// A peer namespace the live pods' hostPorts are reached from.
    pub fn with_client(mut self) -> Self {
        self.client = Some(crate::harness::peer_netns("to-client"));
        self
    }

    /// The cache entry of an attachment.
    pub fn entry(&self, net: &str, id: &str, ifname: &str) -> PathBuf {
        let file = format!("{net}-{id}-{ifname}");
        self.rt.cache.0.join("results").join(file)
    }

    /// `cni-multi cnitool ARGS` with this node's setup.
    pub fn cnitool(&self, args: &[&str], caps: &Value, maker: &Maker) -> Command {
        let path = match maker {
            Maker::Path(p) => Some(p.as_str()),
            _ => None,
        };
        let mut cmd = self.rt.command(args, caps, path);
        if let Maker::Reference = maker {
            cmd.env("CNI_PATH", REFERENCE);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    pub fn cnitool_run(&self, args: &[&str]) -> Outcome {
        let mut cmd = self.cnitool(args, &json!({}), &Maker::Ours);
        Outcome::of(cmd.spawn().expect("cnitool"))
    }

    /// `doctor --json --repair-after 1 ARGS`, with the reference's plugins
    /// when they made the leak.
    pub fn doctor(&self, args: &[&str], maker: &Maker) -> Outcome {
        let mut all = vec!["doctor", "--json", "--repair-after", "1"];
        all.extend_from_slice(args);
        let maker = match maker {
            Maker::Reference => maker,
            _ => &Maker::Ours,
        };
        let mut cmd = self.cnitool(&all, &json!({}), maker);
        Outcome::of(cmd.spawn().expect("doctor"))
    }

    /// Pod k's capability args.
    pub fn caps_of(&self, k: u16) -> Value {
        let mut caps = self.caps.clone();
        if let Some(p) = self.ports {
            caps["portMappings"] = json!([
                {"hostPort": p + k, "containerPort": 80, "protocol": "tcp"},
                {"hostPort": p + 100 + k, "containerPort": 53, "protocol": "udp"}]);
        }
        caps
    }

    /// `verb` (add, check, del) of attachment `net` of pod `k` in `netns`, as `maker` runs it.
    pub fn cni(
        &self,
        verb: &str,
        k: u16,
        netns: &str,
        net: &(String, String),
        maker: &Maker,
    ) -> Command {
        let caps = self.caps_of(k);
        let mut cmd = self.cnitool(&[verb, &net.0, netns], &caps, maker);
        if let Maker::Libcni(driver) = maker {
            let mut libcni = Command::new(driver);
            libcni
                .args([verb, &net.0, netns])
                .env_clear()
                .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
                .env("CNI_CACHE_DIR", &self.rt.cache.0)
                .stdin(Stdio::null());
            cmd = libcni;
        }
        cmd.env("CNI_IFNAME", &net.1);
        if self.k8s {
            let args = format!(
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod{k};\
                 K8S_POD_INFRA_CONTAINER_ID=pod{k}-infra;K8S_POD_UID=pod{k}-uid"
            );
            cmd.env("CNI_ARGS", args);
        }
        cmd
    }

    fn cni_run(&self, verb: &str, pod: &Pod, net: &(String, String), maker: &Maker) -> Outcome {
        let mut cmd = self.cni(verb, pod.k, &pod.path, net, maker);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Outcome::of(cmd.spawn().expect("run a plugin chain"))
    }

    /// A pod in a namespace of its own (pinned, or a task's), not yet attached.
    fn new_pod(&self, pinned: bool, maker: &Maker) -> Pod {
        let k = self.count.get();
        self.count.set(k + 1);
        let ns = if pinned {
            Ns::Pinned(PinnedNetns::new())
        } else {
            Ns::Task(Netns::new())
        };
        let path = match &ns {
            Ns::Task(n) => n.path().to_string(),
            Ns::Pinned(n) => n.path().to_string(),
        };
        Pod {
            ns: Some(ns),
            held: None,
            id: cnitool_id(&path),
            path,
            k,
            nets: self.nets.clone(),
            results: vec![],
            maker: maker.clone(),
            items: BTreeSet::new(),
            links: String::new(),
        }
    }

    /// A pod ADDed to every network of `nets` by `maker`.
    pub fn pod(&self, pinned: bool, maker: &Maker) -> Pod {
        let mut pod = self.new_pod(pinned, maker);
        for net in &self.nets {
            let out = self.cni_run("add", &pod, net, maker);
            assert_eq!(out.status, 0, "ADD {} of pod {}: {out:?}", net.0, pod.k);
            pod.results.push(out.json());
        }
        pod
    }

    /// `n` live pods (answering on their hostPorts when there is a client):
    /// each one's `items` are what its ADD added to the node.
    pub fn add_live(&mut self, n: u16) {
        for _ in 0..n {
            let before = self.snapshot();
            let mut pod = self.pod(self.pin_live, &self.maker.clone());
            pod.items = self.snapshot().difference(&before).cloned().collect();
            pod.links = links_of(&pod);
            if self.client.is_some() {
                let reply: &'static str = Box::leak(format!("live-{}", pod.k).into_boxed_str());
                tcp_server(&pod.path, 80, reply);
                udp_server(&pod.path, 53, reply);
            }
            self.live.push(pod);
        }
    }

    /// Whether every live pod answers on its hostPorts from the client.
    pub fn reachable(&self) -> bool {
        let (Some(client), Some(p)) = (&self.client, self.ports) else {
            return true;
        };
        self.live.iter().all(|pod| {
            let want = Some(format!("live-{}", pod.k));
            let (tcp, udp) = (p + pod.k, p + 100 + pod.k);
            tcp_fetch(Some(client.path()), &format!("192.0.2.1:{tcp}")) == want
                && udp_fetch(Some(client.path()), &format!("192.0.2.1:{udp}")) == want
        })
    }

    /// What of a live pod is gone: items of its ADD, its links, its gateway.
    pub fn lost(&self, pod: &Pod, now: &BTreeSet<String>) -> Vec<String> {
        let mut lost: Vec<String> = pod.items.difference(now).cloned().collect();
        let links = links_of(pod);
        if links != pod.links {
            lost.push(format!("its links, once {}, now {links}", pod.links));
        }
        if self.ping && !pod.gateway().is_some_and(|gw| pings(&pod.path, &gw)) {
            lost.push("its gateway".into());
        }
        lost
    }

    /// Everything a live pod's ADD added is there, and it reaches its gateway.
    pub fn assert_intact(&self, pod: &Pod, why: &str) {
        let lost = self.lost(pod, &self.snapshot());
        assert!(lost.is_empty(), "{why}: pod {} lost {lost:#?}", pod.k);
    }

    /// The node's state, one line per object, counters dropped.
    pub fn snapshot(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for table in ["nat", "filter", "mangle"] {
            out.extend(save("iptables-save", table));
        }
        nft_lines(&mut out);
        for line in run_in(None, "ip", &["-o", "link"]).lines() {
            let name = line.split(": ").nth(1).unwrap_or_default();
            let name = name.split('@').next().unwrap_or_default();
            out.insert(format!("link {name}"));
        }
        let roots = [&self.rt.cache.0, &self.rt.store.0, &self.data.0];
        for root in roots.into_iter().chain(&self.roots) {
            files(root, &mut out);
        }
        for probe in &self.probes {
            out.extend(probe());
        }
        out
    }

    /// The snapshot once the kernel has removed the veths of deleted
    /// namespaces (a moment after their last reference), but `kept`.
    fn settled(&self, before: &BTreeSet<String>, kept: &[String]) -> BTreeSet<String> {
        let mut now = self.snapshot();
        for _ in 0..200 {
            let gone = |i: &&String| i.starts_with("link veth") && !kept.contains(i);
            if !now.difference(before).any(|i| gone(&i)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            now = self.snapshot();
        }
        now
    }

    pub fn problem(&self, scenario: &str, what: impl std::fmt::Display) {
        self.problems
            .borrow_mut()
            .push(format!("{scenario}: {what}"));
    }

    /// A scenario's pod, made as its fate needs.
    fn make(&self, fate: Fate, maker: &Maker) -> Pod {
        let Fate::Killed(call, n) = fate else {
            // One that lives on without a cache entry is a task's: the doctor
            // counts bind mounts as holders only under /run/netns.
            let pod = self.pod(!matches!(fate, Fate::Forgotten | Fate::Abandoned), maker);
            for net in pod.nets.iter().rev().filter(|_| fate == Fate::Deleted) {
                let out = self.cni_run("del", &pod, net, maker);
                assert_eq!(out.status, 0, "DEL of the control: {out:?}");
            }
            return pod;
        };
        let mut pod = self.new_pod(true, maker);
        pod.results.push(Value::Null);
        let cmd = self.cni("add", pod.k, &pod.path, &self.nets[0], maker);
        // strace counts per process: each of cnitool, the plugins and
        // iptables-restore dies at its own `n`th `call`, the first one wins.
        let inject = format!("--inject={call}:signal=KILL:when={n}");
        let _ = under(&["strace", "-f", "-qq", "-o", "/dev/null", &inject], &cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("strace");
        pod
    }

    fn hook(&self, s: &Scenario, pods: &[Pod], stage: Stage) {
        for (_, hook) in s.hooks.iter().filter(|(at, _)| *at == stage) {
            hook(self, pods);
        }
    }

    /// The findings of `kinds` (all when empty), in a fixed order when `sorted`.
    fn of_kinds(kinds: &[&str], sorted: bool, found: &[Value]) -> Vec<Value> {
        let mut out: Vec<Value> = found
            .iter()
            .filter(|f| kinds.is_empty() || kinds.iter().any(|k| f["kind"] == *k))
            .cloned()
            .collect();
        if sorted {
            out.sort_by_key(|f| f.to_string());
        }
        out
    }

    /// Performs a scenario (see the module's comment).
    pub fn run(&self, s: &Scenario) {
        use Fate::*;
        let (name, maker) = (s.name.as_str(), s.maker.as_ref().unwrap_or(&self.maker));
        let problem = |what: String| self.problem(name, what);
        let out = self.doctor(&["--min-age", "0"], maker);
        if out.status != 0 || !findings(&out).is_empty() {
            problem(format!("the node was not clean before: {out:?}"));
        }
        // Forgotten pods first: what they hold is the node's from then on.
        let mut made: Vec<(usize, Pod)> = Vec::new();
        let mut make = |forgotten: bool| {
            for (i, fate) in s.pods.iter().enumerate() {
                if (*fate == Forgotten) == forgotten {
                    made.push((i, self.make(*fate, maker)));
                }
            }
        };
        make(true);
        let before = self.snapshot();
        make(false);
        made.sort_by_key(|(i, _)| *i);
        let mut pods: Vec<Pod> = made.into_iter().map(|(_, p)| p).collect();
        self.hook(s, &pods, Stage::Made);
        let (mut removed, mut kept) = (BTreeSet::new(), vec![]);
        for (pod, fate) in pods.iter_mut().zip(&s.pods) {
            if matches!(
                fate,
                Ownerless | Forgotten | Abandoned | Held { ownerless: true }
            ) {
                for (net, ifname) in &pod.nets {
                    let entry = self.entry(net, &pod.id, ifname);
                    std::fs::remove_file(&entry).unwrap_or_else(|e| panic!("{name}: {e}"));
                    removed.insert(format!("file {}", entry.display()));
                }
            }
            for (_, ifname) in pod.nets.iter().filter(|_| *fate == Abandoned) {
                pod.sh("ip", &["addr", "flush", "dev", ifname]);
            }
            if let Held { .. } = fate {
                pod.held = Some(std::fs::File::open(&pod.path).expect("hold the netns"));
                kept.extend(pod.left(&self.rt.store.0, &self.snapshot()));
            }
            if !matches!(fate, Forgotten | Abandoned) {
                pod.destroy();
            }
        }
        for command in &s.flush {
            run_in(None, command[0], &command[1..]);
        }
        if !s.flush.is_empty() && self.client.is_some() && self.reachable() {
            problem("the flush left the hostPorts answering".into());
        }
        self.hook(s, &pods, Stage::Leaked);
        let leaked = self.settled(&before, &kept);
        let fixed = if let Some((kinds, rows)) = &s.rows {
            let want = Self::of_kinds(&[], s.sorted, &rows(self, &pods));
            let young = self.doctor(&[], maker);
            if young.status != 0 || !findings(&young).is_empty() {
                problem(format!("young state was not left alone: {young:?}"));
            }
            let out = self.doctor(&["--min-age", "0"], maker);
            let found = findings(&out);
            if out.status != i32::from(!found.is_empty()) {
                problem(format!("doctor exited {} with {found:?}", out.status));
            }
            let got = Self::of_kinds(kinds, s.sorted, &found);
            if got != want {
                problem(format!(
                    "doctor found\n{}\nnot\n{}",
                    lines(&got),
                    lines(&want)
                ));
            }
            // The table for people says the same.
            let args = ["doctor", "--min-age", "0", "--repair-after", "1"];
            let mut table = self.cnitool(&args, &json!({}), maker);
            let table = Outcome::of(table.spawn().expect("doctor"));
            let said = if found.is_empty() {
                table.stdout.contains("no stale CNI state found")
            } else {
                table.stdout.starts_with("KIND") && table.stdout.lines().count() == found.len() + 1
            };
            if !said || table.status != out.status {
                problem(format!("the table does not say the same: {table:?}"));
            }
            let out = self.doctor(&["--fix", "--min-age", "0"], maker);
            let fixed = Self::of_kinds(kinds, s.sorted, &findings(&out));
            let want: Vec<Value> = want
                .into_iter()
                .map(|f| merged(f, json!({"fixed": true})))
                .collect();
            if fixed != want {
                problem(format!(
                    "doctor --fix fixed\n{}\nnot\n{}",
                    lines(&fixed),
                    lines(&want)
                ));
            }
            out
        } else {
            let out = self.doctor(&["--min-age", "0"], maker);
            let found = findings(&out);
            if out.status != i32::from(!found.is_empty()) {
                problem(format!(
                    "doctor exited {} with {} findings: {}",
                    out.status,
                    found.len(),
                    out.stderr
                ));
            }
            for item in leaked.difference(&before) {
                if !found.iter().any(|f| names(f, item)) {
                    problem(format!("not found by doctor: {item}"));
                }
            }
            for f in &found {
                let id = f["containerId"].as_str().unwrap_or_default();
                let mut leaked = pods.iter().zip(&s.pods).filter(|(_, f)| **f != Forgotten);
                if !id.is_empty() && !leaked.any(|(p, _)| p.id == id) {
                    problem(format!("a finding of no leaked pod: {f}"));
                }
            }
            self.doctor(&["--fix", "--min-age", "0"], maker)
        };
        let not_fixed: Vec<Value> = findings(&fixed)
            .into_iter()
            .filter(|f| f["fixed"] != true)
            .collect();
        if fixed.status != 0 || !not_fixed.is_empty() {
            problem(format!(
                "doctor --fix exited {}, not fixed {not_fixed:?}: {}",
                fixed.status, fixed.stderr
            ));
        }
        let want: BTreeSet<String> = before.difference(&removed).cloned().collect();
        let after = self.snapshot();
        for item in after.difference(&want) {
            problem(format!("left after --fix: {item}"));
        }
        for item in want.difference(&after) {
            problem(format!("removed by --fix (was there before): {item}"));
        }
        if !self.reachable() {
            problem("the live pods' hostPorts do not answer after --fix".into());
        }
        self.hook(s, &pods, Stage::Fixed);
        let again = self.doctor(&["--fix", "--min-age", "0"], maker);
        if again.status != 0 || !findings(&again).is_empty() {
            problem(format!("a second --fix: {again:?}"));
        }
        let now = self.snapshot();
        for item in now.symmetric_difference(&after) {
            problem(format!("a second --fix changed {item}"));
        }
    }

    /// Checks the live pods (they kept what their ADD added, their links,
    /// their gateway and hostPorts; CHECK passes), DELs them (nothing of
    /// them is left), and fails with every problem of the node's scenarios.
    pub fn finish(self) {
        let now = self.snapshot();
        for pod in &self.live {
            let name = format!("live pod {}", pod.k);
            for lost in self.lost(pod, &now) {
                self.problem(&name, format!("lost {lost}"));
            }
            for net in &pod.nets {
                let out = self.cni_run("check", pod, net, &pod.maker);
                if out.status != 0 {
                    self.problem(&name, format!("CHECK {}: {out:?}", net.0));
                }
            }
        }
        if !self.reachable() {
            self.problem("live pods", "their hostPorts do not answer");
        }
        for pod in &self.live {
            let mut makers = vec![&pod.maker];
            // It has the other flavour's masquerading and, repaired, the default's.
            if let Maker::Path(_) = pod.maker {
                makers.push(&Maker::Ours);
            }
            for (net, maker) in pod
                .nets
                .iter()
                .rev()
                .flat_map(|n| makers.iter().map(move |m| (n, m)))
            {
                let out = self.cni_run("del", pod, net, maker);
                if out.status != 0 {
                    self.problem(
                        &format!("live pod {}", pod.k),
                        format!("DEL {}: {out:?}", net.0),
                    );
                }
            }
        }
        let now = self.snapshot();
        for pod in &self.live {
            for item in pod.left(&self.rt.store.0, &now) {
                self.problem(
                    &format!("live pod {}", pod.k),
                    format!("left after DEL: {item}"),
                );
            }
        }
        let problems = self.problems.take();
        // DOCTOR_LEAKS_ALL=1 shows every problem, not the first 300.
        let limit = std::env::var_os("DOCTOR_LEAKS_ALL").map_or(300, |_| usize::MAX);
        let shown: Vec<&str> = problems.iter().take(limit).map(String::as_str).collect();
        assert!(
            problems.is_empty(),
            "{} problems (the first {} here):\n{}",
            problems.len(),
            shown.len(),
            shown.join("\n")
        );
    }
}

/// Findings one per line.
fn lines(findings: &[Value]) -> String {
    let lines: Vec<String> = findings.iter().map(Value::to_string).collect();
    lines.join("\n")
}

/// One table of `tool` (an iptables-save) as `<tool> <table> <line>`,
/// counters dropped.
pub fn save(tool: &str, table: &str) -> Vec<String> {
    let text = run_in(None, tool, &["-t", table]);
    let lines = text.lines().filter(|l| !l.starts_with('#'));
    let line = |l: &str| match l.find(" [") {
        Some(i) if l.starts_with(':') => l[..i].to_string(),
        _ => l.to_string(),
    };
    let tool = tool.trim_end_matches("-save");
    lines
        .map(|l| format!("{tool} {table} {}", line(l)))
        .collect()
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
        let (family, name) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
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
        // host-local's owner index (a seal and an entry per attachment) is a
        // cache of its store's files, rebuilt by our next call after another
        // writer's (the reference's DEL run by --fix): not a pod's state.
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(".cni-multi-owners"))
        {
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
/// lines carry (its chain, declared, jumped to or appended to; its address);
/// an nftables line by its table (and chain, if named); a link by its name.
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
        if words.first() != Some(&"iptables") || words.get(1) != Some(&table) {
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

/// A pod's links as `ip -o link` lists them, without their operational
/// state: the kernel's link watcher moves a new link (a macvlan, say) from
/// UNKNOWN to UP up to a second after ADD returns, which is no harm done.
fn links_of(pod: &Pod) -> String {
    let links = pod.sh("ip", &["-o", "link"]);
    links
        .lines()
        .map(|line| {
            let mut words: Vec<&str> = line.split(' ').collect();
            if let Some(i) = words.iter().position(|w| *w == "state") {
                words.drain(i..(i + 2).min(words.len()));
            }
            words.join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
