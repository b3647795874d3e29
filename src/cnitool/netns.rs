//! `cnitool netns`: named network namespaces (`ip netns` compatible) without
//! the ip binary: add, del (warning about attachments still cached in the
//! namespace, which is how pods leak), list, and exec.

use super::NetnsCmd;
use crate::netns::vantage::{self, Seen};
use crate::netns::{self as ns, NetNs, named};
use crate::quote::quoted;
use anyhow::{Context, Result, anyhow, bail};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Runs one `netns` subcommand; `cache_dirs` gives the result caches whose
/// attachments `del` warns about.
pub fn run(
    action: &NetnsCmd,
    dir: &Path,
    cache_dirs: impl FnOnce() -> Vec<PathBuf>,
) -> Result<String> {
    Ok(match action {
        NetnsCmd::Add { name } => add(dir, name)?,
        NetnsCmd::Del { name } => {
            warn_attachments(dir, name, &cache_dirs());
            named::delete(dir, name)?;
            String::new()
        }
        NetnsCmd::List => named::list(dir)?.join("\n"),
        NetnsCmd::Exec { name, command } => exec(dir, name, command)?,
    })
}

fn add(dir: &Path, name: &str) -> Result<String> {
    match named::create(dir, name) {
        Ok(path) => Ok(path.display().to_string()),
        Err(ns::Error::File(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => bail!(
            "namespace {} already exists ({}); `cnitool netns del {name}` removes it",
            crate::quote::quoted(name),
            dir.join(name).display()
        ),
        Err(e) => Err(e.into()),
    }
}

/// Says on stderr which cached attachments still name the namespace: once
/// it is gone no DEL can reach inside it, and what their plugins hold on the
/// host (addresses, rules, host interfaces) stays until a DEL runs.
fn warn_attachments(dir: &Path, name: &str, caches: &[PathBuf]) {
    if !crate::cni::env::is_valid_name(name) {
        return;
    }
    let attached = super::attachments::in_netns(caches, &dir.join(name));
    if attached.is_empty() {
        return;
    }
    let mut text = format!(
        "cnitool: warning: namespace {name} still has {} cached attachment(s), whose DEL \
         never ran; once the namespace is gone, what their plugins hold on the host \
         (addresses, rules, host interfaces) stays until a DEL runs:",
        attached.len(),
        name = quoted(&name)
    );
    for (what, file) in &attached {
        text.push_str(&format!("\n  {what} ({file})"));
    }
    if let [net, id, _] = attached[0].0.split(' ').collect::<Vec<_>>()[..] {
        text.push_str(&format!(
            "\n`cnitool del --container-id {id} {net}` (for each), or `cnitool doctor --fix`"
        ));
    }
    eprintln!("{text}");
}

/// Runs `command` (no shell) in the namespace `<dir>/<name>`, with /sys
/// showing that namespace's devices as `ip netns exec` does (a mount
/// namespace of its own). Returns only on failure.
fn exec(dir: &Path, name: &str, command: &[OsString]) -> Result<String> {
    if !crate::cni::env::is_valid_name(name) {
        bail!("invalid namespace name {name}", name = quoted(&name));
    }
    let path = dir.join(name);
    match vantage::seen(&path).with_context(|| format!("failed to stat {}", path.display()))? {
        Seen::Namespace => {}
        Seen::Missing => bail!(
            "no namespace {name} in {}",
            dir.display(),
            name = quoted(&name)
        ),
        Seen::NotNamespace => bail!("{} is not a network namespace", path.display()),
    }
    let (program, args) = command
        .split_first()
        .ok_or_else(|| anyhow!("netns exec {name}: no command given"))?;
    let target = NetNs::open(&path)?;
    let failed = target.run(|| {
        own_sysfs()?;
        Err::<(), _>(std::process::Command::new(program).args(args).exec())
            .with_context(|| format!("failed to run {}", program.to_string_lossy()))
    })?;
    failed.map(|()| String::new())
}

/// A mount namespace of this process's own, where /sys is a sysfs of the
/// network namespace it is in now (read-only when the host's is).
fn own_sysfs() -> Result<()> {
    let io = |what: &str, e: nix::Error| anyhow!("netns exec: failed to {what}: {e}");
    let read_only = nix::sys::statvfs::statvfs("/sys")
        .map(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
        .unwrap_or(false);
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(|e| io("unshare a mount namespace", e))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_SLAVE | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| io("make / a slave mount", e))?;
    match umount2("/sys", MntFlags::MNT_DETACH) {
        Ok(()) | Err(nix::Error::EINVAL) => {}
        Err(e) => return Err(io("unmount /sys", e)),
    }
    let flags = if read_only {
        MsFlags::MS_RDONLY
    } else {
        MsFlags::empty()
    };
    mount(Some("sysfs"), "/sys", Some("sysfs"), flags, None::<&str>)
        .map_err(|e| io("mount sysfs on /sys", e))
}
