//! What the plugins' unit tests share: an invocation built from a config,
//! and a dataDir of a test's own.

use crate::cni::Invocation;
use crate::cni::env::{CmdArgs, Command};
use std::path::PathBuf;

/// `command` of container `id` (interface eth0 in /run/netns/x) with `conf`,
/// whose `keys` replace or add top-level keys.
pub fn invocation(
    command: Command,
    id: &str,
    mut conf: serde_json::Value,
    keys: serde_json::Value,
) -> Invocation {
    for (k, v) in keys.as_object().into_iter().flatten() {
        conf[k] = v.clone();
    }
    Invocation {
        command,
        env: CmdArgs {
            container_id: id.into(),
            netns: "/run/netns/x".into(),
            ifname: "eth0".into(),
            args: String::new(),
            path: Vec::new(),
            netns_override: false,
        },
        conf: crate::cni::NetConf::parse(conf.to_string().as_bytes()).expect("conf"),
        cni_args: Default::default(),
        plugins: crate::cni::no_plugins,
    }
}

/// A dataDir of a test's own, removed when it ends.
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn new(tag: &str) -> DataDir {
        let d = std::env::temp_dir().join(format!("cni-multi-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        DataDir(d)
    }

    /// How many files it holds.
    pub fn records(&self) -> usize {
        std::fs::read_dir(&self.0).map_or(0, |d| d.count())
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
