//! The floors' nf_tables writer: one pod's rules, one batch per plugin (as
//! two plugin processes must), in the encoding iptables-nft 1.8 sends for
//! the reference's rules (xt matches and targets where it uses them, native
//! expressions elsewhere, a counter on every rule; `floor-iptables-nft.golden`
//! holds what it sent) or in the one of our nftables backends (the per-pod
//! rules only: the skeleton is in place); and their removal by handle. Nothing
//! is read: the handles a DEL needs come back with the ADD (NLM_F_ECHO).

use cni_multi::netlink::wire::{self, Body, NESTED};
use neli::consts::socket::{Msg, NlFamily};
use neli::socket::NlSocket;
use neli::utils::Groups;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;

type Res<T> = Result<T, String>;

// linux/netfilter/nfnetlink.h
const NFNL_SUBSYS_NFTABLES: u16 = 10;
const BATCH_BEGIN: u16 = 0x10;
const BATCH_END: u16 = 0x11;
// linux/netfilter/nf_tables.h: NFT_MSG_*
const NEWCHAIN: u16 = 3;
const DELCHAIN: u16 = 5;
const NEWRULE: u16 = 6;
const DELRULE: u16 = 8;
// linux/netlink.h
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_ECHO: u16 = 0x8;
const NLM_F_NONREC: u16 = 0x100;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_APPEND: u16 = 0x800;
// linux/netfilter.h
const NFPROTO_INET: u8 = 1;
const NFPROTO_IPV4: u8 = 2;
// linux/netfilter/nf_tables.h: NFTA_*
const RULE_TABLE: u16 = 1;
const RULE_CHAIN: u16 = 2;
const RULE_HANDLE: u16 = 3;
const RULE_EXPRESSIONS: u16 = 4;
const RULE_COMPAT: u16 = 5;
const RULE_USERDATA: u16 = 7;
const CHAIN_TABLE: u16 = 1;
const CHAIN_NAME: u16 = 3;
const LIST_ELEM: u16 = 1;
const EXPR_NAME: u16 = 1;
const EXPR_DATA: u16 = 2;
const DATA_VALUE: u16 = 1;
const DATA_VERDICT: u16 = 2;
// linux/netfilter.h, nf_tables.h: verdicts
const NF_ACCEPT: i32 = 1;
const NFT_JUMP: i32 = -3;
// nf_tables.h: NFT_META_*, payload bases, cmp ops
const META_L4PROTO: u32 = 16;
const META_NFPROTO: u32 = 15;
const BASE_NETWORK: u32 = 1;
const BASE_TRANSPORT: u32 = 2;
const SADDR: u32 = 12;
const DADDR: u32 = 16;

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

/// One expression of a rule's list: its name and its data.
fn expr(name: &str, data: Body) -> Body {
    Body::default()
        .str(EXPR_NAME, name)
        .attr(EXPR_DATA | NESTED, &data.into_bytes())
}

fn value(bytes: &[u8]) -> Body {
    Body::default().attr(DATA_VALUE, bytes)
}

fn payload(base: u32, offset: u32, len: u32) -> Body {
    expr(
        "payload",
        Body::default()
            .attr(1, &be32(1))
            .attr(2, &be32(base))
            .attr(3, &be32(offset))
            .attr(4, &be32(len)),
    )
}

fn cmp(equal: bool, bytes: &[u8]) -> Body {
    expr(
        "cmp",
        Body::default()
            .attr(1, &be32(1))
            .attr(2, &be32(u32::from(!equal)))
            .attr(3 | NESTED, &value(bytes).into_bytes()),
    )
}

fn bitwise(mask: &[u8]) -> Body {
    let zero = vec![0; mask.len()];
    expr(
        "bitwise",
        Body::default()
            .attr(1, &be32(1))
            .attr(2, &be32(1))
            .attr(3, &be32(mask.len() as u32))
            .attr(4 | NESTED, &value(mask).into_bytes())
            .attr(5 | NESTED, &value(&zero).into_bytes()),
    )
}

/// `meta <key>` into register 1; libnftnl (iptables-nft) writes the key
/// first, our nftables backend the register.
fn meta(key: u32, key_first: bool) -> Body {
    let data = if key_first {
        Body::default().attr(2, &be32(key)).attr(1, &be32(1))
    } else {
        Body::default().attr(1, &be32(1)).attr(2, &be32(key))
    };
    expr("meta", data)
}

fn counter() -> Body {
    expr("counter", Body::default().attr(1, &[0; 8]).attr(2, &[0; 8]))
}

fn verdict(code: i32, chain: Option<&str>) -> Body {
    let mut v = Body::default().attr(1, &(code as u32).to_be_bytes());
    if let Some(chain) = chain {
        v = v.str(2, chain);
    }
    let data = Body::default().attr(DATA_VERDICT | NESTED, &v.into_bytes());
    expr(
        "immediate",
        Body::default()
            .attr(1, &be32(0))
            .attr(2 | NESTED, &data.into_bytes()),
    )
}

fn load_value(reg: u32, bytes: &[u8]) -> Body {
    expr(
        "immediate",
        Body::default()
            .attr(1, &be32(reg))
            .attr(2 | NESTED, &value(bytes).into_bytes()),
    )
}

/// An xt match or target (`kind`) as nft_compat takes it: name, revision,
/// the extension's own struct.
fn xt(kind: &str, name: &str, rev: u32, info: &[u8]) -> Body {
    expr(
        kind,
        Body::default()
            .str(1, name)
            .attr(2, &be32(rev))
            .attr(3, info),
    )
}

/// `-m comment`: struct xt_comment_info, 256 bytes.
fn xt_comment(text: &str) -> Body {
    let mut info = text.as_bytes().to_vec();
    info.resize(256, 0);
    xt("match", "comment", 0, &info)
}

/// `-m multiport --dports <port>`: struct xt_multiport_v1 (48 bytes),
/// XT_MULTIPORT_DESTINATION, one port in host order.
fn xt_multiport(port: u16) -> Body {
    let mut info = vec![1u8, 1];
    info.extend_from_slice(&port.to_ne_bytes());
    info.resize(48, 0);
    xt("match", "multiport", 1, &info)
}

/// `-j MASQUERADE`: struct nf_nat_ipv4_multi_range_compat, one empty range,
/// padded to XT_ALIGN (24 bytes).
fn xt_masquerade() -> Body {
    let mut info = 1u32.to_ne_bytes().to_vec();
    info.resize(24, 0);
    xt("target", "MASQUERADE", 0, &info)
}

/// `-j DNAT --to-destination ip:port`: struct nf_nat_range2 (revision 2)
/// with NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED, padded to 48.
fn xt_dnat(ip: Ipv4Addr, port: u16) -> Body {
    let mut info = 3u32.to_ne_bytes().to_vec();
    for _ in 0..2 {
        let mut addr = ip.octets().to_vec();
        addr.resize(16, 0);
        info.extend_from_slice(&addr);
    }
    info.extend_from_slice(&port.to_be_bytes());
    info.extend_from_slice(&port.to_be_bytes());
    info.resize(48, 0);
    xt("target", "DNAT", 2, &info)
}

/// `ip saddr|daddr <ip>/<prefix>` as iptables-nft matches it: whole bytes
/// of the prefix compared, a mask only when it ends inside a byte.
fn ipt_addr(offset: u32, ip: Ipv4Addr, prefix: u8, equal: bool) -> Vec<Body> {
    let bits = u32::from(ip) & u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    let net = bits.to_be_bytes();
    if prefix.is_multiple_of(8) {
        let n = u32::from(prefix / 8);
        vec![
            payload(BASE_NETWORK, offset, n),
            cmp(equal, &net[..n as usize]),
        ]
    } else {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(prefix))
            .unwrap_or(0)
            .to_be_bytes();
        vec![
            payload(BASE_NETWORK, offset, 4),
            bitwise(&mask),
            cmp(equal, &net),
        ]
    }
}

/// `<proto> dport <port>` natively (iptables-nft's `-p P --dport N`, and
/// our nftables backend's).
fn dport(proto: u8, port: u16, key_first: bool) -> Vec<Body> {
    vec![
        meta(META_L4PROTO, key_first),
        cmp(true, &[proto]),
        payload(BASE_TRANSPORT, 2, 2),
        cmp(true, &port.to_be_bytes()),
    ]
}

/// One message of a batch.
#[derive(Debug, Clone)]
pub struct Op {
    kind: u16,
    flags: u16,
    family: u8,
    attrs: Vec<u8>,
    /// A rule whose handle the DEL needs (asked back with NLM_F_ECHO).
    echo: Option<Removal>,
    /// A per-pod chain this creates, which the DEL flushes and deletes.
    creates: Option<(u8, &'static str, String)>,
}

/// A rule a DEL removes by handle: family, table, chain.
#[derive(Debug, Clone)]
struct Removal {
    family: u8,
    table: &'static str,
    chain: String,
}

fn chain(family: u8, table: &'static str, name: &str) -> Op {
    Op {
        kind: NEWCHAIN,
        flags: NLM_F_EXCL,
        family,
        attrs: Body::default()
            .str(CHAIN_TABLE, table)
            .str(CHAIN_NAME, name)
            .into_bytes(),
        echo: None,
        creates: Some((family, table, name.to_string())),
    }
}

/// A rule appended to `chain`; `compat` is iptables-nft's NFTA_RULE_COMPAT
/// (the rule's `-p`, 0 without), `comment` our nftables backend's userdata.
fn rule(
    (family, table): (u8, &'static str),
    chain: &str,
    exprs: Vec<Body>,
    compat: Option<u8>,
    comment: Option<&str>,
    removed_by_handle: bool,
) -> Op {
    let list = exprs.into_iter().fold(Body::default(), |l, e| {
        l.attr(LIST_ELEM | NESTED, &e.into_bytes())
    });
    let mut body = Body::default()
        .str(RULE_TABLE, table)
        .str(RULE_CHAIN, chain)
        .attr(RULE_EXPRESSIONS | NESTED, &list.into_bytes());
    if let Some(proto) = compat {
        let c = Body::default()
            .attr(1, &be32(u32::from(proto)))
            .attr(2, &be32(0));
        body = body.attr(RULE_COMPAT | NESTED, &c.into_bytes());
    }
    if let Some(text) = comment {
        // libnftnl's udata TLV: type 0 (comment), length, NUL-terminated text.
        let mut udata = vec![0u8, (text.len() + 1) as u8];
        udata.extend_from_slice(text.as_bytes());
        udata.push(0);
        body = body.attr(RULE_USERDATA, &udata);
    }
    Op {
        kind: NEWRULE,
        flags: NLM_F_CREATE | NLM_F_APPEND,
        family,
        attrs: body.into_bytes(),
        echo: removed_by_handle.then(|| Removal {
            family,
            table,
            chain: chain.to_string(),
        }),
        creates: None,
    }
}

/// What one floor pod's rules are made of.
#[derive(Debug, Clone)]
pub struct PodRules {
    /// Per-pod chains (iptables-nft): ipMasq's and portmap's.
    pub masq_chain: String,
    pub dnat_chain: String,
    /// The rules' comments: ipMasq's, portmap's DNAT jumps'.
    pub comment: String,
    pub dnat_comment: String,
    pub ip: Ipv4Addr,
    pub prefix: u8,
    pub host_port: u16,
    pub container_port: u16,
}

const NAT: (u8, &str) = (NFPROTO_IPV4, "nat");

/// iptables-nft: ipMasq's ADD (its chain, two rules, the jump from
/// POSTROUTING), what `iptables-nft-restore` sends for the reference's rules.
pub fn ipt_masq_add(p: &PodRules) -> Vec<Op> {
    let mut accept = ipt_addr(DADDR, p.ip, p.prefix, true);
    accept.extend([xt_comment(&p.comment), counter(), verdict(NF_ACCEPT, None)]);
    let mut masq = ipt_addr(DADDR, Ipv4Addr::new(224, 0, 0, 0), 4, false);
    masq.extend([xt_comment(&p.comment), counter(), xt_masquerade()]);
    let mut jump = ipt_addr(SADDR, p.ip, 32, true);
    jump.extend([
        xt_comment(&p.comment),
        counter(),
        verdict(NFT_JUMP, Some(&p.masq_chain)),
    ]);
    vec![
        chain(NAT.0, NAT.1, &p.masq_chain),
        rule(NAT, &p.masq_chain, accept, Some(0), None, false),
        rule(NAT, &p.masq_chain, masq, Some(0), None, false),
        rule(NAT, "POSTROUTING", jump, Some(0), None, true),
    ]
}

/// iptables-nft: portmap's ADD of a TCP and a UDP mapping of one port (its
/// DNAT chain with hairpin, localhost and DNAT rules per protocol, the jumps
/// from CNI-HOSTPORT-DNAT).
pub fn ipt_portmap_add(p: &PodRules) -> Vec<Op> {
    let mut ops = vec![chain(NAT.0, NAT.1, &p.dnat_chain)];
    let setmark = || verdict(NFT_JUMP, Some("CNI-HOSTPORT-SETMARK"));
    for proto in [6u8, 17] {
        let l4 = || vec![meta(META_L4PROTO, true), cmp(true, &[proto])];
        let port = || {
            vec![
                payload(BASE_TRANSPORT, 2, 2),
                cmp(true, &p.host_port.to_be_bytes()),
            ]
        };
        for source in [(p.ip, p.prefix), (Ipv4Addr::LOCALHOST, 32)] {
            let mut exprs = l4();
            exprs.extend(ipt_addr(SADDR, source.0, source.1, true));
            exprs.extend(port());
            exprs.extend([counter(), setmark()]);
            ops.push(rule(NAT, &p.dnat_chain, exprs, Some(proto), None, false));
        }
        let mut dnat = l4();
        dnat.extend(port());
        dnat.extend([counter(), xt_dnat(p.ip, p.container_port)]);
        ops.push(rule(NAT, &p.dnat_chain, dnat, Some(proto), None, false));
    }
    for proto in [6u8, 17] {
        let exprs = vec![
            meta(META_L4PROTO, true),
            cmp(true, &[proto]),
            xt_comment(&p.dnat_comment),
            xt_multiport(p.host_port),
            counter(),
            verdict(NFT_JUMP, Some(&p.dnat_chain)),
        ];
        ops.push(rule(
            NAT,
            "CNI-HOSTPORT-DNAT",
            exprs,
            Some(proto),
            None,
            true,
        ));
    }
    ops
}

/// Our nftables ipMasq backend's per-pod rule in `masq_checks`.
pub fn nft_masq_add(p: &PodRules) -> Vec<Op> {
    let mask = u32::MAX.checked_shl(32 - u32::from(p.prefix)).unwrap_or(0);
    let net = (u32::from(p.ip) & mask).to_be_bytes();
    let exprs = vec![
        meta(META_NFPROTO, false),
        cmp(true, &[NFPROTO_IPV4]),
        payload(BASE_NETWORK, SADDR, 4),
        cmp(true, &p.ip.octets()),
        payload(BASE_NETWORK, DADDR, 4),
        bitwise(&mask.to_be_bytes()),
        cmp(false, &net),
        expr("masq", Body::default()),
    ];
    vec![rule(
        (NFPROTO_INET, "cni_plugins_masquerade"),
        "masq_checks",
        exprs,
        None,
        Some(&p.comment),
        true,
    )]
}

/// Our nftables portmap backend's per-pod rules: a DNAT rule per protocol in
/// `hostports`, the hairpin and localhost masquerade rules.
pub fn nft_portmap_add(p: &PodRules) -> Vec<Op> {
    const TABLE: (u8, &str) = (NFPROTO_IPV4, "cni_hostport");
    let mut ops = Vec::new();
    for proto in [6u8, 17] {
        let mut exprs = dport(proto, p.host_port, false);
        exprs.extend([
            load_value(1, &p.ip.octets()),
            load_value(2, &p.container_port.to_be_bytes()),
            expr(
                "nat",
                Body::default()
                    .attr(1, &be32(1)) // NFT_NAT_DNAT
                    .attr(2, &be32(u32::from(NFPROTO_IPV4)))
                    .attr(3, &be32(1))
                    .attr(5, &be32(2))
                    .attr(7, &be32(2)), // NF_NAT_RANGE_PROTO_SPECIFIED
            ),
        ]);
        ops.push(rule(
            TABLE,
            "hostports",
            exprs,
            None,
            Some(&p.comment),
            true,
        ));
    }
    for source in [p.ip, Ipv4Addr::LOCALHOST] {
        let exprs = vec![
            payload(BASE_NETWORK, SADDR, 4),
            cmp(true, &source.octets()),
            payload(BASE_NETWORK, DADDR, 4),
            cmp(true, &p.ip.octets()),
            expr("masq", Body::default()),
        ];
        ops.push(rule(
            TABLE,
            "masquerading",
            exprs,
            None,
            Some(&p.comment),
            true,
        ));
    }
    ops
}

/// What a committed ADD batch left that its DEL removes: rules by handle,
/// then the per-pod chains (flushed, deleted).
#[derive(Debug, Default)]
pub struct Written {
    rules: Vec<(Removal, u64)>,
    chains: Vec<(u8, &'static str, String)>,
}

impl Written {
    /// The DEL batch: the rules by handle, each chain flushed and deleted.
    pub fn removal(&self) -> Vec<Op> {
        let mut ops = Vec::new();
        for (r, handle) in &self.rules {
            ops.push(Op {
                kind: DELRULE,
                flags: 0,
                family: r.family,
                attrs: Body::default()
                    .str(RULE_TABLE, r.table)
                    .str(RULE_CHAIN, &r.chain)
                    .attr(RULE_HANDLE, &handle.to_be_bytes())
                    .into_bytes(),
                echo: None,
                creates: None,
            });
        }
        for (family, table, name) in &self.chains {
            ops.push(Op {
                kind: DELRULE,
                flags: 0,
                family: *family,
                attrs: Body::default()
                    .str(RULE_TABLE, table)
                    .str(RULE_CHAIN, name)
                    .into_bytes(),
                echo: None,
                creates: None,
            });
            ops.push(Op {
                kind: DELCHAIN,
                flags: NLM_F_NONREC,
                family: *family,
                attrs: Body::default()
                    .str(CHAIN_TABLE, table)
                    .str(CHAIN_NAME, name)
                    .into_bytes(),
                echo: None,
                creates: None,
            });
        }
        ops
    }
}

/// The batch as sent: BEGIN, the messages (sequence numbers from 2, the
/// last acknowledged, rules whose handle is wanted echoed), END.
pub fn batch_bytes(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    let nfgen = |family: u8, res_id: u16, attrs: &[u8]| {
        let mut body = vec![family, 0];
        body.extend_from_slice(&res_id.to_be_bytes());
        body.extend_from_slice(attrs);
        body
    };
    wire::frame(
        &mut out,
        BATCH_BEGIN,
        NLM_F_REQUEST,
        1,
        &nfgen(0, NFNL_SUBSYS_NFTABLES, &[]),
    );
    for (i, op) in ops.iter().enumerate() {
        let mut flags = NLM_F_REQUEST | op.flags;
        if op.echo.is_some() {
            flags |= NLM_F_ECHO;
        }
        if i + 1 == ops.len() {
            flags |= NLM_F_ACK;
        }
        let ty = (NFNL_SUBSYS_NFTABLES << 8) | op.kind;
        wire::frame(
            &mut out,
            ty,
            flags,
            i as u32 + 2,
            &nfgen(op.family, 0, &op.attrs),
        );
    }
    wire::frame(
        &mut out,
        BATCH_END,
        NLM_F_REQUEST,
        ops.len() as u32 + 2,
        &nfgen(0, NFNL_SUBSYS_NFTABLES, &[]),
    );
    out
}

/// Commits `ops` as one batch on a socket of its own, which it returns
/// open: closing an nf_tables socket waits for the kernel's deferred
/// destruction of deleted rules (an RCU grace period), which the caller
/// times apart. `into` gets the handles echoed back and the chains the
/// batch created.
pub fn commit(ops: &[Op], into: &mut Written) -> Res<Option<NlSocket>> {
    if ops.is_empty() {
        return Ok(None);
    }
    let sock = NlSocket::connect(NlFamily::Netfilter, None, Groups::empty())
        .map_err(|e| format!("nfnetlink socket: {e}"))?;
    // SAFETY: the descriptor belongs to `sock`, which outlives this borrow.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(sock.as_raw_fd()) };
    nix::sys::socket::setsockopt(
        &fd,
        nix::sys::socket::sockopt::ReceiveTimeout,
        &nix::sys::time::TimeVal::new(30, 0),
    )
    .map_err(|e| format!("nfnetlink socket timeout: {e}"))?;
    sock.send(batch_bytes(ops), Msg::empty())
        .map_err(|e| format!("send nf_tables batch: {e}"))?;
    let last = ops.len() as u32 + 1;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let (n, _) = sock
            .recv(&mut buf[..], Msg::empty())
            .map_err(|e| format!("nf_tables batch: {e}"))?;
        for msg in wire::messages(&buf[..n.min(buf.len())]) {
            let op = (msg.seq as usize).checked_sub(2).and_then(|i| ops.get(i));
            if msg.ty == wire::NLMSG_ERROR {
                let (errno, extack) = wire::error_of(&msg);
                if errno != 0 {
                    return Err(format!(
                        "nf_tables batch, message {}: {} {}",
                        msg.seq,
                        std::io::Error::from_raw_os_error(errno),
                        extack.unwrap_or_default()
                    ));
                }
                if msg.seq == last {
                    into.chains
                        .extend(ops.iter().filter_map(|o| o.creates.clone()));
                    return Ok(Some(sock));
                }
            } else if msg.ty == (NFNL_SUBSYS_NFTABLES << 8) | NEWRULE
                && let Some(Op {
                    echo: Some(removal),
                    ..
                }) = op
            {
                let handle = msg
                    .payload
                    .get(4..)
                    .and_then(|attrs| wire::find(attrs, RULE_HANDLE))
                    .and_then(|h| <[u8; 8]>::try_from(h).ok())
                    .map(u64::from_be_bytes)
                    .ok_or("an echoed rule without its handle")?;
                into.rules.push((removal.clone(), handle));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The captured batches, keyed by their line's first word.
    fn golden(key: &str) -> Vec<u8> {
        let text = include_str!("floor-iptables-nft.golden");
        let hex = text
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .unwrap_or_default()
            .trim();
        (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
            .collect()
    }

    /// The messages of a batch between BEGIN and END: type, flags without
    /// ACK and ECHO (ours; iptables-nft reads errors without asking for
    /// ACKs and finds handles by dumping), body.
    fn messages(batch: &[u8]) -> Vec<(u16, u16, Vec<u8>)> {
        wire::messages(batch)
            .filter(|m| m.ty != BATCH_BEGIN && m.ty != BATCH_END)
            .map(|m| {
                (
                    m.ty,
                    m.flags & !(NLM_F_ACK | NLM_F_ECHO),
                    m.payload.to_vec(),
                )
            })
            .collect()
    }

    fn captured_pod() -> PodRules {
        let id = r#""chain" id: "cnitool-86e0684cd63d595a77d2""#;
        PodRules {
            masq_chain: "CNI-2ccee72d498fc2afde3993b9".into(),
            dnat_chain: "CNI-DN-2ccee72d498fc2afde399".into(),
            comment: format!("name: {id}"),
            dnat_comment: format!("dnat name: {id}"),
            ip: Ipv4Addr::new(10, 108, 0, 9),
            prefix: 16,
            host_port: 18081,
            container_port: 80,
        }
    }

    #[test]
    fn ipmasq_rules_are_what_iptables_nft_sends() {
        let ours = batch_bytes(&ipt_masq_add(&captured_pod()));
        let theirs = golden("masq");
        assert!(!theirs.is_empty());
        assert_eq!(messages(&ours), messages(&theirs));
    }

    #[test]
    fn portmap_rules_are_what_iptables_nft_sends() {
        let ours = batch_bytes(&ipt_portmap_add(&captured_pod()));
        let theirs = golden("portmap");
        assert!(!theirs.is_empty());
        assert_eq!(messages(&ours), messages(&theirs));
    }

    #[test]
    fn only_the_last_message_is_acknowledged_and_jumps_are_echoed() {
        // ipMasq's jump from POSTROUTING is its last rule, portmap's two
        // from CNI-HOSTPORT-DNAT its last two: the rules a DEL removes by handle.
        for (ops, jumps) in [
            (ipt_masq_add(&captured_pod()), 1),
            (ipt_portmap_add(&captured_pod()), 2),
        ] {
            let batch = batch_bytes(&ops);
            let flags: Vec<u16> = wire::messages(&batch).map(|m| m.flags).collect();
            assert_eq!(flags.len(), ops.len() + 2);
            let inner = &flags[1..=ops.len()];
            let acked: Vec<bool> = inner.iter().map(|f| f & NLM_F_ACK != 0).collect();
            let echoed: Vec<bool> = inner.iter().map(|f| f & NLM_F_ECHO != 0).collect();
            let last = |n: usize| {
                (0..ops.len())
                    .map(|i| i + n >= ops.len())
                    .collect::<Vec<_>>()
            };
            assert_eq!(acked, last(1));
            assert_eq!(echoed, last(jumps));
        }
    }
}
