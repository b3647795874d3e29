//! What cnitool adds to an answer where the bare one misleads: most verbs
//! need root (namespaces, links, `/var/lib/cni`) and a plugin run by a user
//! answers only "operation not permitted" or "permission denied"; STATUS
//! below spec 1.1.0 succeeds without asking any plugin.

use crate::cni::version;
use crate::libcni::conf::NetworkList;
use crate::quote::quoted;

/// The error's text with a hint to run as root, when not running as root and
/// the text carries EPERM or EACCES in any of the forms the layers and the
/// plugins print them (std's and nix's errors, a plugin's error message).
pub fn with_root_hint(text: String, is_root: bool) -> String {
    if is_root {
        return text;
    }
    let lower = text.to_ascii_lowercase();
    let denied = |forms: &[&str]| forms.iter().any(|f| lower.contains(f));
    let what = if denied(&["operation not permitted", "(os error 1)", "eperm"]) {
        "operation not permitted"
    } else if denied(&["permission denied", "(os error 13)", "eacces"]) {
        "permission denied"
    } else {
        return text;
    };
    format!("{text} ({what}: run as root)")
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
mod tests {
    use super::*;

    #[test]
    fn only_denials_of_a_user_get_the_hint() {
        let eperm = "could not add \"cni0\": Operation not permitted (os error 1)".to_string();
        assert_eq!(
            with_root_hint(eperm.clone(), false),
            format!("{eperm} (operation not permitted: run as root)")
        );
        assert_eq!(with_root_hint(eperm.clone(), true), eperm);
        let nix = "make a shared mount of /run/netns: EPERM: Operation not permitted";
        assert!(
            with_root_hint(nix.into(), false).ends_with("(operation not permitted: run as root)")
        );
        let eacces = "failed to create /var/lib/cni/networks/x: Permission denied (os error 13)";
        assert!(with_root_hint(eacces.into(), false).ends_with("(permission denied: run as root)"));
        let other = "no net configuration with name \"x\" in /etc/cni/net.d".to_string();
        assert_eq!(with_root_hint(other.clone(), false), other);
        // "(os error 1)" must not match "(os error 13)" or "(os error 17)".
        let exists = "File exists (os error 17)".to_string();
        assert_eq!(with_root_hint(exists.clone(), false), exists);
    }
}
