//! The commit `--version` names: `CNI_MULTI_COMMIT` when set (a build from a
//! source tarball may pass it), else this repository's HEAD from git, else
//! `unknown` (no `.git`, as in a package built from a tarball).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=CNI_MULTI_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    // `make build` links with it: a regenerated layout must relink the binary.
    println!("cargo:rerun-if-changed=bench/hot-text.ld");
    let commit = match std::env::var("CNI_MULTI_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => head().unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=CNI_MULTI_COMMIT={commit}");
}

/// HEAD of the repository this crate is the top of (not of one it was
/// unpacked into), and a rebuild whenever HEAD moves.
fn head() -> Option<String> {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let top = git(&["-C", &manifest, "rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != Path::new(&manifest).canonicalize().ok()? {
        return None;
    }
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["-C", &manifest, "symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["-C", &manifest, "rev-parse", "--git-path", &name]) {
            let path = Path::new(&manifest).join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    git(&["-C", &manifest, "rev-parse", "--short=12", "HEAD"])
}
