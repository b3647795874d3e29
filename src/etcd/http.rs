//! The little HTTP/1.1 etcd's gateway needs: one request per connection
//! (`Connection: close`, so no reply is ever matched to the wrong request),
//! replies framed by Content-Length or chunked (with trailers, which the
//! gateway sends on errors), and a chunked reply read as a stream, line by
//! line (the watch's other stream, a WebSocket, is `websocket.rs`; the
//! connection under both, `transport.rs`). Every read has a deadline and
//! every buffer a bound, so a hostile or broken server ends a call in an
//! error: never a panic, a hang or unbounded memory.

use super::Error;
use super::transport::{Endpoint, Transport};
use crate::quote::quoted;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest reply body, stream line or WebSocket message accepted.
pub const MAX_MESSAGE: usize = 16 << 20;
/// The largest status line plus headers, and chunk-size or trailer line.
const MAX_HEAD: usize = 64 << 10;

/// What breaks the protocol in a reply: a leaf error, which the connection
/// turns into `Error::Protocol` with its endpoint.
#[derive(Debug)]
pub(super) struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(super) fn malformed<T>(what: impl Into<String>) -> Result<T, Malformed> {
    Err(Malformed(what.into()))
}

/// What a read of a stream gave by its deadline.
pub(super) enum Got<T> {
    Item(T),
    End,
    Timeout,
}

pub(super) fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// One connection to one endpoint and the bytes read but not yet used.
pub(super) struct Conn {
    pub endpoint: String,
    t: Transport,
    pub(super) raw: Vec<u8>,
}

/// How a reply's body ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Framing {
    None,
    Length(usize),
    Chunked(Chunk),
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Chunk {
    Size,
    Data(usize),
    DataEnd,
    Trailer,
}

pub(super) struct Head {
    pub status: u16,
    pub framing: Framing,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Status and framing from a reply head (status line and headers, CRLF
/// separated, without the blank line).
pub(super) fn parse_head(head: &[u8]) -> Result<Head, Malformed> {
    let text =
        std::str::from_utf8(head).map_err(|_| Malformed("reply head is not UTF-8".into()))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let (version, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !version.starts_with("HTTP/1.") || code.len() != 3 {
        return malformed(format!(
            "not an HTTP/1.x status line: {:.80}",
            quoted(status_line)
        ));
    }
    let status: u16 = code
        .parse()
        .map_err(|_| Malformed(format!("bad status {:.80}", quoted(code))))?;
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return malformed(format!("bad header line {:.80}", quoted(line)));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| Malformed(format!("bad Content-Length {:.40}", quoted(value))))?;
            if n > MAX_MESSAGE {
                return malformed(format!("a reply of {n} bytes is over {MAX_MESSAGE}"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let framing = if status == 101 || status == 204 || status == 304 {
        Framing::None
    } else if chunked {
        Framing::Chunked(Chunk::Size)
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    Ok(Head { status, framing })
}

/// A reply body being decoded: what arrived of it, not yet taken.
pub(super) struct Body {
    framing: Framing,
    pub data: Vec<u8>,
    pub done: bool,
    /// How much of `data` is known to hold no newline.
    scanned: usize,
}

impl Body {
    pub fn new(framing: Framing) -> Body {
        Body {
            framing,
            data: Vec::new(),
            done: framing == Framing::None || framing == Framing::Length(0),
            scanned: 0,
        }
    }

    /// Moves what `raw` holds of the body into `data`.
    pub fn advance(&mut self, raw: &mut Vec<u8>) -> Result<(), Malformed> {
        loop {
            if self.done {
                return Ok(());
            }
            match self.framing {
                Framing::None => self.done = true,
                Framing::Close => {
                    self.data.append(raw);
                    break;
                }
                Framing::Length(n) | Framing::Chunked(Chunk::Data(n)) => {
                    let m = n.min(raw.len());
                    if m == 0 {
                        break;
                    }
                    self.data.extend(raw.drain(..m));
                    self.framing = match self.framing {
                        Framing::Length(_) if m == n => {
                            self.done = true;
                            Framing::Length(0)
                        }
                        Framing::Length(_) => Framing::Length(n - m),
                        _ if m == n => Framing::Chunked(Chunk::DataEnd),
                        _ => Framing::Chunked(Chunk::Data(n - m)),
                    };
                }
                Framing::Chunked(Chunk::DataEnd) => {
                    if raw.len() < 2 {
                        break;
                    }
                    if &raw[..2] != b"\r\n" {
                        return malformed("chunk not followed by CRLF");
                    }
                    raw.drain(..2);
                    self.framing = Framing::Chunked(Chunk::Size);
                }
                Framing::Chunked(state) => {
                    let Some(end) = find(raw, b"\r\n") else {
                        if raw.len() > MAX_HEAD {
                            return malformed("chunk size or trailer line too long");
                        }
                        break;
                    };
                    let line: Vec<u8> = raw.drain(..end + 2).take(end).collect();
                    if state == Chunk::Trailer {
                        self.done = line.is_empty();
                        continue;
                    }
                    let size = line.split(|&b| b == b';').next().unwrap_or(&[]);
                    let size = std::str::from_utf8(size)
                        .ok()
                        .map(str::trim)
                        .filter(|s| !s.is_empty() && s.len() <= 8)
                        .and_then(|s| usize::from_str_radix(s, 16).ok())
                        .ok_or_else(|| {
                            Malformed(format!("bad chunk size {:.40}", quoted(&lossy(&line))))
                        })?;
                    if size > MAX_MESSAGE {
                        return malformed(format!("a chunk of {size} bytes is over {MAX_MESSAGE}"));
                    }
                    self.framing = Framing::Chunked(if size == 0 {
                        Chunk::Trailer
                    } else {
                        Chunk::Data(size)
                    });
                }
            }
        }
        if self.data.len() > MAX_MESSAGE {
            return malformed(format!("a reply of over {MAX_MESSAGE} bytes"));
        }
        Ok(())
    }
}

pub(super) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned()
}

impl Conn {
    pub fn open(
        ep: &Endpoint,
        tls: Option<&Arc<rustls::ClientConfig>>,
        timeout: Duration,
    ) -> Result<Conn, Error> {
        let t =
            Transport::connect(ep, tls, timeout).map_err(|e| Error::io(&ep.url, "connect", e))?;
        Ok(Conn {
            endpoint: ep.url.clone(),
            t,
            raw: Vec::new(),
        })
    }

    pub fn protocol(&self, what: impl Into<String>) -> Error {
        Error::Protocol {
            endpoint: self.endpoint.clone(),
            what: what.into(),
        }
    }

    pub fn send(&mut self, data: &[u8], deadline: Instant) -> Result<(), Error> {
        self.t
            .write_all(data, deadline)
            .map_err(|e| Error::io(&self.endpoint, "write", e))
    }

    /// Reads more into `raw`: Ok(false) at the end of the connection.
    pub(super) fn fill(&mut self, deadline: Instant) -> io::Result<bool> {
        let mut buf = [0u8; 16 << 10];
        let n = self.t.read(&mut buf, deadline)?;
        self.raw.extend_from_slice(&buf[..n]);
        Ok(n > 0)
    }

    fn fill_or_fail(&mut self, deadline: Instant, what: &str) -> Result<(), Error> {
        match self.fill(deadline) {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.protocol(format!("connection closed in {what}"))),
            Err(e) => Err(Error::io(&self.endpoint, "read", e)),
        }
    }

    /// The reply's head; informational replies other than 101 are skipped.
    pub fn head(&mut self, deadline: Instant) -> Result<Head, Error> {
        loop {
            let Some(end) = find(&self.raw, b"\r\n\r\n") else {
                if self.raw.len() > MAX_HEAD {
                    return Err(self.protocol("reply head over 64 KiB"));
                }
                self.fill_or_fail(deadline, "the reply head")?;
                continue;
            };
            let head = parse_head(&self.raw[..end]).map_err(|e| self.protocol(e.0))?;
            self.raw.drain(..end + 4);
            if head.status >= 200 || head.status == 101 {
                return Ok(head);
            }
        }
    }

    /// A whole body.
    pub fn body(&mut self, framing: Framing, deadline: Instant) -> Result<Vec<u8>, Error> {
        let mut body = Body::new(framing);
        loop {
            body.advance(&mut self.raw)
                .map_err(|e| self.protocol(e.0))?;
            if body.done {
                return Ok(body.data);
            }
            match self.fill(deadline) {
                Ok(true) => {}
                Ok(false) if framing == Framing::Close => return Ok(body.data),
                Ok(false) => return Err(self.protocol("connection closed in the reply body")),
                Err(e) => return Err(Error::io(&self.endpoint, "read", e)),
            }
        }
    }

    /// The next newline-terminated line of a streamed body.
    pub fn line(&mut self, body: &mut Body, deadline: Instant) -> Result<Got<Vec<u8>>, Error> {
        loop {
            body.advance(&mut self.raw)
                .map_err(|e| self.protocol(e.0))?;
            let unseen = &body.data[body.scanned..];
            body.scanned = body.data.len();
            if let Some(at) = unseen.iter().position(|&b| b == b'\n') {
                let nl = body.data.len() - unseen.len() + at;
                body.scanned = 0;
                let line: Vec<u8> = body.data.drain(..=nl).take(nl).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Got::Item(line));
            }
            if body.done {
                return Ok(if body.data.iter().all(u8::is_ascii_whitespace) {
                    Got::End
                } else {
                    Got::Item(std::mem::take(&mut body.data))
                });
            }
            match self.fill(deadline) {
                Ok(true) => {}
                Ok(false) => return Err(self.protocol("connection closed in a stream")),
                Err(e) if timed_out(&e) => return Ok(Got::Timeout),
                Err(e) => return Err(Error::io(&self.endpoint, "read", e)),
            }
        }
    }
}

/// A POST of a JSON body. `token` must hold no CR or LF (checked when it
/// is received).
pub(super) fn post(ep: &Endpoint, path: &str, body: &[u8], token: Option<&str>) -> Vec<u8> {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        ep.host_header(),
        body.len()
    );
    if let Some(t) = token {
        req.push_str(&format!("Authorization: {t}\r\n"));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body);
    out
}
