//! `cni-multi install`: puts this binary and one link per plugin into a CNI
//! bin directory atomically, keeps what it replaces, and puts it back with
//! `--rollback` (the last install) or `--uninstall` (everything).

mod disk;
mod plan;

use crate::plugins::PLUGINS;
use anyhow::{Context, Result};
use clap::Parser;
use disk::Dir;
use plan::{BINARY, Observed, Restore, State, Step, Was};
use std::ffi::OsString;
use std::path::PathBuf;

/// Install cni-multi and its plugin links into a CNI bin directory.
#[derive(Debug, Parser)]
#[command(name = "cni-multi install", version, about, long_about = None)]
struct Cli {
    /// The directory runtimes find plugins in (CNI_PATH)
    #[arg(long, value_name = "DIR", default_value = "/opt/cni/bin")]
    dir: PathBuf,
    /// Print what would change and change nothing
    #[arg(long)]
    dry_run: bool,
    /// Replace files cni-multi did not install (each is kept for --rollback)
    #[arg(long)]
    force: bool,
    /// Put the directory back as it was before the last install that changed something
    #[arg(long, conflicts_with_all = ["force", "uninstall"])]
    rollback: bool,
    /// Remove what cni-multi installed and restore what it replaced
    #[arg(long, conflicts_with = "force")]
    uninstall: bool,
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
    let _lock = if cli.dir.is_dir() {
        Some(dir.lock()?)
    } else {
        None
    };
    let bytes = disk::own_binary()?;
    let me = crate::digest::sha512_hex(&bytes);
    let state = dir.read_state()?;
    if cli.rollback || cli.uninstall {
        return restore(&dir, cli, state, &me);
    }
    install(&dir, cli, state, &bytes, &me)
}

/// Every name install manages, the binary first.
fn names() -> Vec<String> {
    let mut names: Vec<String> = std::iter::once(BINARY)
        .chain(PLUGINS.iter().map(|p| p.name))
        .map(str::to_string)
        .filter(|n| plan::valid_name(n))
        .collect();
    plan::binary_first(&mut names);
    names
}

fn install(dir: &Dir, cli: &Cli, mut state: State, bytes: &[u8], me: &str) -> Result<i32> {
    let mut steps = Vec::new();
    for name in names() {
        let now = dir.observe(&name)?;
        let step = plan::plan_install(&name, &now, me, state.owned.contains_key(&name), cli.force);
        steps.push((name, now, step));
    }
    for (name, _, step) in &steps {
        println!("{name}: {}", step.describe());
    }
    let kept = steps.iter().filter(|s| s.2 == Step::KeptForeign).count();
    if kept > 0 {
        eprintln!(
            "cni-multi install: {kept} names hold files cni-multi did not install; --force replaces them (kept for --rollback)"
        );
    }
    if !steps.iter().any(|s| s.2.changes()) {
        println!(
            "cni-multi install: nothing to change in {}",
            dir.path.display()
        );
        return Ok(if cli.dry_run { 0 } else { verify(dir) });
    }
    if cli.dry_run {
        return Ok(0);
    }
    journal(dir, &mut state, &steps, me)?;
    apply(dir, &state, &steps, bytes)?;
    dir.sync()?;
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
    state.last.clear();
    dir.prune_backups(state)?;
    let mut taken = Vec::new();
    for (name, now, _) in steps.iter().filter(|s| s.2.changes()) {
        let backup = match now {
            Observed::File(_) => Some(dir.free_backup_name(name, &taken)),
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

fn apply(dir: &Dir, state: &State, steps: &[(String, Observed, Step)], bytes: &[u8]) -> Result<()> {
    for (name, _, _) in steps.iter().filter(|s| s.2.changes()) {
        if let Some(Was::File(backup)) = state.last.get(name).map(|u| &u.was) {
            dir.keep(name, backup)?;
        }
        if name == BINARY {
            dir.put_file(name, bytes)?;
        } else {
            dir.put_link(name, BINARY)?;
        }
    }
    Ok(())
}

/// Every plugin name in the directory answers VERSION; 0 when all do.
fn verify(dir: &Dir) -> i32 {
    let mut failed = 0;
    for name in names().iter().filter(|n| *n != BINARY) {
        let path = dir.name(name);
        if fs_err::symlink_metadata(&path).is_err() {
            continue;
        }
        if let Err(why) = disk::answers_version(&path) {
            eprintln!("cni-multi install: {}: {why:#}", path.display());
            failed += 1;
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
            anyhow::bail!("state file names {bad:?}, not a file name");
        }
        let now = dir.observe(&name)?;
        let step = plan::plan_restore(&name, &now, &was, &state, me);
        println!("{name}: {}", step.describe());
        steps.push((name, step));
    }
    if cli.dry_run {
        return Ok(0);
    }
    // Restores first, then links go, the binary last.
    steps.sort_by_key(|(n, s)| (*s == Restore::Remove, n == BINARY));
    let mut lost = 0;
    for (name, step) in &steps {
        match step {
            Restore::File(b) if dir.has_backup(b) => dir.restore_file(name, b)?,
            Restore::File(b) => {
                eprintln!(
                    "cni-multi install: cannot restore {name}: its backup {b} is gone; {name} \
                     is left as it is"
                );
                lost += 1;
            }
            Restore::Link(t) => dir.put_link(name, t)?,
            Restore::Remove => dir.remove(name)?,
            Restore::Nothing | Restore::KeptChanged => {}
        }
    }
    dir.sync()?;
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
