//! `cnitool doctor`: CNI state on this node that belongs to no live
//! attachment, whichever implementation made it, and live attachments'
//! state that is missing. Read `engine` first: it judges what each kind lists
//! and runs every fix; `--fix` runs the DELs of dead attachments first.

mod cache;
mod chains;
mod data_files;
mod devinfo;
mod dhcp;
mod engine;
mod firewall;
pub(super) mod hostview;
mod ipam;
pub(crate) mod kinds;
mod links;
mod macspoofchk;
mod masq;
mod multus;
pub(super) mod namespaces;
pub(super) mod node;
mod plugin_dirs;
mod portmap;
mod repair;
mod report;
mod tmp;
mod watch;

use super::Settings;
use anyhow::Result;
use clap::Args;
use engine::Named;
use node::Node;
use serde::Serialize;
use std::time::{Duration, SystemTime};

pub use report::{columns, table, to_json};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Clean up what is found (DEL of dead attachments, stale reservations)
    #[arg(long)]
    fix: bool,
    /// Leave state younger than this alone (an ADD may be in flight)
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    min_age: u64,
    /// Repair a live attachment only once its state was seen missing this
    /// long with its cache entry unchanged (a DEL may be under way)
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    repair_after: u64,
    /// Run again this long after each run ends, until stopped (for a
    /// container; exit 2 when the node cannot be inspected)
    #[arg(long, value_name = "SECONDS", conflicts_with = "on_firewalld_reload")]
    every: Option<u64>,
    /// Print {"findings": [...]} instead of a table
    #[arg(long)]
    json: bool,
    /// Keep running: run again after each firewalld reload (exit 3 when the
    /// system bus cannot be subscribed to or goes away)
    #[arg(long, requires = "fix")]
    on_firewalld_reload: bool,
}

/// What lists the findings of one kind of state.
type Find = fn(&Node, &mut Vec<Finding>) -> Result<()>;

/// Every kind, in the order findings are listed and fixed (dead attachments
/// first; stale veths before the IFBs their filters feed).
const KINDS: &[Find] = &[
    cache::find,
    ipam::find,
    dhcp::find,
    masq::find,
    portmap::find,
    portmap::find_nft,
    firewall::find,
    firewall::find_nft,
    firewall::find_firewalld,
    macspoofchk::find,
    links::find_veths,
    links::find_ifbs,
    data_files::find_tuning,
    data_files::find_flannel,
    data_files::find_records,
    tmp::find,
    multus::find,
    devinfo::find,
    repair::find,
    plugin_dirs::find,
];

/// Removes (or repairs) one finding's object; true when it is gone (or right) now.
type Fix = Box<dyn Fn(&Node) -> Result<bool>>;

/// One piece of state that belongs to no live attachment (or a live
/// attachment's state that is missing).
#[derive(Serialize)]
pub struct Finding {
    pub kind: &'static str,
    pub network: String,
    #[serde(rename = "containerId")]
    pub container_id: String,
    pub ifname: String,
    /// The state: a file, a chain, a rule, a link.
    pub object: String,
    /// What --fix does (or did).
    pub action: String,
    pub fixed: bool,
    #[serde(skip)]
    fix: Option<Fix>,
}

impl Finding {
    pub fn new(kind: &'static str, names: &Named, object: &str, action: &str) -> Finding {
        Finding {
            kind,
            network: names.network.clone(),
            container_id: names.container_id.clone(),
            ifname: names.ifname.clone(),
            object: object.into(),
            action: action.into(),
            fixed: false,
            fix: None,
        }
    }

    pub fn fix(mut self, f: impl Fn(&Node) -> Result<bool> + 'static) -> Finding {
        self.fix = Some(Box::new(f));
        self
    }
}

/// Runs the doctor; the exit status: 0 nothing (left) to fix, 1 findings
/// remain, 2 the node could not be inspected.
pub(super) fn main(opts: &super::Options, settings: Result<Settings>, args: &DoctorArgs) -> i32 {
    let settings = match given_dirs_exist(opts).and(settings) {
        Ok(s) => s,
        Err(e) => return cannot_inspect(&e),
    };
    if args.on_firewalld_reload {
        return watch::main(&settings, args);
    }
    if let Some(every) = args.every {
        loop {
            if run(&settings, args) == 2 {
                return 2;
            }
            std::thread::sleep(Duration::from_secs(every));
        }
    }
    run(&settings, args)
}

/// One inspection (and repair), its findings printed; the exit status.
fn run(s: &Settings, args: &DoctorArgs) -> i32 {
    let min_age = Duration::from_secs(args.min_age);
    let inspected = (|| {
        let mut node = Node::inspect(&s.conf_dir, s.runtime.clone(), min_age, SystemTime::now())?;
        node.repair_after = Duration::from_secs(args.repair_after);
        let mut findings = Vec::new();
        for find in KINDS {
            find(&node, &mut findings)?;
        }
        anyhow::Ok((node, findings))
    })();
    let (node, mut findings) = match inspected {
        Ok(x) => x,
        Err(e) => return cannot_inspect(&e),
    };
    node.judged();
    if args.fix {
        fix_all(&node, &mut findings);
    }
    if let Err(e) = node.save_sightings() {
        eprintln!("cnitool doctor: {}", super::report(&e));
    }
    if args.json {
        println!("{}", to_json(&findings));
    } else {
        println!("{}", table(&findings));
        if node.young() > 0 {
            println!(
                "{} object(s) younger than --min-age ({} s) left alone: an ADD or DEL may be in flight",
                node.young(),
                args.min_age
            );
        }
    }
    i32::from(findings.iter().any(|f| !f.fixed))
}

/// A directory named on the command line must be there: a mistyped
/// `--cache-dir` would otherwise read as a node with no state at all. The
/// defaults (and the environment, which the units set) may be absent, as
/// on a node that never ran a pod.
fn given_dirs_exist(opts: &super::Options) -> Result<()> {
    let cni_path = opts.cni_path.as_deref().unwrap_or_default();
    let given = opts
        .conf_dir
        .as_deref()
        .map(|d| ("--conf-dir", d))
        .into_iter()
        .chain(opts.cache_dir.iter().map(|d| ("--cache-dir", d.as_path())))
        .chain(
            cni_path
                .split(':')
                .filter(|d| !d.is_empty())
                .map(|d| ("--cni-path", std::path::Path::new(d))),
        );
    for (flag, dir) in given {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => anyhow::bail!("{flag} {}: not a directory", dir.display()),
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!("{flag} {}", dir.display())));
            }
        }
    }
    Ok(())
}

/// Says why the node cannot be inspected; the exit status for it.
fn cannot_inspect(e: &anyhow::Error) -> i32 {
    eprintln!(
        "cnitool doctor: cannot inspect the node: {}",
        super::report(e)
    );
    2
}

/// The dead attachments' DELs first, then the rest in order; repairs after
/// their second look.
fn fix_all(node: &Node, findings: &mut [Finding]) {
    let wait = node.repair_wait();
    if !wait.is_zero() && findings.iter().any(|f| f.kind == repair::KIND) {
        std::thread::sleep(wait);
    }
    let (first, rest): (Vec<_>, Vec<_>) = findings.iter_mut().partition(|f| f.kind == cache::KIND);
    for f in first.into_iter().chain(rest) {
        let Some(fix) = &f.fix else {
            continue;
        };
        match fix(node) {
            Ok(done) => f.fixed = done,
            Err(e) => eprintln!(
                "cnitool doctor: failed to fix {} {}: {}",
                f.kind,
                f.object,
                super::report(&e)
            ),
        }
    }
}
