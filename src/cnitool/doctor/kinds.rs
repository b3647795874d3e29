//! Which kinds of finding judge what a configured plugin leaves, as its
//! plugin table entry describes it (through its footprint): the doctor
//! names no plugin.

use super::{data_files, repair, tmp};
use crate::plugins::footprint::Footprint;
use crate::plugins::{Files, Repair};

/// The kinds that judge the state of a plugin with this footprint.
pub fn of(f: &Footprint) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    match f.files {
        Files::Records => kinds.push(data_files::RECORD),
        Files::Backups => kinds.push(data_files::TUNING),
        Files::DelegateConfigs => kinds.push(data_files::FLANNEL),
        Files::None => {}
    }
    if f.data_dir.is_some() {
        kinds.push(tmp::KIND);
    }
    if f.repair != Repair::None {
        kinds.push(repair::KIND);
    }
    kinds
}
