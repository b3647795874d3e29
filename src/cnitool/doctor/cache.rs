//! `cache`: result-cache entries whose netns is gone (the runtime crashed, or
//! forgot the DEL). The fix is libcni's DEL from the entry without the netns:
//! every plugin of the cached config releases what it holds (multus its
//! delegates, dhcp its lease, host-local its addresses), then the entry goes.

use super::Finding;
use super::engine::Named;
use super::node::{Node, State};
use anyhow::Result;

pub const KIND: &str = "cache";
pub const ACTION: &str = "DEL with the cached config";
/// An entry that cannot be read cannot be judged: it keeps what may be its.
pub const UNREADABLE: &str =
    "none (unreadable: what may be its is kept; remove it by hand once its pod is gone)";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for (path, why) in &node.unreadable {
        let object = format!("{} ({why})", path.display());
        out.push(Finding::new(KIND, &Named::nobody(), &object, UNREADABLE));
    }
    for (i, a) in node.attachments.iter().enumerate() {
        if a.state != State::Dead {
            continue;
        }
        let object = a.path.display().to_string();
        out.push(
            Finding::new(KIND, &Named::of(&a.entry), &object, ACTION).fix(move |node| {
                let a = &node.attachments[i];
                a.del(&node.runtime)?;
                Ok(!a.path.exists())
            }),
        );
    }
    Ok(())
}
