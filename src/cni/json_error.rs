//! The decoder's error, worded as Go's `encoding/json` words it
//! (`json: cannot unmarshal string into Go struct field NetConf.isGateway of
//! type bool`), with the path of the value in the document
//! (`ipam.ranges[0][0].subnet`), which Go's text leaves out.

use crate::quote::quoted;
use serde::de;
use std::fmt;

/// A decoding failure: what went wrong and where.
pub struct Error(Box<Inner>);

struct Inner {
    kind: Kind,
    /// Where the value is, from the document's root (`ipam.ranges[0][0].subnet`,
    /// empty for the root); None until the decoder has placed it.
    path: Option<String>,
    /// Go's context of a type error: the innermost struct whose field holds the
    /// value and the field names from the root (`Range`, `ipam.ranges.subnet`).
    go_struct: String,
    go_fields: String,
    /// The value the error is about has been named (its Go type filled in).
    owned: bool,
}

enum Kind {
    /// Not JSON at all.
    Syntax(serde_json::Error),
    /// Go's `UnmarshalTypeError`: the JSON value's kind (`string`, `number`,
    /// `number 70000` when a number did not fit) and the Go type it could not
    /// go into.
    Type {
        value: String,
        /// A number the type refused by its value (overflow, sign), not its kind.
        misfit: bool,
        target: Option<String>,
        /// What serde's visitor expected: the fallback when no type is known.
        expected: String,
    },
    /// A value its type refused, the text naming the value (`invalid CIDR
    /// address: 10.300.0.0/24`): a config that cannot work, not a type error.
    Value(String),
    /// A key the type cannot do without.
    Missing(&'static str),
    Other(String),
}

impl Error {
    fn new(kind: Kind) -> Error {
        Error(Box::new(Inner {
            kind,
            path: None,
            go_struct: String::new(),
            go_fields: String::new(),
            owned: false,
        }))
    }

    pub(super) fn syntax(e: serde_json::Error) -> Error {
        Error::new(Kind::Syntax(e))
    }

    /// A value of JSON kind `value` where a `target` was wanted.
    pub(super) fn type_mismatch(value: &str, target: String) -> Error {
        let mut e = Error::new(Kind::Type {
            value: value.to_string(),
            misfit: false,
            target: Some(target),
            expected: String::new(),
        });
        e.0.owned = true;
        e
    }

    /// The path of the value in the document (`ipam.ranges[0][0].subnet`); None
    /// for the document itself or text that is not JSON.
    pub fn path(&self) -> Option<&str> {
        self.0.path.as_deref().filter(|p| !p.is_empty())
    }

    /// A value its type refuses (an unparsable address), as opposed to a value
    /// of the wrong JSON kind or broken JSON.
    pub fn is_invalid_value(&self) -> bool {
        matches!(self.0.kind, Kind::Value(_))
    }

    /// A key that must be there is not.
    pub fn missing_key(&self) -> Option<&'static str> {
        match self.0.kind {
            Kind::Missing(key) => Some(key),
            _ => None,
        }
    }

    pub(super) fn is_owned(&self) -> bool {
        self.0.owned
    }

    /// Names the value this error is about, once, at the innermost value that
    /// sees it: its Go type (`target`, computed only here) and, for a string
    /// its type refused, a text naming the value as Go's parsers do.
    pub(super) fn own(mut self, json: &super::Json, target: impl FnOnce() -> String) -> Error {
        if self.0.owned {
            return self;
        }
        self.0.owned = true;
        match &mut self.0.kind {
            Kind::Type {
                value,
                misfit,
                target: slot @ None,
                ..
            } => {
                let go = target();
                if let super::Json::Number(n) = json
                    && (*misfit || is_go_number(&go))
                {
                    *value = format!("number {n}");
                }
                *slot = Some(go);
            }
            Kind::Other(_) => {
                if let super::Json::String(s) = json {
                    let go = target();
                    if go == "net.IP" {
                        self.0.kind = Kind::Value(format!("invalid IP address: {s}"));
                    } else if go == GO_IPNET {
                        self.0.kind = Kind::Value(format!("invalid CIDR address: {s}"));
                    }
                }
            }
            _ => {}
        }
        self
    }

    /// Places the error at `path`, with Go's struct and field names, unless it
    /// is already placed (the innermost place wins).
    pub(super) fn place(&mut self, path: impl FnOnce() -> (String, String, String)) {
        self.0.owned = true;
        if self.0.path.is_some() {
            return;
        }
        let (mut path, go_struct, go_fields) = path();
        if let Kind::Missing(key) = self.0.kind {
            path = if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            };
        }
        self.0.path = Some(path);
        self.0.go_struct = go_struct;
        self.0.go_fields = go_fields;
    }
}

/// The Go type `types.IPNet` is decoded through: Go names that in its errors.
const GO_IPNET: &str = "string (CIDR)";

fn is_go_number(go: &str) -> bool {
    matches!(
        go,
        "int"
            | "int8"
            | "int16"
            | "int32"
            | "int64"
            | "uint"
            | "uint8"
            | "uint16"
            | "uint32"
            | "uint64"
            | "float32"
            | "float64"
    )
}

/// Go's word for a JSON value's kind, as serde reports it.
fn go_word(u: &de::Unexpected) -> String {
    match u {
        de::Unexpected::Bool(_) => "bool".into(),
        de::Unexpected::Unsigned(_) | de::Unexpected::Signed(_) | de::Unexpected::Float(_) => {
            "number".into()
        }
        de::Unexpected::Char(_) | de::Unexpected::Str(_) => "string".into(),
        de::Unexpected::Unit | de::Unexpected::Option => "null".into(),
        de::Unexpected::Seq => "array".into(),
        de::Unexpected::Map => "object".into(),
        other => other.to_string(),
    }
}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error::new(Kind::Other(msg.to_string()))
    }

    fn invalid_type(unexp: de::Unexpected, exp: &dyn de::Expected) -> Error {
        Error::new(Kind::Type {
            value: go_word(&unexp),
            misfit: false,
            target: None,
            expected: exp.to_string(),
        })
    }

    fn invalid_value(unexp: de::Unexpected, exp: &dyn de::Expected) -> Error {
        match unexp {
            de::Unexpected::Unsigned(_) | de::Unexpected::Signed(_) | de::Unexpected::Float(_) => {
                Error::new(Kind::Type {
                    value: "number".into(),
                    misfit: true,
                    target: None,
                    expected: exp.to_string(),
                })
            }
            other => Error::new(Kind::Other(format!(
                "invalid value: {other}, expected {exp}"
            ))),
        }
    }

    fn missing_field(field: &'static str) -> Error {
        Error::new(Kind::Missing(field))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.kind {
            Kind::Syntax(e) => write!(f, "{e}"),
            Kind::Type {
                value,
                target,
                expected,
                ..
            } => {
                let target = match target.as_deref() {
                    Some(GO_IPNET) => "string",
                    Some(t) => t,
                    None => expected,
                };
                if self.0.go_fields.is_empty() {
                    write!(
                        f,
                        "json: cannot unmarshal {value} into Go value of type {target}"
                    )
                } else {
                    write!(
                        f,
                        "json: cannot unmarshal {value} into Go struct field {}.{} of type {target}",
                        self.0.go_struct, self.0.go_fields
                    )
                }
            }
            Kind::Value(text) | Kind::Other(text) => f.write_str(text),
            Kind::Missing(key) => write!(f, "missing required key {key}", key = quoted(&key)),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path() {
            Some(path) => write!(f, "Error({self}, at {path})"),
            None => write!(f, "Error({self})"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            Kind::Syntax(e) => Some(e),
            _ => None,
        }
    }
}

/// The Go type the reference's struct has where ours has the Rust type named
/// `rust` (`std::any::type_name`): `bool`, `int` for i64, `uint16`, `[]string`,
/// `map[string]interface {}`, `net.IP`; a struct by its own name.
pub(super) fn go_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(rest) = t.strip_prefix('&') {
        return go_type(rest.trim_start_matches("mut "));
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return match inner.rsplit_once(';') {
            Some((element, n)) => format!("[{}]{}", n.trim(), go_type(element)),
            None => format!("[]{}", go_type(inner)),
        };
    }
    let (head, args) = match t.find('<') {
        Some(i) if t.ends_with('>') => (&t[..i], split_args(&t[i + 1..t.len() - 1])),
        _ => (t, Vec::new()),
    };
    let name = head.rsplit("::").next().unwrap_or(head);
    match (name, args.as_slice()) {
        // Go's decoder follows pointers: the error names what they point to.
        ("Option" | "Box" | "Rc" | "Arc", [inner]) => go_type(inner),
        ("Vec" | "VecDeque" | "BTreeSet" | "HashSet", [inner]) => format!("[]{}", go_type(inner)),
        ("BTreeMap" | "HashMap" | "Map", [k, v]) => format!("map[{}]{}", go_type(k), go_type(v)),
        ("String" | "str" | "PathBuf" | "Cow", _) => "string".into(),
        ("Value" | "Json", _) => "interface {}".into(),
        ("i64" | "isize", _) => "int".into(),
        ("usize", _) => "uint".into(),
        ("i8" | "i16" | "i32", _) => format!("int{}", &name[1..]),
        ("u8" | "u16" | "u32" | "u64", _) => format!("uint{}", &name[1..]),
        ("f32" | "f64", _) => format!("float{}", &name[1..]),
        ("IpAddr" | "Ipv4Addr" | "Ipv6Addr", _) => "net.IP".into(),
        // types.IPNet decodes a string first and parses it: Go names `string`.
        ("IpNet" | "Ipv4Net" | "Ipv6Net", _) => GO_IPNET.into(),
        // A plugin's `FooKeys` is the reference's `Foo`.
        _ => match name.strip_suffix("Keys") {
            Some(go) if !go.is_empty() => go.to_string(),
            _ => name.to_string(),
        },
    }
}

/// Generic arguments split at their top-level commas.
fn split_args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '[' | '(' => depth += 1,
            '>' | ']' | ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

#[cfg(test)]
#[path = "json_error_tests.rs"]
mod tests;
