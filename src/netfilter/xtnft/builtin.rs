//! iptables' built-in chains as iptables-nft makes them: a base chain of the
//! table's type on its hook at the legacy table's priority (both families
//! alike), created with the table on first use.

use crate::netfilter::nft::{
    HOOK_FORWARD, HOOK_OUTPUT, HOOK_POSTROUTING, HOOK_PREROUTING, PRIO_DSTNAT, PRIO_FILTER,
    PRIO_SRCNAT,
};

use crate::netlink::uapi::netfilter::NF_INET_LOCAL_IN as HOOK_INPUT;

/// The (type, hook, priority) of built-in `chain` of iptables' `table`; None
/// when it is not one (a user chain).
pub fn builtin(table: &str, chain: &str) -> Option<(&'static str, u32, i32)> {
    Some(match (table, chain) {
        ("filter", "INPUT") => ("filter", HOOK_INPUT, PRIO_FILTER),
        ("filter", "FORWARD") => ("filter", HOOK_FORWARD, PRIO_FILTER),
        ("filter", "OUTPUT") => ("filter", HOOK_OUTPUT, PRIO_FILTER),
        ("nat", "PREROUTING") => ("nat", HOOK_PREROUTING, PRIO_DSTNAT),
        ("nat", "INPUT") => ("nat", HOOK_INPUT, PRIO_SRCNAT),
        ("nat", "OUTPUT") => ("nat", HOOK_OUTPUT, PRIO_DSTNAT),
        ("nat", "POSTROUTING") => ("nat", HOOK_POSTROUTING, PRIO_SRCNAT),
        _ => return None,
    })
}
