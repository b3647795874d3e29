//! The NAD spec's device-info files: where multus writes them
//! (`<dir>/<network>-<containerID>_<ifname>`) and whose a name is.

use std::collections::BTreeSet;

/// Where device-info files of attachments with a `deviceID` live (the NAD
/// client's `GetCNIDeviceInfoPath`).
pub const DEVICE_INFO_DIR: &str = "/var/run/k8s.cni.cncf.io/devinfo/cni";

/// The container (and interface) a device-info file's name holds as
/// `-<containerID>_<ifname>`: the longest of the `known` IDs that fits, else
/// a 64-hex ID as runtimes make them. (Network, ID and interface may each
/// hold `-` and `_`, so the name alone cannot be split.)
pub fn device_info_owner<'a>(
    name: &'a str,
    known: &BTreeSet<String>,
) -> Option<(&'a str, &'a str)> {
    let fits = |id: &str| -> Option<(&'a str, &'a str)> {
        let start = name.find(&format!("-{id}_"))? + 1;
        Some((
            &name[start..start + id.len()],
            &name[start + id.len() + 1..],
        ))
    };
    let known = known
        .iter()
        .filter(|id| !id.is_empty())
        .filter_map(|id| fits(id));
    known.max_by_key(|(id, _)| id.len()).or_else(|| {
        name.match_indices('-').find_map(|(at, _)| {
            let rest = &name[at + 1..];
            let id = rest.get(..64)?;
            let hex = id.bytes().all(|b| b.is_ascii_hexdigit());
            (hex && rest[64..].starts_with('_')).then(|| (id, &rest[65..]))
        })
    })
}

#[cfg(test)]
#[path = "devinfo_tests.rs"]
mod tests;
