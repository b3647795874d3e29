//! The little HTTP/1.1 etcd's gateway needs: one request per connection
//! (`Connection: close`, so no reply is ever matched to the wrong request),
//! replies framed by Content-Length or chunked (with trailers, which the
//! gateway sends on errors), and the two streams: a chunked reply read line
//! by line, and a WebSocket (RFC 6455) for the watch. Every read has a
//! deadline and every buffer a bound, so a hostile or broken server ends a
//! call in an error: never a panic, a hang or unbounded memory.

use super::Error;
use crate::quote::quoted;
use rustls::ClientConnection;
use rustls::pki_types::ServerName;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
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

fn malformed<T>(what: impl Into<String>) -> Result<T, Malformed> {
    Err(Malformed(what.into()))
}

/// An endpoint as configured: `http://host:port` or `https://host:port`.
#[derive(Debug, Clone)]
pub(super) struct Endpoint {
    pub url: String,
    /// Without the brackets of an IPv6 address: the TLS server name.
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl Endpoint {
    pub fn parse(url: &str) -> Result<Endpoint, Error> {
        let bad = |why: &str| Error::Config(format!("endpoint {url}: {why}", url = quoted(&url)));
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad("http:// or https:// expected"));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("no ']'"))?;
            (h, after.strip_prefix(':'))
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        let port = match port {
            None => 2379,
            Some(p) => p.parse().map_err(|_| bad("bad port"))?,
        };
        if host.is_empty() || host.contains(['/', '@', '?', '#', ' ']) {
            return Err(bad("bad host"));
        }
        Ok(Endpoint {
            url: url.to_string(),
            host: host.to_string(),
            port,
            tls,
        })
    }

    fn host_header(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The time left until `deadline`, or TimedOut once it has passed.
fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
    }
    Ok(left.max(Duration::from_millis(1)))
}

pub(super) fn tls_io(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A TCP connection, TLS or not. TLS is driven by hand (one socket read per
/// step) so that a server dribbling bytes cannot stretch a read past its
/// deadline.
struct Transport {
    sock: TcpStream,
    tls: Option<Box<ClientConnection>>,
}

impl Transport {
    fn connect(
        ep: &Endpoint,
        tls: Option<&Arc<rustls::ClientConfig>>,
        timeout: Duration,
    ) -> io::Result<Transport> {
        let deadline = Instant::now() + timeout;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for the host");
        let mut sock = None;
        for addr in (ep.host.as_str(), ep.port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, remaining(deadline)?) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let sock = sock.ok_or(last)?;
        sock.set_nodelay(true)?;
        let tls = match tls {
            None => None,
            Some(config) => {
                let name = ServerName::try_from(ep.host.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                Some(Box::new(
                    ClientConnection::new(config.clone(), name).map_err(tls_io)?,
                ))
            }
        };
        let mut t = Transport { sock, tls };
        t.handshake(deadline)?;
        Ok(t)
    }

    fn handshake(&mut self, deadline: Instant) -> io::Result<()> {
        let Some(conn) = self.tls.as_mut() else {
            return Ok(());
        };
        while conn.is_handshaking() {
            if conn.wants_write() {
                self.sock.set_write_timeout(Some(remaining(deadline)?))?;
                conn.write_tls(&mut self.sock)?;
            } else if conn.wants_read() {
                self.sock.set_read_timeout(Some(remaining(deadline)?))?;
                if conn.read_tls(&mut self.sock)? == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "closed during the TLS handshake",
                    ));
                }
                conn.process_new_packets().map_err(tls_io)?;
            }
        }
        Ok(())
    }

    fn write_all(&mut self, mut data: &[u8], deadline: Instant) -> io::Result<()> {
        let Some(conn) = self.tls.as_mut() else {
            self.sock.set_write_timeout(Some(remaining(deadline)?))?;
            return self.sock.write_all(data);
        };
        loop {
            while conn.wants_write() {
                self.sock.set_write_timeout(Some(remaining(deadline)?))?;
                conn.write_tls(&mut self.sock)?;
            }
            if data.is_empty() {
                return Ok(());
            }
            let n = conn.writer().write(data)?;
            data = &data[n..];
        }
    }

    /// At most one socket read: some bytes, 0 at the end, or an error
    /// (WouldBlock or TimedOut when the deadline passes).
    fn read(&mut self, out: &mut [u8], deadline: Instant) -> io::Result<usize> {
        self.sock.set_read_timeout(Some(remaining(deadline)?))?;
        let Some(conn) = self.tls.as_mut() else {
            return self.sock.read(out);
        };
        loop {
            match conn.reader().read(out) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return done,
            }
            self.sock.set_read_timeout(Some(remaining(deadline)?))?;
            let n = conn.read_tls(&mut self.sock)?;
            conn.process_new_packets().map_err(tls_io)?;
            if conn.wants_write() {
                // Alerts and key updates; a failure shows on the next read.
                let _ = conn.write_tls(&mut self.sock);
            }
            if n == 0 {
                return match conn.reader().read(out) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
                    done => done,
                };
            }
        }
    }
}

/// What a read of a stream gave by its deadline.
pub(super) enum Got<T> {
    Item(T),
    End,
    Timeout,
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// One connection to one endpoint and the bytes read but not yet used.
pub(super) struct Conn {
    pub endpoint: String,
    t: Transport,
    raw: Vec<u8>,
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
    fn fill(&mut self, deadline: Instant) -> io::Result<bool> {
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
pub(super) fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    std::collections::hash_map::RandomState::new().hash_one(N.fetch_add(1, Ordering::Relaxed))
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
