//! bridge's and ptp's masquerading as their verbs run it. Each verb decodes
//! `ipMasq` and `ipMasqBackend` once into a [`Masquerade`] (ADD's way in its
//! `Conf::load`, DEL's way with `Masquerade::for_del`) and hands it here with
//! the [`Apply`] the rules go to (`Kernel` on a node); this adds what the
//! invocation says: DEL's addresses from prevResult, GC's attachments to keep.

use crate::cni::{CniResult, Invocation};
use crate::netfilter::masq::Masquerade;
use crate::netfilter::{Apply, Kept};

/// DEL's cleanup: found by chain name, so it works when the netns (and its
/// addresses) are gone.
pub(crate) fn del(inv: &Invocation, masq: Masquerade, nf: &dyn Apply) -> CniResult<()> {
    if !masq.is_on() {
        return Ok(());
    }
    // The addresses ADD masqueraded, where prevResult has them (an unreadable
    // prevResult is no reason to leave the rules: they are found by name).
    let ips: Vec<ipnet::IpNet> = inv
        .conf
        .prev_result()
        .ok()
        .flatten()
        .map(|prev| prev.ips.iter().map(|ip| ip.address).collect())
        .unwrap_or_default();
    let (id, ifname) = (&inv.env.container_id, &inv.env.ifname);
    Ok(masq.del(nf, inv.conf.name(), id, ifname, &ips)?)
}

/// GC (the reference has none): the masquerading of this network's
/// attachments not in `cni.dev/valid-attachments`; without that list nothing
/// is known to be stale.
pub(crate) fn gc(inv: &Invocation, masq: Masquerade, nf: &dyn Apply) -> CniResult<()> {
    if !masq.is_on() {
        return Ok(());
    }
    let Some(valid) = inv.conf.valid_attachments()? else {
        return Ok(());
    };
    let keep: Vec<Kept> = valid
        .into_iter()
        .map(|a| Kept {
            container_id: a.container_id,
            ifname: a.ifname,
        })
        .collect();
    Ok(masq.gc(nf, inv.conf.name(), keep)?)
}
