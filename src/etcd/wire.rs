//! etcd's v3 API as its JSON gateway speaks it (grpc-gateway's mapping of
//! the protobuf messages): bytes as standard base64, int64 as decimal
//! strings (numbers are accepted too), and every zero, false or empty field
//! left out, so each field here defaults.

use crate::digest::{base64_decode, base64_encode};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One key as etcd holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
    /// How often the key was written since it was created (0: absent).
    pub version: i64,
    /// The lease it is attached to (0: none).
    pub lease: i64,
}

/// int64 as the gateway writes it: a string of decimal digits, or a number.
/// Never through f64, which loses lease IDs.
pub(super) fn int64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => s
            .parse()
            .map_err(|_| de::Error::custom("int64 out of range")),
        Value::Number(n) => n.as_i64().ok_or_else(|| de::Error::custom("not an int64")),
        Value::Null => Ok(0),
        _ => Err(de::Error::custom("int64 of another JSON type")),
    }
}

fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(Vec::new()),
        Some(s) => base64_decode(&s).ok_or_else(|| de::Error::custom("bad base64")),
    }
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub(super) struct Header {
    #[serde(deserialize_with = "int64")]
    pub revision: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Kv {
    #[serde(deserialize_with = "bytes")]
    key: Vec<u8>,
    #[serde(deserialize_with = "bytes")]
    value: Vec<u8>,
    #[serde(deserialize_with = "int64")]
    create_revision: i64,
    #[serde(deserialize_with = "int64")]
    mod_revision: i64,
    #[serde(deserialize_with = "int64")]
    version: i64,
    #[serde(deserialize_with = "int64")]
    lease: i64,
}

impl From<Kv> for KeyValue {
    fn from(k: Kv) -> KeyValue {
        KeyValue {
            key: k.key,
            value: k.value,
            create_revision: k.create_revision,
            mod_revision: k.mod_revision,
            version: k.version,
            lease: k.lease,
        }
    }
}

/// Every unary reply: each call reads the fields its reply has (a range's
/// kvs, a txn's succeeded, a lease's ID and TTL, ...), the others stay zero.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Reply {
    pub header: Header,
    pub kvs: Vec<Kv>,
    pub succeeded: bool,
    #[serde(deserialize_with = "int64")]
    pub deleted: i64,
    #[serde(rename = "ID", deserialize_with = "int64")]
    pub id: i64,
    #[serde(rename = "TTL", deserialize_with = "int64")]
    pub ttl: i64,
    pub error: String,
    pub token: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct WatchResponse {
    pub header: Header,
    pub created: bool,
    pub canceled: bool,
    #[serde(deserialize_with = "int64")]
    pub compact_revision: i64,
    pub cancel_reason: String,
    pub events: Vec<Event>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Event {
    /// PUT is the zero value, so only DELETE is ever written.
    #[serde(rename = "type")]
    pub kind: String,
    pub kv: Kv,
}

/// A unary error body: `{"error": msg, "code": grpc code, "message": msg}`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ErrorBody {
    pub error: String,
    pub message: String,
    #[serde(deserialize_with = "int64")]
    pub code: i64,
}

/// A streamed message: `{"result": ...}`, or a final `{"error": {...}}`
/// (grpc-gateway's stream error: `grpc_code`, `http_code`, `message`).
#[derive(Deserialize)]
pub(super) struct StreamLine<T> {
    pub result: Option<T>,
    pub error: Option<StreamError>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct StreamError {
    #[serde(deserialize_with = "int64")]
    pub grpc_code: i64,
    #[serde(deserialize_with = "int64")]
    pub http_code: i64,
    pub message: String,
}

/// The end of a prefix's range: the prefix with its last byte below 0xff
/// raised by one and what follows dropped (etcd's `GetPrefixRangeEnd`); a
/// prefix of 0xff bytes only (or none) has no end, written `\0`: every key
/// from it on.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    match prefix.iter().rposition(|&b| b < 0xff) {
        Some(i) => {
            let mut end = prefix[..=i].to_vec();
            end[i] += 1;
            end
        }
        None => vec![0],
    }
}

/// The key and range_end of a prefix. The empty prefix is every key: `\0`
/// to `\0`, as etcd's Go client writes it.
pub(super) fn prefix_bounds(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let key = if prefix.is_empty() {
        vec![0]
    } else {
        prefix.to_vec()
    };
    (key, prefix_end(prefix))
}

#[derive(Serialize)]
struct Put {
    key: String,
    value: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    lease: String,
}

pub(super) fn put(key: &[u8], value: &[u8], lease: i64) -> Value {
    json!(Put {
        key: base64_encode(key),
        value: base64_encode(value),
        lease: if lease == 0 {
            String::new()
        } else {
            lease.to_string()
        },
    })
}

/// A request naming one key: range, deleterange.
pub(super) fn key(key: &[u8]) -> Value {
    json!({ "key": base64_encode(key) })
}

pub(super) fn range_prefix(prefix: &[u8]) -> Value {
    let (key, end) = prefix_bounds(prefix);
    json!({ "key": base64_encode(&key), "range_end": base64_encode(&end) })
}

/// A put done only when `target` of the key (VERSION, MOD, ...) equals `than`.
pub(super) fn put_if(key: &[u8], value: &[u8], lease: i64, target: &str, than: i64) -> Value {
    let field = match target {
        "VERSION" => "version",
        "MOD" => "mod_revision",
        _ => "create_revision",
    };
    json!({
        "compare": [{
            "key": base64_encode(key),
            "target": target,
            "result": "EQUAL",
            field: than.to_string(),
        }],
        "success": [{ "request_put": put(key, value, lease) }],
    })
}

pub(super) fn lease_id(id: i64) -> Value {
    json!({ "ID": id.to_string() })
}

pub(super) fn lease_grant(ttl: i64) -> Value {
    json!({ "TTL": ttl.to_string() })
}

pub(super) fn authenticate(name: &str, password: &str) -> Value {
    json!({ "name": name, "password": password })
}

/// A watch from `start` (0: from now) over `key`..`end`, with etcd's
/// periodic progress notifications.
pub(super) fn watch_create(key: &[u8], end: Option<&[u8]>, start: i64) -> Value {
    let mut req = json!({
        "key": base64_encode(key),
        "start_revision": start.to_string(),
        "progress_notify": true,
    });
    if let Some(end) = end {
        req["range_end"] = Value::String(base64_encode(end));
    }
    json!({ "create_request": req })
}
