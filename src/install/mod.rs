//! `cni-multi install`: puts this binary and one stub per plugin (see
//! `plugins::stub`) into a CNI bin directory atomically, keeps what it
//! replaces, and puts it back with `--rollback` (the last install) or
//! `--uninstall` (everything).

mod conf;
mod disk;
mod plan;
mod report;

use crate::plugins::PLUGINS;
use crate::quote::quoted;
use anyhow::{Context, Result};
use clap::Parser;
use disk::Dir;
use plan::{BINARY, Held, Layout, Observed, Restore, State, Step, Was};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Install cni-multi and a stub per plugin into a CNI bin directory.
#[derive(Debug, Parser)]
// A later option wins, so a container's args can override its entrypoint's.
#[command(name = "cni-multi install", about, long_about = None, args_override_self = true)]
#[command(version = crate::cni::version::BUILD, long_version = crate::cni::version::LONG)]
struct Cli {
    /// The directory runtimes find plugins in (CNI_PATH)
    #[arg(long, value_name = "DIR", default_value = "/opt/cni/bin")]
    dir: PathBuf,
    /// Print what would change and change nothing (reads only: runs as
    /// any user who can read DIR)
    #[arg(long)]
    dry_run: bool,
    /// Print each name and what happens to it, not only the summary line
    #[arg(long, short = 'v')]
    verbose: bool,
    /// Replace files cni-multi did not install (each is kept for --rollback)
    #[arg(long)]
    force: bool,
    /// Where runtimes find DIR, when this process sees it elsewhere (an
    /// installer container with the node's directory mounted): stubs run
    /// HOST_DIR/cni-multi
    #[arg(long, value_name = "HOST_DIR")]
    host_dir: Option<PathBuf>,
    /// Plugin names as symbolic links instead of stubs: no disk blocks, but a
    /// copy over one name writes into the binary every name runs (read-only
    /// images only)
    #[arg(long)]
    links: bool,
    /// Names other installers own (comma-separated, e.g. flannel,multus):
    /// installed when free, never replaced, not reported as clobbered
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    leave: Vec<String>,
    /// Also install the network configurations (*.conflist, *.conf, *.json)
    /// of this directory into --conf-dir, each checked first; a missing or
    /// empty directory installs none
    #[arg(long, value_name = "DIR")]
    conf_from: Option<PathBuf>,
    /// Where --conf-from's configurations go
    #[arg(long, value_name = "DIR", default_value = "/etc/cni/net.d")]
    conf_dir: PathBuf,
    /// Put the directory back as it was before the last install that changed something
    #[arg(long, conflicts_with_all = ["force", "uninstall"])]
    rollback: bool,
    /// Remove what cni-multi installed and restore what it replaced
    #[arg(long, conflicts_with = "force")]
    uninstall: bool,
}

/// install's command line, for completion and the manual page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().name("install")
}

/// Runs `cni-multi install` with these arguments (the first is the program).
pub fn main(args: Vec<OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cni-multi install: {e:#}");
            1
        }
    }
}

fn run(cli: &Cli) -> Result<i32> {
    let dir = Dir {
        path: cli.dir.clone(),
    };
    if !cli.dry_run {
        crate::files::create_dir_mode(&dir.path, 0o755)?;
    }
    // A dry run reads only: a directory it cannot lock is planned unlocked.
    let _lock = if !cli.dir.is_dir() {
        None
    } else if cli.dry_run {
        dir.lock().ok()
    } else {
        Some(dir.lock()?)
    };
    if !cli.dry_run && _lock.is_some() {
        dir.clear_leftovers(&names())?;
    }
    let bytes = disk::own_binary()?;
    let me = crate::digest::sha512_hex(&bytes);
    let state = read_state(&dir, cli)?;
    if cli.rollback || cli.uninstall {
        return restore(&dir, cli, state, &me);
    }
    let layout = layout(cli)?;
    let code = install(&dir, cli, state, &bytes, &me, &layout)?;
    // Networks only once their plugins answer: a config naming a broken
    // plugin would fail every pod instead of none.
    match &cli.conf_from {
        Some(from) if code == 0 => conf::install(from, &cli.conf_dir, cli.dry_run, cli.verbose)?,
        Some(from) => eprintln!(
            "cni-multi install: the configurations of {} are not installed",
            from.display()
        ),
        None => {}
    }
    Ok(code)
}

/// The state file. A dry run by a user who may not read it (it is root's,
/// 0600) plans as if none were recorded, and says so: names install holds
/// but another installer overwrote then read as foreign.
fn read_state(dir: &Dir, cli: &Cli) -> Result<State> {
    match dir.read_state() {
        Err(e) if cli.dry_run && !cli.rollback && !cli.uninstall && denied(&e) => {
            eprintln!(
                "cni-multi install: cannot read what the last install recorded ({e:#}); \
                 planned without it (run as root for the exact plan)"
            );
            Ok(State::default())
        }
        other => other,
    }
}

fn denied(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    })
}

/// Stubs running the binary where runtimes will find it, or links.
fn layout(cli: &Cli) -> Result<Layout> {
    if cli.links {
        return Ok(Layout::Links);
    }
    let host = match &cli.host_dir {
        Some(h) => h.clone(),
        None => std::path::absolute(&cli.dir)
            .with_context(|| format!("failed to make {} absolute", cli.dir.display()))?,
    };
    let binary = host.join(BINARY);
    let text = binary
        .to_str()
        .ok_or_else(|| anyhow::anyhow!("{} is not UTF-8", binary.display()))?;
    crate::cni::stub::text(text).map_err(|why| {
        anyhow::anyhow!(
            "cannot write plugin stubs: {why}; --host-dir names a usable path, --links makes links"
        )
    })?;
    Ok(Layout::Stubs(text.to_string()))
}

/// Every name install manages, the binary first.
fn names() -> Vec<String> {
    let mut names: Vec<String> = std::iter::once(BINARY)
        .chain(PLUGINS.iter().map(crate::plugins::Entry::name))
        .map(str::to_string)
        .filter(|n| plan::valid_name(n))
        .collect();
    plan::binary_first(&mut names);
    names
}

fn install(
    dir: &Dir,
    cli: &Cli,
    mut state: State,
    bytes: &[u8],
    me: &str,
    layout: &Layout,
) -> Result<i32> {
    let left: std::collections::BTreeSet<String> = cli.leave.iter().cloned().collect();
    let left_changed = state.left != left;
    state.left = left;
    let mut steps = Vec::new();
    for name in names() {
        let now = dir.observe(&name)?;
        let held = Held {
            owned: state.owned.contains_key(&name),
            installed: &state.binary,
            force: cli.force,
            left: cli.leave.contains(&name),
        };
        let step = plan::plan_install(&name, &now, me, layout, held);
        steps.push((name, now, step));
    }
    if cli.verbose {
        for (name, _, step) in &steps {
            println!("{name}: {}", step.describe(cli.dry_run));
        }
    }
    let named: Vec<(&str, Step)> = steps.iter().map(|s| (s.0.as_str(), s.2)).collect();
    for warning in report::not_ours(&named) {
        eprintln!("{warning}");
    }
    let planned: Vec<Step> = steps.iter().map(|s| s.2).collect();
    // Said once it is true: after the changes of a real run.
    let summary = report::install_summary(&dir.path, &planned, cli.dry_run);
    if !steps.iter().any(|s| s.2.changes()) {
        println!("{summary}");
        if cli.dry_run {
            return Ok(0);
        }
        // The doctor reads which names are left to other installers.
        if left_changed && !state.owned.is_empty() {
            dir.write_state(&state)?;
        }
        return Ok(verify(dir));
    }
    if cli.dry_run {
        println!("{summary}");
        return Ok(0);
    }
    journal(dir, &mut state, &steps, me)?;
    apply(dir, &state, &steps, bytes, layout)?;
    dir.sync()?;
    println!("{summary}");
    Ok(verify(dir))
}

/// Records the new journal (and backup names) before anything changes, so a
/// crash part way can still be rolled back.
fn journal(
    dir: &Dir,
    state: &mut State,
    steps: &[(String, Observed, Step)],
    me: &str,
) -> Result<()> {
    // A repair is not an install: it leaves the journal of the last one, so
    // `--rollback` still goes back to before that.
    let journaled = |s: &&(String, Observed, Step)| s.2.changes() && s.2 != Step::Repair;
    if steps.iter().any(|s| journaled(&s)) {
        state.last.clear();
    }
    dir.prune_backups(state)?;
    let mut taken = Vec::new();
    for (name, now, _) in steps.iter().filter(journaled) {
        let backup = match now {
            Observed::File(_) | Observed::Stub(_) => Some(dir.free_backup_name(name, &taken)),
            _ => None,
        };
        let (undo, original) = plan::record(now, state.owned.get(name), backup.as_deref());
        taken.extend(backup);
        state.last.insert(name.clone(), undo);
        state.owned.insert(name.clone(), original);
    }
    state.binary = me.to_string();
    dir.write_state(state)
}

fn apply(
    dir: &Dir,
    state: &State,
    steps: &[(String, Observed, Step)],
    bytes: &[u8],
    layout: &Layout,
) -> Result<()> {
    for (name, _, step) in steps.iter().filter(|s| s.2.changes()) {
        if *step != Step::Repair
            && let Some(Was::File(backup)) = state.last.get(name).map(|u| &u.was)
        {
            dir.keep(name, backup)?;
        }
        match layout {
            _ if name == BINARY => dir.put_file(name, bytes)?,
            Layout::Stubs(binary) => {
                let text = crate::cni::stub::text(binary)?;
                dir.put_file(name, text.as_bytes())?
            }
            Layout::Links => dir.put_link(name, BINARY)?,
        }
    }
    Ok(())
}

/// Every plugin name of ours in the directory answers VERSION; 0 when all
/// do. Stubs naming the binary elsewhere (`--host-dir`) run through this
/// directory's binary as the kernel would run them. Other installers' files
/// are run too, but only reported: they are not ours to fail on.
fn verify(dir: &Dir) -> i32 {
    let mut failed = 0;
    for name in names().iter().filter(|n| *n != BINARY) {
        let path = dir.name(name);
        let Ok(now) = dir.observe(name) else { continue };
        let run = match &now {
            Observed::Stub(b) if Path::new(b) != dir.name(BINARY) => {
                let stub = [crate::cni::stub::FLAG.as_ref(), path.as_os_str()];
                disk::answers_version(&dir.name(BINARY), &stub)
            }
            Observed::Absent | Observed::Other => continue,
            _ => disk::answers_version(&path, &[]),
        };
        let ours = now.is_plugin_form();
        match run {
            Err(why) if ours => {
                eprintln!("cni-multi install: {}: {why:#}", path.display());
                failed += 1;
            }
            Err(why) => eprintln!("cni-multi install: {} (not ours): {why:#}", path.display()),
            Ok(()) => {}
        }
    }
    if failed > 0 {
        eprintln!("cni-multi install: {failed} plugins do not answer VERSION");
        return 1;
    }
    0
}

/// `--rollback` (the journal of the last install) or `--uninstall` (every
/// name held, back to what it was before cni-multi took it).
fn restore(dir: &Dir, cli: &Cli, mut state: State, me: &str) -> Result<i32> {
    let targets: Vec<(String, Was)> = if cli.rollback {
        state
            .last
            .iter()
            .map(|(n, u)| (n.clone(), u.was.clone()))
            .collect()
    } else {
        state
            .owned
            .iter()
            .map(|(n, w)| (n.clone(), w.clone()))
            .collect()
    };
    if targets.is_empty() {
        let what = if cli.rollback {
            "no install to roll back"
        } else {
            "nothing installed"
        };
        println!("cni-multi install: {what} in {}", dir.path.display());
        return Ok(0);
    }
    let mut steps = Vec::new();
    for (name, was) in targets {
        let backup = match &was {
            Was::File(b) => Some(b.as_str()),
            _ => None,
        };
        if let Some(bad) = std::iter::once(name.as_str())
            .chain(backup)
            .find(|n| !plan::valid_name(n))
        {
            anyhow::bail!(
                "state file names {bad}, not a file name",
                bad = quoted(&bad)
            );
        }
        let now = dir.observe(&name)?;
        let step = plan::plan_restore(&name, &now, &was, &state, me);
        if cli.verbose {
            println!("{name}: {}", step.describe(cli.dry_run));
        }
        steps.push((name, step));
    }
    let summary = |done: &[Restore], lost| {
        report::restore_summary(&dir.path, done, lost, cli.rollback, cli.dry_run)
    };
    if cli.dry_run {
        let planned: Vec<Restore> = steps.iter().map(|s| s.1.clone()).collect();
        println!("{}", summary(&planned, 0));
        return Ok(0);
    }
    // Restores first, then links go, the binary last.
    steps.sort_by_key(|(n, s)| (*s == Restore::Remove, n == BINARY));
    let mut lost = 0;
    let mut done = Vec::new();
    for (name, step) in &steps {
        match step {
            Restore::File(b) if dir.has_backup(b) => dir.restore_file(name, b)?,
            Restore::File(b) => {
                eprintln!(
                    "cni-multi install: cannot restore {name}: its backup {b} is gone; {name} \
                     is left as it is"
                );
                lost += 1;
                continue;
            }
            Restore::Link(t) => dir.put_link(name, t)?,
            Restore::Remove => dir.remove(name)?,
            Restore::Nothing | Restore::KeptChanged => {}
        }
        done.push(step.clone());
    }
    dir.sync()?;
    println!("{}", summary(&done, lost));
    if lost > 0 {
        // The journal stays: what could not be restored is still recorded.
        return Ok(1);
    }
    settle(dir, &mut state, cli.rollback)?;
    Ok(0)
}

/// The state after a rollback (names taken by that install are no longer
/// held; an upgraded binary's digest is the restored one's) or an uninstall.
fn settle(dir: &Dir, state: &mut State, rollback: bool) -> Result<()> {
    if rollback {
        let last = std::mem::take(&mut state.last);
        for (name, undo) in last {
            if !undo.owned_before {
                state.owned.remove(&name);
            }
        }
        if let Observed::File(d) = dir.observe(BINARY)? {
            state.binary = d;
        }
    } else {
        *state = State::default();
    }
    dir.prune_backups(state)?;
    dir.write_state(state).context("failed to record the state")
}
