//! Watches: a WebSocket on `/v3/watch` (or, with auth, a POST of the create
//! request; see the module above), one JSON message per event batch.

use super::http::{self, Body, Conn, Got};
use super::websocket;
use super::{Client, Error, KeyValue, Result, stream_error, wire};
use std::io;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Put,
    Delete,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    /// A deletion's holds the key and its mod_revision (the deletion's).
    pub kv: KeyValue,
}

/// One message of a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchMsg {
    /// The watch is in place (always the first message of a good watch).
    Created,
    /// Changes, in order; `revision` is the store's when they were sent.
    Events { revision: i64, events: Vec<Event> },
    /// Every change up to `revision` has been sent.
    Progress { revision: i64 },
    /// The start revision is below etcd's compaction horizon: list again and
    /// watch from the list's revision + 1.
    Compacted { compact_revision: i64 },
    /// etcd ended the watch (permission denied, ...).
    Canceled { reason: String },
    /// Nothing arrived within the wait.
    Timeout,
}

enum Mode {
    WebSocket { partial: Option<Vec<u8>> },
    Lines { body: Body },
}

/// An open watch; dropping it closes the connection, which cancels it.
pub struct Watch {
    conn: Conn,
    mode: Mode,
    pending: Option<WatchMsg>,
    timeout: Duration,
}

/// Permission refused at creation: with auth, an expired token (3.4 says
/// "permission denied", later releases "invalid auth token").
fn auth_refusal(msg: &WatchMsg) -> bool {
    matches!(msg, WatchMsg::Canceled { reason }
        if reason.contains("permission denied") || reason.contains("auth token"))
}

impl Client {
    /// Changes under `prefix` from `start_revision` on (0: from now).
    pub fn watch(&self, prefix: impl AsRef<[u8]>, start_revision: i64) -> Result<Watch> {
        let (key, end) = wire::prefix_bounds(prefix.as_ref());
        self.watch_range(&key, Some(&end), start_revision)
    }

    /// Changes of exactly `key` from `start_revision` on (0: from now).
    pub fn watch_key(&self, key: impl AsRef<[u8]>, start_revision: i64) -> Result<Watch> {
        self.watch_range(key.as_ref(), None, start_revision)
    }

    /// Opens the watch and reads its first message, which the first `next`
    /// returns; a refusal for the token authenticates again once.
    fn watch_range(&self, key: &[u8], end: Option<&[u8]>, start: i64) -> Result<Watch> {
        let create = wire::watch_create(key, end, start).to_string();
        let mut again = self.inner.username.is_some();
        loop {
            let token = self.token()?;
            let mut watch = match self.open_watch(create.as_bytes(), token.as_deref()) {
                Err(e) if again && e.is_unauthenticated() => {
                    self.forget_token();
                    again = false;
                    continue;
                }
                opened => opened?,
            };
            let first = watch.next(self.inner.timeout)?;
            if again && auth_refusal(&first) {
                self.forget_token();
                again = false;
                continue;
            }
            if first == WatchMsg::Timeout {
                return Err(Error::io(
                    &watch.conn.endpoint,
                    "create watch",
                    io::Error::new(io::ErrorKind::TimedOut, "no answer"),
                ));
            }
            watch.pending = Some(first);
            return Ok(watch);
        }
    }

    /// A watch stream on the first endpoint that takes it: nothing is
    /// applied by a watch, so any failure moves on to the next.
    fn open_watch(&self, create: &[u8], token: Option<&str>) -> Result<Watch> {
        let mut tried = Vec::new();
        for (i, ep) in self.order() {
            let deadline = Instant::now() + self.inner.timeout;
            let opened =
                Conn::open(ep, self.inner.tls.as_ref(), self.inner.timeout).and_then(|mut conn| {
                    let request = match token {
                        None => websocket::upgrade(ep, "/v3/watch"),
                        Some(t) => http::post(ep, "/v3/watch", create, Some(t)),
                    };
                    conn.send(&request, deadline)?;
                    let head = conn.head(deadline)?;
                    let mode = match (token, head.status) {
                        (None, 101) => {
                            conn.send(&websocket::ws_frame(1, create), deadline)?;
                            Mode::WebSocket { partial: None }
                        }
                        (Some(_), 200) => Mode::Lines {
                            body: Body::new(head.framing),
                        },
                        (_, status) => {
                            let body = conn.body(head.framing, deadline)?;
                            return Err(Error::status(&ep.url, status, &body));
                        }
                    };
                    Ok(Watch {
                        conn,
                        mode,
                        pending: None,
                        timeout: self.inner.timeout,
                    })
                });
            match opened {
                Ok(watch) => {
                    self.state().current = i;
                    return Ok(watch);
                }
                Err(e @ Error::Status { .. }) if !e.is_unavailable() => return Err(e),
                Err(e) => tried.push(e),
            }
        }
        Err(Error::Unavailable(tried))
    }
}

impl Watch {
    /// The endpoint this watch streams from.
    pub fn endpoint(&self) -> &str {
        &self.conn.endpoint
    }

    /// The next message, or `Timeout` when none came within `wait`; a
    /// message half read then is kept for the next call. The end of the
    /// stream (etcd stopped, the connection dropped) is an error.
    pub fn next(&mut self, wait: Duration) -> Result<WatchMsg> {
        if let Some(msg) = self.pending.take() {
            return Ok(msg);
        }
        let deadline = Instant::now() + wait;
        let got = match &mut self.mode {
            Mode::WebSocket { partial } => self.conn.ws_message(partial, deadline)?,
            Mode::Lines { body } => self.conn.line(body, deadline)?,
        };
        match got {
            Got::Item(text) => decode(&self.conn, &text),
            Got::Timeout => Ok(WatchMsg::Timeout),
            Got::End => Err(Error::io(
                &self.conn.endpoint,
                "watch",
                io::Error::new(io::ErrorKind::UnexpectedEof, "the watch stream ended"),
            )),
        }
    }

    /// Asks etcd for a `Progress` message, sent once every change up to
    /// now has been. False when this stream cannot ask (a watch with auth,
    /// see the module): rely on read deadlines and a fresh list then.
    pub fn request_progress(&mut self) -> Result<bool> {
        match self.mode {
            Mode::WebSocket { .. } => {
                let frame = websocket::ws_frame(1, br#"{"progress_request":{}}"#);
                self.conn.send(&frame, Instant::now() + self.timeout)?;
                Ok(true)
            }
            Mode::Lines { .. } => Ok(false),
        }
    }
}

pub(super) fn decode(conn: &Conn, text: &[u8]) -> Result<WatchMsg> {
    let msg: wire::StreamLine<wire::WatchResponse> = super::parse(&conn.endpoint, text)?;
    let r = match (msg.result, msg.error) {
        (_, Some(e)) => return Err(stream_error(&conn.endpoint, e)),
        (Some(r), None) => r,
        (None, None) => return Err(conn.protocol("a watch message with neither result nor error")),
    };
    Ok(if r.compact_revision != 0 {
        WatchMsg::Compacted {
            compact_revision: r.compact_revision,
        }
    } else if r.canceled {
        WatchMsg::Canceled {
            reason: r.cancel_reason,
        }
    } else if r.created {
        WatchMsg::Created
    } else if r.events.is_empty() {
        WatchMsg::Progress {
            revision: r.header.revision,
        }
    } else {
        let mut events = Vec::with_capacity(r.events.len());
        for e in r.events {
            let kind = match e.kind.as_str() {
                "" | "PUT" => EventKind::Put,
                "DELETE" => EventKind::Delete,
                other => {
                    return Err(
                        conn.protocol(format!("event type {:.40}", crate::quote::quoted(other)))
                    );
                }
            };
            events.push(Event {
                kind,
                kv: e.kv.into(),
            });
        }
        WatchMsg::Events {
            revision: r.header.revision,
            events,
        }
    })
}
