//! One nf_tables transaction of one iptables table, in the messages
//! iptables-nft-restore sends for the same restore lines: `-N` creates a chain
//! that must not exist, a built-in chain is created with its table when
//! absent, `-A` appends, `-I CHAIN 1` puts the rule first, every rule carries
//! its `-p` for the xtables extensions' checks (NFTA_RULE_COMPAT). Rules are
//! deleted by handle, chains flushed and deleted by name.

use super::builtin::builtin;
use super::encode::expressions;
use super::rule::Rule;
use crate::netfilter::nft::{Expr, nfproto};
use crate::netfilter::{Error, Family, Result};
use crate::netlink::nfnl::{NLM_F_APPEND, NLM_F_CREATE, NLM_F_ECHO, NLM_F_EXCL, NfMsg, NfSocket};
use crate::netlink::wire::{Body, NESTED};

use crate::netlink::uapi::netfilter::NF_ACCEPT;
use crate::netlink::uapi::nf_tables::{
    NFT_MSG_DELCHAIN, NFT_MSG_DELRULE, NFT_MSG_NEWCHAIN, NFT_MSG_NEWRULE, NFT_MSG_NEWTABLE,
    NFTA_CHAIN_HOOK, NFTA_CHAIN_NAME, NFTA_CHAIN_POLICY, NFTA_CHAIN_TABLE, NFTA_CHAIN_TYPE,
    NFTA_EXPR_DATA, NFTA_EXPR_NAME, NFTA_HOOK_HOOKNUM, NFTA_HOOK_PRIORITY, NFTA_LIST_ELEM,
    NFTA_RULE_CHAIN, NFTA_RULE_COMPAT, NFTA_RULE_COMPAT_FLAGS, NFTA_RULE_COMPAT_PROTO,
    NFTA_RULE_EXPRESSIONS, NFTA_RULE_HANDLE, NFTA_RULE_TABLE, NFTA_TABLE_NAME,
};

/// The changes of one operation to one table of one family.
#[derive(Debug)]
pub struct Batch {
    family: Family,
    table: &'static str,
    msgs: Vec<NfMsg>,
    /// Whether the table has been declared in this batch.
    table_sent: bool,
    /// The built-in chains this batch creates.
    builtins: Vec<String>,
}

impl Batch {
    pub fn new(family: Family, table: &'static str) -> Batch {
        Batch {
            family,
            table,
            msgs: Vec::new(),
            table_sent: false,
            builtins: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// How many messages the batch holds: the index the next one gets.
    pub fn len(&self) -> usize {
        self.msgs.len()
    }

    fn push(&mut self, kind: u16, flags: u16, attrs: Vec<u8>, what: String) {
        self.msgs.push(NfMsg {
            kind,
            flags,
            family: nfproto(self.family),
            attrs,
            what,
        });
    }

    /// The table, created if absent (a no-op when it exists), once per batch
    /// and before any chain is made in it.
    fn table(&mut self) {
        if std::mem::replace(&mut self.table_sent, true) {
            return;
        }
        let attrs = Body::default()
            .str(NFTA_TABLE_NAME, self.table)
            .into_bytes();
        let what = format!("add table {}", self.table);
        self.push(NFT_MSG_NEWTABLE, NLM_F_CREATE, attrs, what);
    }

    /// Creates built-in `chain` (and the table) as iptables-nft does when the
    /// chain is absent: the caller looked it up. Policy accept. Once per batch.
    pub fn builtin_chain(&mut self, chain: &str) -> Result<()> {
        let Some((kind, hook, priority)) = builtin(self.table, chain) else {
            return Err(Error::InvalidConfig(format!(
                "{chain} is no built-in chain of table {}",
                self.table
            )));
        };
        if self.builtins.iter().any(|c| c == chain) {
            return Ok(());
        }
        self.builtins.push(chain.to_string());
        self.table();
        let attrs = Body::default()
            .str(NFTA_CHAIN_TABLE, self.table)
            .str(NFTA_CHAIN_NAME, chain)
            .nest(NFTA_CHAIN_HOOK | NESTED, |h| {
                h.attr(NFTA_HOOK_HOOKNUM, &hook.to_be_bytes())
                    .attr(NFTA_HOOK_PRIORITY, &priority.to_be_bytes())
            })
            .attr(NFTA_CHAIN_POLICY, &NF_ACCEPT.to_be_bytes())
            .str(NFTA_CHAIN_TYPE, kind)
            .into_bytes();
        let what = format!("create chain {} {chain}", self.table);
        self.push(NFT_MSG_NEWCHAIN, NLM_F_CREATE, attrs, what);
        Ok(())
    }

    /// `-N CHAIN`: the commit fails if it exists.
    pub fn new_chain(&mut self, chain: &str) {
        self.table();
        let attrs = Body::default()
            .str(NFTA_CHAIN_TABLE, self.table)
            .str(NFTA_CHAIN_NAME, chain)
            .into_bytes();
        let what = format!("create chain {} {chain}", self.table);
        self.push(NFT_MSG_NEWCHAIN, NLM_F_EXCL, attrs, what);
    }

    /// `-F CHAIN`: every rule of the chain deleted.
    pub fn flush(&mut self, chain: &str) {
        let attrs = Body::default()
            .str(NFTA_RULE_TABLE, self.table)
            .str(NFTA_RULE_CHAIN, chain)
            .into_bytes();
        let what = format!("flush chain {} {chain}", self.table);
        self.push(NFT_MSG_DELRULE, 0, attrs, what);
    }

    /// `-X CHAIN` (empty, and nothing jumps to it).
    pub fn delete_chain(&mut self, chain: &str) {
        let attrs = Body::default()
            .str(NFTA_CHAIN_TABLE, self.table)
            .str(NFTA_CHAIN_NAME, chain)
            .into_bytes();
        let what = format!("delete chain {} {chain}", self.table);
        self.push(NFT_MSG_DELCHAIN, 0, attrs, what);
    }

    /// `-A CHAIN RULE`.
    pub fn append(&mut self, chain: &str, rule: &Rule) -> Result<()> {
        self.rule(chain, rule, NLM_F_CREATE | NLM_F_APPEND, "append to")
    }

    /// `-I CHAIN 1 RULE`: the rule first in the chain.
    pub fn insert_first(&mut self, chain: &str, rule: &Rule) -> Result<()> {
        self.rule(chain, rule, NLM_F_CREATE, "insert into")
    }

    fn rule(&mut self, chain: &str, rule: &Rule, flags: u16, verb: &str) -> Result<()> {
        let exprs = expressions(rule, self.family)?;
        let attrs = Body::default()
            .str(NFTA_RULE_TABLE, self.table)
            .str(NFTA_RULE_CHAIN, chain)
            .nest(NFTA_RULE_EXPRESSIONS | NESTED, |list| {
                exprs.into_iter().fold(list, |list, e: Expr| {
                    list.nest(NFTA_LIST_ELEM | NESTED, |el| {
                        el.str(NFTA_EXPR_NAME, e.name)
                            .attr(NFTA_EXPR_DATA | NESTED, &e.data.into_bytes())
                    })
                })
            })
            .nest(NFTA_RULE_COMPAT | NESTED, |c| {
                let proto = rule.proto.map_or(0, |p| u32::from(p.number()));
                c.attr(NFTA_RULE_COMPAT_PROTO, &proto.to_be_bytes())
                    .attr(NFTA_RULE_COMPAT_FLAGS, &0u32.to_be_bytes())
            })
            .into_bytes();
        let what = format!("{verb} {} {chain}", self.table);
        self.push(NFT_MSG_NEWRULE, flags, attrs, what);
        Ok(())
    }

    /// Deletes the rule with `handle` in `chain`.
    pub fn delete_rule(&mut self, chain: &str, handle: u64) {
        let attrs = Body::default()
            .str(NFTA_RULE_TABLE, self.table)
            .str(NFTA_RULE_CHAIN, chain)
            .attr(NFTA_RULE_HANDLE, &handle.to_be_bytes())
            .into_bytes();
        let what = format!("delete rule {handle} of {} {chain}", self.table);
        self.push(NFT_MSG_DELRULE, 0, attrs, what);
    }

    /// Commits the batch, all or nothing; an empty batch sends nothing.
    pub fn commit(self, sock: &mut NfSocket) -> Result<()> {
        Ok(sock.transaction(&self.msgs)?)
    }

    /// Commits the batch as [`Batch::commit`], the kernel asked to echo the
    /// new rules of messages `echo` (indices from [`Batch::len`]): their
    /// handles, in that order (None where none came back). The echo flag
    /// asks for a copy of what the kernel wrote; it changes nothing written.
    pub fn commit_echoed(
        mut self,
        sock: &mut NfSocket,
        echo: &[usize],
    ) -> Result<Vec<Option<u64>>> {
        for i in echo {
            if let Some(m) = self.msgs.get_mut(*i).filter(|m| m.kind == NFT_MSG_NEWRULE) {
                m.flags |= NLM_F_ECHO;
            }
        }
        let echoed = sock.transaction_echoed(&self.msgs)?;
        Ok(echo
            .iter()
            .map(|i| {
                echoed
                    .iter()
                    .filter(|(at, _)| at == i)
                    .find_map(|(_, attrs)| super::Dumped::of(attrs.clone()))
                    .map(|d| d.handle)
            })
            .collect())
    }

    /// The messages as text, for golden files (see `nft::Tx::golden`).
    #[cfg(test)]
    pub(crate) fn golden(&self) -> String {
        let kind = |k| match k {
            NFT_MSG_NEWTABLE => "NEWTABLE",
            NFT_MSG_NEWCHAIN => "NEWCHAIN",
            NFT_MSG_DELCHAIN => "DELCHAIN",
            NFT_MSG_NEWRULE => "NEWRULE",
            NFT_MSG_DELRULE => "DELRULE",
            _ => "?",
        };
        let mut out = String::new();
        for (i, m) in self.msgs.iter().enumerate() {
            out.push_str(&format!(
                "[{i}] {}\n  {} family {} flags {:#x}\n",
                m.what,
                kind(m.kind),
                m.family,
                m.flags
            ));
            crate::netfilter::nft::golden_attrs(&mut out, &m.attrs, 2);
        }
        out
    }
}
