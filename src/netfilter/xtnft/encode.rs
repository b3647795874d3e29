//! A rule's expressions in iptables-nft's order (`nft_ipv4_add`,
//! `nft_ipv6_add`): the interfaces, the protocol, the source, the
//! destination, each `-m` match in command-line order, a counter, the target.

use super::rule::{Match, Proto, Rule, Target};
use super::xt;
use crate::netfilter::nft::{self, Expr, bitwise_mask, cmp, expr, meta_load, transport_load};
use crate::netfilter::{Error, Family, Result};
use crate::netlink::wire::Body;
use crate::quote::quoted;
use ipnet::IpNet;

use crate::netlink::uapi::if_flags::IFNAMSIZ;
use crate::netlink::uapi::nf_tables::{
    NFT_META_IIFNAME, NFT_META_L4PROTO, NFT_META_MARK, NFT_META_OIFNAME,
    NFT_PAYLOAD_NETWORK_HEADER, NFT_REG_1, NFTA_COUNTER_BYTES, NFTA_COUNTER_PACKETS,
    NFTA_PAYLOAD_BASE, NFTA_PAYLOAD_DREG, NFTA_PAYLOAD_LEN, NFTA_PAYLOAD_OFFSET,
};

/// The expressions of `rule` in `family`'s tables, as iptables-nft 1.8 sends them.
pub fn expressions(rule: &Rule, family: Family) -> Result<Vec<Expr>> {
    let mut out = Vec::new();
    if let Some((name, negated)) = &rule.in_iface {
        iface(&mut out, NFT_META_IIFNAME, name, *negated)?;
    }
    if let Some((name, negated)) = &rule.out_iface {
        iface(&mut out, NFT_META_OIFNAME, name, *negated)?;
    }
    if let Some(proto) = rule.proto {
        out.push(meta_load(NFT_META_L4PROTO));
        out.push(cmp(true, &[proto.number()]));
    }
    // ip saddr/daddr and ip6 saddr/daddr: offset in the header, length.
    let (src, dst) = match family {
        Family::V4 => (12, 16),
        Family::V6 => (8, 24),
    };
    for (field, offset) in [(&rule.src, src), (&rule.dst, dst)] {
        if let Some((net, negated)) = field {
            address(&mut out, family, offset, *net, *negated)?;
        }
    }
    for m in &rule.matches {
        matching(&mut out, m, rule.proto)?;
    }
    out.push(counter());
    out.push(target(&rule.target, family));
    Ok(out)
}

/// `[!] -i|-o NAME`: the name with its NUL, or the prefix before a `+`.
fn iface(out: &mut Vec<Expr>, key: u32, name: &str, negated: bool) -> Result<()> {
    if name.is_empty() || name.len() >= IFNAMSIZ {
        return Err(Error::InvalidConfig(format!(
            "interface name {name}: iptables takes 1 to {} bytes",
            IFNAMSIZ - 1,
            name = quoted(&name)
        )));
    }
    out.push(meta_load(key));
    match name.strip_suffix('+') {
        Some("") if negated => out.push(cmp(true, b"INVAL/D\0")),
        // `-i +`: any interface, nothing to compare.
        Some("") => {
            out.pop();
        }
        Some(prefix) => out.push(cmp(!negated, prefix.as_bytes())),
        None => {
            let mut value = name.as_bytes().to_vec();
            value.push(0);
            out.push(cmp(!negated, &value));
        }
    }
    Ok(())
}

/// `[!] -s|-d NET` (iptables' `add_addr`): whole bytes of the prefix loaded and
/// compared; a prefix that ends inside a byte loads the whole address and
/// masks it. `0.0.0.0/0` (`::/0`) matches everything: no expression.
fn address(
    out: &mut Vec<Expr>,
    family: Family,
    offset: u32,
    net: IpNet,
    negated: bool,
) -> Result<()> {
    if Family::of(net.addr()) != family {
        return Err(Error::InvalidConfig(format!(
            "address {net} in a rule of the other family"
        )));
    }
    if net.prefix_len() == 0 {
        if negated {
            return Err(Error::InvalidConfig(format!("! {net} matches nothing")));
        }
        return Ok(());
    }
    let mask = nft::ip_bytes(net.netmask());
    let data = nft::ip_bytes(net.network());
    let whole = mask.iter().take_while(|b| **b == 0xff).count();
    let bitwise = whole < mask.len() && mask[whole] != 0;
    let len = if bitwise { mask.len() } else { whole };
    // An address is 4 or 16 bytes.
    let len32 = u32::try_from(len).unwrap_or(u32::MAX);
    out.push(payload(NFT_PAYLOAD_NETWORK_HEADER, offset, len32));
    if bitwise {
        out.push(bitwise_mask(len32, &mask));
    }
    out.push(cmp(!negated, &data[..len]));
    Ok(())
}

fn payload(base: u32, offset: u32, len: u32) -> Expr {
    expr(
        "payload",
        Body::default()
            .attr(NFTA_PAYLOAD_DREG, &NFT_REG_1.to_be_bytes())
            .attr(NFTA_PAYLOAD_BASE, &base.to_be_bytes())
            .attr(NFTA_PAYLOAD_OFFSET, &offset.to_be_bytes())
            .attr(NFTA_PAYLOAD_LEN, &len.to_be_bytes()),
    )
}

/// One `-m` match: an xtables match, or native expressions where
/// iptables-nft writes them natively (mark; tcp's and udp's ports).
fn matching(out: &mut Vec<Expr>, m: &Match, proto: Option<Proto>) -> Result<()> {
    match m {
        Match::Comment(text) => out.push(xt::comment::expr(text)),
        Match::Multiport(ports) => out.push(xt::multiport::expr(ports)?),
        Match::RelatedEstablished => out.push(xt::conntrack::related_established()),
        Match::DstLocal => out.push(xt::addrtype::dst_local()),
        // meta mark, masked unless the mask is whole, compared.
        Match::Mark { value, mask } => {
            out.push(meta_load(NFT_META_MARK));
            if *mask != u32::MAX {
                out.push(bitwise_mask(4, &mask.to_ne_bytes()));
            }
            out.push(cmp(true, &value.to_ne_bytes()));
        }
        Match::Dport(port) => match proto {
            // The destination port loaded from the transport header.
            Some(Proto::Tcp | Proto::Udp) => {
                out.push(transport_load(2, 2));
                out.push(cmp(true, &port.to_be_bytes()));
            }
            Some(Proto::Sctp) => out.push(xt::sctp::dport(*port)),
            None => {
                return Err(Error::InvalidConfig(
                    "--dport without -p tcp, udp or sctp".into(),
                ));
            }
        },
    }
    Ok(())
}

fn counter() -> Expr {
    expr(
        "counter",
        Body::default()
            .attr(NFTA_COUNTER_BYTES, &0u64.to_be_bytes())
            .attr(NFTA_COUNTER_PACKETS, &0u64.to_be_bytes()),
    )
}

fn target(target: &Target, family: Family) -> Expr {
    match target {
        Target::Accept => nft::accept(),
        Target::Drop => nft::drop(),
        Target::Return => nft::ret(),
        Target::Jump(chain) => nft::jump(chain),
        Target::Masquerade => xt::masquerade::expr(family),
        Target::Dnat { addr, port } => xt::dnat::expr(*addr, *port),
        Target::SetXmark { value, mask } => xt::mark::set_xmark(*value, *mask),
    }
}
