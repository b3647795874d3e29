//! A real etcd cluster (Debian's etcd-server, `/usr/bin/etcd`) for the flanneld
//! lane: each member in a namespace of its own on the test's underlay, a static
//! initial cluster, data in a `TempDir`; `etcdctl` (etcd-client, API v3) runs
//! from a client namespace on the same segment. Members are killed on drop.
//! Included with `#[path]`, beside `mod harness;` and the underlay.
#![allow(dead_code)]

use crate::harness::underlay::{Proc, Underlay, command_in, log_tail};
use crate::harness::{Netns, TempDir};
use base64::Engine;
use std::net::IpAddr;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// How long a member set may take to become healthy (elections included)
/// on a loaded 2-core machine.
const HEALTHY_WITHIN: Duration = Duration::from_secs(60);

struct Member {
    name: String,
    ns: Netns,
    ip: IpAddr,
    proc: Option<Proc>,
}

pub struct EtcdCluster {
    members: Vec<Member>,
    /// Where etcdctl runs.
    client: Netns,
    token: String,
    dir: TempDir,
}

impl EtcdCluster {
    /// Starts `n` members on `underlay` and waits until all are healthy.
    pub fn start(underlay: &Underlay, n: usize) -> EtcdCluster {
        let dir = TempDir::new("etcd");
        let token = dir
            .0
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let members = (0..n)
            .map(|i| {
                let ns = Netns::new();
                let (_, ip) = underlay.attach(&ns);
                Member {
                    name: format!("etcd{i}"),
                    ns,
                    ip,
                    proc: None,
                }
            })
            .collect();
        let client = Netns::new();
        underlay.attach(&client);
        let mut cluster = EtcdCluster {
            members,
            client,
            token,
            dir,
        };
        for i in 0..n {
            cluster.spawn_member(i, "new");
        }
        cluster.wait_healthy();
        cluster
    }

    fn spawn_member(&mut self, i: usize, state: &str) {
        let initial: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}=http://{}:2380", m.name, m.ip))
            .collect();
        let m = &self.members[i];
        let data = self.dir.0.join(&m.name).display().to_string();
        let (peer, client) = (
            format!("http://{}:2380", m.ip),
            format!("http://{}:2379", m.ip),
        );
        let args = [
            "--name",
            &m.name,
            "--data-dir",
            &data,
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
            "--listen-client-urls",
            &client,
            "--advertise-client-urls",
            &client,
            "--initial-cluster",
            &initial.join(","),
            "--initial-cluster-token",
            &self.token,
            "--initial-cluster-state",
            state,
            "--logger",
            "zap",
            "--log-outputs",
            "stderr",
        ];
        let log = self.dir.0.join(format!("{}.log", m.name));
        let proc = Proc::spawn(&m.name, m.ns.path(), log, "/usr/bin/etcd", &args);
        self.members[i].proc = Some(proc);
    }

    /// The client URL of member `i`.
    pub fn endpoint(&self, i: usize) -> String {
        format!("http://{}:2379", self.members[i].ip)
    }

    /// Every member's client URL, comma separated (flanneld's `--etcd-endpoints`).
    pub fn endpoints(&self) -> String {
        let all: Vec<String> = (0..self.members.len()).map(|i| self.endpoint(i)).collect();
        all.join(",")
    }

    /// Kills member `i` (SIGKILL: a crash, or a machine gone). When it was
    /// the leader, a write waits out the election (and a write sent to the
    /// dead leader just before may hang to its deadline): `wait_healthy`
    /// returns once the others have elected one.
    pub fn stop_member(&mut self, i: usize) {
        if let Some(mut p) = self.members[i].proc.take() {
            p.kill9();
        }
    }

    /// Starts member `i` again on its data dir and waits until every running
    /// member is healthy (which needs a quorum of them running).
    pub fn start_member(&mut self, i: usize) {
        assert!(
            self.members[i].proc.is_none(),
            "{} is running",
            self.members[i].name
        );
        self.spawn_member(i, "existing");
        self.wait_healthy();
    }

    /// Member `i`'s process ID while it runs.
    pub fn member_pid(&self, i: usize) -> Option<i32> {
        self.members[i].proc.as_ref().and_then(Proc::pid)
    }

    /// Member `i`'s log so far.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.0.join(format!("{}.log", self.members[i].name)))
            .unwrap_or_default()
    }

    /// Waits until `etcdctl endpoint health` passes on every running member;
    /// panics after `HEALTHY_WITHIN` with their logs' tails.
    pub fn wait_healthy(&mut self) {
        let start = Instant::now();
        loop {
            let mut running = Vec::new();
            for (i, m) in self.members.iter_mut().enumerate() {
                if let Some(p) = m.proc.as_mut() {
                    assert!(
                        p.running(),
                        "etcd member {} exited; its log ({}):\n{}",
                        m.name,
                        p.log.display(),
                        log_tail(&p.log, 40)
                    );
                    running.push(i);
                }
            }
            let endpoints: Vec<String> = running.iter().map(|&i| self.endpoint(i)).collect();
            let out = self.etcdctl_at(&endpoints.join(","), &["endpoint", "health"]);
            if out.status.success() {
                return;
            }
            if start.elapsed() > HEALTHY_WITHIN {
                let logs: Vec<String> = running
                    .iter()
                    .filter_map(|&i| self.members[i].proc.as_ref())
                    .map(|p| format!("--- {} ---\n{}", p.log.display(), log_tail(&p.log, 30)))
                    .collect();
                panic!(
                    "etcd not healthy after {HEALTHY_WITHIN:?}: {}{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    logs.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `etcdctl <args>` (API v3) against every member.
    pub fn etcdctl(&self, args: &[&str]) -> Output {
        self.etcdctl_at(&self.endpoints(), args)
    }

    /// `etcdctl <args>` against `endpoints` only (2 s to dial, 5 s per command).
    pub fn etcdctl_at(&self, endpoints: &str, args: &[&str]) -> Output {
        let endpoints = format!("--endpoints={endpoints}");
        command_in(self.client.path(), "/usr/bin/etcdctl", false)
            .env_clear()
            .env("ETCDCTL_API", "3")
            .args([&endpoints, "--dial-timeout=2s", "--command-timeout=5s"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("spawn etcdctl: {e}"))
    }

    /// As `etcdctl`, panicking with its stderr unless it succeeds; stdout.
    fn ctl(&self, args: &[&str]) -> String {
        let out = self.etcdctl(args);
        assert!(
            out.status.success(),
            "etcdctl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The response of `etcdctl get <args> -w json` as JSON.
    fn get_json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["get", "-w", "json"];
        all.extend_from_slice(args);
        let text = self.ctl(&all);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("etcdctl get json ({e}): {text}"))
    }

    /// Every key under `prefix` with its value, in key order.
    pub fn get_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        let v = self.get_json(&["--prefix", prefix]);
        let decode = |field: &serde_json::Value| -> String {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(field.as_str().unwrap_or_default())
                .unwrap_or_else(|e| panic!("etcdctl base64 ({e}): {v}"));
            String::from_utf8_lossy(&bytes).into_owned()
        };
        v["kvs"]
            .as_array()
            .map(|kvs| {
                kvs.iter()
                    .map(|kv| (decode(&kv["key"]), decode(&kv["value"])))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// One key's value, if present.
    pub fn get(&self, key: &str) -> Option<String> {
        let out = self.ctl(&["get", "--print-value-only", key]);
        // etcdctl ends the value with a newline of its own.
        (!out.is_empty()).then(|| out.strip_suffix('\n').unwrap_or(&out).to_string())
    }

    pub fn put(&self, key: &str, value: &str) {
        // `--` ends the flags: a value may start with '-'.
        self.ctl(&["put", "--", key, value]);
    }

    /// Deletes `key`; returns how many keys went (0 or 1).
    pub fn del(&self, key: &str) -> u64 {
        self.ctl(&["del", "--", key]).trim().parse().unwrap_or(0)
    }

    /// The cluster's current revision.
    pub fn revision(&self) -> i64 {
        let v = self.get_json(&["--limit", "1", "/"]);
        v["header"]["revision"]
            .as_i64()
            .unwrap_or_else(|| panic!("no revision in {v}"))
    }

    /// Compacts (physically) up to the current revision, so a watch from an
    /// older one fails with "compacted"; returns that revision.
    pub fn compact_now(&self) -> i64 {
        let rev = self.revision();
        self.ctl(&["compaction", "--physical", &rev.to_string()]);
        rev
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        // Each member's Proc kills it (and prints its log when panicking)
        // before the data dir goes.
        for m in &mut self.members {
            drop(m.proc.take());
        }
    }
}
