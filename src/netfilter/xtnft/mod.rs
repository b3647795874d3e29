//! iptables rules written the way iptables-nft writes them, over nf_tables
//! netlink and without an iptables process: the path of hosts whose
//! `iptables` is the nf_tables flavour. A rule is pure data ([`Rule`]: the
//! header matches, the `-m` matches in command-line order, the target), encoded
//! exactly as iptables-nft 1.8 encodes it: native payload, meta, cmp and
//! bitwise expressions where it uses them (addresses, interfaces, protocol,
//! tcp/udp ports, marks), an xtables `match` or `target` expression with its
//! revision and info blob where it uses those (comment, multiport, conntrack,
//! addrtype, sctp; MASQUERADE, DNAT, MARK), and the counter it puts before
//! every target; tables and base chains are created as it creates them when
//! absent. So `iptables-save`, iptables' delete-by-spec and the legacy path
//! (`iptables-restore`) see the very same rules.
//!
//! One job a file: `rule` (what a rule is), `encode` (its expressions), `xt/`
//! (one module per xtables match or target: name, revision, info blob),
//! `builtin` (iptables' tables and base chains), `batch` (one nf_tables
//! transaction per operation), `lookup` (chains by name, the rules of one
//! chain, one rule by handle, and whether a rule read back is a given one),
//! `save` (a whole table read back as `iptables-save` prints it).
// nf_tables messages mix u8/u16/u32/i32 fields: a silent `as` could truncate
// or wrap a value on its way to the kernel, so each conversion says what it does.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless
)]

mod batch;
mod builtin;
mod encode;
mod lookup;
mod rule;
mod save;
mod xt;

pub use batch::Batch;
pub use encode::expressions;
pub use lookup::{Dumped, chain_rules, chain_use, exists, jump_rules_into, jumps_into, rule_at};
pub use rule::{Match, Proto, Rule, Target};

use crate::netfilter::iptables::{Flavour, Saved};
use crate::netfilter::{Family, Result};

/// Whether this family's rules go over nf_tables netlink: the flavour's
/// iptables is the nf_tables one.
pub fn applies(flavour: Flavour, family: Family) -> bool {
    flavour.is_nft_based(family)
}

/// `table` of `family` as `iptables-save -t TABLE` prints it, for the
/// readers of whole tables (GC, the doctor): over netlink on the nf_tables
/// flavour (no process), else (or when a rule of ours there has a shape not
/// printed here, or netlink failed) by the flavour's tool. None as
/// `Flavour::save_existing`.
pub fn saved(flavour: Flavour, family: Family, table: &str) -> Result<Option<Saved>> {
    if applies(flavour, family)
        && let Ok(Some(saved)) = read_table(family, table)
    {
        return Ok(Some(saved));
    }
    flavour.save_existing(family, table)
}

/// `table` of `family` read over netlink alone, as [`saved`] reads it there
/// (None: a rule of ours it cannot print).
pub fn read_table(family: Family, table: &str) -> Result<Option<Saved>> {
    save::save(&mut open()?, family, table)
}

/// One nfnetlink socket for the lookups and the commit of an operation.
pub fn open() -> Result<crate::netlink::nfnl::NfSocket> {
    crate::netfilter::nft::open()
}

#[cfg(test)]
mod tests;
