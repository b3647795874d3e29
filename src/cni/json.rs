//! JSON read the way Go's `encoding/json` reads it into structs, so every input
//! the runtimes write (Go structs without JSON tags, e.g. containerd's
//! `{"HostPort":80}`) means here what it means to the reference plugins:
//!
//! - a key names a field when it equals the field's name, else when it equals
//!   it under Unicode simple case folding (`HostPort`, `HOSTPORT` → `hostPort`);
//! - keys are applied in document order, so of duplicates the last one wins;
//! - `null` leaves a field as it is (its default);
//! - unknown keys are ignored.
//!
//! Every decoding of input goes through here ([`from_slice`], [`from_value`],
//! [`Json::field`]); a unit test keeps `serde_json::from_*` out of the rest of
//! `src/`. Output is untouched: it keeps the spec's exact casing.

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_json::{Map, Number, Value};
use std::fmt;

pub type Error = serde_json::Error;

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
    serde_json::from_slice(bytes)
}

/// Decodes bytes into `T` with Go's rules.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    T::deserialize(parse(bytes)?)
}

/// Decodes a string into `T` with Go's rules.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    from_slice(text.as_bytes())
}

/// Decodes an already parsed value into `T` with Go's rules (key order within
/// an object is already lost there; duplicates were resolved last-wins).
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    T::deserialize(Json::from(value))
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

    /// Decodes this value into `T` with Go's rules. A struct copies only the
    /// entries that name its fields, not the whole document.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, Error> {
        T::deserialize(Borrowed(self))
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
/// Linear in the number of entries, and only the kept values are copied: a
/// document of 100k junk keys is input like any other.
fn struct_entries(entries: &[(String, Json)], fields: &[&'static str]) -> Vec<(String, Json)> {
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
        .filter_map(|i| Some((fields[i].to_string(), slots[i]?.clone())))
        .collect()
}

impl<'de> Deserializer<'de> for Json {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self {
            Json::Null => v.visit_unit(),
            Json::Bool(b) => v.visit_bool(b),
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
            Json::String(s) => v.visit_string(s),
            Json::Array(a) => v.visit_seq(Seq(a.into_iter())),
            Json::Object(o) => v.visit_map(Entries::new(o)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self {
            Json::Null => v.visit_none(),
            other => v.visit_some(other),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        match self {
            Json::Object(o) => v.visit_map(Entries::new(struct_entries(&o, fields))),
            other => other.deserialize_any(v),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        match self {
            Json::String(s) => v.visit_enum(s.into_deserializer()),
            Json::Object(mut o) if o.len() == 1 => match o.pop() {
                Some((variant, value)) => v.visit_enum(Variant { variant, value }),
                None => Err(de::Error::custom("empty enum object")),
            },
            other => other.deserialize_any(v),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
        ignored_any
    }
}

/// A document decoded in place: a struct takes copies of the entries that
/// name its fields; anything else decodes from a copy of the value.
struct Borrowed<'a>(&'a Json);

impl<'de> Deserializer<'de> for Borrowed<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        self.0.clone().deserialize_any(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.0 {
            Json::Null => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Json::Object(o) => v.visit_map(Entries::new(struct_entries(o, fields))),
            other => other.clone().deserialize_struct(name, fields, v),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        self.0.clone().deserialize_enum(name, variants, v)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
        ignored_any
    }
}

impl<'de> IntoDeserializer<'de, Error> for Json {
    type Deserializer = Json;
    fn into_deserializer(self) -> Json {
        self
    }
}

struct Seq(std::vec::IntoIter<Json>);

impl<'de> SeqAccess<'de> for Seq {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|v| seed.deserialize(v)).transpose()
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries {
    iter: std::vec::IntoIter<(String, Json)>,
    value: Option<Json>,
}

impl Entries {
    fn new(entries: Vec<(String, Json)>) -> Entries {
        Entries {
            iter: entries.into_iter(),
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(MapKey(key)).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(v),
            None => Err(de::Error::custom("value requested before key")),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An object key as a map key: a string, or, for a map with integer keys, the
/// integer it spells (Go decodes `map[uint8]T` from `{"51": ...}` the same way).
struct MapKey(String);

macro_rules! integer_key {
    ($($method:ident $visit:ident $ty:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            match self.0.parse::<$ty>() {
                Ok(n) => v.$visit(n),
                Err(_) => Err(de::Error::invalid_value(de::Unexpected::Str(&self.0), &v)),
            }
        }
    )*};
}

impl<'de> Deserializer<'de> for MapKey {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_string(self.0)
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
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        Json::String(self.0).deserialize_enum(name, variants, v)
    }

    forward_to_deserialize_any! {
        bool i128 u128 f32 f64 char str string bytes byte_buf option unit unit_struct
        seq tuple tuple_struct map struct identifier ignored_any
    }
}

struct Variant {
    variant: String,
    value: Json,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = Error;
    type Variant = Json;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Json), Error> {
        Ok((seed.deserialize(Json::String(self.variant))?, self.value))
    }
}

impl<'de> VariantAccess<'de> for Json {
    type Error = Error;
    fn unit_variant(self) -> Result<(), Error> {
        match self {
            Json::Null => Ok(()),
            other => Err(de::Error::invalid_type(other.unexpected(), &"unit variant")),
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

impl Json {
    fn unexpected(&self) -> de::Unexpected<'_> {
        match self {
            Json::Null => de::Unexpected::Unit,
            Json::Bool(b) => de::Unexpected::Bool(*b),
            Json::Number(_) => de::Unexpected::Other("number"),
            Json::String(s) => de::Unexpected::Str(s),
            Json::Array(_) => de::Unexpected::Seq,
            Json::Object(_) => de::Unexpected::Map,
        }
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
