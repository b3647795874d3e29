//! `--conf-from`: network configurations shipped beside the binary (a
//! ConfigMap mounted into the installer) go into the runtime's config
//! directory, each checked as libcni would load it, then written atomically.

use anyhow::{Context, Result};
use std::path::Path;

/// Extensions libcni loads from a config directory.
const EXTENSIONS: &[&str] = &["conflist", "conf", "json"];

/// Checks every config in `from` (all, before writing any), then puts each
/// that differs into `to`. A missing or empty `from` (an optional ConfigMap
/// that is not there) installs nothing.
pub fn install(from: &Path, to: &Path, dry_run: bool, verbose: bool) -> Result<()> {
    let mut configs = Vec::new();
    for path in crate::files::files_with(from, EXTENSIONS)
        .with_context(|| format!("failed to list {}", from.display()))?
    {
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        // ConfigMap volumes hold `..data` and similar: never configs.
        if name.starts_with('.') {
            continue;
        }
        let bytes = crate::files::read_limited(&path, crate::files::MAX_FILE)
            .with_context(|| format!("failed to read {}", path.display()))?;
        let parsed = if name.ends_with(".conflist") {
            crate::libcni::conf::list_from_bytes(&bytes, &path)
        } else {
            crate::libcni::conf::conf_from_bytes(&bytes, &path)
        };
        parsed.map_err(|e| anyhow::anyhow!("{}: refused: {}", path.display(), e.msg))?;
        configs.push((name, bytes));
    }
    let total = configs.len();
    let mut changed = 0;
    for (name, bytes) in configs {
        let dest = to.join(&name);
        let same = crate::files::read_state_limited(&dest, crate::files::MAX_FILE)
            .is_ok_and(|now| now == bytes);
        if verbose {
            let what = match (same, dry_run) {
                (true, _) => "unchanged",
                (false, false) => "installed",
                (false, true) => "would install",
            };
            println!("{}: {what}", dest.display());
        }
        if same {
            continue;
        }
        changed += 1;
        if dry_run {
            continue;
        }
        crate::files::create_dir_mode(to, 0o755)?;
        crate::files::write_file_atomic(&dest, &bytes, 0o644)
            .with_context(|| format!("failed to write {}", dest.display()))?;
    }
    if total > 0 {
        println!("{}", summary(to, total, changed, dry_run));
    }
    Ok(())
}

fn summary(to: &Path, total: usize, changed: usize, dry_run: bool) -> String {
    let configs = if total == 1 {
        "1 configuration".to_string()
    } else {
        format!("{total} configurations")
    };
    match (changed, dry_run) {
        (0, _) => format!(
            "cni-multi install: {configs} in {}: nothing to change",
            to.display()
        ),
        (n, false) => format!(
            "cni-multi install: installed {configs} in {} ({n} changed)",
            to.display()
        ),
        (n, true) => format!(
            "cni-multi install: would install {configs} in {} ({n} to change)",
            to.display()
        ),
    }
}
