//! The decoder itself: a document's values handed to serde as Go's
//! `encoding/json` hands them to a struct (keys matched as Go matches them,
//! an array never a struct), each value knowing its path, so an error says
//! where it is, in Go's words, and a [`Recorder`] learns each struct's keys.

use super::error::go_type;
use super::{Error, Json, Recorder, fold_eq};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::forward_to_deserialize_any;

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
pub(super) fn decode<T: DeserializeOwned>(
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
