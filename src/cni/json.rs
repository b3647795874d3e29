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

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_json::{Map, Number, Value};
use std::fmt;

#[path = "json_error.rs"]
mod error;
pub use error::Error;
use error::go_type;

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

/// The index of the field of `fields` a key names: itself, else the one it
/// folds to.
fn field_index(key: &str, fields: &[&str]) -> Option<usize> {
    fields.iter().position(|f| *f == key).or_else(|| {
        // An ASCII key folds as ASCII does (the fields are ASCII); others may
        // fold onto ASCII (the Kelvin sign, the long s).
        if key.is_ascii() {
            fields.iter().position(|f| f.eq_ignore_ascii_case(key))
        } else {
            fields.iter().position(|f| fold_eq(f, key))
        }
    })
}

/// An object's entries as a struct with `fields` sees them: each key renamed to
/// the field it matches (exact name first, then folded), nulls and keys that
/// name no field dropped (the struct would ignore them), and of several entries
/// for one field only the last, in document order.
///
/// Linear in the number of entries, and nothing is copied: a document of 100k
/// junk keys is input like any other.
fn struct_entries<'a>(
    entries: &'a [(String, Json)],
    fields: &'static [&'static str],
) -> Vec<(&'static str, &'a Json)> {
    let mut slots: Vec<Option<&Json>> = vec![None; fields.len()];
    let mut order: Vec<usize> = Vec::new();
    for (key, value) in entries {
        if value.is_null() {
            continue;
        }
        let Some(i) = field_index(key, fields) else {
            continue;
        };
        if slots[i].replace(value).is_none() {
            order.push(i);
        }
    }
    order
        .into_iter()
        .filter_map(|i| Some((fields[i], slots[i]?)))
        .collect()
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

/// One step from the root to a value.
#[derive(Clone, Copy)]
enum Seg<'a> {
    /// A field `name` of the struct `of` (Go's name for it; may be empty).
    Field {
        of: &'static str,
        name: &'a str,
    },
    /// A key of a map.
    Key(&'a str),
    Index(usize),
}

/// What a decoding carries down: where it is, and what it records.
struct Ctx<'a> {
    path: std::cell::RefCell<Vec<Seg<'a>>>,
    recorder: Option<&'a Recorder>,
}

impl<'a> Ctx<'a> {
    fn push(&self, seg: Seg<'a>) {
        self.path.borrow_mut().push(seg);
    }

    fn pop(&self) {
        self.path.borrow_mut().pop();
    }

    fn path_text(&self) -> String {
        let mut out = String::new();
        for seg in self.path.borrow().iter() {
            match seg {
                Seg::Field { name, .. } | Seg::Key(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// The error placed at the current path, with Go's context: the innermost
    /// struct with a field on the way (without its package), the fields' names.
    fn place(&self, mut e: Error) -> Error {
        e.place(|| {
            let path = self.path.borrow();
            let mut go_struct = "";
            let mut fields: Vec<&str> = Vec::new();
            for seg in path.iter() {
                if let Seg::Field { of, name } = seg {
                    go_struct = of.rsplit('.').next().unwrap_or(of);
                    fields.push(name);
                }
            }
            (self.path_text(), go_struct.to_string(), fields.join("."))
        });
        e
    }

    /// Decodes `json` at `seg` below the current path.
    fn below<'de, T: DeserializeSeed<'de>>(
        &'a self,
        seg: Seg<'a>,
        json: &'a Json,
        seed: T,
    ) -> Result<T::Value, Error> {
        self.push(seg);
        let r = seed
            .deserialize(Node { json, ctx: self })
            .map_err(|e| self.place(e));
        self.pop();
        r
    }
}

/// Decodes `json` into `T`, at `at` (field names from the document's root to
/// `json`, for the error's path) and recording into `recorder`.
fn decode<T: DeserializeOwned>(
    json: &Json,
    at: &[&str],
    recorder: Option<&Recorder>,
) -> Result<T, Error> {
    let ctx = Ctx {
        path: std::cell::RefCell::new(at.iter().map(|name| Seg::Field { of: "", name }).collect()),
        recorder,
    };
    T::deserialize(Node { json, ctx: &ctx }).map_err(|e| ctx.place(e))
}

/// A value of the document being decoded, where it is.
#[derive(Clone, Copy)]
struct Node<'a> {
    json: &'a Json,
    ctx: &'a Ctx<'a>,
}

impl<'a> Node<'a> {
    /// Go's word for this value's kind.
    fn word(&self) -> &'static str {
        match self.json {
            Json::Null => "null",
            Json::Bool(_) => "bool",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// The visitor's verdict on this value, an error naming `V`'s Go type.
    fn visit<'de, V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let r = match self.json {
            Json::Null => v.visit_unit(),
            Json::Bool(b) => v.visit_bool(*b),
            Json::Number(n) => {
                if let Some(u) = n.as_u64() {
                    v.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    v.visit_i64(i)
                } else {
                    match n.as_f64() {
                        Some(f) => v.visit_f64(f),
                        None => Err(de::Error::custom("number out of range")),
                    }
                }
            }
            Json::String(s) => v.visit_str(s),
            Json::Array(a) => v.visit_seq(SeqOf {
                iter: a.iter().enumerate(),
                ctx: self.ctx,
            }),
            Json::Object(o) => v.visit_map(MapOf {
                iter: o.iter(),
                value: None,
                ctx: self.ctx,
            }),
        };
        r.map_err(|e| self.own::<V::Value>(e))
    }

    fn own<T>(&self, e: Error) -> Error {
        if e.is_owned() {
            return e;
        }
        e.own(self.json, || go_type(std::any::type_name::<T>()))
    }
}

macro_rules! visit_any {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.visit(v)
        }
    )*};
}

impl<'de, 'a> Deserializer<'de> for Node<'a> {
    type Error = Error;

    visit_any! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_unit deserialize_seq deserialize_map deserialize_identifier
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        self.visit(v)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, Error> {
        self.visit(v)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        v: V,
    ) -> Result<V::Value, Error> {
        self.visit(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.json {
            Json::Null => v.visit_none(),
            _ => v.visit_some(self),
        }
        .map_err(|e| self.own::<V::Value>(e))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
            .map_err(|e| self.own::<V::Value>(e))
    }

    /// An object's fields as Go matches them; anything but an object (or
    /// null) is a type error naming the struct, as Go's (serde would take an
    /// array as the fields in order).
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let named = |e: Error| {
            if e.is_owned() {
                e
            } else {
                e.own(self.json, || name.to_string())
            }
        };
        match self.json {
            Json::Object(o) => {
                if let Some(r) = self.ctx.recorder {
                    r.struct_at(self.ctx.path_text(), fields, o);
                }
                v.visit_map(Fields {
                    iter: struct_entries(o, fields).into_iter(),
                    value: None,
                    of: name,
                    ctx: self.ctx,
                })
                .map_err(|e| self.ctx.place(named(e)))
            }
            Json::Null => v.visit_unit().map_err(named),
            _ => Err(Error::type_mismatch(self.word(), name.to_string())),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        match self.json {
            Json::String(s) => v
                .visit_enum(de::value::StrDeserializer::<Error>::new(s))
                .map_err(|e| self.own::<V::Value>(e)),
            Json::Object(o) if o.len() == 1 => {
                let (variant, value) = &o[0];
                v.visit_enum(VariantOf {
                    variant,
                    value: Node {
                        json: value,
                        ctx: self.ctx,
                    },
                })
                .map_err(|e| self.own::<V::Value>(e))
            }
            _ => self.visit(v),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
}

/// An array's elements, each at its index.
struct SeqOf<'a> {
    iter: std::iter::Enumerate<std::slice::Iter<'a, Json>>,
    ctx: &'a Ctx<'a>,
}

impl<'de, 'a> SeqAccess<'de> for SeqOf<'a> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some((i, json)) = self.iter.next() else {
            return Ok(None);
        };
        self.ctx.below(Seg::Index(i), json, seed).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An object as a map: every entry, in document order, its key exactly.
struct MapOf<'a> {
    iter: std::slice::Iter<'a, (String, Json)>,
    value: Option<&'a (String, Json)>,
    ctx: &'a Ctx<'a>,
}

impl<'de, 'a> MapAccess<'de> for MapOf<'a> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(entry);
        self.ctx.push(Seg::Key(&entry.0));
        let r = seed
            .deserialize(MapKey(&entry.0))
            .map_err(|e| self.ctx.place(e));
        self.ctx.pop();
        r.map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some((key, json)) => self.ctx.below(Seg::Key(key), json, seed),
            None => Err(de::Error::custom("value requested before key")),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An object as a struct: the entries [`struct_entries`] keeps, each under the
/// name of the field it sets.
struct Fields<'a> {
    iter: std::vec::IntoIter<(&'static str, &'a Json)>,
    value: Option<(&'static str, &'a Json)>,
    of: &'static str,
    ctx: &'a Ctx<'a>,
}

impl<'de, 'a> MapAccess<'de> for Fields<'a> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((name, json)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some((name, json));
        seed.deserialize(de::value::StrDeserializer::<Error>::new(name))
            .map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some((name, json)) => self.ctx.below(Seg::Field { of: self.of, name }, json, seed),
            None => Err(de::Error::custom("value requested before key")),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An object key as a map key: a string, or, for a map with integer keys, the
/// integer it spells (Go decodes `map[uint8]T` from `{"51": ...}` the same way).
struct MapKey<'a>(&'a str);

macro_rules! integer_key {
    ($($method:ident $visit:ident $ty:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            match self.0.parse::<$ty>() {
                Ok(n) => v.$visit(n),
                Err(_) => Err(de::Error::invalid_value(de::Unexpected::Str(self.0), &v)),
            }
        }
    )*};
}

impl<'de> Deserializer<'de> for MapKey<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str(self.0)
    }

    integer_key! {
        deserialize_i8 visit_i8 i8, deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32, deserialize_i64 visit_i64 i64,
        deserialize_u8 visit_u8 u8, deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32, deserialize_u64 visit_u64 u64
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_enum(de::value::StrDeserializer::<Error>::new(self.0))
    }

    forward_to_deserialize_any! {
        bool i128 u128 f32 f64 char str string bytes byte_buf option unit unit_struct
        seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// `{"Variant": value}`.
struct VariantOf<'a> {
    variant: &'a str,
    value: Node<'a>,
}

impl<'de, 'a> EnumAccess<'de> for VariantOf<'a> {
    type Error = Error;
    type Variant = Node<'a>;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Node<'a>), Error> {
        let variant = seed.deserialize(de::value::StrDeserializer::<Error>::new(self.variant))?;
        Ok((variant, self.value))
    }
}

impl<'de> VariantAccess<'de> for Node<'_> {
    type Error = Error;
    fn unit_variant(self) -> Result<(), Error> {
        match self.json {
            Json::Null => Ok(()),
            _ => Err(Error::type_mismatch(self.word(), "unit variant".into())),
        }
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, Error> {
        self.deserialize_seq(v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_struct("", fields, v)
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
