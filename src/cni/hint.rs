//! What a user can do about a failure the kernel or the file system reported
//! with an errno: one short hint, chosen by the errno and by what was being
//! done ("File exists" asks for something else on a link name than on a
//! route). Plugins put it in a CNI error's `details` (`error_codes.rs`), so the
//! message stays the reference's words; cnitool adds it to its own message.
//! No hint where the errno alone does not say what to do.

use crate::quote::quoted;
use nix::libc;

/// The hint to run as root, as it ends every denial a user gets.
pub const RUN_AS_ROOT: &str = "run as root";

/// What the failed step was doing, as far as it changes the advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doing<'a> {
    /// Creating the link of this name, or renaming a link to it.
    Link(&'a str),
    /// Adding an address to a link.
    AddAddress,
    /// Adding a route.
    AddRoute,
    /// Entering, creating or mounting a network namespace.
    Netns,
    /// Any other change of the network (links, qdiscs, rules, sysctls, netfilter).
    Network,
    /// Reading or writing files (state, locks, sockets), or not known.
    Files,
}

/// A hint for `errno` met while `doing`; `root` tells whether the process
/// runs as root (root is never told to become root).
pub fn for_errno(errno: i32, doing: Doing<'_>, root: bool) -> Option<String> {
    let needs = |what: &str| {
        if root {
            format!("this needs {what}")
        } else {
            format!("{RUN_AS_ROOT}: this needs {what}")
        }
    };
    match (errno, doing) {
        (libc::EPERM | libc::EACCES, Doing::Netns) => {
            Some(needs("CAP_SYS_ADMIN to enter or mount network namespaces"))
        }
        (libc::EPERM | libc::EACCES, Doing::Files) => (!root).then(|| RUN_AS_ROOT.to_string()),
        (libc::EPERM | libc::EACCES, _) => Some(needs("CAP_NET_ADMIN to change the network")),
        (libc::EEXIST, Doing::Link(name)) => Some(link_exists(name)),
        (libc::EEXIST, Doing::AddAddress) => Some(
            "the link already has that address: delete it, or give the link another one".into(),
        ),
        (libc::EEXIST, Doing::AddRoute) => Some(
            "an equal route already exists: delete the stale route, or change the configured \
             routes"
                .into(),
        ),
        _ => None,
    }
}

/// A link name already taken: the runtime's interface name (or the config's)
/// is in use, often by a link an earlier ADD left.
pub fn link_exists(name: &str) -> String {
    format!(
        "a link named {} already exists in that namespace: choose another interface name, \
         or delete the stale link",
        quoted(&name)
    )
}

/// A link the config's `key` names is not there.
pub fn missing_link(key: &str) -> String {
    format!("the config's {key} must name an existing link (`ip link` lists them)")
}

/// Whether this process runs as root (effective user id 0).
pub fn running_as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Whether `text` already says to run as root (a plugin's hint inside the
/// error a runtime passes on), so no second hint is added.
pub fn says_run_as_root(text: &str) -> bool {
    text.contains(RUN_AS_ROOT)
}

#[cfg(test)]
#[path = "hint_tests.rs"]
mod tests;
