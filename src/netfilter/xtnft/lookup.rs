//! What an operation reads before its batch, each by name: whether a chain
//! exists (and how many rules use it), the rules of one chain, one rule by its
//! handle; and whether a rule read back is a given [`Rule`] as iptables-nft
//! writes it, counters aside.

use super::encode::expressions;
use super::rule::Rule;
use crate::netfilter::nft::{
    self, NFNL_SUBSYS_NFTABLES, NFT_MSG_GETRULE, NFTA_EXPR_DATA, NFTA_EXPR_NAME, NFTA_LIST_ELEM,
    NFTA_RULE_CHAIN, NFTA_RULE_EXPRESSIONS, NFTA_RULE_HANDLE, NFTA_RULE_TABLE, NFTA_RULE_USERDATA,
    nfproto,
};
use crate::netfilter::{Family, Result};
use crate::netlink::nfnl::NfSocket;
use crate::netlink::uapi::nf_tables::{NFTA_BITWISE_OP, NFTA_DATA_VERDICT};
use crate::netlink::wire::{self, Body};

/// The use count of `chain` (its own rules plus the rules that jump to it),
/// looked up by name; None when the chain (or its table) does not exist.
pub fn chain_use(
    sock: &mut NfSocket,
    family: Family,
    table: &str,
    chain: &str,
) -> Result<Option<u32>> {
    nft::chain_use(sock, nfproto(family), table, chain)
}

/// Whether `chain` exists.
pub fn exists(sock: &mut NfSocket, family: Family, table: &str, chain: &str) -> Result<bool> {
    Ok(chain_use(sock, family, table, chain)?.is_some())
}

/// A rule as the kernel dumps it.
#[derive(Debug, Clone)]
pub struct Dumped {
    pub handle: u64,
    /// The rule's attributes.
    pub attrs: Vec<u8>,
}

impl Dumped {
    pub(super) fn of(attrs: Vec<u8>) -> Option<Dumped> {
        let handle = wire::find(&attrs, NFTA_RULE_HANDLE)
            .and_then(|p| p.get(..8))
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)?;
        Some(Dumped { handle, attrs })
    }

    /// Whether the rule jumps (or goes) to `chain`.
    pub fn jumps_to(&self, chain: &str) -> bool {
        nft::verdict_chains(&self.attrs).iter().any(|c| c == chain)
    }

    /// Whether this is `rule` as iptables-nft writes it in `family` (its
    /// counter's values aside), as iptables' delete-by-spec compares.
    pub fn is(&self, rule: &Rule, family: Family) -> bool {
        self.matches(rule, family, false)
    }

    /// As [`Dumped::is`], comments aside: the rule of another writer that
    /// named it otherwise is the same rule.
    pub fn is_but_comment(&self, rule: &Rule, family: Family) -> bool {
        self.matches(rule, family, true)
    }

    fn matches(&self, rule: &Rule, family: Family, but_comment: bool) -> bool {
        if wire::find(&self.attrs, NFTA_RULE_USERDATA).is_some() {
            return false;
        }
        let Ok(want) = expressions(rule, family) else {
            return false;
        };
        let want: Vec<(String, Vec<u8>)> = want
            .into_iter()
            .map(|e| (e.name.to_string(), canonical(e.name, &e.data.into_bytes())))
            .collect();
        let got = wire::find(&self.attrs, NFTA_RULE_EXPRESSIONS)
            .map(|list| {
                wire::attrs(list)
                    .filter(|(t, _)| *t == NFTA_LIST_ELEM)
                    .map(|(_, e)| {
                        let name = wire::find(e, NFTA_EXPR_NAME).map(wire::as_str);
                        let name = name.unwrap_or_default();
                        let data = wire::find(e, NFTA_EXPR_DATA).unwrap_or_default();
                        let data = canonical(&name, data);
                        (name, data)
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let keep = |(name, data): &(String, Vec<u8>)| {
            !(but_comment && name == "match" && is_comment(data))
        };
        want.iter()
            .filter(|e| keep(e))
            .eq(got.iter().filter(|e| keep(e)))
    }
}

/// Whether a canonical `match` expression is the comment match.
fn is_comment(canonical: &[u8]) -> bool {
    wire::find(canonical, 1).map(wire::as_str).as_deref() == Some("comment")
}

/// An expression's attributes in one form whoever encoded them: sorted by
/// type, nest flags cleared, the bitwise operation the kernel adds dropped
/// when it is the default, and a counter's values left out.
fn canonical(name: &str, data: &[u8]) -> Vec<u8> {
    if name == "counter" {
        return Vec::new();
    }
    // Attributes holding nests: cmp's data, bitwise's mask and xor,
    // immediate's data (whose verdict is a nest again).
    let nested = |ty: u16| {
        matches!(
            (name, ty),
            ("cmp", 3) | ("bitwise", 4 | 5) | ("immediate", 2)
        )
    };
    let mut attrs: Vec<(u16, &[u8])> = wire::attrs(data)
        .filter(|(ty, p)| {
            !(name == "bitwise" && *ty == NFTA_BITWISE_OP && p.iter().all(|b| *b == 0))
        })
        .collect();
    attrs.sort_by_key(|(ty, _)| *ty);
    let mut body = Body::default();
    for (ty, payload) in attrs {
        body = if nested(ty) {
            body.attr(ty, &canonical_data(payload))
        } else {
            body.attr(ty, payload)
        };
    }
    body.into_bytes()
}

/// An `NFTA_DATA_*` nest: a value, or a verdict (a nest of code and chain).
fn canonical_data(data: &[u8]) -> Vec<u8> {
    let mut body = Body::default();
    for (ty, payload) in wire::attrs(data) {
        body = if ty == NFTA_DATA_VERDICT {
            let mut inner: Vec<(u16, &[u8])> = wire::attrs(payload).collect();
            inner.sort_by_key(|(t, _)| *t);
            let verdict = inner
                .into_iter()
                .fold(Body::default(), |b, (t, p)| b.attr(t, p));
            body.attr(ty, &verdict.into_bytes())
        } else {
            body.attr(ty, payload)
        };
    }
    body.into_bytes()
}

/// The rules of one chain, in order (a GETRULE dump of that chain alone);
/// a missing chain has none.
pub fn chain_rules(
    sock: &mut NfSocket,
    family: Family,
    table: &str,
    chain: &str,
) -> Result<Vec<Dumped>> {
    let attrs = Body::default()
        .str(NFTA_RULE_TABLE, table)
        .str(NFTA_RULE_CHAIN, chain);
    match sock.dump(NFT_MSG_GETRULE, nfproto(family), attrs) {
        Ok(objects) => Ok(objects
            .into_iter()
            .filter(|a| wire::find(a, NFTA_RULE_CHAIN).map(wire::as_str).as_deref() == Some(chain))
            .filter_map(Dumped::of)
            .collect()),
        Err(e) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// The rule with `handle` in `chain`, by a GET of that one rule (no dump);
/// None when the chain has no such rule.
pub fn rule_at(
    sock: &mut NfSocket,
    family: Family,
    table: &str,
    chain: &str,
    handle: u64,
) -> Result<Option<Dumped>> {
    let attrs = Body::default()
        .str(NFTA_RULE_TABLE, table)
        .str(NFTA_RULE_CHAIN, chain)
        .attr(NFTA_RULE_HANDLE, &handle.to_be_bytes())
        .into_bytes();
    match sock.get_of(
        NFNL_SUBSYS_NFTABLES,
        NFT_MSG_GETRULE,
        nfproto(family),
        &attrs,
    ) {
        Ok(object) => Ok(Dumped::of(object)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The handles of the `count` rules of chain `from` that jump to `chain`,
/// whose own rules are `own` (see [`jump_rules_into`]).
pub fn jumps_into(
    sock: &mut NfSocket,
    family: Family,
    table: &str,
    (from, chain): (&str, &str),
    own: &[Dumped],
    count: usize,
) -> Result<Vec<u64>> {
    Ok(
        jump_rules_into(sock, family, table, (from, chain), own, count)?
            .into_iter()
            .map(|r| r.handle)
            .collect(),
    )
}

/// The `count` rules of chain `from` that jump to `chain`, whose own rules
/// are `own`. A writer that makes a chain, fills it and then adds the jumps
/// to it in one transaction (our batch, or iptables-restore's) gives the
/// jumps the handles that follow those of the chain's rules: those are asked
/// for one by one first; only when that does not find them all is `from`
/// dumped.
pub fn jump_rules_into(
    sock: &mut NfSocket,
    family: Family,
    table: &str,
    (from, chain): (&str, &str),
    own: &[Dumped],
    count: usize,
) -> Result<Vec<Dumped>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if let Some(last) = own.iter().map(|r| r.handle).max() {
        let mut found = Vec::new();
        for handle in (last + 1..).take(count) {
            match rule_at(sock, family, table, from, handle)? {
                Some(rule) if rule.jumps_to(chain) => found.push(rule),
                _ => break,
            }
        }
        if found.len() == count {
            return Ok(found);
        }
    }
    Ok(chain_rules(sock, family, table, from)?
        .into_iter()
        .filter(|r| r.jumps_to(chain))
        .collect())
}
