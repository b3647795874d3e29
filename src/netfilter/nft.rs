//! The nftables backend without the `nft` binary: tables, chains and rules
//! encoded as nf_tables netlink messages (expressions: payload, cmp, bitwise,
//! meta, fib, immediate, nat, masq) and committed in one transaction.

use super::Result;
use crate::netlink::nfnl::{NLM_F_APPEND, NLM_F_CREATE, NfMsg, NfSocket};
use crate::netlink::wire::{self, Body, NESTED};
use ipnet::IpNet;
use std::net::IpAddr;

const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_DELTABLE: u16 = 2;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_GETCHAIN: u16 = 4;
const NFT_MSG_DELCHAIN: u16 = 5;
const NFT_MSG_NEWRULE: u16 = 6;
const NFT_MSG_GETRULE: u16 = 7;
const NFT_MSG_DELRULE: u16 = 8;

const NFTA_TABLE_NAME: u16 = 1;
const NFTA_TABLE_FLAGS: u16 = 2;
const NFTA_TABLE_USERDATA: u16 = 6;
const NFTA_CHAIN_TABLE: u16 = 1;
const NFTA_CHAIN_NAME: u16 = 3;
const NFTA_CHAIN_HOOK: u16 = 4;
const NFTA_CHAIN_POLICY: u16 = 5;
const NFTA_CHAIN_TYPE: u16 = 7;
const NFTA_HOOK_HOOKNUM: u16 = 1;
const NFTA_HOOK_PRIORITY: u16 = 2;
const NFTA_RULE_TABLE: u16 = 1;
const NFTA_RULE_CHAIN: u16 = 2;
const NFTA_RULE_HANDLE: u16 = 3;
const NFTA_RULE_EXPRESSIONS: u16 = 4;
const NFTA_RULE_USERDATA: u16 = 7;
const NFTA_LIST_ELEM: u16 = 1;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;
const NFTA_DATA_VALUE: u16 = 1;
const NFTA_DATA_VERDICT: u16 = 2;
const NFTA_VERDICT_CODE: u16 = 1;
const NFTA_VERDICT_CHAIN: u16 = 2;
/// Comments live in userdata as TLV type 0 (tables and rules alike).
const UDATA_COMMENT: u8 = 0;

const REG_VERDICT: u32 = 0;
const REG_1: u32 = 1;
const REG_2: u32 = 2;

const NFT_META_IIFNAME: u32 = 6;
const NFTA_META_DREG: u16 = 1;
const NFTA_META_KEY: u16 = 2;
const NFTA_CMP_DATA: u16 = 3;
/// Interface names are compared as the kernel stores them: NUL-padded to IFNAMSIZ.
const IFNAMSIZ: usize = 16;

pub const NFPROTO_INET: u8 = 1;
pub const NFPROTO_IPV4: u8 = 2;
pub const NFPROTO_BRIDGE: u8 = 7;
pub const NFPROTO_IPV6: u8 = 10;

/// The nfnetlink family (NFPROTO_*) of an address family's tables.
pub fn nfproto(family: crate::netlink::addr::Family) -> u8 {
    match family {
        crate::netlink::addr::Family::V4 => NFPROTO_IPV4,
        crate::netlink::addr::Family::V6 => NFPROTO_IPV6,
    }
}

pub const HOOK_PREROUTING: u32 = 0;
pub const HOOK_FORWARD: u32 = 2;
pub const PRIO_FILTER: i32 = 0;
pub const HOOK_OUTPUT: u32 = 3;
pub const HOOK_POSTROUTING: u32 = 4;
pub const PRIO_DSTNAT: i32 = -100;
pub const PRIO_SRCNAT: i32 = 100;

const RTN_LOCAL: u32 = 2;
const NF_DROP: i32 = 0;
const NF_ACCEPT: i32 = 1;
const NFT_JUMP: i32 = -3;
const NFT_GOTO: i32 = -4;
const NFT_RETURN: i32 = -5;

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn udata_comment(comment: &str) -> Vec<u8> {
    let mut text = comment.as_bytes().to_vec();
    text.push(0);
    text.truncate(255);
    let mut out = vec![UDATA_COMMENT, text.len() as u8];
    out.extend_from_slice(&text);
    out
}

/// One expression: name and its attributes.
#[derive(Debug, Clone)]
pub struct Expr {
    name: &'static str,
    data: Body,
}

fn expr(name: &'static str, data: Body) -> Expr {
    Expr { name, data }
}

fn data_value(bytes: &[u8]) -> Body {
    Body::default().attr(NFTA_DATA_VALUE, bytes)
}

/// Header fields the rules match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Saddr,
    Daddr,
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    }
}

fn load_addr(field: Field, v6: bool) -> Expr {
    let (offset, len) = match (field, v6) {
        (Field::Saddr, false) => (12, 4),
        (Field::Daddr, false) => (16, 4),
        (Field::Saddr, true) => (8, 16),
        (Field::Daddr, true) => (24, 16),
    };
    expr(
        "payload",
        Body::default()
            .attr(1, &be32(REG_1)) // DREG
            .attr(2, &be32(1)) // BASE network header
            .attr(3, &be32(offset))
            .attr(4, &be32(len)),
    )
}

fn cmp(op_eq: bool, value: &[u8]) -> Expr {
    let value = value.to_vec();
    expr(
        "cmp",
        Body::default()
            .attr(1, &be32(REG_1))
            .attr(2, &be32(if op_eq { 0 } else { 1 }))
            .nest(3 | NESTED, |_| data_value(&value)),
    )
}

fn bitwise_mask(len: u32, mask: &[u8]) -> Expr {
    let mask = mask.to_vec();
    let zero = vec![0u8; mask.len()];
    expr(
        "bitwise",
        Body::default()
            .attr(1, &be32(REG_1))
            .attr(2, &be32(REG_1))
            .attr(3, &be32(len))
            .nest(4 | NESTED, |_| data_value(&mask))
            .nest(5 | NESTED, |_| data_value(&zero)),
    )
}

/// `ip[6] saddr|daddr == ip` or `!= net` (a network compares under its mask).
pub fn match_addr(field: Field, net: IpNet, equal: bool) -> Vec<Expr> {
    let v6 = net.addr().is_ipv6();
    let mut out = vec![load_addr(field, v6)];
    let full = if v6 { 128 } else { 32 };
    if net.prefix_len() < full {
        let len = if v6 { 16 } else { 4 };
        out.push(bitwise_mask(len, &ip_bytes(net.netmask())));
        out.push(cmp(equal, &ip_bytes(net.network())));
    } else {
        out.push(cmp(equal, &ip_bytes(net.addr())));
    }
    out
}

/// `meta nfproto ipv4|ipv6` (needed in `inet` tables before `ip`/`ip6` matches).
pub fn match_nfproto(v6: bool) -> Vec<Expr> {
    vec![
        expr(
            "meta",
            Body::default().attr(1, &be32(REG_1)).attr(2, &be32(15)),
        ),
        cmp(true, &[if v6 { NFPROTO_IPV6 } else { NFPROTO_IPV4 }]),
    ]
}

/// `<proto> dport <port>`.
pub fn match_dport(protocol: u8, port: u16) -> Vec<Expr> {
    vec![
        meta_load(META_L4PROTO),
        cmp(true, &[protocol]),
        transport_load(2, 2),
        cmp(true, &port.to_be_bytes()),
    ]
}

/// `fib daddr type local`.
pub fn match_fib_daddr_local() -> Vec<Expr> {
    vec![
        expr(
            "fib",
            Body::default()
                .attr(1, &be32(REG_1))
                .attr(2, &be32(3)) // result: address type
                .attr(3, &be32(2)), // flags: daddr
        ),
        cmp(true, &RTN_LOCAL.to_ne_bytes()),
    ]
}

fn verdict(code: i32, chain: Option<&str>) -> Expr {
    let chain = chain.map(String::from);
    expr(
        "immediate",
        Body::default()
            .attr(1, &be32(REG_VERDICT))
            .nest(2 | NESTED, |d| {
                d.nest(NFTA_DATA_VERDICT | NESTED, |v| {
                    let v = v.attr(NFTA_VERDICT_CODE, &(code as u32).to_be_bytes());
                    match &chain {
                        Some(c) => v.str(NFTA_VERDICT_CHAIN, c),
                        None => v,
                    }
                })
            }),
    )
}

/// `iifname "<name>"`, as `nft` sends it.
pub fn match_iifname(name: &str) -> Vec<Expr> {
    let mut value = name.as_bytes().to_vec();
    value.resize(IFNAMSIZ.max(value.len() + 1), 0);
    vec![meta_load(NFT_META_IIFNAME), cmp(true, &value)]
}

/// `ether saddr <mac>` (bridge family: the link-layer header is Ethernet).
pub fn match_ether_saddr(mac: [u8; 6]) -> Vec<Expr> {
    vec![
        expr(
            "payload",
            Body::default()
                .attr(1, &be32(REG_1))
                .attr(2, &be32(0)) // BASE link-layer header
                .attr(3, &be32(6))
                .attr(4, &be32(6)),
        ),
        cmp(true, &mac),
    ]
}

/// `ct state established,related`.
pub fn match_ct_established_related() -> Vec<Expr> {
    const ESTABLISHED: u32 = 1 << 1;
    const RELATED: u32 = 1 << 2;
    vec![
        expr(
            "ct",
            Body::default().attr(1, &be32(REG_1)).attr(2, &be32(0)),
        ),
        bitwise_mask(4, &(ESTABLISHED | RELATED).to_ne_bytes()),
        cmp(false, &0u32.to_ne_bytes()),
    ]
}

pub fn accept() -> Expr {
    verdict(NF_ACCEPT, None)
}

pub fn drop() -> Expr {
    verdict(NF_DROP, None)
}

pub fn jump(chain: &str) -> Expr {
    verdict(NFT_JUMP, Some(chain))
}

pub fn goto(chain: &str) -> Expr {
    verdict(NFT_GOTO, Some(chain))
}

pub fn ret() -> Expr {
    verdict(NFT_RETURN, None)
}

pub fn masquerade() -> Expr {
    expr("masq", Body::default())
}

/// `dnat to <ip>:<port>`.
pub fn dnat(ip: IpAddr, port: u16) -> Vec<Expr> {
    let family = if ip.is_ipv6() {
        NFPROTO_IPV6
    } else {
        NFPROTO_IPV4
    };
    let addr = ip_bytes(ip);
    vec![
        expr(
            "immediate",
            Body::default()
                .attr(1, &be32(REG_1))
                .nest(2 | NESTED, |_| data_value(&addr)),
        ),
        expr(
            "immediate",
            Body::default()
                .attr(1, &be32(REG_2))
                .nest(2 | NESTED, |_| data_value(&port.to_be_bytes())),
        ),
        expr(
            "nat",
            Body::default()
                .attr(1, &be32(1)) // DNAT
                .attr(2, &be32(u32::from(family)))
                .attr(3, &be32(REG_1))
                .attr(5, &be32(REG_2))
                .attr(7, &be32(2)), // NF_NAT_RANGE_PROTO_SPECIFIED
        ),
    ]
}

const META_MARK: u32 = 3;
const META_OIFNAME: u32 = 7;
const META_L4PROTO: u32 = 16;

/// A meta key loaded into register 1 (attributes in the order `nft` sends them).
fn meta_load(key: u32) -> Expr {
    expr(
        "meta",
        Body::default()
            .attr(NFTA_META_KEY, &be32(key))
            .attr(NFTA_META_DREG, &be32(REG_1)),
    )
}

fn transport_load(offset: u32, len: u32) -> Expr {
    expr(
        "payload",
        Body::default()
            .attr(1, &be32(REG_1))
            .attr(2, &be32(2)) // BASE transport header
            .attr(3, &be32(offset))
            .attr(4, &be32(len)),
    )
}

/// One word of a condition: quoted words are names, never operators.
struct Word {
    text: String,
    quoted: bool,
}

/// The words of the conditions as nft reads them: the list joined with
/// spaces (so `["ip saddr 10.0.0.0/8"]` and `["ip", "saddr", "10.0.0.0/8"]`
/// are the same), `"…"` keeping a name whole.
fn words(conditions: &[String]) -> Result<Vec<Word>> {
    let text = conditions.join(" ");
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_control() && c != '\t' {
            return Err(super::Error::InvalidConfig(format!(
                "nft condition {text:?} holds a control character"
            )));
        }
        if c.is_whitespace() {
            continue;
        }
        if c == '"' {
            let mut word = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(c) if !c.is_control() => word.push(c),
                    _ => {
                        return Err(super::Error::InvalidConfig(format!(
                            "nft condition {text:?}: unterminated or invalid quoted string"
                        )));
                    }
                }
            }
            out.push(Word {
                text: word,
                quoted: true,
            });
            continue;
        }
        let mut word = c.to_string();
        // A control character ends the word, to be refused above.
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && !c.is_control() && *c != '"') {
            word.push(c);
        }
        out.push(Word {
            text: word,
            quoted: false,
        });
    }
    Ok(out)
}

const SUPPORTED: &str = "supported: `ip saddr|daddr [!=] ADDR[/LEN]` (conditionsV4), \
`ip6 saddr|daddr [!=] ADDR[/LEN]` (conditionsV6), `[meta] iifname|oifname [!=] NAME[*]`, \
`meta l4proto [!=] PROTO`, `meta mark [!=] VALUE`, `tcp|udp|sctp dport|sport [!=] PORT`";

/// The matches of nft-syntax conditions (as in portmap's `conditionsV4`/
/// `conditionsV6`) for a table of one family, encoded as expressions. Every
/// word is understood or the whole is refused naming it: a condition silently
/// dropped would open a port wider than configured.
pub fn parse_conditions(conditions: &[String], v6: bool) -> Result<Vec<Expr>> {
    let words = words(conditions)?;
    let whole = conditions.join(" ");
    let refuse = |word: Option<&Word>, why: &str| {
        let token = match word {
            Some(w) => format!("token {:?}", w.text),
            None => "end of condition".to_string(),
        };
        super::Error::InvalidConfig(format!(
            "nft condition {whole:?}: unsupported {token} ({why}; {SUPPORTED})"
        ))
    };
    let mut it = words.iter().peekable();
    let mut out = Vec::new();
    while let Some(w) = it.next() {
        let keyword = if w.quoted { "" } else { w.text.as_str() };
        match keyword {
            "ip" | "ip6" => {
                if (keyword == "ip6") != v6 {
                    return Err(refuse(
                        Some(w),
                        if v6 {
                            "conditionsV6 match IPv6 packets: use `ip6`"
                        } else {
                            "conditionsV4 match IPv4 packets: use `ip`"
                        },
                    ));
                }
                let field = match it.next() {
                    Some(f) if !f.quoted && f.text == "saddr" => Field::Saddr,
                    Some(f) if !f.quoted && f.text == "daddr" => Field::Daddr,
                    other => return Err(refuse(other, "expected `saddr` or `daddr`")),
                };
                let eq = equal(&mut it);
                let value = it.next();
                let net = value
                    .map(|v| v.text.as_str())
                    .and_then(|v| {
                        v.parse::<IpNet>()
                            .ok()
                            .or_else(|| v.parse::<IpAddr>().ok().map(IpNet::from))
                    })
                    .filter(|n| n.addr().is_ipv6() == v6)
                    .ok_or_else(|| {
                        refuse(
                            value,
                            if v6 {
                                "expected an IPv6 address or network"
                            } else {
                                "expected an IPv4 address or network"
                            },
                        )
                    })?;
                out.extend(match_addr(field, net, eq));
            }
            "iifname" | "oifname" => {
                let key = if keyword == "iifname" {
                    NFT_META_IIFNAME
                } else {
                    META_OIFNAME
                };
                out.extend(iface_match(key, &mut it, &refuse)?);
            }
            "meta" => {
                let key = it.next();
                match key.filter(|k| !k.quoted).map(|k| k.text.as_str()) {
                    Some("iifname") => out.extend(iface_match(NFT_META_IIFNAME, &mut it, &refuse)?),
                    Some("oifname") => out.extend(iface_match(META_OIFNAME, &mut it, &refuse)?),
                    Some("l4proto") => {
                        let eq = equal(&mut it);
                        let value = it.next();
                        let proto = value
                            .and_then(|v| protocol_number(&v.text))
                            .ok_or_else(|| refuse(value, "expected a protocol name or number"))?;
                        out.push(meta_load(META_L4PROTO));
                        out.push(cmp(eq, &[proto]));
                    }
                    Some("mark") => {
                        let eq = equal(&mut it);
                        let value = it.next();
                        let mark = value
                            .and_then(|v| parse_u32(&v.text))
                            .ok_or_else(|| refuse(value, "expected a 32-bit mark"))?;
                        out.push(meta_load(META_MARK));
                        out.push(cmp(eq, &mark.to_ne_bytes()));
                    }
                    _ => {
                        return Err(refuse(
                            key,
                            "expected `iifname`, `oifname`, `l4proto` or `mark` after `meta`",
                        ));
                    }
                }
            }
            "tcp" | "udp" | "sctp" => {
                let offset = match it.next() {
                    Some(f) if !f.quoted && f.text == "sport" => 0,
                    Some(f) if !f.quoted && f.text == "dport" => 2,
                    other => return Err(refuse(other, "expected `sport` or `dport`")),
                };
                let eq = equal(&mut it);
                let value = it.next();
                let port = value
                    .and_then(|v| v.text.parse::<u16>().ok())
                    .ok_or_else(|| refuse(value, "expected a port number"))?;
                out.push(meta_load(META_L4PROTO));
                out.push(cmp(true, &[protocol_number(keyword).unwrap_or(6)]));
                out.push(transport_load(offset, 2));
                out.push(cmp(eq, &port.to_be_bytes()));
            }
            _ => return Err(refuse(Some(w), "not a match cni-multi encodes")),
        }
    }
    Ok(out)
}

type Words<'a> = std::iter::Peekable<std::slice::Iter<'a, Word>>;

/// An optional operator: `!=`/`ne` negates, `==`/`eq` or nothing is equality.
fn equal(it: &mut Words<'_>) -> bool {
    match it.peek() {
        Some(w) if !w.quoted && matches!(w.text.as_str(), "!=" | "ne") => {
            it.next();
            false
        }
        Some(w) if !w.quoted && matches!(w.text.as_str(), "==" | "eq") => {
            it.next();
            true
        }
        _ => true,
    }
}

/// `iifname|oifname [!=] NAME` (a trailing `*` matches a prefix, as in nft).
fn iface_match(
    key: u32,
    it: &mut Words<'_>,
    refuse: &impl Fn(Option<&Word>, &str) -> super::Error,
) -> Result<Vec<Expr>> {
    let eq = equal(it);
    let value = it.next();
    let Some(name) = value.map(|v| v.text.as_str()) else {
        return Err(refuse(None, "expected an interface name"));
    };
    let (stem, prefix) = match name.strip_suffix('*') {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    let valid = !stem.is_empty()
        && stem.len() < IFNAMSIZ
        && !stem
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '/' | '*' | '\\'));
    if !valid {
        return Err(refuse(value, "expected an interface name (1-15 bytes)"));
    }
    let mut bytes = stem.as_bytes().to_vec();
    if !prefix {
        bytes.resize(IFNAMSIZ, 0);
    }
    Ok(vec![meta_load(key), cmp(eq, &bytes)])
}

fn protocol_number(name: &str) -> Option<u8> {
    Some(match name {
        "icmp" => 1,
        "igmp" => 2,
        "tcp" => 6,
        "udp" => 17,
        "gre" => 47,
        "esp" => 50,
        "ah" => 51,
        "icmpv6" | "ipv6-icmp" => 58,
        "sctp" => 132,
        "udplite" => 136,
        n => return n.parse().ok(),
    })
}

fn parse_u32(v: &str) -> Option<u32> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// One nfnetlink socket for all the reads and the commit of an operation.
pub fn open() -> Result<NfSocket> {
    Ok(NfSocket::open()?)
}

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
    fn push(&mut self, kind: u16, flags: u16, family: u8, attrs: Vec<u8>, what: String) {
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
                    .attr(NFTA_HOOK_PRIORITY, &(priority as u32).to_be_bytes())
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
                        .attr(NFTA_HOOK_PRIORITY, &(priority as u32).to_be_bytes())
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

    pub fn commit(self, sock: &mut NfSocket) -> Result<()> {
        Ok(sock.transaction(&self.msgs)?)
    }
}

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

fn expressions(attrs: &[u8]) -> impl Iterator<Item = (String, &[u8])> {
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
    const NFTA_MATCH_NAME: u16 = 1;
    const NFTA_MATCH_INFO: u16 = 3;
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
    Ok(objects
        .iter()
        .filter_map(|attrs| {
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
        })
        .collect())
}

#[cfg(test)]
#[path = "nft_tests.rs"]
mod tests;
