//! A transaction: tables, chains and rules queued, then committed in one batch.

use super::*;

/// A table of a family, a chain or a rule to put in a transaction.
pub struct Tx {
    msgs: Vec<NfMsg>,
}

impl Default for Tx {
    fn default() -> Self {
        Self::new()
    }
}

impl Tx {
    /// Queues one message of the transaction.
    pub(super) fn push(&mut self, kind: u16, flags: u16, family: u8, attrs: Vec<u8>, what: String) {
        self.msgs.push(NfMsg {
            kind,
            flags,
            family,
            attrs,
            what,
        });
    }

    pub fn new() -> Tx {
        Tx { msgs: Vec::new() }
    }

    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Creates the table if missing (never fails when it exists).
    pub fn table(&mut self, family: u8, name: &str, comment: &str) {
        let attrs = Body::default()
            .str(NFTA_TABLE_NAME, name)
            .attr(NFTA_TABLE_USERDATA, &udata_comment(comment))
            .into_bytes();
        self.push(
            NFT_MSG_NEWTABLE,
            NLM_F_CREATE,
            family,
            attrs,
            format!("add table {name}"),
        );
    }

    /// Creates the table if missing, without a comment (as `nft add table`).
    pub fn plain_table(&mut self, family: u8, name: &str) {
        let attrs = Body::default()
            .str(NFTA_TABLE_NAME, name)
            .attr(NFTA_TABLE_FLAGS, &be32(0))
            .into_bytes();
        self.push(
            NFT_MSG_NEWTABLE,
            NLM_F_CREATE,
            family,
            attrs,
            format!("add table {name}"),
        );
    }

    /// Creates a base chain with `policy accept` if missing (an existing one
    /// gets that policy back), attributes in the order `nft` sends them.
    pub fn accepting_base_chain(
        &mut self,
        family: u8,
        table: &str,
        name: &str,
        (kind, hook, priority): (&str, u32, i32),
    ) {
        let attrs = Body::default()
            .str(NFTA_CHAIN_TABLE, table)
            .str(NFTA_CHAIN_NAME, name)
            .str(NFTA_CHAIN_TYPE, kind)
            .attr(NFTA_CHAIN_POLICY, &(NF_ACCEPT as u32).to_be_bytes())
            .nest(NFTA_CHAIN_HOOK | NESTED, |h| {
                h.attr(NFTA_HOOK_HOOKNUM, &be32(hook))
                    .attr(NFTA_HOOK_PRIORITY, &priority.to_be_bytes())
            })
            .into_bytes();
        self.push(
            NFT_MSG_NEWCHAIN,
            NLM_F_CREATE,
            family,
            attrs,
            format!("add chain {table} {name}"),
        );
    }

    /// Deletes a chain (it must exist and nothing may jump to it).
    pub fn delete_chain(&mut self, family: u8, table: &str, name: &str) {
        let attrs = Body::default()
            .str(NFTA_CHAIN_TABLE, table)
            .str(NFTA_CHAIN_NAME, name)
            .into_bytes();
        self.push(
            NFT_MSG_DELCHAIN,
            0,
            family,
            attrs,
            format!("delete chain {table} {name}"),
        );
    }

    /// The messages so far (for golden tests of what a transaction sends).
    #[cfg(test)]
    pub(crate) fn messages(&self) -> &[NfMsg] {
        &self.msgs
    }

    /// Creates a chain if missing: regular, or a base chain with (type, hook, priority).
    pub fn chain(&mut self, family: u8, table: &str, name: &str, base: Option<(&str, u32, i32)>) {
        let mut body = Body::default()
            .str(NFTA_CHAIN_TABLE, table)
            .str(NFTA_CHAIN_NAME, name);
        if let Some((kind, hook, priority)) = base {
            body = body
                .nest(NFTA_CHAIN_HOOK | NESTED, |h| {
                    h.attr(NFTA_HOOK_HOOKNUM, &be32(hook))
                        .attr(NFTA_HOOK_PRIORITY, &priority.to_be_bytes())
                })
                .str(NFTA_CHAIN_TYPE, kind);
        }
        self.push(
            NFT_MSG_NEWCHAIN,
            NLM_F_CREATE,
            family,
            body.into_bytes(),
            format!("add chain {table} {name}"),
        );
    }

    /// Deletes every rule of a chain.
    pub fn flush(&mut self, family: u8, table: &str, chain: &str) {
        let attrs = Body::default()
            .str(NFTA_RULE_TABLE, table)
            .str(NFTA_RULE_CHAIN, chain)
            .into_bytes();
        self.push(
            NFT_MSG_DELRULE,
            0,
            family,
            attrs,
            format!("flush chain {table} {chain}"),
        );
    }

    /// Appends a rule with a comment.
    pub fn rule(
        &mut self,
        family: u8,
        table: &str,
        chain: &str,
        exprs: &[Expr],
        comment: Option<&str>,
    ) {
        let list = exprs.to_vec();
        let mut body = Body::default()
            .str(NFTA_RULE_TABLE, table)
            .str(NFTA_RULE_CHAIN, chain)
            .nest(NFTA_RULE_EXPRESSIONS | NESTED, |l| {
                list.into_iter().fold(l, |l, e| {
                    l.nest(NFTA_LIST_ELEM | NESTED, |el| {
                        el.str(NFTA_EXPR_NAME, e.name)
                            .attr(NFTA_EXPR_DATA | NESTED, &e.data.into_bytes())
                    })
                })
            });
        if let Some(c) = comment {
            body = body.attr(NFTA_RULE_USERDATA, &udata_comment(c));
        }
        self.push(
            NFT_MSG_NEWRULE,
            NLM_F_CREATE | NLM_F_APPEND,
            family,
            body.into_bytes(),
            format!("add rule to {table} {chain}"),
        );
    }

    /// Deletes a table with everything in it.
    pub fn delete_table(&mut self, family: u8, name: &str) {
        let attrs = Body::default().str(NFTA_TABLE_NAME, name).into_bytes();
        self.push(
            NFT_MSG_DELTABLE,
            0,
            family,
            attrs,
            format!("delete table {name}"),
        );
    }

    pub fn delete_rule(&mut self, family: u8, table: &str, chain: &str, handle: u64) {
        let attrs = Body::default()
            .str(NFTA_RULE_TABLE, table)
            .str(NFTA_RULE_CHAIN, chain)
            .attr(NFTA_RULE_HANDLE, &handle.to_be_bytes())
            .into_bytes();
        self.push(
            NFT_MSG_DELRULE,
            0,
            family,
            attrs,
            format!("delete rule {handle} of {table} {chain}"),
        );
    }

    /// A stable text of the transaction for golden files: one block per
    /// message (its description, kind, family and flags), its attributes as
    /// an indented tree (nests by the NESTED bit), leaves as a printable
    /// string or hex.
    #[cfg(test)]
    pub(crate) fn golden(&self) -> String {
        let mut out = String::new();
        for (i, m) in self.msgs.iter().enumerate() {
            let kind = match m.kind {
                NFT_MSG_NEWTABLE => "NEWTABLE",
                NFT_MSG_DELTABLE => "DELTABLE",
                NFT_MSG_NEWCHAIN => "NEWCHAIN",
                NFT_MSG_DELCHAIN => "DELCHAIN",
                NFT_MSG_NEWRULE => "NEWRULE",
                NFT_MSG_DELRULE => "DELRULE",
                _ => "?",
            };
            out.push_str(&format!(
                "[{i}] {}\n  {kind} family {} flags {:#x}\n",
                m.what, m.family, m.flags
            ));
            golden_attrs(&mut out, &m.attrs, 2);
        }
        out
    }

    pub fn commit(self, sock: &mut NfSocket) -> Result<()> {
        Ok(sock.transaction(&self.msgs)?)
    }
}

/// Appends `bytes`' attributes at `depth` (see `Tx::golden`).
#[cfg(test)]
pub(crate) fn golden_attrs(out: &mut String, mut bytes: &[u8], depth: usize) {
    let pad = "  ".repeat(depth);
    while bytes.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([bytes[0], bytes[1]]));
        let ty = u16::from_ne_bytes([bytes[2], bytes[3]]);
        if len < 4 || len > bytes.len() {
            out.push_str(&format!("{pad}! bad attribute length {len}\n"));
            return;
        }
        let payload = &bytes[4..len];
        let number = ty & !NESTED;
        if ty & NESTED != 0 {
            out.push_str(&format!("{pad}{number}:\n"));
            golden_attrs(out, payload, depth + 1);
        } else {
            let text = payload.strip_suffix(&[0]).unwrap_or(payload);
            let printable =
                |t: &[u8]| !t.is_empty() && t.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
            // A userdata comment: TLV type 0, its length, the text with its NUL.
            let comment = match payload {
                [UDATA_COMMENT, len, rest @ ..] if usize::from(*len) == rest.len() => {
                    rest.strip_suffix(&[0]).filter(|t| printable(t))
                }
                _ => None,
            };
            if let Some(c) = comment {
                let c = String::from_utf8_lossy(c);
                out.push_str(&format!("{pad}{number} = comment {c:?}\n"));
            } else if printable(text) {
                let s = String::from_utf8_lossy(text);
                out.push_str(&format!("{pad}{number} = {s:?}\n"));
            } else {
                let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();
                out.push_str(&format!("{pad}{number} = 0x{hex}\n"));
            }
        }
        let padded = (len + 3) & !3;
        bytes = &bytes[padded.min(bytes.len())..];
    }
}
