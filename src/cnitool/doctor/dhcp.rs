//! `dhcp`: leases the dhcp daemon still keeps (its files in
//! `<socket>.leases/`, one per attachment) for attachments that are dead or
//! that no cache entry names. Released through the daemon, which forgets the
//! lease and sends DHCPRELEASE; with the daemon stopped the file alone is
//! removed (under the daemon's lock), since a daemon that starts takes up
//! every file it finds and keeps renewing it.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::Node;
use crate::cni::env::Command;
use crate::dhcp::daemon::state;
use crate::dhcp::protocol::default_state_dir;
use anyhow::Result;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const KIND: &str = "dhcp";
pub const ACTION: &str = "release the lease through the daemon";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for socket in sockets(node) {
        let dir = default_state_dir(&socket);
        for (path, saved) in state::read_leases(&dir)? {
            let a = &saved.attachment;
            let named = Named::new(&a.network, &a.container_id, &a.ifname);
            let label = format!("{} ({})", path.display(), saved.lease.address);
            let (socket, dir) = (socket.clone(), dir.clone());
            let gone_file = path.clone();
            let owner = Owner::of(node, named);
            objects.push(Object {
                label,
                label_when_dead: Label::Object,
                addresses: vec![saved.lease.address.into()],
                present: Box::new(move |_| Ok(!gone(&gone_file))),
                // Through the daemon, which forgets the lease and sends
                // DHCPRELEASE; with the daemon stopped the file alone goes
                // (under its lock), or a daemon that starts would renew it.
                remove: Box::new(move |_| {
                    let a = &saved.attachment;
                    match crate::plugins::dhcp::release(&socket, a.clone(), saved.request.clone()) {
                        Ok(()) => {}
                        Err(e) if e.not_running() => {
                            state::remove_unkept(&dir, a)?;
                        }
                        Err(e) => return Err(e.into_error(Command::Del, None).into()),
                    }
                    Ok(())
                }),
                ..Object::file(KIND, path, owner, ACTION)
            });
        }
    }
    engine::findings(node, objects, out)
}

fn gone(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// The daemon socket of every dhcp network of the conf dir and of every
/// cached config.
fn sockets(node: &Node) -> BTreeSet<PathBuf> {
    let found = node.footprints(true).into_iter();
    found.filter_map(|(_, _, f)| f.dhcp_socket).collect()
}
