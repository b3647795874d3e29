//! What the plugin table says of a plugin besides its name, summary and
//! verbs: how its config's own keys decode, and what it leaves on the node
//! (state files, how they name their owner, what a repair re-adds). Dispatch,
//! fuzzing, `install`, the doctor and its repair read a plugin from its
//! entry, never from a list of names of their own.

use super::footprint::Footprint;
use crate::cni::{NetConf, PluginInfo};
use serde_json::{Map, Value};

/// One row of the plugin table.
#[derive(Clone, Copy)]
pub struct Entry {
    pub info: PluginInfo,
    /// Decodes a config into the plugin's own key structs, as its verbs do
    /// first (no kernel or disk work); how many decoded.
    pub decode: fn(&NetConf) -> usize,
    /// What it leaves on the node; [`STATELESS`] for most.
    pub state: State,
}

impl Entry {
    pub fn name(&self) -> &'static str {
        self.info.name
    }
}

/// What a configured plugin leaves on the node besides its result.
#[derive(Clone, Copy)]
pub struct State {
    /// The default of its `dataDir` key, when it keeps files there.
    pub data_dir: Option<&'static str>,
    /// What those files are.
    pub files: Files,
    /// Fills in what its config's keys say it leaves (a bridge, the
    /// masquerading, a zone, its rules' backend), read as the plugin reads them.
    pub keys: fn(&Map<String, Value>, &mut Footprint),
    /// The same for its keys under `ipam` when it is the IPAM plugin (its
    /// store, its daemon's socket).
    pub ipam_keys: fn(&Map<String, Value>, &mut Footprint),
    /// How a live attachment's missing state is put back.
    pub repair: Repair,
}

/// What a plugin keeps in its `dataDir`, and so how a file names its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Files {
    None,
    /// `<containerID>@<ifname>[@<network hash>].json` per attachment
    /// (`attach::records::record_owner`).
    Records,
    /// tuning's backups, `<containerID>_<ifname>.json` (`tuning::backup::backup_file`).
    Backups,
    /// flannel's saved delegate configs, `<containerID>` naming their
    /// network inside (`flannel::saved_network`).
    DelegateConfigs,
}

/// How the doctor repairs a live attachment whose plugin state is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repair {
    None,
    /// The plugin's own CHECK says whether it is gone, its ADD re-adds it.
    /// `nat`: where its iptables rules are, (chain jumped from, per-container
    /// chain prefix), so a whole node is judged from one read of `nat`.
    OwnVerbs {
        nat: Option<(&'static str, &'static str)>,
    },
    /// The masquerading its ADD wrote (`ipMasq`), checked and re-added as
    /// that ADD writes it.
    Masquerading,
}

/// A plugin that leaves nothing on the node but its result and links.
pub const STATELESS: State = State {
    data_dir: None,
    files: Files::None,
    keys: no_keys,
    ipam_keys: no_keys,
    repair: Repair::None,
};

/// A plugin whose config says nothing of what it leaves.
pub fn no_keys(_: &Map<String, Value>, _: &mut Footprint) {}

/// A plugin without keys of its own.
pub fn decodes_nothing(_: &NetConf) -> usize {
    0
}

/// Decodes the plugin's key struct `K`.
pub fn decodes<K: serde::de::DeserializeOwned>(conf: &NetConf) -> usize {
    usize::from(conf.plugin_keys::<K>().is_ok())
}
