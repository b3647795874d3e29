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
mod tests {
    use super::*;

    #[test]
    fn only_denials_of_a_user_get_the_hint() {
        let io = |errno| std::io::Error::from_raw_os_error(errno).to_string();
        let eperm = format!("could not add \"cni0\": {}", io(libc::EPERM));
        assert_eq!(
            with_root_hint(eperm.clone(), false),
            format!("{eperm} (operation not permitted: run as root)")
        );
        assert_eq!(with_root_hint(eperm.clone(), true), eperm);
        // The C library's words, as the netlink layer prints the kernel's errno.
        let netlink = "create bridge link \"cni0\": Operation not permitted";
        assert!(
            with_root_hint(netlink.into(), false)
                .ends_with("(operation not permitted: run as root)")
        );
        let nix = format!(
            "make a shared mount of /run/netns: {}",
            nix::errno::Errno::EPERM
        );
        assert!(with_root_hint(nix, false).ends_with("(operation not permitted: run as root)"));
        let eacces = format!(
            "failed to create /var/lib/cni/networks/x: {}",
            io(libc::EACCES)
        );
        assert!(with_root_hint(eacces, false).ends_with("(permission denied: run as root)"));
        let other = "no net configuration with name \"x\" in /etc/cni/net.d".to_string();
        assert_eq!(with_root_hint(other.clone(), false), other);
        // EPERM's number must not match EACCES's or EEXIST's.
        let exists = io(libc::EEXIST);
        assert_eq!(with_root_hint(exists.clone(), false), exists);
        let denied = io(libc::EACCES);
        assert_eq!(
            with_root_hint(denied.clone(), false),
            format!("{denied} (permission denied: run as root)")
        );
    }

    /// A plugin's error that carries its own hint (in its details, which the
    /// runtime's text ends with) gets no second one.
    #[test]
    fn a_plugins_hint_is_not_repeated() {
        let plugin =
            crate::cni::Error::internal("create bridge link \"cni0\": Operation not permitted")
                .with_hint(hint::for_errno(libc::EPERM, Doing::Network, false));
        let text = plugin.to_string();
        assert!(
            text.ends_with("; run as root: this needs CAP_NET_ADMIN to change the network"),
            "{text}"
        );
        assert_eq!(with_root_hint(text.clone(), false), text);
    }
}
