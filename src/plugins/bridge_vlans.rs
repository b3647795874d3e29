//! The bridge config's VLAN and group-forwarding keys, checked as the
//! reference's config loading checks them (its DEL too).

use super::{Keys, TrunkKeys};
use crate::cni::{CniResult, Error};

/// Groups a bridge never forwards (STP, pause, LACP): the kernel refuses them.
const RESTRICTED_GROUPS: u16 = 0x0007;

/// `groupFwdMask` (upstream main, not yet released): 0 leaves the bridge's
/// mask as it is; bits the kernel refuses are refused before anything is made.
pub(super) fn forwardable_groups(mask: i64) -> CniResult<Option<u16>> {
    let mask = group_fwd_mask_in_range(mask)?;
    if mask & RESTRICTED_GROUPS != 0 {
        return Err(Error::invalid_config(format!(
            "invalid groupFwdMask {mask}: the kernel forwards none of the groups in {RESTRICTED_GROUPS:#06x}"
        )));
    }
    Ok((mask != 0).then_some(mask))
}

/// Upstream's range check, which its DEL makes too.
pub(super) fn group_fwd_mask_in_range(mask: i64) -> CniResult<u16> {
    u16::try_from(mask).map_err(|_| Error::invalid_config(format!("invalid groupFwdMask {mask}")))
}

/// The host port's VLANs: the untagged access `vlan` (0: none), the trunk's
/// tagged IDs (`vlanTrunk`), and whether the IDs the kernel gave the port
/// stay (`preserveDefaultVlan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Vlans {
    pub access: u16,
    pub trunk: Vec<u16>,
    pub preserve_default: bool,
}

impl Vlans {
    /// Whether the bridge filters by VLAN (set when it is created).
    pub fn filtering(&self) -> bool {
        self.access != 0 || !self.trunk.is_empty()
    }
}

/// The VLAN checks of the reference's config loading, which its DEL makes too.
pub(super) fn vlans(k: &Keys) -> CniResult<Vlans> {
    let access = u16::try_from(k.vlan)
        .ok()
        .filter(|v| *v <= 4094)
        .ok_or_else(|| {
            Error::invalid_config(format!(
                "invalid VLAN ID {} (must be between 0 and 4094)",
                k.vlan
            ))
        })?;
    let trunk = k
        .vlan_trunk
        .as_deref()
        .map(trunk_ids)
        .transpose()?
        .unwrap_or_default();
    Ok(Vlans {
        access,
        trunk,
        preserve_default: k.preserve_default_vlan,
    })
}

pub(super) fn trunk_ids(entries: &[TrunkKeys]) -> CniResult<Vec<u16>> {
    let valid = |id: i64| {
        u16::try_from(id)
            .ok()
            .filter(|v| (1..=4094).contains(v))
            .ok_or_else(|| {
                Error::invalid_config("incorrect trunk vlan id (must be between 1 and 4094)")
            })
    };
    let mut ids = Vec::new();
    for e in entries {
        match (e.min_id, e.max_id) {
            (Some(min), Some(max)) => {
                let (min, max) = (valid(min)?, valid(max)?);
                if min > max {
                    return Err(Error::invalid_config(
                        "minID is greater than maxID in trunk parameter",
                    ));
                }
                ids.extend(min..=max);
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(Error::invalid_config(
                    "minID and maxID should be configured simultaneously",
                ));
            }
            (None, None) => {}
        }
        if let Some(id) = e.id {
            ids.push(valid(id)?);
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}
