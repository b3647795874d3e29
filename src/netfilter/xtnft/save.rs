//! A table read back over netlink in the form `iptables-save` prints it, for
//! the readers that take the whole table (GC, the doctor) on the nf_tables
//! flavour: no `iptables-save` process. Each rule is decoded into a [`Rule`]
//! and taken only when that rule encodes to exactly the rule read (counters
//! aside); it is then printed as iptables-save prints it. A rule of another
//! shape in a `CNI-` chain, or jumping to one, makes the table unreadable
//! here (the caller saves it with the tool); elsewhere (another writer's
//! chains) it is left out, as no reader of ours looks there.

use super::builtin::builtin;
use super::lookup::Dumped;
use super::rule::{Match, Proto, Rule, Target};
use crate::netfilter::iptables::Saved;
use crate::netfilter::nft::{
    self, NFT_MSG_GETRULE, NFTA_DATA_VALUE, NFTA_DATA_VERDICT, NFTA_EXPR_DATA, NFTA_EXPR_NAME,
    NFTA_LIST_ELEM, NFTA_RULE_CHAIN, NFTA_RULE_EXPRESSIONS, NFTA_RULE_TABLE, NFTA_VERDICT_CHAIN,
    NFTA_VERDICT_CODE, nfproto,
};
use crate::netfilter::{Family, Result};
use crate::netlink::nfnl::NfSocket;
use crate::netlink::wire::{self, Body};
use ipnet::IpNet;
use std::net::IpAddr;

use crate::netlink::uapi::netfilter::{NF_ACCEPT, NF_DROP};
// NFTA_MATCH_* and NFTA_TARGET_* are numbered alike.
use crate::netlink::uapi::nf_tables::{
    NFT_CMP_EQ, NFT_JUMP, NFT_META_IIFNAME, NFT_META_L4PROTO, NFT_META_MARK, NFT_META_OIFNAME,
    NFT_PAYLOAD_NETWORK_HEADER, NFT_PAYLOAD_TRANSPORT_HEADER, NFT_RETURN, NFTA_BITWISE_MASK,
    NFTA_CMP_DATA, NFTA_CMP_OP, NFTA_IMMEDIATE_DATA, NFTA_MATCH_INFO as XT_INFO,
    NFTA_MATCH_NAME as XT_NAME, NFTA_META_KEY, NFTA_PAYLOAD_BASE, NFTA_PAYLOAD_OFFSET,
};

/// `table` of `family` as `iptables-save -t TABLE` would show it; None when
/// a rule of ours (in or into a `CNI-` chain) has a shape not printed here.
/// A missing table is an empty one.
pub fn save(sock: &mut NfSocket, family: Family, table: &str) -> Result<Option<Saved>> {
    let f = nfproto(family);
    let mut saved = Saved {
        chains: nft::chains(sock, f, table)?.into_iter().collect(),
        rules: Vec::new(),
    };
    // iptables-nft prints the table's built-in chains, made or not, first
    // (in hook order), then the others by name.
    let builtins: Vec<&str> = ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"]
        .into_iter()
        .filter(|c| builtin(table, c).is_some())
        .collect();
    if !saved.chains.is_empty() {
        saved.chains.extend(builtins.iter().map(|c| c.to_string()));
    }
    let attrs = Body::default().str(NFTA_RULE_TABLE, table);
    let objects = match sock.dump(NFT_MSG_GETRULE, f, attrs) {
        Ok(objects) => objects,
        Err(e) if e.is_not_found() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    for attrs in objects {
        let chain = wire::find(&attrs, NFTA_RULE_CHAIN)
            .map(wire::as_str)
            .unwrap_or_default();
        let Some(dumped) = Dumped::of(attrs) else {
            continue;
        };
        match decode(&dumped.attrs, family).filter(|r| dumped.is(r, family)) {
            Some(rule) => saved.rules.push((chain, spec(&rule))),
            None => {
                let ours = |c: &str| c.starts_with("CNI-");
                if ours(&chain) || nft::verdict_chains(&dumped.attrs).iter().any(|c| ours(c)) {
                    return Ok(None);
                }
            }
        }
    }
    let rank = |c: &str| {
        builtins
            .iter()
            .position(|b| *b == c)
            .unwrap_or(builtins.len())
    };
    saved
        .rules
        .sort_by(|(a, _), (b, _)| (rank(a), a.as_str()).cmp(&(rank(b), b.as_str())));
    Ok(Some(saved))
}

fn be32(data: &[u8], ty: u16) -> Option<u32> {
    Some(u32::from_be_bytes(
        wire::find(data, ty)?.get(..4)?.try_into().ok()?,
    ))
}

/// A cmp's (equal, value).
fn cmp(expr: Option<&(String, &[u8])>) -> Option<(bool, Vec<u8>)> {
    let (name, data) = expr?;
    if name != "cmp" {
        return None;
    }
    let value = wire::find(wire::find(data, NFTA_CMP_DATA)?, NFTA_DATA_VALUE)?;
    Some((be32(data, NFTA_CMP_OP)? == NFT_CMP_EQ, value.to_vec()))
}

/// A bitwise's mask, when `expr` is one.
fn bitwise(expr: Option<&(String, &[u8])>) -> Option<Vec<u8>> {
    let (name, data) = expr?;
    (name == "bitwise")
        .then(|| {
            wire::find(wire::find(data, NFTA_BITWISE_MASK)?, NFTA_DATA_VALUE).map(<[u8]>::to_vec)
        })
        .flatten()
}

fn ne16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn ne32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The address of `bytes` (padded with zeros) in `family`.
fn addr(family: Family, bytes: &[u8]) -> Option<IpAddr> {
    let mut full = [0u8; 16];
    full.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(match family {
        Family::V4 => IpAddr::from(<[u8; 4]>::try_from(full.get(..4)?).ok()?),
        Family::V6 => IpAddr::from(full),
    })
}

/// The rule a dumped rule would be, read by the shapes `encode` writes
/// (the caller checks it encodes back to the same); None for another shape.
fn decode(attrs: &[u8], family: Family) -> Option<Rule> {
    let exprs: Vec<(String, &[u8])> = wire::attrs(wire::find(attrs, NFTA_RULE_EXPRESSIONS)?)
        .filter(|(t, _)| *t == NFTA_LIST_ELEM)
        .filter_map(|(_, e)| {
            let name = wire::find(e, NFTA_EXPR_NAME).map(wire::as_str)?;
            Some((name, wire::find(e, NFTA_EXPR_DATA).unwrap_or_default()))
        })
        .collect();
    let (src_at, dst_at) = match family {
        Family::V4 => (12, 16),
        Family::V6 => (8, 24),
    };
    let mut rule = Rule::to(Target::Accept);
    let mut target = None;
    let mut i = 0;
    while let Some((name, data)) = exprs.get(i) {
        match name.as_str() {
            "meta" => match be32(data, NFTA_META_KEY)? {
                key @ (NFT_META_IIFNAME | NFT_META_OIFNAME) => {
                    let (eq, value) = cmp(exprs.get(i + 1))?;
                    i += 1;
                    let name = match value.strip_suffix(&[0]) {
                        Some(whole) => String::from_utf8(whole.to_vec()).ok()?,
                        None => format!("{}+", String::from_utf8(value).ok()?),
                    };
                    let iface = Some((name, !eq));
                    if key == NFT_META_IIFNAME {
                        rule.in_iface = iface;
                    } else {
                        rule.out_iface = iface;
                    }
                }
                NFT_META_L4PROTO => {
                    let (eq, value) = cmp(exprs.get(i + 1))?;
                    i += 1;
                    rule.proto = match (eq, value.as_slice()) {
                        (true, [6]) => Some(Proto::Tcp),
                        (true, [17]) => Some(Proto::Udp),
                        (true, [132]) => Some(Proto::Sctp),
                        _ => return None,
                    };
                }
                NFT_META_MARK => {
                    let mask = bitwise(exprs.get(i + 1));
                    i += usize::from(mask.is_some());
                    let (eq, value) = cmp(exprs.get(i + 1))?;
                    i += 1;
                    let mask = mask.map_or(Some(u32::MAX), |m| ne32(&m, 0))?;
                    if !eq {
                        return None;
                    }
                    let value = ne32(&value, 0)?;
                    rule.matches.push(Match::Mark { value, mask });
                }
                _ => return None,
            },
            "payload" => {
                let base = be32(data, NFTA_PAYLOAD_BASE)?;
                let offset = be32(data, NFTA_PAYLOAD_OFFSET)?;
                match base {
                    NFT_PAYLOAD_NETWORK_HEADER if offset == src_at || offset == dst_at => {
                        let mask = bitwise(exprs.get(i + 1));
                        i += usize::from(mask.is_some());
                        let (eq, value) = cmp(exprs.get(i + 1))?;
                        i += 1;
                        let prefix = match &mask {
                            Some(m) => m.iter().map(|b| b.count_ones()).sum::<u32>(),
                            None => 8 * u32::try_from(value.len()).ok()?,
                        };
                        let net = IpNet::new(addr(family, &value)?, u8::try_from(prefix).ok()?);
                        let field = Some((net.ok()?, !eq));
                        if offset == src_at {
                            rule.src = field;
                        } else {
                            rule.dst = field;
                        }
                    }
                    NFT_PAYLOAD_TRANSPORT_HEADER if offset == 2 => {
                        let (eq, value) = cmp(exprs.get(i + 1))?;
                        i += 1;
                        let port: [u8; 2] = value.as_slice().try_into().ok()?;
                        if !eq {
                            return None;
                        }
                        rule.matches.push(Match::Dport(u16::from_be_bytes(port)));
                    }
                    _ => return None,
                }
            }
            "counter" => {}
            "match" => {
                let info = wire::find(data, XT_INFO)?;
                let m = match wire::find(data, XT_NAME).map(wire::as_str)?.as_str() {
                    "comment" => {
                        let text = info.split(|b| *b == 0).next()?;
                        Match::Comment(String::from_utf8(text.to_vec()).ok()?)
                    }
                    "multiport" => {
                        let count = usize::from(*info.get(1)?);
                        let ports = (0..count).map(|k| ne16(info, 2 + 2 * k));
                        Match::Multiport(ports.collect::<Option<Vec<u16>>>()?)
                    }
                    "conntrack" => Match::RelatedEstablished,
                    "addrtype" => Match::DstLocal,
                    "sctp" => Match::Dport(ne16(info, 0)?),
                    _ => return None,
                };
                rule.matches.push(m);
            }
            "immediate" => {
                let verdict =
                    wire::find(wire::find(data, NFTA_IMMEDIATE_DATA)?, NFTA_DATA_VERDICT)?;
                let code = be32(verdict, NFTA_VERDICT_CODE)?.cast_signed();
                target = Some(match code {
                    NF_ACCEPT => Target::Accept,
                    NF_DROP => Target::Drop,
                    NFT_RETURN => Target::Return,
                    NFT_JUMP => {
                        Target::Jump(wire::find(verdict, NFTA_VERDICT_CHAIN).map(wire::as_str)?)
                    }
                    _ => return None,
                });
            }
            "target" => {
                let info = wire::find(data, XT_INFO)?;
                target = Some(
                    match wire::find(data, XT_NAME).map(wire::as_str)?.as_str() {
                        "MASQUERADE" => Target::Masquerade,
                        "DNAT" => {
                            let ip = info.get(4..4 + if family == Family::V4 { 4 } else { 16 })?;
                            let port: [u8; 2] = info.get(36..38)?.try_into().ok()?;
                            Target::Dnat {
                                addr: addr(family, ip)?,
                                port: u16::from_be_bytes(port),
                            }
                        }
                        "MARK" => Target::SetXmark {
                            value: ne32(info, 0)?,
                            mask: ne32(info, 4)?,
                        },
                        _ => return None,
                    },
                );
            }
            _ => return None,
        }
        i += 1;
    }
    rule.target = target?;
    Some(rule)
}

/// A string as `xtables_save_string` prints it: bare when only letters,
/// digits, `_` and `-`, else quoted with `"`, `\` and `'` escaped.
fn save_string(value: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !value.is_empty() && value.chars().all(bare) {
        return value.to_string();
    }
    let mut out = String::from("\"");
    for c in value.chars() {
        if matches!(c, '"' | '\\' | '\'') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn proto_name(proto: Option<Proto>) -> &'static str {
    match proto {
        Some(Proto::Tcp) => "tcp",
        Some(Proto::Udp) => "udp",
        Some(Proto::Sctp) => "sctp",
        None => "",
    }
}

/// A rule as `iptables-save` prints it after `-A CHAIN `: addresses,
/// interfaces, protocol, the matches in order, the target.
pub fn spec(rule: &Rule) -> String {
    let mut w: Vec<String> = Vec::new();
    let option = |w: &mut Vec<String>, negated: bool, flag: &str, value: String| {
        if negated {
            w.push("!".into());
        }
        w.push(flag.into());
        w.push(value);
    };
    for (field, flag) in [(&rule.src, "-s"), (&rule.dst, "-d")] {
        if let Some((net, negated)) = field {
            option(
                &mut w,
                *negated,
                flag,
                format!("{}/{}", net.network(), net.prefix_len()),
            );
        }
    }
    for (field, flag) in [(&rule.in_iface, "-i"), (&rule.out_iface, "-o")] {
        if let Some((name, negated)) = field {
            option(&mut w, *negated, flag, name.clone());
        }
    }
    if rule.proto.is_some() {
        option(&mut w, false, "-p", proto_name(rule.proto).into());
    }
    for m in &rule.matches {
        w.push(match m {
            Match::Comment(text) => format!("-m comment --comment {}", save_string(text)),
            Match::Dport(port) => {
                let p = proto_name(rule.proto);
                format!("-m {p} --dport {port}")
            }
            Match::Multiport(ports) => {
                let list: Vec<String> = ports.iter().map(u16::to_string).collect();
                format!("-m multiport --dports {}", list.join(","))
            }
            Match::RelatedEstablished => "-m conntrack --ctstate RELATED,ESTABLISHED".into(),
            Match::DstLocal => "-m addrtype --dst-type LOCAL".into(),
            Match::Mark { value, mask } if *mask == u32::MAX => {
                format!("-m mark --mark {value:#x}")
            }
            Match::Mark { value, mask } => format!("-m mark --mark {value:#x}/{mask:#x}"),
        });
    }
    w.push(match &rule.target {
        Target::Accept => "-j ACCEPT".into(),
        Target::Drop => "-j DROP".into(),
        Target::Return => "-j RETURN".into(),
        Target::Jump(chain) => format!("-j {chain}"),
        Target::Masquerade => "-j MASQUERADE".into(),
        Target::Dnat {
            addr: IpAddr::V6(a),
            port,
        } => format!("-j DNAT --to-destination [{a}]:{port}"),
        Target::Dnat { addr, port } => format!("-j DNAT --to-destination {addr}:{port}"),
        Target::SetXmark { value, mask } => format!("-j MARK --set-xmark {value:#x}/{mask:#x}"),
    });
    w.join(" ")
}
