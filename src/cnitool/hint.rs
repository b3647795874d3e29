//! What cnitool adds to an answer where the bare one misleads: most verbs
//! need root (namespaces, links, `/var/lib/cni`) and a plugin run by a user
//! may answer only "operation not permitted" or "permission denied"; STATUS
//! below spec 1.1.0 succeeds without asking any plugin. The hints are the
//! plugins' own (`cni::hint`).

use crate::cni::hint::{self, Doing};
use crate::cni::version;
use crate::libcni::conf::NetworkList;
use crate::quote::quoted;
use nix::libc;

/// The error's text with the hint for a denial, when the text carries EPERM
/// or EACCES in any of the forms the layers and the plugins print them (std's,
/// nix's and the C library's words, a plugin's error message) and says
/// nothing to do about it yet (our plugins say it in their error's details).
/// What failed is not known here: the hint is the one for files, for a user.
pub fn with_root_hint(text: String, is_root: bool) -> String {
    if hint::says_run_as_root(&text) {
        return text;
    }
    let lower = text.to_ascii_lowercase();
    let denied = |forms: &[&str]| forms.iter().any(|f| lower.contains(f));
    let (what, errno) = if denied(&["operation not permitted", "(os error 1)", "eperm"]) {
        ("operation not permitted", libc::EPERM)
    } else if denied(&["permission denied", "(os error 13)", "eacces"]) {
        ("permission denied", libc::EACCES)
    } else {
        return text;
    };
    match hint::for_errno(errno, Doing::Files, is_root) {
        Some(hint) => format!("{text} ({what}: {hint})"),
        None => text,
    }
}

/// Why STATUS does not run for `list`: libcni asks plugins for STATUS only
/// from spec 1.1.0 and succeeds without a word below it; said here, so an
/// empty answer is not taken for "ready". None when STATUS runs (an invalid
/// version included: the runtime reports that).
pub fn status_skipped(list: &NetworkList) -> Option<String> {
    let v = version::effective(&list.cni_version);
    match version::at_least(v, "1.1.0") {
        Ok(false) => Some(format!(
            "network {} is cniVersion {v}: STATUS skipped (plugins answer STATUS from 1.1.0)",
            quoted(&list.name)
        )),
        _ => None,
    }
}

#[cfg(test)]
#[path = "hint_tests.rs"]
mod tests;
