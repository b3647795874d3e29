//! A blocking etcd v3 client over etcd's HTTP/JSON gateway (`/v3/...`, etcd
//! 3.4 and later): keys, transactions, leases, watches, for `flanneld`. No
//! async runtime: each call is one `Connection: close` HTTP/1.1 exchange on
//! a std `TcpStream` (TLS through rustls), with the configured timeout on
//! connecting and on the whole exchange.
//!
//! - Endpoints are tried in order from the one that last answered. A call
//!   moves on to the next endpoint when connecting fails or etcd answers 503
//!   (no leader, stopping); a write whose 503 says "timed out" may still be
//!   applied, so it is not sent again elsewhere. When every endpoint failed,
//!   the error says what each gave (`Error::is_unavailable`).
//! - TLS follows the endpoint's scheme, as etcd's Go client does: `https://`
//!   is TLS (roots: the CA file, else the system's), `http://` is plain
//!   whatever files are set (so a CA file alone, flannel's case, means plain
//!   HTTP with `http://` endpoints). A client certificate is presented when
//!   both the certificate and key files are set; one without the other is
//!   refused. The server name is the endpoint's host, an IP address too.
//! - With a user name, a token from `/v3/auth/authenticate` goes raw in
//!   `Authorization`; a call refused as unauthenticated (HTTP 401, code 16)
//!   authenticates again once and is retried. A server without auth enabled
//!   is used without a token, as the Go client does.
//! - Watches: etcd 3.4.23's gateway answers a streamed POST only once its
//!   request body has ended, so a chunked body kept open for
//!   `progress_request`s never gets a reply. Its WebSocket proxy keeps the
//!   stream open both ways, so a watch is a WebSocket on `/v3/watch`. That
//!   proxy forwards no `Authorization` but its own `Bearer …` form, which
//!   etcd refuses; with auth, a watch is therefore a POST whose body is just
//!   the create request: it streams events alike but cannot ask for
//!   progress (`Watch::request_progress` says so), and a caller relies on
//!   read deadlines and etcd's periodic progress notifications instead.
//! - Nothing a server sends can make this panic, wait past a deadline, or
//!   hold more than 16 MiB per reply, stream line or message.

mod http;
mod tls;
mod transport;
mod watch;
mod websocket;
pub mod wire;

pub use watch::{Event, EventKind, Watch, WatchMsg};
pub use wire::{KeyValue, prefix_end};

use crate::quote::quoted;
use http::Conn;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use transport::Endpoint;

/// What the client connects to and how.
#[derive(Debug, Clone)]
pub struct Config {
    /// `http://host:port` or `https://host:port` (port 2379 if none).
    pub endpoints: Vec<String>,
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// For connecting, and for each exchange as a whole.
    pub timeout: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            ca_file: None,
            cert_file: None,
            key_file: None,
            username: None,
            password: None,
            timeout: Duration::from_secs(5),
        }
    }
}

/// What went wrong, with the endpoint and the cause kept.
#[derive(Debug)]
pub enum Error {
    /// The configuration cannot be used: an endpoint, a file, a setting.
    Config(String),
    /// Connecting, reading or writing failed (`op` says which).
    Io {
        endpoint: String,
        op: &'static str,
        source: io::Error,
    },
    /// TLS failed: the handshake (a certificate refused) or a record.
    Tls {
        endpoint: String,
        source: rustls::Error,
    },
    /// etcd answered with an error: the HTTP status, its gRPC code, its message.
    Status {
        endpoint: String,
        status: u16,
        code: i64,
        message: String,
    },
    /// A reply that breaks HTTP, WebSocket or the API's JSON, or a bound.
    Protocol { endpoint: String, what: String },
    /// No endpoint could serve the call; what each gave, in order.
    Unavailable(Vec<Error>),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    fn io(endpoint: &str, op: &'static str, e: io::Error) -> Error {
        match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            Some(t) => Error::Tls {
                endpoint: endpoint.to_string(),
                source: t.clone(),
            },
            None => Error::Io {
                endpoint: endpoint.to_string(),
                op,
                source: e,
            },
        }
    }

    fn status(endpoint: &str, status: u16, body: &[u8]) -> Error {
        let parsed: wire::ErrorBody = crate::cni::json::from_slice(body).unwrap_or_default();
        let message = match (parsed.message.is_empty(), parsed.error.is_empty()) {
            (false, _) => parsed.message,
            (true, false) => parsed.error,
            _ => http::lossy(body),
        };
        Error::Status {
            endpoint: endpoint.to_string(),
            status,
            code: parsed.code,
            message,
        }
    }

    /// Every endpoint was unreachable or unavailable (HTTP 503, gRPC 14).
    pub fn is_unavailable(&self) -> bool {
        match self {
            Error::Unavailable(_) => true,
            Error::Status { status, code, .. } => *status == 503 || *code == 14,
            _ => false,
        }
    }

    /// A revision asked for is below etcd's compaction horizon.
    pub fn is_compacted(&self) -> bool {
        matches!(self, Error::Status { code: 11, message, .. } if message.contains("compacted"))
    }

    /// The token is unknown or expired (HTTP 401, gRPC 16).
    fn is_unauthenticated(&self) -> bool {
        matches!(self, Error::Status { status, code, .. } if *status == 401 || *code == 16)
    }

    /// A 503 of a write that etcd may apply all the same.
    fn may_have_applied(&self) -> bool {
        matches!(self, Error::Status { message, .. } if message.contains("timed out"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "etcd: {m}"),
            Error::Io {
                endpoint,
                op,
                source,
            } => write!(f, "etcd {endpoint}: {op}: {source}"),
            Error::Tls { endpoint, source } => write!(f, "etcd {endpoint}: TLS: {source}"),
            Error::Status {
                endpoint,
                status,
                code,
                message,
            } => write!(f, "etcd {endpoint}: {message} (HTTP {status}, code {code})"),
            Error::Protocol { endpoint, what } => write!(f, "etcd {endpoint}: {what}"),
            Error::Unavailable(tried) => {
                write!(f, "etcd: no endpoint available")?;
                tried.iter().try_for_each(|e| write!(f, "; {e}"))
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Tls { source, .. } => Some(source),
            _ => None,
        }
    }
}

struct State {
    /// The endpoint to try first: the last that answered.
    current: usize,
    /// None until authenticated; Some(None) when the server has no auth.
    token: Option<Option<String>>,
}

struct Inner {
    endpoints: Vec<Endpoint>,
    tls: Option<Arc<rustls::ClientConfig>>,
    username: Option<String>,
    password: String,
    timeout: Duration,
    state: Mutex<State>,
}

/// An etcd client; clones share endpoints, the current one and the token.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

fn parse<T: DeserializeOwned>(endpoint: &str, body: &[u8]) -> Result<T> {
    crate::cni::json::from_slice(body).map_err(|e| Error::Protocol {
        endpoint: endpoint.to_string(),
        what: format!("reply {:.120}: {e}", quoted(&http::lossy(body))),
    })
}

/// The first message of a streamed reply (`{"result": ...}` lines).
fn parse_stream<T: DeserializeOwned>(endpoint: &str, body: &[u8]) -> Result<T> {
    let line = body.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let msg: wire::StreamLine<T> = parse(endpoint, line)?;
    match (msg.result, msg.error) {
        (_, Some(e)) => Err(stream_error(endpoint, e)),
        (Some(r), None) => Ok(r),
        (None, None) => Err(Error::Protocol {
            endpoint: endpoint.to_string(),
            what: "a stream message with neither result nor error".into(),
        }),
    }
}

fn stream_error(endpoint: &str, e: wire::StreamError) -> Error {
    Error::Status {
        endpoint: endpoint.to_string(),
        status: u16::try_from(e.http_code).unwrap_or(0),
        code: e.grpc_code,
        message: e.message,
    }
}

impl Client {
    /// Checks the configuration and reads the TLS files; connects to nothing.
    pub fn new(config: &Config) -> Result<Client> {
        if config.endpoints.is_empty() {
            return Err(Error::Config("no endpoint".into()));
        }
        if config.timeout.is_zero() {
            return Err(Error::Config("a timeout of zero".into()));
        }
        let endpoints = config
            .endpoints
            .iter()
            .map(|u| Endpoint::parse(u.trim()))
            .collect::<Result<Vec<_>>>()?;
        let tls = if endpoints.iter().any(|e| e.tls) {
            let client = match (&config.cert_file, &config.key_file) {
                (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
                (None, None) => None,
                _ => return Err(Error::Config("a certificate file needs a key file".into())),
            };
            Some(tls::client_config(config.ca_file.as_deref(), client)?)
        } else {
            None
        };
        Ok(Client {
            inner: Arc::new(Inner {
                endpoints,
                tls,
                username: config.username.clone().filter(|u| !u.is_empty()),
                password: config.password.clone().unwrap_or_default(),
                timeout: config.timeout,
                state: Mutex::new(State {
                    current: 0,
                    token: None,
                }),
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The endpoint calls go to first (the last that answered).
    pub fn endpoint(&self) -> String {
        let i = self.state().current;
        self.inner.endpoints[i % self.inner.endpoints.len()]
            .url
            .clone()
    }

    /// The endpoints from the current one on, with their indices.
    fn order(&self) -> impl Iterator<Item = (usize, &Endpoint)> {
        let n = self.inner.endpoints.len();
        let start = self.state().current;
        (0..n).map(move |i| ((start + i) % n, &self.inner.endpoints[(start + i) % n]))
    }

    /// One POST, failing over as the module says; the 200 reply's body.
    fn exchange(
        &self,
        path: &str,
        body: &[u8],
        token: Option<&str>,
        write: bool,
    ) -> Result<(String, Vec<u8>)> {
        let n = self.inner.endpoints.len();
        let mut tried = Vec::new();
        for (i, ep) in self.order() {
            let deadline = Instant::now() + self.inner.timeout;
            let mut conn = match Conn::open(ep, self.inner.tls.as_ref(), self.inner.timeout) {
                Ok(c) => c,
                Err(e) => {
                    tried.push(e);
                    continue;
                }
            };
            let reply = conn
                .send(&http::post(ep, path, body, token), deadline)
                .and_then(|()| conn.head(deadline))
                .and_then(|h| Ok((h.status, conn.body(h.framing, deadline)?)));
            match reply {
                Ok((200, reply)) => {
                    self.state().current = i;
                    return Ok((ep.url.clone(), reply));
                }
                Ok((status, reply)) => {
                    let e = Error::status(&ep.url, status, &reply);
                    if e.is_unavailable() && !(write && e.may_have_applied()) {
                        tried.push(e);
                        continue;
                    }
                    self.state().current = i;
                    return Err(e);
                }
                Err(e) => {
                    // The request may have reached etcd: not sent twice, but
                    // the next call starts elsewhere.
                    self.state().current = (i + 1) % n;
                    return Err(e);
                }
            }
        }
        Err(Error::Unavailable(tried))
    }

    /// The token to send, authenticating first when there is none yet.
    fn token(&self) -> Result<Option<String>> {
        let Some(user) = &self.inner.username else {
            return Ok(None);
        };
        if let Some(token) = self.state().token.clone() {
            return Ok(token);
        }
        let body = wire::authenticate(user, &self.inner.password).to_string();
        let token = match self.exchange("/v3/auth/authenticate", body.as_bytes(), None, false) {
            Ok((endpoint, reply)) => {
                let t = parse::<wire::Reply>(&endpoint, &reply)?.token;
                // It goes into a header line: visible ASCII only.
                if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(Error::Protocol {
                        endpoint,
                        what: format!("an auth token that cannot be a header: {:.80}", quoted(&t)),
                    });
                }
                Some(t)
            }
            Err(Error::Status { message, .. })
                if message.contains("authentication is not enabled") =>
            {
                None
            }
            Err(e) => return Err(e),
        };
        self.state().token = Some(token.clone());
        Ok(token)
    }

    fn forget_token(&self) {
        self.state().token = None;
    }

    /// A unary call, authenticated again once if the token expired.
    fn call<T: DeserializeOwned>(&self, path: &str, body: &Value, write: bool) -> Result<T> {
        let (endpoint, reply) = self.call_raw(path, body, write)?;
        parse(&endpoint, &reply)
    }

    fn call_raw(&self, path: &str, body: &Value, write: bool) -> Result<(String, Vec<u8>)> {
        let body = body.to_string().into_bytes();
        let mut again = self.inner.username.is_some();
        loop {
            let token = self.token()?;
            match self.exchange(path, &body, token.as_deref(), write) {
                Err(e) if again && e.is_unauthenticated() => {
                    self.forget_token();
                    again = false;
                }
                result => return result,
            }
        }
    }

    /// The key, if present, and the store's revision.
    pub fn range(&self, key: impl AsRef<[u8]>) -> Result<(Option<KeyValue>, i64)> {
        let r: wire::Reply = self.call("/v3/kv/range", &wire::key(key.as_ref()), false)?;
        Ok((
            r.kvs.into_iter().next().map(KeyValue::from),
            r.header.revision,
        ))
    }

    /// Every key under the prefix, in key order, and the store's revision.
    pub fn range_prefix(&self, prefix: impl AsRef<[u8]>) -> Result<(Vec<KeyValue>, i64)> {
        let body = wire::range_prefix(prefix.as_ref());
        let r: wire::Reply = self.call("/v3/kv/range", &body, false)?;
        Ok((
            r.kvs.into_iter().map(KeyValue::from).collect(),
            r.header.revision,
        ))
    }

    /// Writes the key only if it does not exist: false when it does.
    pub fn create(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        lease: i64,
    ) -> Result<bool> {
        let body = wire::put_if(key.as_ref(), value.as_ref(), lease, "VERSION", 0);
        Ok(self
            .call::<wire::Reply>("/v3/kv/txn", &body, true)?
            .succeeded)
    }

    /// Writes the key (lease 0: none); the revision of the write.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, lease: i64) -> Result<i64> {
        let body = wire::put(key.as_ref(), value.as_ref(), lease);
        Ok(self
            .call::<wire::Reply>("/v3/kv/put", &body, true)?
            .header
            .revision)
    }

    /// Writes the key only if its mod_revision is still `revision`.
    pub fn put_if_mod_revision(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        lease: i64,
        revision: i64,
    ) -> Result<bool> {
        let body = wire::put_if(key.as_ref(), value.as_ref(), lease, "MOD", revision);
        Ok(self
            .call::<wire::Reply>("/v3/kv/txn", &body, true)?
            .succeeded)
    }

    /// Deletes the key; how many keys were deleted (0 or 1).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<i64> {
        let body = wire::key(key.as_ref());
        Ok(self
            .call::<wire::Reply>("/v3/kv/deleterange", &body, true)?
            .deleted)
    }

    /// A new lease: its ID and the TTL etcd granted.
    pub fn lease_grant(&self, ttl_secs: i64) -> Result<(i64, i64)> {
        let (endpoint, reply) =
            self.call_raw("/v3/lease/grant", &wire::lease_grant(ttl_secs), true)?;
        let r: wire::Reply = parse(&endpoint, &reply)?;
        if !r.error.is_empty() || r.id == 0 {
            return Err(Error::Protocol {
                endpoint,
                what: format!("no lease granted: {}", quoted(&r.error)),
            });
        }
        Ok((r.id, r.ttl))
    }

    /// Refreshes the lease; its TTL again, 0 when the lease is gone.
    pub fn lease_keepalive(&self, id: i64) -> Result<i64> {
        let (endpoint, reply) = self.call_raw("/v3/lease/keepalive", &wire::lease_id(id), false)?;
        Ok(parse_stream::<wire::Reply>(&endpoint, &reply)?.ttl)
    }

    /// Revokes the lease, deleting its keys; false when it did not exist.
    pub fn lease_revoke(&self, id: i64) -> Result<bool> {
        match self.call_raw("/v3/lease/revoke", &wire::lease_id(id), true) {
            Ok(_) => Ok(true),
            Err(Error::Status { code: 5, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The lease's remaining TTL; -1 when etcd knows no such lease.
    pub fn lease_time_to_live(&self, id: i64) -> Result<i64> {
        let body = wire::lease_id(id);
        Ok(self
            .call::<wire::Reply>("/v3/lease/timetolive", &body, false)?
            .ttl)
    }
}

#[cfg(test)]
mod tests;
