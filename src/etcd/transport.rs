//! The connection under etcd's HTTP: an endpoint as configured, and a TCP
//! connection to it, TLS or not, whose every step has a deadline.

use super::Error;
use crate::quote::quoted;
use rustls::ClientConnection;
use rustls::pki_types::ServerName;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

    pub(super) fn host_header(&self) -> String {
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

fn tls_io(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A TCP connection, TLS or not. TLS is driven by hand (one socket read per
/// step) so that a server dribbling bytes cannot stretch a read past its
/// deadline.
pub(super) struct Transport {
    sock: TcpStream,
    tls: Option<Box<ClientConnection>>,
}

impl Transport {
    pub(super) fn connect(
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

    pub(super) fn write_all(&mut self, mut data: &[u8], deadline: Instant) -> io::Result<()> {
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
    pub(super) fn read(&mut self, out: &mut [u8], deadline: Instant) -> io::Result<usize> {
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
