//! `plugin-dir`: the plugin directories on CNI_PATH that `cni-multi install`
//! laid out, where a plugin name now holds another installer's file, or the
//! binary every name runs no longer has the bytes install put there.
//! Reported, never fixed here: the doctor does not write a bin directory
//! (`cni-multi install` repairs the binary, `--force` takes a name back).
//! Names install was told to leave to other installers are not listed.

use super::Finding;
use super::engine::Named;
use super::node::Node;
use crate::plugins::installed::{self, Damage};
use anyhow::Result;

pub const KIND: &str = "plugin-dir";
pub const CLOBBERED: &str = "another installer's file over a cni-multi plugin name: `cni-multi install --force` takes it back, `--leave NAME` leaves it";
pub const DAMAGED: &str = "not the bytes cni-multi installed (every plugin name runs it): `cni-multi install` rewrites it";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for dir in &node.runtime.cni_path {
        let damage = match installed::survey(dir) {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(e) => {
                let object = dir.join(installed::STATE_DIR);
                let why = format!("cannot read what cni-multi install keeps here: {e}");
                out.push(Finding::new(
                    KIND,
                    &Named::nobody(),
                    &object.to_string_lossy(),
                    &why,
                ));
                continue;
            }
        };
        for (name, what) in damage {
            let action = match what {
                Damage::Clobbered => CLOBBERED,
                Damage::Damaged => DAMAGED,
            };
            let object = dir.join(name);
            out.push(Finding::new(
                KIND,
                &Named::nobody(),
                &object.to_string_lossy(),
                action,
            ));
        }
    }
    Ok(())
}
