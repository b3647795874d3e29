//! The WebSocket (RFC 6455) a watch runs on: the upgrade request, frames
//! parsed and written, and whole messages read off a connection (pings
//! answered, fragments joined, every message bounded).

use super::Error;
use super::http::{Conn, Got, MAX_MESSAGE, Malformed, malformed, timed_out};
use super::transport::Endpoint;
use std::time::Instant;

impl Conn {
    /// The next WebSocket message (text or binary), answering pings;
    /// `partial` holds a fragmented message between calls.
    pub fn ws_message(
        &mut self,
        partial: &mut Option<Vec<u8>>,
        deadline: Instant,
    ) -> Result<Got<Vec<u8>>, Error> {
        loop {
            while let Some((frame, used)) =
                parse_frame(&self.raw).map_err(|e| self.protocol(e.0))?
            {
                self.raw.drain(..used);
                match frame.opcode {
                    0x8 => return Ok(Got::End),
                    0x9 => self.send(&ws_frame(0xA, &frame.payload), deadline)?,
                    0xA => {}
                    op => {
                        // A text (1) or binary (2) frame begins a message, a
                        // continuation (0) extends it.
                        if (op == 0) != partial.is_some() {
                            return Err(self.protocol("WebSocket fragments out of order"));
                        }
                        let message = partial.get_or_insert_with(Vec::new);
                        if message.len() + frame.payload.len() > MAX_MESSAGE {
                            return Err(
                                self.protocol(format!("a message of over {MAX_MESSAGE} bytes"))
                            );
                        }
                        message.extend_from_slice(&frame.payload);
                        if frame.fin {
                            return Ok(Got::Item(partial.take().unwrap_or_default()));
                        }
                    }
                }
            }
            match self.fill(deadline) {
                Ok(true) => {}
                Ok(false) => return Ok(Got::End),
                Err(e) if timed_out(&e) => return Ok(Got::Timeout),
                Err(e) => return Err(Error::io(&self.endpoint, "read", e)),
            }
        }
    }
}

pub(super) struct Frame {
    pub fin: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

/// One whole frame at the start of `raw` and its length, or None while it
/// has not all arrived.
pub(super) fn parse_frame(raw: &[u8]) -> Result<Option<(Frame, usize)>, Malformed> {
    let [b0, b1, ..] = *raw else { return Ok(None) };
    let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0f);
    if b0 & 0x70 != 0 {
        return malformed("WebSocket frame with reserved bits (no extension was agreed)");
    }
    if !matches!(opcode, 0..=2 | 8..=10) {
        return malformed(format!("WebSocket opcode {opcode}"));
    }
    let (len, mut at) = match b1 & 0x7f {
        126 if raw.len() >= 4 => (u16::from_be_bytes([raw[2], raw[3]]) as u64, 4),
        127 if raw.len() >= 10 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&raw[2..10]);
            (u64::from_be_bytes(b), 10)
        }
        126 | 127 => return Ok(None),
        n => (n as u64, 2),
    };
    if opcode >= 8 && (len > 125 || !fin) {
        return malformed("bad WebSocket control frame");
    }
    if len > MAX_MESSAGE as u64 {
        return malformed(format!(
            "a WebSocket frame of {len} bytes is over {MAX_MESSAGE}"
        ));
    }
    let mask = if b1 & 0x80 != 0 {
        let Some(m) = raw.get(at..at + 4) else {
            return Ok(None);
        };
        at += 4;
        Some([m[0], m[1], m[2], m[3]])
    } else {
        None
    };
    let end = at + len as usize;
    let Some(payload) = raw.get(at..end) else {
        return Ok(None);
    };
    let mut payload = payload.to_vec();
    if let Some(m) = mask {
        payload
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b ^= m[i % 4]);
    }
    Ok(Some((
        Frame {
            fin,
            opcode,
            payload,
        },
        end,
    )))
}

/// A client frame (masked, as RFC 6455 requires of clients), whole.
pub(super) fn ws_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= 0xffff => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = (random_u64() as u32).to_be_bytes();
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Unpredictable enough for a WebSocket key and mask (which guard against
/// caching proxies, not eavesdroppers): std's per-process random hash keys.
fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    std::collections::hash_map::RandomState::new().hash_one(N.fetch_add(1, Ordering::Relaxed))
}

/// The WebSocket upgrade of `path`.
pub(super) fn upgrade(ep: &Endpoint, path: &str) -> Vec<u8> {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&random_u64().to_le_bytes());
    key[8..].copy_from_slice(&random_u64().to_le_bytes());
    format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n\r\n",
        ep.host_header(),
        crate::digest::base64_encode(&key)
    )
    .into_bytes()
}
