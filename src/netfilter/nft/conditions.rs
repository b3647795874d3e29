//! portmap's `conditionsV4`/`conditionsV6` in nft syntax, parsed into expressions.

use super::*;
use crate::netfilter::Family;
use crate::quote::quoted;

/// One word of a condition: quoted words are names, never operators.
pub(super) struct Word {
    text: String,
    quoted: bool,
}

/// The words of the conditions as nft reads them: the list joined with
/// spaces (so `["ip saddr 10.0.0.0/8"]` and `["ip", "saddr", "10.0.0.0/8"]`
/// are the same), `"…"` keeping a name whole.
pub(super) fn words(conditions: &[String]) -> Result<Vec<Word>> {
    let text = conditions.join(" ");
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_control() && c != '\t' {
            return Err(crate::netfilter::Error::InvalidConfig(format!(
                "nft condition {text} holds a control character",
                text = quoted(&text)
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
                        return Err(crate::netfilter::Error::InvalidConfig(format!(
                            "nft condition {text}: unterminated or invalid quoted string",
                            text = quoted(&text)
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

pub(super) const SUPPORTED: &str = "supported: `ip saddr|daddr [!=] ADDR[/LEN]` (conditionsV4), \
`ip6 saddr|daddr [!=] ADDR[/LEN]` (conditionsV6), `[meta] iifname|oifname [!=] NAME[*]`, \
`meta l4proto [!=] PROTO`, `meta mark [!=] VALUE`, `tcp|udp|sctp dport|sport [!=] PORT`";

/// The matches of nft-syntax conditions (as in portmap's `conditionsV4`/
/// `conditionsV6`) for a table of one family, encoded as expressions. Every
/// word is understood or the whole is refused naming it: a condition silently
/// dropped would open a port wider than configured.
pub fn parse_conditions(conditions: &[String], family: Family) -> Result<Vec<Expr>> {
    let words = words(conditions)?;
    // This family's address keyword, and what is said when another is used.
    let (own, wrong_keyword, wrong_address) = match family {
        Family::V4 => (
            "ip",
            "conditionsV4 match IPv4 packets: use `ip`",
            "expected an IPv4 address or network",
        ),
        Family::V6 => (
            "ip6",
            "conditionsV6 match IPv6 packets: use `ip6`",
            "expected an IPv6 address or network",
        ),
    };
    let whole = conditions.join(" ");
    let refuse = |word: Option<&Word>, why: &str| {
        let token = match word {
            Some(w) => format!("token {}", quoted(&w.text)),
            None => "end of condition".to_string(),
        };
        crate::netfilter::Error::InvalidConfig(format!(
            "nft condition {whole}: unsupported {token} ({why}; {SUPPORTED})",
            whole = quoted(&whole)
        ))
    };
    let mut it = words.iter().peekable();
    let mut out = Vec::new();
    while let Some(w) = it.next() {
        let keyword = if w.quoted { "" } else { w.text.as_str() };
        match keyword {
            "ip" | "ip6" => {
                if keyword != own {
                    return Err(refuse(Some(w), wrong_keyword));
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
                    .filter(|n| Family::of(n.addr()) == family)
                    .ok_or_else(|| refuse(value, wrong_address))?;
                out.extend(match_addr(field, net, eq));
            }
            "iifname" | "oifname" => {
                let key = if keyword == "iifname" {
                    NFT_META_IIFNAME
                } else {
                    NFT_META_OIFNAME
                };
                out.extend(iface_match(key, &mut it, &refuse)?);
            }
            "meta" => {
                let key = it.next();
                match key.filter(|k| !k.quoted).map(|k| k.text.as_str()) {
                    Some("iifname") => out.extend(iface_match(NFT_META_IIFNAME, &mut it, &refuse)?),
                    Some("oifname") => out.extend(iface_match(NFT_META_OIFNAME, &mut it, &refuse)?),
                    Some("l4proto") => {
                        let eq = equal(&mut it);
                        let value = it.next();
                        let proto = value
                            .and_then(|v| protocol_number(&v.text))
                            .ok_or_else(|| refuse(value, "expected a protocol name or number"))?;
                        out.push(meta_load(NFT_META_L4PROTO));
                        out.push(cmp(eq, &[proto]));
                    }
                    Some("mark") => {
                        let eq = equal(&mut it);
                        let value = it.next();
                        let mark = value
                            .and_then(|v| parse_u32(&v.text))
                            .ok_or_else(|| refuse(value, "expected a 32-bit mark"))?;
                        out.push(meta_load(NFT_META_MARK));
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
                out.push(meta_load(NFT_META_L4PROTO));
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
pub(super) fn equal(it: &mut Words<'_>) -> bool {
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
pub(super) fn iface_match(
    key: u32,
    it: &mut Words<'_>,
    refuse: &impl Fn(Option<&Word>, &str) -> crate::netfilter::Error,
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

pub(super) fn protocol_number(name: &str) -> Option<u8> {
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

pub(super) fn parse_u32(v: &str) -> Option<u32> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}
