//! What a call must be before the daemon acts on it: a caller is root, but
//! its request is checked by the CNI rules all the same (names, an absolute
//! canonical netns path, options by name).

use crate::dhcp::client::Request;
use crate::dhcp::protocol::{Attachment, Failure, Kind};
use crate::quote::quoted;
use std::path::Path;

/// The attachment's parts by the CNI rules (a call is not trusted).
pub(super) fn check_attachment(a: &Attachment) -> Result<(), Failure> {
    crate::cni::env::validate_container_id(&a.container_id)
        .and_then(|()| crate::cni::env::validate_network_name(&a.network))
        .and_then(|()| crate::cni::env::validate_ifname(&a.ifname))
        .map_err(|e| Failure::new(Kind::BadCall, format!("bad attachment {a}: {e}")))
}

/// A netns path must be absolute and canonical: no `.` or `..` component, no
/// empty one (`//`, a trailing `/`), no NUL. The daemon puts `-hostprefix`
/// before it, and a path without `..` cannot leave the prefix; root (the only
/// caller) may otherwise name any namespace (`/proc/<pid>/ns/net`,
/// `/var/run/netns/<name>`).
pub(super) fn check_netns(netns: &Path) -> Result<(), Failure> {
    let bytes = netns.as_os_str().as_encoded_bytes();
    let refused = |why: &str| {
        Err(Failure::new(
            Kind::BadCall,
            format!("the netns {} {why}", quoted(&netns.display())),
        ))
    };
    let Some(rest) = bytes.strip_prefix(b"/") else {
        return refused("is not an absolute path");
    };
    if bytes.contains(&0) {
        return refused("contains a NUL byte");
    }
    if rest
        .split(|&b| b == b'/')
        .any(|c| c.is_empty() || c == b"." || c == b"..")
    {
        return refused("is not a canonical path (no '.', '..' or empty components)");
    }
    Ok(())
}

pub(super) fn check_request(a: &Attachment, r: &Request) -> Result<(), Failure> {
    let bad = |why: String| Err(Failure::new(Kind::BadCall, format!("{a}: {why}")));
    if let Err(f) = check_netns(&r.netns) {
        return bad(f.message);
    }
    if r.ifname != a.ifname {
        return bad(format!(
            "the request is for {}, the attachment for {}",
            quoted(&r.ifname),
            quoted(&a.ifname)
        ));
    }
    if r.client_id.is_empty() || r.client_id.len() > 255 {
        return bad(format!(
            "a client-id of {} bytes (1 to 255)",
            r.client_id.len()
        ));
    }
    Ok(())
}
