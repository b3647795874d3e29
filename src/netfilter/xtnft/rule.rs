//! A rule as iptables takes it, as data: what `-i`, `-o`, `-p`, `-s`, `-d`,
//! the `-m` matches (in command-line order) and `-j` say.

use ipnet::IpNet;
use std::net::IpAddr;

/// `-p`: the protocols the plugins' rules name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
    Sctp,
}

impl Proto {
    /// By iptables' name (`tcp`, `udp`, `sctp`).
    pub fn parse(name: &str) -> Option<Proto> {
        match name {
            "tcp" => Some(Proto::Tcp),
            "udp" => Some(Proto::Udp),
            "sctp" => Some(Proto::Sctp),
            _ => None,
        }
    }

    /// The IP protocol number (linux/in.h).
    pub fn number(self) -> u8 {
        match self {
            Proto::Tcp => 6,
            Proto::Udp => 17,
            Proto::Sctp => 132,
        }
    }
}

/// A `-m` match (or an option of the protocol's own match).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// `-m comment --comment TEXT`.
    Comment(String),
    /// `--dport PORT` of the protocol's match (`-p tcp|udp|sctp`).
    Dport(u16),
    /// `-m multiport --destination-ports P,Q,...` (at most 15 ports).
    Multiport(Vec<u16>),
    /// `-m conntrack --ctstate RELATED,ESTABLISHED`.
    RelatedEstablished,
    /// `-m addrtype --dst-type LOCAL`.
    DstLocal,
    /// `-m mark --mark VALUE/MASK`.
    Mark { value: u32, mask: u32 },
}

/// `-j`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Accept,
    Drop,
    Return,
    /// A jump to a chain of the table.
    Jump(String),
    /// `-j MASQUERADE`.
    Masquerade,
    /// `-j DNAT --to-destination ADDR:PORT`.
    Dnat {
        addr: IpAddr,
        port: u16,
    },
    /// `-j MARK --set-xmark VALUE/MASK`.
    SetXmark {
        value: u32,
        mask: u32,
    },
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `[!] -i NAME`: (name, negated).
    pub in_iface: Option<(String, bool)>,
    /// `[!] -o NAME`.
    pub out_iface: Option<(String, bool)>,
    pub proto: Option<Proto>,
    /// `[!] -s NET` (a bare address is its host prefix).
    pub src: Option<(IpNet, bool)>,
    /// `[!] -d NET`.
    pub dst: Option<(IpNet, bool)>,
    pub matches: Vec<Match>,
    pub target: Target,
}

impl Rule {
    /// `-j TARGET` alone.
    pub fn to(target: Target) -> Rule {
        Rule {
            in_iface: None,
            out_iface: None,
            proto: None,
            src: None,
            dst: None,
            matches: Vec::new(),
            target,
        }
    }

    pub fn in_iface(mut self, name: &str, negated: bool) -> Rule {
        self.in_iface = Some((name.to_string(), negated));
        self
    }

    pub fn out_iface(mut self, name: &str, negated: bool) -> Rule {
        self.out_iface = Some((name.to_string(), negated));
        self
    }

    pub fn proto(mut self, proto: Proto) -> Rule {
        self.proto = Some(proto);
        self
    }

    pub fn src(mut self, net: IpNet, negated: bool) -> Rule {
        self.src = Some((net, negated));
        self
    }

    pub fn dst(mut self, net: IpNet, negated: bool) -> Rule {
        self.dst = Some((net, negated));
        self
    }

    /// Appends a `-m` match.
    pub fn with(mut self, m: Match) -> Rule {
        self.matches.push(m);
        self
    }

    pub fn comment(self, text: &str) -> Rule {
        self.with(Match::Comment(text.to_string()))
    }
}
