//! rtnetlink message bodies as bytes: a fixed header struct followed by
//! attributes. neli's typed builders need a new type per nesting level and kind;
//! a byte writer with the kernel's TLV rules covers every kind in a few lines,
//! and neli still frames, sends and receives the messages.

use std::net::IpAddr;

/// NLA_F_NESTED: set on nests the kernel parses strictly (e.g. IFLA_PROTINFO for AF_BRIDGE).
pub const NESTED: u16 = 0x8000;
const TYPE_MASK: u16 = 0x3fff;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// A message body under construction.
#[derive(Debug, Clone, Default)]
pub struct Body(Vec<u8>);

impl Body {
    /// Starts with a header struct's bytes (already 4-byte aligned in every rtnetlink struct).
    pub fn new(header: &[u8]) -> Body {
        Body(header.to_vec())
    }

    pub fn attr(mut self, ty: u16, payload: &[u8]) -> Body {
        let len = 4 + payload.len();
        // Attribute lengths are u16 by protocol; our payloads are small.
        self.0.extend_from_slice(&(len as u16).to_ne_bytes());
        self.0.extend_from_slice(&ty.to_ne_bytes());
        self.0.extend_from_slice(payload);
        self.0.resize(align4(self.0.len()), 0);
        self
    }

    pub fn u8(self, ty: u16, v: u8) -> Body {
        self.attr(ty, &[v])
    }

    pub fn u16(self, ty: u16, v: u16) -> Body {
        self.attr(ty, &v.to_ne_bytes())
    }

    pub fn u32(self, ty: u16, v: u32) -> Body {
        self.attr(ty, &v.to_ne_bytes())
    }

    /// A C string attribute (NUL-terminated).
    pub fn str(self, ty: u16, s: &str) -> Body {
        let mut bytes = s.as_bytes().to_vec();
        bytes.push(0);
        self.attr(ty, &bytes)
    }

    pub fn ip(self, ty: u16, ip: IpAddr) -> Body {
        match ip {
            IpAddr::V4(v4) => self.attr(ty, &v4.octets()),
            IpAddr::V6(v6) => self.attr(ty, &v6.octets()),
        }
    }

    /// A nested attribute whose contents `f` writes.
    pub fn nest(self, ty: u16, f: impl FnOnce(Body) -> Body) -> Body {
        let inner = f(Body::default());
        self.attr(ty, &inner.0)
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// Attributes of a received message or nest: `(type without flags, payload)`.
pub fn attrs(mut bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if bytes.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([bytes[0], bytes[1]]));
        let ty = u16::from_ne_bytes([bytes[2], bytes[3]]) & TYPE_MASK;
        if len < 4 || len > bytes.len() {
            return None;
        }
        let payload = &bytes[4..len];
        bytes = &bytes[align4(len).min(bytes.len())..];
        Some((ty, payload))
    })
}

/// The payload of attribute `ty`, if present.
pub fn find(bytes: &[u8], ty: u16) -> Option<&[u8]> {
    attrs(bytes).find(|(t, _)| *t == ty).map(|(_, p)| p)
}

pub fn as_u32(p: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(p.get(..4)?.try_into().ok()?))
}

pub fn as_u16(p: &[u8]) -> Option<u16> {
    Some(u16::from_ne_bytes(p.get(..2)?.try_into().ok()?))
}

pub fn as_str(p: &[u8]) -> String {
    let end = p.iter().position(|b| *b == 0).unwrap_or(p.len());
    String::from_utf8_lossy(&p[..end]).into_owned()
}

pub fn as_ip(p: &[u8]) -> Option<IpAddr> {
    if let Ok(v4) = <[u8; 4]>::try_from(p) {
        Some(IpAddr::from(v4))
    } else if let Ok(v6) = <[u8; 16]>::try_from(p) {
        Some(IpAddr::from(v6))
    } else {
        None
    }
}

/// `struct ifinfomsg`.
pub fn ifinfomsg(family: u8, index: u32, flags: u32, change: u32) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0] = family;
    h[4..8].copy_from_slice(&index.to_ne_bytes());
    h[8..12].copy_from_slice(&flags.to_ne_bytes());
    h[12..16].copy_from_slice(&change.to_ne_bytes());
    h
}

pub const IFINFOMSG_LEN: usize = 16;

/// `struct ifaddrmsg`.
pub fn ifaddrmsg(family: u8, prefix: u8, flags: u8, scope: u8, index: u32) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[0] = family;
    h[1] = prefix;
    h[2] = flags;
    h[3] = scope;
    h[4..8].copy_from_slice(&index.to_ne_bytes());
    h
}

pub const IFADDRMSG_LEN: usize = 8;

/// `struct rtmsg` (also the layout of `struct fib_rule_hdr`).
#[allow(clippy::too_many_arguments)]
pub fn rtmsg(
    family: u8,
    dst_len: u8,
    src_len: u8,
    table: u8,
    protocol: u8,
    scope: u8,
    kind: u8,
    flags: u32,
) -> [u8; 12] {
    let mut h = [0u8; 12];
    h[0] = family;
    h[1] = dst_len;
    h[2] = src_len;
    h[3] = 0; // tos
    h[4] = table;
    h[5] = protocol;
    h[6] = scope;
    h[7] = kind;
    h[8..12].copy_from_slice(&flags.to_ne_bytes());
    h
}

pub const RTMSG_LEN: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_with_padding_and_nests() {
        let body = Body::new(&[1, 2, 3, 4])
            .str(3, "eth0")
            .u8(7, 9)
            .nest(18, |b| b.str(1, "veth").nest(2 | NESTED, |b| b.u32(1, 42)))
            .into_bytes();
        assert_eq!(body.len() % 4, 0);
        let got: Vec<(u16, Vec<u8>)> = attrs(&body[4..]).map(|(t, p)| (t, p.to_vec())).collect();
        assert_eq!(got[0], (3, b"eth0\0".to_vec()));
        assert_eq!(got[1], (7, vec![9]));
        let info = find(&body[4..], 18).expect("linkinfo");
        assert_eq!(find(info, 1).map(as_str), Some("veth".into()));
        let data = find(info, 2).expect("data (flag masked)");
        assert_eq!(find(data, 1).and_then(as_u32), Some(42));
        // Truncated input ends the iteration instead of panicking.
        assert_eq!(attrs(&body[4..9]).count(), 0);
        assert_eq!(attrs(&[200, 0, 1, 0]).count(), 0);
    }
}
