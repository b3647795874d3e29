//! The doctor row: `cnitool doctor --json --min-age 0`, then the same with
//! `--fix`, on a node of N live and N/10 dead attachments. The node is real
//! and made as a runtime makes one: pinned network namespaces, one
//! masquerading bridge with host-local and portmap, every attachment made by
//! a cnitool ADD; an attachment dies as a pod does when its runtime forgets
//! the DEL: its namespace goes, its cache entry, reservation, rules stay.
//! Runs in the bench's own network and mount namespace (bench/run.sh), so the
//! rules, links and mounts it makes are gone when the bench ends.

use crate::{Res, concurrent, date, machine, mappings, ms, progress, reservations};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The row's network, bridge and subnet: apart from every other section's.
const NET: &str = "doctor";
const BRIDGE: &str = "bench-br11";
const SUBNET: &str = "10.113.0.0/16";
/// First host port of the attachments' mappings (the other sections publish
/// ports below 31000).
const FIRST_PORT: usize = 40000;
/// Calls run at once while the node is built: its build is not measured, and
/// a few at a time keep both cores busy without a thousand processes at once.
const WIDTH: usize = 8;
/// How long the kernel may take to tear down the dead pods' namespaces.
const TEARDOWN: Duration = Duration::from_secs(60);

/// The report's keys for the two doctors a row can be measured with.
pub const UNDER_TEST: &str = "under test";
pub const OTHER: &str = "BENCH_DOCTOR_BIN";

/// The node the row is measured on. Dropping it ends its namespaces and
/// removes its files, also when the row fails halfway.
struct Node {
    dir: PathBuf,
    pinned: PathBuf,
    conf: PathBuf,
    cache: PathBuf,
    store: PathBuf,
}

impl Node {
    fn new(work: &Path) -> Res<Node> {
        let dir = work.join("doctor");
        let node = Node {
            pinned: dir.join("pinned"),
            conf: dir.join("conf"),
            cache: dir.join("cache"),
            store: dir.join("store"),
            dir,
        };
        for d in [&node.pinned, &node.conf, &node.cache, &node.store] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        // Every dataDir in the row's own directory: the doctor reads (and with
        // --fix cleans) the dataDirs of the configured plugins, and the
        // defaults are the host's (/run/cni/portmap).
        let conf = json!({
            "cniVersion": "1.0.0", "name": NET,
            "plugins": [
                {"type": "bridge", "bridge": BRIDGE, "isGateway": true, "ipMasq": true,
                 "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": node.store}},
                {"type": "portmap", "capabilities": {"portMappings": true},
                 "dataDir": node.dir.join("portmap")}
            ]
        });
        let path = node.conf.join("doctor.conflist");
        std::fs::write(&path, conf.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(node)
    }

    /// `cnitool netns --dir <pinned> VERB NAME` for each name, WIDTH at once.
    fn netns(&self, bin: &Path, verb: &str, names: &[String]) -> Res<()> {
        batches(
            names.iter().map(|name| {
                let mut cmd = Command::new(bin);
                cmd.args(["cnitool", "netns", "--dir"])
                    .arg(&self.pinned)
                    .args([verb, name]);
                cmd
            }),
            &format!("netns {verb}"),
        )
    }

    fn path(&self, name: &str) -> PathBuf {
        self.pinned.join(name)
    }

    /// The attachments in the result cache.
    fn cached(&self) -> usize {
        std::fs::read_dir(self.cache.join("results")).map_or(0, |d| d.flatten().count())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // The first `netns add` made the pin directory a bind mount of
        // itself; one lazy unmount of it detaches every pin under it, so the
        // live pods' namespaces end without a thousand `netns del`s. Their
        // rules and the bridge's ports go with the bench's own namespace.
        let _ = nix::mount::umount2(&self.pinned, nix::mount::MntFlags::MNT_DETACH);
        let _ = Command::new("ip")
            .args(["link", "del", BRIDGE])
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the commands WIDTH at a time (`concurrent`); an error if one failed.
fn batches(cmds: impl Iterator<Item = Command>, what: &str) -> Res<()> {
    let mut cmds = cmds.map(|mut cmd| {
        cmd.stderr(Stdio::piped());
        cmd
    });
    loop {
        let batch: Vec<Command> = cmds.by_ref().take(WIDTH).collect();
        if batch.is_empty() {
            return Ok(());
        }
        concurrent(batch.into_iter().map(|cmd| (cmd, "")), what)?;
    }
}

/// The ports of the row's bridge: one per live pod, once the kernel has torn
/// down the namespaces of the dead.
fn ports() -> Res<usize> {
    let out = Command::new("ip")
        .args(["-o", "link", "show", "master", BRIDGE])
        .output()
        .map_err(|e| format!("ip link: {e}"))?;
    if !out.status.success() {
        return Err(format!("ip link: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().count())
}

/// Waits until `count` ports are left on the row's bridge.
fn wait_ports(count: usize) -> Res<()> {
    let since = Instant::now();
    loop {
        let now = ports()?;
        if now == count {
            return Ok(());
        }
        if since.elapsed() > TEARDOWN {
            return Err(format!(
                "doctor: {now} ports on {BRIDGE} {TEARDOWN:?} after their namespaces went, not {count}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One doctor run, timed: its wall time (ms) and findings.
fn doctor(node: &Node, bin: &Path, plugins: &Path, fix: bool) -> Res<(f64, Vec<Value>)> {
    let mut cmd = Command::new(bin);
    cmd.arg("cnitool")
        .arg("--cache-dir")
        .arg(&node.cache)
        .args(["doctor", "--json", "--min-age", "0"]);
    if fix {
        cmd.arg("--fix");
    }
    cmd.env("NETCONFPATH", &node.conf)
        .env("CNI_PATH", plugins)
        .stdin(Stdio::null());
    let what = if fix { "doctor --fix" } else { "doctor" };
    let start = Instant::now();
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    let wall = ms(start.elapsed());
    // Exit 1 says only that findings remain (always, without --fix); 2 is a
    // node the doctor could not inspect.
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!(
            "{what} exited {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let report: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{what} --json: {e}"))?;
    let findings = report["findings"]
        .as_array()
        .ok_or(format!("{what} --json: no findings list"))?;
    Ok((wall, findings.clone()))
}

/// How many findings, how many fixed, how many of each kind.
fn summary(findings: &[Value]) -> Value {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for f in findings {
        *kinds.entry(f["kind"].as_str().unwrap_or("?")).or_default() += 1;
    }
    let fixed = findings.iter().filter(|f| f["fixed"] == true).count();
    json!({"findings": findings.len(), "fixed": fixed, "by_kind": kinds})
}

/// The row for the doctor of `doctor_bin` (its plugins: the symlinks in
/// `doctor_plugins`, run in its own process as on a node where it is
/// installed) on a node of `live` + `dead` attachments that `bin`'s plugins
/// (`plugins`) made.
pub fn row(
    (bin, plugins): (&Path, &Path),
    (doctor_bin, doctor_plugins): (&Path, &Path),
    work: &Path,
    live: usize,
    dead: usize,
) -> Res<Value> {
    let node = Node::new(work)?;
    let total = live + dead;
    let names: Vec<String> = (0..total).map(|i| format!("doctor{i}")).collect();
    let start = Instant::now();
    progress(&format!("  doctor: {total} pinned namespaces"));
    // The first alone: it makes the directory a shared bind mount of itself,
    // and two first ones at once would stack two.
    let (first, rest) = names.split_at(1);
    node.netns(bin, "add", first)?;
    node.netns(bin, "add", rest)?;
    let add = |names: &[String], first_port: usize| {
        batches(
            names.iter().enumerate().map(|(i, name)| {
                let mut cmd = Command::new(bin);
                cmd.arg("cnitool")
                    .arg("--cache-dir")
                    .arg(&node.cache)
                    .arg("add")
                    .arg(NET)
                    .arg(node.path(name))
                    .env("NETCONFPATH", &node.conf)
                    .env("CNI_PATH", plugins)
                    // A TCP port of its own, as a pod publishing one.
                    .env("CAP_ARGS", mappings(first_port + i, false).to_string());
                cmd
            }),
            "doctor ADD",
        )
    };
    // A Linux bridge takes 1,024 ports at most: the pods that die are added
    // first and are gone before the live ones come, as pods that died earlier.
    let (dying, living) = names.split_at(dead);
    progress(&format!(
        "  doctor: {dead} ADDs, then their namespaces deleted, then {live} ADDs ({WIDTH} at a time)"
    ));
    add(dying, FIRST_PORT)?;
    node.netns(bin, "del", dying)?;
    // The kernel tears a namespace down after its last reference goes,
    // taking the pod's veth off the bridge; the doctor is timed on a node
    // where that is over, as when a timer finds a pod that died minutes ago.
    wait_ports(0)?;
    add(living, FIRST_PORT + dead)?;
    if node.cached() != total || ports()? != live {
        return Err(format!(
            "doctor: {} attachments cached and {} ports on {BRIDGE} after {total} ADDs, {dead} pods gone",
            node.cached(),
            ports()?
        ));
    }
    let build_s = start.elapsed().as_secs_f64();
    progress(&format!(
        "  doctor: {live} live, {dead} dead, built in {build_s:.0} s; doctor of {}",
        doctor_bin.display()
    ));
    let (plain_ms, plain) = doctor(&node, doctor_bin, doctor_plugins, false)?;
    let (fix_ms, fixed) = doctor(&node, doctor_bin, doctor_plugins, true)?;
    // Not timed: what a plain run still finds after the fix, and what the
    // fix left of the live pods' state, so a fix that cleaned too little or
    // too much shows in the row.
    let (_, after) = doctor(&node, doctor_bin, doctor_plugins, false)?;
    let mut plain = summary(&plain);
    plain["wall_ms"] = json!(plain_ms);
    let mut fix = summary(&fixed);
    fix["wall_ms"] = json!(fix_ms);
    let entry = json!({
        "bin": doctor_bin, "live": live, "dead": dead, "date": date(), "machine": machine(),
        "build_s": build_s, "plain": plain, "fix": fix, "after_fix": summary(&after),
        "cached_after_fix": node.cached(),
        "reservations_after_fix": reservations(&node.store.join(NET)),
    });
    progress(&format!("{entry}"));
    Ok(entry)
}

/// One cell of the table, from one doctor's entry.
type Cell = fn(&Value) -> String;

/// The "Doctor" table: a column for each doctor measured (the binary under
/// test, then BENCH_DOCTOR_BIN's), each on its own node.
pub fn markdown(doctor: &Value) -> String {
    let cols: Vec<(&str, &Value)> = [UNDER_TEST, OTHER]
        .into_iter()
        .filter_map(|k| doctor.get(k).map(|v| (k, v)))
        .collect();
    if cols.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n### Doctor\n\n");
    let first = cols[0].1;
    s.push_str(&format!(
        "`cni-multi cnitool doctor --json --min-age 0`, then the same with `--fix`, on a node of \
         {} live and {} dead attachments (one bridge(ipMasq)+host-local+portmap network, a TCP \
         port each; a dead one's namespace is gone, its state is left).\n\n",
        first["live"], first["dead"]
    ));
    s.push_str("| Measure |");
    for (key, _) in &cols {
        s.push_str(&format!(" {key} |"));
    }
    s.push_str(&format!("\n|{}\n", " --- |".repeat(cols.len() + 1)));
    let rows: [(&str, Cell); 10] = [
        ("doctor binary", |e| {
            format!("`{}`", e["bin"].as_str().unwrap_or(""))
        }),
        ("node: live + dead attachments", |e| {
            format!("{} + {}", e["live"], e["dead"])
        }),
        ("doctor: wall time", |e| wall(&e["plain"])),
        ("doctor: findings", |e| found(&e["plain"])),
        ("doctor --fix: wall time", |e| wall(&e["fix"])),
        ("doctor --fix: findings", |e| found(&e["fix"])),
        ("doctor --fix: findings fixed", |e| {
            e["fix"]["fixed"].to_string()
        }),
        ("findings of a plain run after --fix", |e| {
            found(&e["after_fix"])
        }),
        ("cached attachments / reservations after --fix", |e| {
            format!(
                "{} / {}",
                e["cached_after_fix"], e["reservations_after_fix"]
            )
        }),
        ("measured", |e| e["date"].as_str().unwrap_or("").to_string()),
    ];
    for (label, cell) in rows {
        s.push_str(&format!("| {label} |"));
        for (_, entry) in &cols {
            s.push_str(&format!(" {} |", cell(entry)));
        }
        s.push('\n');
    }
    s
}

fn wall(run: &Value) -> String {
    format!("{:.2} ms", run["wall_ms"].as_f64().unwrap_or(0.0))
}

/// A run's findings, with their count of each kind.
fn found(run: &Value) -> String {
    let kinds: Vec<String> = run["by_kind"]
        .as_object()
        .map(|m| m.iter().map(|(k, n)| format!("{k} {n}")).collect())
        .unwrap_or_default();
    if kinds.is_empty() {
        format!("{}", run["findings"])
    } else {
        format!("{} ({})", run["findings"], kinds.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_a_column_per_doctor_under_test_first() {
        let run = |n: usize| {
            let findings: Vec<Value> = (0..n)
                .map(|i| json!({"kind": if i % 2 == 0 { "cache" } else { "ipam" }, "fixed": true}))
                .collect();
            summary(&findings)
        };
        let entry = |bin: &str| {
            json!({"bin": bin, "live": 10, "dead": 1, "date": "d", "plain": run(2), "fix": run(2),
                   "after_fix": run(0), "cached_after_fix": 10, "reservations_after_fix": 10})
        };
        let md = markdown(&json!({OTHER: entry("/old"), UNDER_TEST: entry("/new")}));
        assert!(
            md.contains("| Measure | under test | BENCH_DOCTOR_BIN |"),
            "{md}"
        );
        assert!(md.contains("| doctor binary | `/new` | `/old` |"), "{md}");
        assert!(
            md.contains("| doctor --fix: findings | 2 (cache 1, ipam 1) |"),
            "{md}"
        );
        assert!(
            md.contains("| doctor --fix: findings fixed | 2 | 2 |"),
            "{md}"
        );
        assert!(md.contains("| findings of a plain run after --fix | 0 | 0 |"));
        assert_eq!(markdown(&Value::Null), "");
    }
}
