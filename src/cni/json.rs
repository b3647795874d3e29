//! JSON read the way Go's `encoding/json` reads it into structs, so every input
//! the runtimes write (Go structs without JSON tags, e.g. containerd's
//! `{"HostPort":80}`) means here what it means to the reference plugins:
//!
//! - a key names a field when it equals the field's name, else when it equals
//!   it under Unicode simple case folding (`HostPort`, `HOSTPORT` → `hostPort`);
//! - keys are applied in document order, so of duplicates the last one wins;
//! - `null` leaves a field as it is (its default);
//! - unknown keys are ignored (a [`Recorder`] lists them, for `cnitool validate`).
//!
//! Errors read as Go's (`json: cannot unmarshal string into Go struct field
//! NetConf.isGateway of type bool`) and carry the value's path
//! (`ipam.ranges[0][0].subnet`); an address its type refuses names the value
//! as Go's parsers do (`invalid CIDR address: 10.300.0.0/24`).
//!
//! Every decoding of input goes through here ([`from_slice`], [`from_value`],
//! [`Json::field`]); a unit test keeps `serde_json::from_*` out of the rest of
//! `src/`. Output is untouched: it keeps the spec's exact casing.

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

#[path = "json_de.rs"]
mod decoder;
#[path = "json_error.rs"]
mod error;
use decoder::decode;
pub use error::Error;

/// A parsed document that keeps what Go's decoder sees and `serde_json::Value`
/// loses: the order of an object's keys and its duplicates.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Parses bytes into a [`Json`] document.
pub fn parse(bytes: &[u8]) -> Result<Json, Error> {
    serde_json::from_slice(bytes).map_err(Error::syntax)
}

/// Decodes bytes into `T` with Go's rules.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    parse(bytes)?.decode()
}

/// Decodes a string into `T` with Go's rules.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    from_slice(text.as_bytes())
}

/// Decodes an already parsed value into `T` with Go's rules (key order within
/// an object is already lost there; duplicates were resolved last-wins).
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    Json::from(value).decode()
}

/// Go's rule for matching a key to a field name: equal under Unicode simple case
/// folding (so `K`, `k` and the Kelvin sign match, as do `s`, `S` and `ſ`).
pub fn fold_eq(a: &str, b: &str) -> bool {
    a.chars().map(fold_char).eq(b.chars().map(fold_char))
}

/// One representative of a character's simple case-folding orbit: its
/// single-character uppercase, then that one's single-character lowercase.
fn fold_char(c: char) -> char {
    fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }
    let upper = single(c.to_uppercase()).unwrap_or(c);
    single(upper.to_lowercase()).unwrap_or(upper)
}

/// The value a Go struct field named `name` gets from `map`: the last non-null
/// entry whose key is `name` or folds to it (BTreeMap order stands in for
/// document order among differently cased duplicates, which a Map has lost).
pub fn map_field<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.get(name).filter(|v| !v.is_null()).or_else(|| {
        map.iter()
            .filter(|(k, v)| !v.is_null() && fold_eq(k, name))
            .map(|(_, v)| v)
            .next_back()
    })
}

impl Json {
    /// The value a Go struct field named `name` gets from this object: the last
    /// non-null entry whose key is `name` or folds to it. None for non-objects.
    pub fn field(&self, name: &str) -> Option<&Json> {
        let Json::Object(entries) = self else {
            return None;
        };
        entries
            .iter()
            .rev()
            .find(|(k, v)| !v.is_null() && (k == name || fold_eq(k, name)))
            .map(|(_, v)| v)
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// Decodes this value into `T` with Go's rules. Nothing of the document is
    /// copied but the values `T` keeps.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, Error> {
        decode(self, &[], None)
    }

    /// As [`Json::decode`], for the value at `at` (the keys from the document's
    /// root to it, which errors' paths begin with), recording into `recorder`.
    pub fn decode_at<T: DeserializeOwned>(
        &self,
        at: &[&str],
        recorder: Option<&Recorder>,
    ) -> Result<T, Error> {
        decode(self, at, recorder)
    }

    /// The value as `serde_json` holds it: exact duplicates resolved last-wins.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(a) => Value::Array(a.iter().map(Json::to_value).collect()),
            Json::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

impl From<Value> for Json {
    fn from(v: Value) -> Json {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(b),
            Value::Number(n) => Json::Number(n),
            Value::String(s) => Json::String(s),
            Value::Array(a) => Json::Array(a.into_iter().map(Json::from).collect()),
            Value::Object(o) => Json::Object(o.into_iter().map(|(k, v)| (k, v.into())).collect()),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
        Number::from_f64(n)
            .map(Json::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Json::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            out.push((k, v));
        }
        Ok(Json::Object(out))
    }
}

/// Keys of the objects a decoding met, against the fields of the structs it
/// decoded them into: a key no struct knows is one the plugin never reads (a
/// misspelling falls back to the default silently). Filled while decoding, so
/// the structs themselves are the only description of what a plugin reads.
#[derive(Debug, Default)]
pub struct Recorder {
    seen: std::sync::Mutex<std::collections::BTreeMap<String, Seen>>,
}

#[derive(Debug, Default)]
struct Seen {
    /// Fields of every struct decoded here, and keys read by other means.
    known: std::collections::BTreeSet<String>,
    /// The object's keys, once some struct was decoded from it.
    keys: Option<Vec<String>>,
}

/// A key of an object that no struct decoded from that object has a field for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The object's path (`""` for the document, `ipam`, `vlanTrunk[0]`).
    pub at: String,
    pub key: String,
    /// The fields that would have been read there.
    pub known: Vec<String>,
}

impl UnknownKey {
    /// The key's own path (`ipam.subnett`).
    pub fn path(&self) -> String {
        join_path(&self.at, &self.key)
    }
}

fn join_path(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

impl Recorder {
    fn with<R>(&self, f: impl FnOnce(&mut std::collections::BTreeMap<String, Seen>) -> R) -> R {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut seen)
    }

    /// `key` of the object at `at` is read (other than through a struct).
    pub fn know(&self, at: &str, key: &str) {
        self.with(|seen| {
            seen.entry(at.to_string())
                .or_default()
                .known
                .insert(key.to_string());
        });
    }

    fn struct_at(&self, at: String, fields: &[&str], entries: &[(String, Json)]) {
        self.with(|seen| {
            let s = seen.entry(at).or_default();
            s.known.extend(fields.iter().map(|f| f.to_string()));
            s.keys
                .get_or_insert_with(|| entries.iter().map(|(k, _)| k.clone()).collect());
        });
    }

    /// Every key that no struct decoded from its object reads, by path.
    pub fn unknown_keys(&self) -> Vec<UnknownKey> {
        self.with(|seen| {
            let mut out = Vec::new();
            for (at, s) in seen.iter() {
                for key in s.keys.iter().flatten() {
                    let known = s.known.iter().any(|f| f == key || fold_eq(f, key));
                    if !known
                        && !out
                            .iter()
                            .any(|u: &UnknownKey| u.at == *at && u.key == *key)
                    {
                        out.push(UnknownKey {
                            at: at.clone(),
                            key: key.clone(),
                            known: s.known.iter().cloned().collect(),
                        });
                    }
                }
            }
            out
        })
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
