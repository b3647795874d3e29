//! Finding one attachment's rules in chains it shares with every other
//! attachment, without reading those chains.
//!
//! The reference's nftables layouts put a rule per attachment, commented with
//! its owner, in shared chains (`masq_checks`, `hostports`, ...); finding them
//! by comment means dumping the chains, a cost that grows with every pod on
//! the node. Here an ADD's transaction creates an empty regular chain named
//! after the owner, its anchor, immediately before the owner's rules. The
//! kernel numbers a table's new chains and rules from one counter, in message
//! order within a transaction, so the rules' handles are the ones right after
//! the anchor's. A later call looks the anchor up by name and each rule up by
//! its handle (never a dump), and takes a rule as the owner's only while its
//! comment says so.
//!
//! Rules an ADD of another implementation wrote (the reference's, an older
//! cni-multi's) have no anchor. Each layout has a mark that such an ADD
//! removes (see the backends); where it is gone, the chains are dumped as
//! before.

use super::*;

/// How many rules after an anchor are looked at, at most.
const MAX_ANCHORED: u64 = 4096;

/// The name of an owner's anchor chain: `cni-multi-` and 32 hex digits of
/// SHA-512 of the owner's key (its rules' comment, or what it starts with).
pub fn anchor_name(key: &str) -> String {
    let mut hex = crate::digest::sha512_hex(key.as_bytes());
    hex.truncate(32);
    format!("cni-multi-{hex}")
}

/// A chain as looked up by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainInfo {
    pub handle: u64,
    /// The kernel's use count: the chain's own rules plus the rules (and
    /// verdict map elements) that jump or go to it.
    pub uses: u32,
}

/// One chain by name (not a dump); None when it or its table does not exist.
pub fn chain_info(
    sock: &mut NfSocket,
    family: u8,
    table: &str,
    chain: &str,
) -> Result<Option<ChainInfo>> {
    let attrs = Body::default()
        .str(NFTA_CHAIN_TABLE, table)
        .str(NFTA_CHAIN_NAME, chain)
        .into_bytes();
    match sock.get_of(NFNL_SUBSYS_NFTABLES, NFT_MSG_GETCHAIN, family, &attrs) {
        Ok(object) => {
            let u = |ty, len: usize| wire::find(&object, ty).and_then(|v| v.get(..len));
            Ok(Some(ChainInfo {
                handle: u(NFTA_CHAIN_HANDLE, 8)
                    .and_then(|b| Some(u64::from_be_bytes(b.try_into().ok()?)))
                    .unwrap_or(0),
                uses: u(NFTA_CHAIN_USE, 4)
                    .and_then(|b| Some(u32::from_be_bytes(b.try_into().ok()?)))
                    .unwrap_or(0),
            }))
        }
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// One rule by chain and handle (not a dump); None when there is none.
pub fn rule_at(
    sock: &mut NfSocket,
    family: u8,
    table: &str,
    chain: &str,
    handle: u64,
) -> Result<Option<DumpedRule>> {
    let attrs = Body::default()
        .str(NFTA_RULE_TABLE, table)
        .str(NFTA_RULE_CHAIN, chain)
        .attr(NFTA_RULE_HANDLE, &handle.to_be_bytes())
        .into_bytes();
    match sock.get_of(NFNL_SUBSYS_NFTABLES, NFT_MSG_GETRULE, family, &attrs) {
        Ok(object) => Ok(parse_rule(&object)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The owner's rules after its anchor `anchor`, as (chain, handle): each
/// handle after the anchor's in turn, looked up in `chains` (the chain of the
/// previous rule first), until one is not there or is not the owner's
/// (`mine`).
pub fn anchored(
    sock: &mut NfSocket,
    family: u8,
    table: &str,
    anchor: ChainInfo,
    chains: &[&'static str],
    mine: impl Fn(&DumpedRule) -> bool,
) -> Result<Vec<(&'static str, u64)>> {
    let mut out = Vec::new();
    let mut order: Vec<&'static str> = chains.to_vec();
    for handle in anchor.handle + 1..=anchor.handle + MAX_ANCHORED {
        let mut found = None;
        for (at, chain) in order.iter().enumerate() {
            if let Some(rule) = rule_at(sock, family, table, chain, handle)? {
                found = Some((at, rule));
                break;
            }
        }
        match found {
            Some((at, rule)) if mine(&rule) => {
                let chain = order.remove(at);
                order.insert(0, chain);
                out.push((chain, handle));
            }
            _ => break,
        }
    }
    Ok(out)
}

/// The rules of `chain` less those `chains` (dumped, few) jump or go to it.
pub fn own_rules(uses: u32, chain: &str, jumping: &[DumpedRule]) -> usize {
    let jumps = jumping
        .iter()
        .filter(|r| r.jumps.iter().any(|j| j == chain))
        .count();
    (uses as usize).saturating_sub(jumps)
}

impl Tx {
    /// Creates a chain that must not exist: the transaction fails (EEXIST)
    /// when another writer made it since it was read.
    pub fn new_chain(&mut self, family: u8, table: &str, name: &str) {
        let attrs = Body::default()
            .str(NFTA_CHAIN_TABLE, table)
            .str(NFTA_CHAIN_NAME, name)
            .into_bytes();
        self.push(
            NFT_MSG_NEWCHAIN,
            NLM_F_CREATE | crate::netlink::nfnl::NLM_F_EXCL,
            family,
            attrs,
            format!("add chain {table} {name}"),
        );
    }

    /// An owner's anchor, made afresh (an old one goes first: a chain that
    /// exists keeps its handle), right before the owner's rules are added.
    pub fn anchor(&mut self, family: u8, table: &str, name: &str, old: bool) {
        if old {
            self.delete_chain(family, table, name);
        }
        self.new_chain(family, table, name);
    }
}

/// Whether an nf_tables error says an object read before is gone or one
/// made since is there: the transaction raced another writer.
pub fn raced(e: &crate::netfilter::Error) -> bool {
    matches!(e, crate::netfilter::Error::Netlink(n)
        if n.is(nix::libc::ENOENT) || n.is(nix::libc::EEXIST))
}

/// Reads, builds and commits until the transaction applies to what it was
/// built from: `build` reads the table and returns the transaction (None:
/// nothing to do); a commit that raced another writer ([`raced`]) is built
/// again from a fresh read, three times at most.
pub fn commit_fresh(mut build: impl FnMut(&mut NfSocket) -> Result<Option<Tx>>) -> Result<()> {
    let mut sock = open()?;
    let mut attempt = 0;
    loop {
        let Some(tx) = build(&mut sock)? else {
            return Ok(());
        };
        match tx.commit(&mut sock) {
            Err(e) if attempt < 3 && raced(&e) => attempt += 1,
            done => return done,
        }
    }
}
