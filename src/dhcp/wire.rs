//! DHCPv4 messages (RFC 2131/2132) as bytes, and the IPv4 + UDP framing a
//! packet socket sends and receives before the interface has an address.
//! Pure code: no socket here, everything bounds-checked (fuzzed).

use std::fmt;
use std::net::Ipv4Addr;

pub const SERVER_PORT: u16 = 67;
pub const CLIENT_PORT: u16 = 68;
pub const MAGIC_COOKIE: [u8; 4] = [99, 130, 83, 99];
pub const BOOTREQUEST: u8 = 1;
pub const BOOTREPLY: u8 = 2;
/// `htype` of Ethernet.
pub const HTYPE_ETHERNET: u8 = 1;
/// The `flags` bit asking the server to broadcast its reply.
pub const FLAG_BROADCAST: u16 = 0x8000;
/// RFC 951: servers and relays may drop shorter BOOTP messages.
pub const BOOTP_MIN_LEN: usize = 300;
/// op .. file: the fixed part before the magic cookie.
const FIXED_LEN: usize = 236;

/// Option codes used here (RFC 2132, 3397, 3442).
pub mod code {
    pub const PAD: u8 = 0;
    pub const SUBNET_MASK: u8 = 1;
    pub const ROUTER: u8 = 3;
    pub const DNS_SERVERS: u8 = 6;
    pub const HOST_NAME: u8 = 12;
    pub const DOMAIN_NAME: u8 = 15;
    pub const STATIC_ROUTES: u8 = 33;
    pub const REQUESTED_IP: u8 = 50;
    pub const LEASE_TIME: u8 = 51;
    pub const OVERLOAD: u8 = 52;
    pub const MESSAGE_TYPE: u8 = 53;
    pub const SERVER_ID: u8 = 54;
    pub const PARAMETER_REQUEST_LIST: u8 = 55;
    pub const MESSAGE: u8 = 56;
    pub const MAX_MESSAGE_SIZE: u8 = 57;
    pub const RENEWAL_TIME: u8 = 58;
    pub const REBINDING_TIME: u8 = 59;
    pub const VENDOR_CLASS_ID: u8 = 60;
    pub const CLIENT_ID: u8 = 61;
    pub const USER_CLASS: u8 = 77;
    pub const DOMAIN_SEARCH: u8 = 119;
    pub const CLASSLESS_ROUTES: u8 = 121;
    pub const END: u8 = 255;
}

/// DHCP message types (option 53).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    Discover = 1,
    Offer = 2,
    Request = 3,
    Decline = 4,
    Ack = 5,
    Nak = 6,
    Release = 7,
    Inform = 8,
}

impl MessageType {
    /// Its name as DHCP texts write it.
    pub fn name(self) -> &'static str {
        match self {
            MessageType::Discover => "DHCPDISCOVER",
            MessageType::Offer => "DHCPOFFER",
            MessageType::Request => "DHCPREQUEST",
            MessageType::Decline => "DHCPDECLINE",
            MessageType::Ack => "DHCPACK",
            MessageType::Nak => "DHCPNAK",
            MessageType::Release => "DHCPRELEASE",
            MessageType::Inform => "DHCPINFORM",
        }
    }

    pub fn from_u8(v: u8) -> Option<MessageType> {
        Some(match v {
            1 => MessageType::Discover,
            2 => MessageType::Offer,
            3 => MessageType::Request,
            4 => MessageType::Decline,
            5 => MessageType::Ack,
            6 => MessageType::Nak,
            7 => MessageType::Release,
            8 => MessageType::Inform,
            _ => return None,
        })
    }
}

/// Bytes that are not a DHCP message (or not the frame we look for): what is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed DHCP packet: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

/// A BOOTP/DHCP message. Options are kept in wire order, one entry per
/// instance (RFC 3396 splits long options into several; `option` joins them).
/// `sname` and `file` are kept raw: option overload (52) is not interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub op: u8,
    pub htype: u8,
    pub hlen: u8,
    pub hops: u8,
    pub xid: u32,
    pub secs: u16,
    pub flags: u16,
    pub ciaddr: Ipv4Addr,
    pub yiaddr: Ipv4Addr,
    pub siaddr: Ipv4Addr,
    pub giaddr: Ipv4Addr,
    pub chaddr: [u8; 16],
    pub sname: [u8; 64],
    pub file: [u8; 128],
    pub options: Vec<(u8, Vec<u8>)>,
}

fn ip_at(b: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

impl Message {
    /// An empty BOOTREQUEST from an Ethernet `mac`.
    pub fn request(xid: u32, mac: [u8; 6]) -> Message {
        let mut chaddr = [0u8; 16];
        chaddr[..6].copy_from_slice(&mac);
        Message {
            op: BOOTREQUEST,
            htype: HTYPE_ETHERNET,
            hlen: 6,
            hops: 0,
            xid,
            secs: 0,
            flags: 0,
            ciaddr: Ipv4Addr::UNSPECIFIED,
            yiaddr: Ipv4Addr::UNSPECIFIED,
            siaddr: Ipv4Addr::UNSPECIFIED,
            giaddr: Ipv4Addr::UNSPECIFIED,
            chaddr,
            sname: [0; 64],
            file: [0; 128],
            options: Vec::new(),
        }
    }

    /// Decodes a message (the UDP payload). Refuses short messages, a wrong
    /// magic cookie, an option running past the end and a missing END.
    pub fn decode(b: &[u8]) -> Result<Message, Malformed> {
        if b.len() < FIXED_LEN + MAGIC_COOKIE.len() {
            return Err(Malformed("shorter than the fixed header"));
        }
        if b[FIXED_LEN..FIXED_LEN + 4] != MAGIC_COOKIE {
            return Err(Malformed("no DHCP magic cookie"));
        }
        let mut chaddr = [0u8; 16];
        chaddr.copy_from_slice(&b[28..44]);
        let mut sname = [0u8; 64];
        sname.copy_from_slice(&b[44..108]);
        let mut file = [0u8; 128];
        file.copy_from_slice(&b[108..236]);
        Ok(Message {
            op: b[0],
            htype: b[1],
            hlen: b[2],
            hops: b[3],
            xid: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            secs: u16::from_be_bytes([b[8], b[9]]),
            flags: u16::from_be_bytes([b[10], b[11]]),
            ciaddr: ip_at(b, 12),
            yiaddr: ip_at(b, 16),
            siaddr: ip_at(b, 20),
            giaddr: ip_at(b, 24),
            chaddr,
            sname,
            file,
            options: decode_options(&b[FIXED_LEN + 4..])?,
        })
    }

    /// The message as bytes: the message type (53) first, the other options in
    /// order (longer than 255 bytes: split, RFC 3396), END, padded to 300 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(BOOTP_MIN_LEN + 64);
        b.extend_from_slice(&[self.op, self.htype, self.hlen, self.hops]);
        b.extend_from_slice(&self.xid.to_be_bytes());
        b.extend_from_slice(&self.secs.to_be_bytes());
        b.extend_from_slice(&self.flags.to_be_bytes());
        for ip in [self.ciaddr, self.yiaddr, self.siaddr, self.giaddr] {
            b.extend_from_slice(&ip.octets());
        }
        b.extend_from_slice(&self.chaddr);
        b.extend_from_slice(&self.sname);
        b.extend_from_slice(&self.file);
        b.extend_from_slice(&MAGIC_COOKIE);
        let first = self.options.iter().filter(|o| o.0 == code::MESSAGE_TYPE);
        let rest = self.options.iter().filter(|o| o.0 != code::MESSAGE_TYPE);
        for (c, value) in first.chain(rest) {
            if *c == code::PAD || *c == code::END {
                continue;
            }
            if value.is_empty() {
                b.extend_from_slice(&[*c, 0]);
            }
            for part in value.chunks(255) {
                b.push(*c);
                b.push(part.len() as u8);
                b.extend_from_slice(part);
            }
        }
        b.push(code::END);
        if b.len() < BOOTP_MIN_LEN {
            b.resize(BOOTP_MIN_LEN, code::PAD);
        }
        b
    }

    /// Every instance of option `c` joined (RFC 3396), if there is one.
    pub fn option(&self, c: u8) -> Option<Vec<u8>> {
        let mut found = None::<Vec<u8>>;
        for (_, v) in self.options.iter().filter(|o| o.0 == c) {
            found.get_or_insert_with(Vec::new).extend_from_slice(v);
        }
        found
    }

    /// Sets option `c`: replaces its first instance (dropping any others) or appends.
    pub fn set_option(&mut self, c: u8, value: Vec<u8>) {
        match self.options.iter().position(|o| o.0 == c) {
            Some(i) => {
                self.options[i].1 = value;
                let mut seen = 0;
                self.options.retain(|o| {
                    seen += usize::from(o.0 == c);
                    o.0 != c || seen == 1
                });
            }
            None => self.options.push((c, value)),
        }
    }

    pub fn message_type(&self) -> Option<MessageType> {
        match self.option(code::MESSAGE_TYPE)?.as_slice() {
            [t] => MessageType::from_u8(*t),
            _ => None,
        }
    }

    /// Option 54.
    pub fn server_id(&self) -> Option<Ipv4Addr> {
        match self.option(code::SERVER_ID)?.as_slice() {
            [a, b, c, d] => Some(Ipv4Addr::new(*a, *b, *c, *d)),
            _ => None,
        }
    }

    /// Option 56 (a NAK's reason), as text.
    pub fn text(&self) -> String {
        self.option(code::MESSAGE)
            .map(|m| {
                String::from_utf8_lossy(&m)
                    .trim_end_matches('\0')
                    .chars()
                    .filter(|c| !c.is_control())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A reply to our request `xid` from the Ethernet address `mac`.
    pub fn is_reply_to(&self, xid: u32, mac: &[u8; 6]) -> bool {
        self.op == BOOTREPLY && self.xid == xid && self.chaddr[..6] == mac[..]
    }
}

fn decode_options(mut b: &[u8]) -> Result<Vec<(u8, Vec<u8>)>, Malformed> {
    let mut options = Vec::new();
    loop {
        match b {
            [] => return Err(Malformed("options end without END")),
            [code::END, ..] => return Ok(options),
            [code::PAD, rest @ ..] => b = rest,
            [_] => return Err(Malformed("option without its length")),
            [c, len, rest @ ..] => {
                let len = usize::from(*len);
                let value = rest
                    .get(..len)
                    .ok_or(Malformed("option runs past the end"))?;
                options.push((*c, value.to_vec()));
                b = &rest[len..];
            }
        }
    }
}

/// What the client sends in every message: who it is and what it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub mac: [u8; 6],
    /// Option 61, whole (type byte included).
    pub client_id: Vec<u8>,
    /// Option 55; empty: not sent.
    pub request: Vec<u8>,
    /// Options the configuration provides (host name, user class, ...).
    pub provide: Vec<(u8, Vec<u8>)>,
    /// Option 57: the largest reply we take (the link's MTU, at least 576).
    pub max_size: u16,
}

impl Identity {
    fn message(&self, kind: MessageType, xid: u32, secs: u16, broadcast: bool) -> Message {
        let mut m = Message::request(xid, self.mac);
        m.secs = secs;
        if broadcast {
            m.flags |= FLAG_BROADCAST;
        }
        m.options.push((code::MESSAGE_TYPE, vec![kind as u8]));
        m.options.push((code::CLIENT_ID, self.client_id.clone()));
        m
    }

    /// The options of a DISCOVER or REQUEST after the fixed ones: the provided
    /// ones (they may replace the client id, as in the reference), then the
    /// parameter request list. 53 is never replaced.
    fn finish(&self, mut m: Message) -> Message {
        m.set_option(code::MAX_MESSAGE_SIZE, self.max_size.to_be_bytes().to_vec());
        for (c, v) in &self.provide {
            if *c != code::MESSAGE_TYPE {
                m.set_option(*c, v.clone());
            }
        }
        if !self.request.is_empty() {
            m.set_option(code::PARAMETER_REQUEST_LIST, self.request.clone());
        }
        m
    }

    /// DHCPDISCOVER (INIT).
    pub fn discover(&self, xid: u32, secs: u16, broadcast: bool) -> Message {
        self.finish(self.message(MessageType::Discover, xid, secs, broadcast))
    }

    /// DHCPREQUEST in SELECTING: the offered address (50) from the offering server (54).
    pub fn request_selecting(
        &self,
        xid: u32,
        secs: u16,
        broadcast: bool,
        offered: Ipv4Addr,
        server: Ipv4Addr,
    ) -> Message {
        let mut m = self.message(MessageType::Request, xid, secs, broadcast);
        m.options
            .push((code::REQUESTED_IP, offered.octets().to_vec()));
        m.options.push((code::SERVER_ID, server.octets().to_vec()));
        self.finish(m)
    }

    /// DHCPREQUEST in RENEWING or REBINDING: `ciaddr` set, neither 50 nor 54
    /// (RFC 2131 4.3.2).
    pub fn request_bound(&self, xid: u32, secs: u16, ciaddr: Ipv4Addr) -> Message {
        let mut m = self.message(MessageType::Request, xid, secs, false);
        m.ciaddr = ciaddr;
        self.finish(m)
    }

    /// DHCPRELEASE: `ciaddr`, the server (54) and the client id only.
    pub fn release(&self, xid: u32, ciaddr: Ipv4Addr, server: Ipv4Addr) -> Message {
        let mut m = self.message(MessageType::Release, xid, 0, false);
        m.ciaddr = ciaddr;
        m.options.push((code::SERVER_ID, server.octets().to_vec()));
        m
    }
}

const IPV4_HEADER_LEN: usize = 20;
const UDP_HEADER_LEN: usize = 8;
const IPPROTO_UDP: u8 = 17;

/// The Internet checksum (RFC 1071) of `parts` taken as one byte string.
fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let mut odd: Option<u8> = None;
    for part in parts {
        for &byte in part.iter() {
            match odd.take() {
                Some(high) => sum += u32::from(u16::from_be_bytes([high, byte])),
                None => odd = Some(byte),
            }
        }
    }
    if let Some(high) = odd {
        sum += u32::from(u16::from_be_bytes([high, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 + UDP packet carrying `payload` (no options, TTL 64, both checksums),
/// as a packet socket of type SOCK_DGRAM sends it.
pub fn ipv4_udp(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
) -> Vec<u8> {
    let udp_len = (UDP_HEADER_LEN + payload.len()) as u16;
    let total = IPV4_HEADER_LEN as u16 + udp_len;
    let mut ip = [0u8; IPV4_HEADER_LEN];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    let ip_sum = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    let mut udp = [0u8; UDP_HEADER_LEN];
    udp[0..2].copy_from_slice(&src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    let pseudo = [
        &src.octets()[..],
        &dst.octets()[..],
        &[0, IPPROTO_UDP],
        &udp_len.to_be_bytes()[..],
    ]
    .concat();
    let udp_sum = match checksum(&[&pseudo, &udp, payload]) {
        0 => 0xffff,
        s => s,
    };
    udp[6..8].copy_from_slice(&udp_sum.to_be_bytes());
    [&ip[..], &udp[..], payload].concat()
}

/// A UDP datagram found in an IPv4 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub src_port: u16,
    pub dst_port: u16,
    pub payload: &'a [u8],
}

/// Parses an IPv4 packet (what a SOCK_DGRAM packet socket reads: link padding
/// may follow) holding a whole UDP datagram. The IP header checksum is
/// checked; the UDP checksum is not (offloads leave it partial on veth).
pub fn parse_ipv4_udp(packet: &[u8]) -> Result<Datagram<'_>, Malformed> {
    let header = packet
        .get(..IPV4_HEADER_LEN)
        .ok_or(Malformed("shorter than an IPv4 header"))?;
    if header[0] >> 4 != 4 {
        return Err(Malformed("not IPv4"));
    }
    let ihl = usize::from(header[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([header[2], header[3]]));
    if ihl < IPV4_HEADER_LEN || total < ihl + UDP_HEADER_LEN {
        return Err(Malformed("IPv4 header lengths"));
    }
    let packet = packet
        .get(..total)
        .ok_or(Malformed("IPv4 packet truncated"))?;
    if checksum(&[&packet[..ihl]]) != 0 {
        return Err(Malformed("IPv4 header checksum"));
    }
    // More fragments, or an offset: a fragment, never a whole reply.
    if u16::from_be_bytes([header[6], header[7]]) & 0x3fff != 0 {
        return Err(Malformed("IPv4 fragment"));
    }
    if header[9] != IPPROTO_UDP {
        return Err(Malformed("not UDP"));
    }
    let udp = &packet[ihl..];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len < UDP_HEADER_LEN || udp_len > udp.len() {
        return Err(Malformed("UDP length"));
    }
    Ok(Datagram {
        src: ip_at(header, 12),
        dst: ip_at(header, 16),
        src_port: u16::from_be_bytes([udp[0], udp[1]]),
        dst_port: u16::from_be_bytes([udp[2], udp[3]]),
        payload: &udp[UDP_HEADER_LEN..udp_len],
    })
}

/// The DHCP reply to `xid` for `mac` in an IPv4 packet to the client port,
/// with the packet's source address; None for anything else.
pub fn reply_in_packet(packet: &[u8], xid: u32, mac: &[u8; 6]) -> Option<(Ipv4Addr, Message)> {
    let d = parse_ipv4_udp(packet).ok()?;
    if d.dst_port != CLIENT_PORT {
        return None;
    }
    let m = Message::decode(d.payload).ok()?;
    m.is_reply_to(xid, mac).then_some((d.src, m))
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
