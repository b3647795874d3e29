//! Reading back: a table's chains, a chain's rules and what their expressions match.

use super::*;

/// The chain names of a table; a missing table has none.
pub fn chains(sock: &mut NfSocket, family: u8, table: &str) -> Result<Vec<String>> {
    let attrs = Body::default().str(NFTA_CHAIN_TABLE, table);
    match sock.dump(NFT_MSG_GETCHAIN, family, attrs) {
        Ok(objects) => Ok(objects
            .iter()
            .filter(|a| wire::find(a, NFTA_CHAIN_TABLE).map(wire::as_str).as_deref() == Some(table))
            .filter_map(|a| wire::find(a, NFTA_CHAIN_NAME).map(wire::as_str))
            .collect()),
        Err(e) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Whether one chain exists: a lookup by name, not a dump of the table's
/// chains (which grows with every container's chain).
pub fn has_chain(sock: &mut NfSocket, family: u8, table: &str, chain: &str) -> Result<bool> {
    Ok(chain_use(sock, family, table, chain)?.is_some())
}

/// The kernel's use count of one chain, looked up by name: its own rules
/// plus the rules (and verdict map elements) that jump or go to it; `None`
/// when the chain does not exist.
pub fn chain_use(sock: &mut NfSocket, family: u8, table: &str, chain: &str) -> Result<Option<u32>> {
    let attrs = Body::default()
        .str(NFTA_CHAIN_TABLE, table)
        .str(NFTA_CHAIN_NAME, chain)
        .into_bytes();
    match sock.get_of(NFNL_SUBSYS_NFTABLES, NFT_MSG_GETCHAIN, family, &attrs) {
        Ok(object) => Ok(Some(
            wire::find(&object, NFTA_CHAIN_USE)
                .and_then(|v| Some(u32::from_be_bytes(v.get(..4)?.try_into().ok()?)))
                .unwrap_or(0),
        )),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// How many rules jump or go to one chain (`None`: no such chain): its use
/// count less its own rules, which are dumped. Where one chain of a layout
/// alone jumps to another, this says whether those jumps exist without
/// dumping the jumping chain (which may hold a rule per container). Read
/// under the caller's lock; a writer outside it can only make the caller's
/// restore fail, after which it reads the table.
pub fn jumps_to(sock: &mut NfSocket, family: u8, table: &str, chain: &str) -> Result<Option<u32>> {
    let Some(used) = chain_use(sock, family, table, chain)? else {
        return Ok(None);
    };
    let own = rules(sock, family, table, chain)?.len();
    Ok(Some(
        used.saturating_sub(u32::try_from(own).unwrap_or(u32::MAX)),
    ))
}

/// Whether a table holds any set: iptables-nft never makes one, so a table
/// with sets is another nftables user's, in a form iptables-nft cannot read.
pub fn has_sets(sock: &mut NfSocket, family: u8, table: &str) -> Result<bool> {
    let attrs = Body::default().str(NFTA_SET_TABLE, table);
    match sock.dump(NFT_MSG_GETSET, family, attrs) {
        Ok(objects) => Ok(objects
            .iter()
            .any(|a| wire::find(a, NFTA_SET_TABLE).map(wire::as_str).as_deref() == Some(table))),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A rule as dumped: its handle and comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpedRule {
    pub handle: u64,
    pub comment: String,
    /// Chains this rule jumps or goes to (immediate verdicts).
    pub jumps: Vec<String>,
    /// The interface an `iifname "<name>"` match of the rule names.
    pub iifname: Option<String>,
    /// The host address an `ip[6] saddr == <ip>` match of the rule names.
    pub saddr: Option<IpAddr>,
}

pub(super) fn expressions(attrs: &[u8]) -> impl Iterator<Item = (String, &[u8])> {
    wire::find(attrs, NFTA_RULE_EXPRESSIONS)
        .into_iter()
        .flat_map(wire::attrs)
        .filter(|(t, _)| *t == NFTA_LIST_ELEM)
        .filter_map(|(_, e)| {
            let name = wire::find(e, NFTA_EXPR_NAME).map(wire::as_str)?;
            Some((name, wire::find(e, NFTA_EXPR_DATA)?))
        })
}

/// The name a rule's `iifname` match compares with: the `cmp` right after a
/// `meta load iifname` (public for the fuzz targets).
pub fn iifname_match(attrs: &[u8]) -> Option<String> {
    let exprs: Vec<(String, &[u8])> = expressions(attrs).collect();
    exprs.windows(2).find_map(|pair| {
        let [(load, meta), (compare, cmp)] = pair else {
            return None;
        };
        let key = wire::find(meta, NFTA_META_KEY)
            .and_then(wire::as_u32)
            .map(u32::from_be);
        if load != "meta" || compare != "cmp" || key != Some(NFT_META_IIFNAME) {
            return None;
        }
        let value = wire::find(cmp, NFTA_CMP_DATA).and_then(|d| wire::find(d, NFTA_DATA_VALUE))?;
        Some(wire::as_str(value))
    })
}

/// The address a rule's whole-address `saddr ==` match compares with (as
/// iptables-nft writes `-s <host>`): a network-header `payload` load of the
/// IPv4 or IPv6 source, then an equality `cmp` (public for the fuzz targets).
pub fn saddr_match(attrs: &[u8]) -> Option<IpAddr> {
    let exprs: Vec<(String, &[u8])> = expressions(attrs).collect();
    exprs.windows(2).find_map(|pair| {
        let [(load, payload), (compare, cmp)] = pair else {
            return None;
        };
        fn u(attrs: &[u8], ty: u16) -> Option<u32> {
            wire::find(attrs, ty)
                .and_then(wire::as_u32)
                .map(u32::from_be)
        }
        if load != "payload" || compare != "cmp" || u(payload, 2) != Some(1) || u(cmp, 2) != Some(0)
        {
            return None;
        }
        let value = wire::find(cmp, NFTA_CMP_DATA).and_then(|d| wire::find(d, NFTA_DATA_VALUE))?;
        match (u(payload, 3), u(payload, 4)) {
            (Some(12), Some(4)) => <[u8; 4]>::try_from(value).ok().map(IpAddr::from),
            (Some(8), Some(16)) => <[u8; 16]>::try_from(value).ok().map(IpAddr::from),
            _ => None,
        }
    })
}

/// The text of a rule's `-m comment --comment` as iptables-nft writes it: an
/// xtables `match` expression named `comment` whose info is the
/// NUL-terminated `xt_comment_info` (public for the fuzz targets).
pub fn xt_comment(attrs: &[u8]) -> Option<String> {
    expressions(attrs).find_map(|(name, data)| {
        let matched = wire::find(data, NFTA_MATCH_NAME).map(wire::as_str);
        if name != "match" || matched.as_deref() != Some("comment") {
            return None;
        }
        wire::find(data, NFTA_MATCH_INFO).map(wire::as_str)
    })
}

/// The chain names of a rule's jump/goto verdicts (public for the fuzz targets).
pub fn verdict_chains(attrs: &[u8]) -> Vec<String> {
    let Some(list) = wire::find(attrs, NFTA_RULE_EXPRESSIONS) else {
        return Vec::new();
    };
    wire::attrs(list)
        .filter(|(t, _)| *t == NFTA_LIST_ELEM)
        .filter(|(_, e)| {
            wire::find(e, NFTA_EXPR_NAME).map(wire::as_str).as_deref() == Some("immediate")
        })
        .filter_map(|(_, e)| {
            let data = wire::find(e, NFTA_EXPR_DATA)?;
            let value = wire::find(data, 2)?;
            let verdict = wire::find(value, NFTA_DATA_VERDICT)?;
            wire::find(verdict, NFTA_VERDICT_CHAIN).map(wire::as_str)
        })
        .collect()
}

/// The rules of one chain; a missing table or chain is an empty list.
pub fn rules(sock: &mut NfSocket, family: u8, table: &str, chain: &str) -> Result<Vec<DumpedRule>> {
    let attrs = Body::default()
        .str(NFTA_RULE_TABLE, table)
        .str(NFTA_RULE_CHAIN, chain);
    let objects = match sock.dump(NFT_MSG_GETRULE, family, attrs) {
        Ok(o) => o,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    Ok(objects.iter().filter_map(|a| parse_rule(a)).collect())
}

/// A rule's attributes (dumped, or got by handle) as read here.
pub(super) fn parse_rule(attrs: &[u8]) -> Option<DumpedRule> {
    let handle = wire::find(attrs, NFTA_RULE_HANDLE)
        .and_then(|p| p.get(..8))
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)?;
    let comment = wire::find(attrs, NFTA_RULE_USERDATA)
        .and_then(|u| {
            // TLVs of (type u8, len u8, value).
            let mut rest = u;
            while rest.len() >= 2 {
                let (ty, len) = (rest[0], usize::from(rest[1]));
                let value = rest.get(2..2 + len)?;
                if ty == UDATA_COMMENT {
                    return Some(wire::as_str(value));
                }
                rest = &rest[2 + len..];
            }
            None
        })
        .or_else(|| xt_comment(attrs))
        .unwrap_or_default();
    Some(DumpedRule {
        handle,
        comment,
        jumps: verdict_chains(attrs),
        iifname: iifname_match(attrs),
        saddr: saddr_match(attrs),
    })
}
