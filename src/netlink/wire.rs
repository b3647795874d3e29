//! Netlink messages as bytes: bodies (a fixed header struct followed by
//! attributes), the `nlmsghdr` frame around them, and parsing of what the kernel
//! sends back. neli's typed builders need a new type per nesting level and kind;
//! a byte writer with the kernel's TLV rules covers every kind in a few lines.

pub use super::uapi::netlink::NLA_F_NESTED as NESTED;
use super::uapi::netlink::NLA_TYPE_MASK as TYPE_MASK;
use std::net::IpAddr;

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
        // Attribute lengths are u16 by protocol. Inputs that reach attributes are
        // bounded where they enter (names, container IDs); past the limit the
        // length saturates, which the kernel refuses (it never wraps into a
        // shorter, different attribute).
        let len = u16::try_from(4 + payload.len()).unwrap_or(u16::MAX);
        self.0.extend_from_slice(&len.to_ne_bytes());
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

pub use super::uapi::netlink::{HDR_LEN, NLM_F_DUMP_INTR, NLMSG_DONE, NLMSG_ERROR};

/// Appends one message: `nlmsghdr` (port id 0: the kernel), then `body`, padded.
pub fn frame(out: &mut Vec<u8>, ty: u16, flags: u16, seq: u32, body: &[u8]) {
    let len = HDR_LEN + body.len();
    // Bodies are bounded by their u16 attribute lengths; saturating never wraps.
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_ne_bytes());
    out.extend_from_slice(&ty.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(body);
    out.resize(align4(out.len()), 0);
}

/// A received netlink message: type, flags, seq, payload (after the header).
#[derive(Debug)]
pub struct Received<'a> {
    pub ty: u16,
    pub flags: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

/// The messages of one `recv`; a truncated or malformed tail ends the iteration.
pub fn messages(mut buf: &[u8]) -> impl Iterator<Item = Received<'_>> {
    std::iter::from_fn(move || {
        let len = usize::try_from(as_u32(buf.get(0..4)?)?).ok()?;
        if len < HDR_LEN || len > buf.len() {
            return None;
        }
        let msg = Received {
            ty: as_u16(&buf[4..6])?,
            flags: as_u16(&buf[6..8])?,
            seq: as_u32(&buf[8..12])?,
            payload: &buf[HDR_LEN..len],
        };
        buf = &buf[align4(len).min(buf.len())..];
        Some(msg)
    })
}

use super::uapi::netlink::{NLM_F_CAPPED, NLMSGERR_ATTR_MSG};

/// An NLMSG_ERROR (or NLMSG_DONE) message: errno (positive; 0 = success) and
/// the extended-ACK text.
pub fn error_of(msg: &Received) -> (i32, Option<String>) {
    let payload = msg.payload;
    let code = payload.get(..4).and_then(as_u32).unwrap_or(0).cast_signed();
    // After the code of an NLMSG_ERROR comes the request (whole on errors unless
    // capped), then the extack TLVs; NLMSG_DONE has the TLVs right after it.
    let echoed = if msg.ty == NLMSG_DONE {
        0
    } else if code == 0 || msg.flags & NLM_F_CAPPED != 0 {
        HDR_LEN
    } else {
        let orig_len = payload
            .get(4..8)
            .and_then(as_u32)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        HDR_LEN.max(align4(orig_len).min(payload.len().saturating_sub(4)))
    };
    let tlvs = payload.get(4 + echoed..).unwrap_or_default();
    let text = find(tlvs, NLMSGERR_ATTR_MSG)
        .map(as_str)
        .filter(|s| !s.is_empty());
    // -errno; a malformed (positive or i32::MIN) code still reads as a failure.
    (i32::try_from(code.unsigned_abs()).unwrap_or(i32::MAX), text)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
