//! D-Bus messages as bytes (the specification's "Message Protocol"): method
//! calls with string arguments written little-endian, and any message read
//! back in either byte order, its body decoded by its signature.
//!
//! Every value sits at an offset aligned to its type's alignment, counted
//! from the start of the message (the body starts 8-aligned, so offsets in
//! the body count from the body's start as well).

use super::Error;
use crate::quote::quoted;

pub const METHOD_CALL: u8 = 1;
pub const METHOD_RETURN: u8 = 2;
pub const ERROR: u8 = 3;
pub const SIGNAL: u8 = 4;

/// The fixed part of a header: byte order, type, flags, version, body
/// length, serial, and the length of the header field array.
pub const FIXED_HEADER: usize = 16;
/// Larger messages are refused before they are read (the specification's
/// limit is 128 MiB; nothing this client asks for comes near this).
pub const MAX_MESSAGE: usize = 16 << 20;

const FIELD_PATH: u8 = 1;
const FIELD_INTERFACE: u8 = 2;
const FIELD_MEMBER: u8 = 3;
const FIELD_ERROR_NAME: u8 = 4;
const FIELD_REPLY_SERIAL: u8 = 5;
const FIELD_DESTINATION: u8 = 6;
const FIELD_SENDER: u8 = 7;
const FIELD_SIGNATURE: u8 = 8;

/// Containers nest at most this deep (the specification allows 32 arrays
/// inside 32 structs; replies we read are flat).
const MAX_DEPTH: usize = 64;

/// A method call whose arguments are all strings (signature `s…`).
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub destination: &'a str,
    pub path: &'a str,
    pub interface: &'a str,
    pub member: &'a str,
    pub args: &'a [&'a str],
}

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Byte(u8),
    Bool(bool),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    Double(f64),
    /// A string, object path or signature.
    Str(String),
    UnixFd(u32),
    Array(Vec<Value>),
    Struct(Vec<Value>),
    DictEntry(Box<Value>, Box<Value>),
    Variant(Box<Value>),
}

/// A value as an error text shows it: numbers as such, strings quoted,
/// containers in brackets.
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |f: &mut std::fmt::Formatter<'_>, open, items: &[Value], close| {
            write!(f, "{open}")?;
            for (i, v) in items.iter().enumerate() {
                write!(f, "{}{v}", if i == 0 { "" } else { ", " })?;
            }
            write!(f, "{close}")
        };
        match self {
            Value::Byte(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::I16(v) => write!(f, "{v}"),
            Value::U16(v) => write!(f, "{v}"),
            Value::I32(v) => write!(f, "{v}"),
            Value::U32(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::U64(v) => write!(f, "{v}"),
            Value::Double(v) => write!(f, "{v}"),
            Value::Str(s) => write!(f, "{}", quoted(s)),
            Value::UnixFd(v) => write!(f, "fd {v}"),
            Value::Array(items) => list(f, "[", items, "]"),
            Value::Struct(items) => list(f, "(", items, ")"),
            Value::DictEntry(k, v) => write!(f, "{k}: {v}"),
            Value::Variant(v) => write!(f, "{v}"),
        }
    }
}

/// A message read from the bus: the header fields this client looks at and
/// the body, still encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub kind: u8,
    pub serial: u32,
    pub reply_serial: Option<u32>,
    pub error_name: Option<String>,
    pub interface: Option<String>,
    pub member: Option<String>,
    pub sender: Option<String>,
    pub signature: String,
    big_endian: bool,
    body: Vec<u8>,
}

// ---- writing ----------------------------------------------------------------

struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn align(&mut self, n: usize) {
        while !self.buf.len().is_multiple_of(n) {
            self.buf.push(0);
        }
    }

    fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// `s` and `o`: length, bytes, NUL.
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// `g`: one length byte, bytes, NUL.
    fn signature(&mut self, s: &str) {
        self.buf.push(s.len() as u8);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// One header field: a `(yv)` struct whose variant holds a string-like value.
    fn field(&mut self, code: u8, sig: &str, value: &str) {
        self.align(8);
        self.buf.push(code);
        self.signature(sig);
        if sig == "g" {
            self.signature(value);
        } else {
            self.string(value);
        }
    }
}

/// A string the protocol can carry: no NUL inside, and within the length
/// limits (signatures 255 bytes, everything else below the message limit).
fn check_string(what: &str, s: &str) -> Result<(), Error> {
    if s.contains('\0') || s.len() >= MAX_MESSAGE {
        return Err(Error::Malformed(format!(
            "{what} {s} cannot be sent (NUL byte or too long)",
            s = quoted(&s)
        )));
    }
    Ok(())
}

fn check_path(path: &str) -> Result<(), Error> {
    let valid = path == "/"
        || (path.starts_with('/')
            && !path.ends_with('/')
            && path[1..].split('/').all(|e| {
                !e.is_empty() && e.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }));
    if valid {
        Ok(())
    } else {
        Err(Error::Malformed(format!(
            "invalid object path {path}",
            path = quoted(&path)
        )))
    }
}

/// The bytes of a method call (little-endian, flags 0: a reply is expected).
pub fn method_call(serial: u32, call: &Call) -> Result<Vec<u8>, Error> {
    check_path(call.path)?;
    for (what, s) in [
        ("destination", call.destination),
        ("interface", call.interface),
        ("member", call.member),
    ] {
        check_string(what, s)?;
    }
    for arg in call.args {
        check_string("argument", arg)?;
    }
    if call.args.len() > 255 {
        return Err(Error::Malformed("more than 255 arguments".into()));
    }
    let signature = "s".repeat(call.args.len());

    let mut body = Writer { buf: Vec::new() };
    for arg in call.args {
        body.string(arg);
    }

    let mut w = Writer {
        buf: Vec::with_capacity(128 + body.buf.len()),
    };
    w.buf.extend_from_slice(&[b'l', METHOD_CALL, 0, 1]);
    w.u32(body.buf.len() as u32);
    w.u32(serial);
    w.u32(0); // field array length, filled in below
    w.field(FIELD_PATH, "o", call.path);
    w.field(FIELD_INTERFACE, "s", call.interface);
    w.field(FIELD_MEMBER, "s", call.member);
    w.field(FIELD_DESTINATION, "s", call.destination);
    if !signature.is_empty() {
        w.field(FIELD_SIGNATURE, "g", &signature);
    }
    let fields_len = (w.buf.len() - FIXED_HEADER) as u32;
    w.buf[12..16].copy_from_slice(&fields_len.to_le_bytes());
    w.align(8);
    if w.buf.len() + body.buf.len() > MAX_MESSAGE {
        return Err(Error::Malformed("method call too long".into()));
    }
    w.buf.extend_from_slice(&body.buf);
    Ok(w.buf)
}

// ---- reading ----------------------------------------------------------------

fn padded8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// The whole length of the message whose fixed header is `fixed`.
pub fn message_len(fixed: &[u8; FIXED_HEADER]) -> Result<usize, Error> {
    let big = match fixed[0] {
        b'l' => false,
        b'B' => true,
        other => {
            return Err(Error::Malformed(format!("unknown byte order {other:#04x}")));
        }
    };
    if fixed[3] != 1 {
        return Err(Error::Malformed(format!(
            "unknown protocol version {}",
            fixed[3]
        )));
    }
    let word = |at: usize| {
        let b = [fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]];
        (if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }) as usize
    };
    let (body, fields) = (word(4), word(12));
    if body > MAX_MESSAGE || fields > MAX_MESSAGE {
        return Err(Error::Malformed(format!(
            "message of more than {MAX_MESSAGE} bytes"
        )));
    }
    let total = padded8(FIXED_HEADER + fields) + body;
    if total > MAX_MESSAGE {
        return Err(Error::Malformed(format!(
            "message of {total} bytes (more than {MAX_MESSAGE})"
        )));
    }
    Ok(total)
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    big: bool,
}

fn alignment(t: u8) -> usize {
    match t {
        b'n' | b'q' => 2,
        b'b' | b'i' | b'u' | b'h' | b's' | b'o' | b'a' => 4,
        b'x' | b't' | b'd' | b'(' | b'{' => 8,
        _ => 1,
    }
}

/// The length of the first complete type in `sig`.
fn single_type(sig: &[u8], depth: usize) -> Result<usize, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::Malformed("signature nests too deeply".into()));
    }
    let bad = || {
        Error::Malformed(format!(
            "bad signature {}",
            quoted(&String::from_utf8_lossy(sig))
        ))
    };
    match sig.first().ok_or_else(bad)? {
        b'y' | b'b' | b'n' | b'q' | b'i' | b'u' | b'x' | b't' | b'd' | b'h' | b's' | b'o'
        | b'g' | b'v' => Ok(1),
        b'a' => Ok(1 + single_type(&sig[1..], depth + 1)?),
        open @ (b'(' | b'{') => {
            let close = if *open == b'(' { b')' } else { b'}' };
            let mut at = 1;
            let mut members = 0;
            while sig.get(at).ok_or_else(bad)? != &close {
                at += single_type(&sig[at..], depth + 1)?;
                members += 1;
            }
            let ok = if *open == b'(' {
                members > 0
            } else {
                members == 2
            };
            if ok { Ok(at + 1) } else { Err(bad()) }
        }
        _ => Err(bad()),
    }
}

impl Reader<'_> {
    fn short() -> Error {
        Error::Malformed("message ends inside a value".into())
    }

    fn align(&mut self, n: usize) -> Result<(), Error> {
        let to = self.pos.div_ceil(n) * n;
        if to > self.data.len() {
            return Err(Self::short());
        }
        if self.data[self.pos..to].iter().any(|&b| b != 0) {
            return Err(Error::Malformed("non-zero alignment padding".into()));
        }
        self.pos = to;
        Ok(())
    }

    fn take(&mut self, n: usize) -> Result<&[u8], Error> {
        let end = self.pos.checked_add(n).ok_or_else(Self::short)?;
        let bytes = self.data.get(self.pos..end).ok_or_else(Self::short)?;
        self.pos = end;
        Ok(bytes)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        self.align(N)?;
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        if self.big {
            out.reverse();
        }
        // Now little-endian whatever the message's order was.
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.fixed::<4>()?))
    }

    fn text(&mut self, len: usize) -> Result<String, Error> {
        let bytes = self.take(len)?.to_vec();
        if self.take(1)? != [0] {
            return Err(Error::Malformed("string without its NUL".into()));
        }
        String::from_utf8(bytes).map_err(|_| Error::Malformed("string is not UTF-8".into()))
    }

    fn signature(&mut self) -> Result<String, Error> {
        let len = self.take(1)?[0] as usize;
        self.text(len)
    }

    /// One value of the complete type `t`.
    fn value(&mut self, t: &[u8], depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return Err(Error::Malformed("value nests too deeply".into()));
        }
        Ok(match t[0] {
            b'y' => Value::Byte(self.take(1)?[0]),
            b'b' => match self.u32()? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                other => return Err(Error::Malformed(format!("boolean {other}"))),
            },
            b'n' => Value::I16(i16::from_le_bytes(self.fixed()?)),
            b'q' => Value::U16(u16::from_le_bytes(self.fixed()?)),
            b'i' => Value::I32(i32::from_le_bytes(self.fixed()?)),
            b'u' => Value::U32(self.u32()?),
            b'h' => Value::UnixFd(self.u32()?),
            b'x' => Value::I64(i64::from_le_bytes(self.fixed()?)),
            b't' => Value::U64(u64::from_le_bytes(self.fixed()?)),
            b'd' => Value::Double(f64::from_le_bytes(self.fixed()?)),
            b's' | b'o' => {
                let len = self.u32()? as usize;
                Value::Str(self.text(len)?)
            }
            b'g' => Value::Str(self.signature()?),
            b'v' => {
                let sig = self.signature()?;
                let bytes = sig.as_bytes();
                if bytes.is_empty() || single_type(bytes, depth)? != bytes.len() {
                    return Err(Error::Malformed(format!(
                        "variant signature {sig}",
                        sig = quoted(&sig)
                    )));
                }
                Value::Variant(Box::new(self.value(bytes, depth + 1)?))
            }
            b'a' => {
                let len = self.u32()? as usize;
                let elem = &t[1..1 + single_type(&t[1..], depth)?];
                self.align(alignment(elem[0]))?;
                let end = self.pos.checked_add(len).ok_or_else(Self::short)?;
                if end > self.data.len() {
                    return Err(Self::short());
                }
                let mut items = Vec::new();
                while self.pos < end {
                    items.push(self.value(elem, depth + 1)?);
                }
                if self.pos != end {
                    return Err(Error::Malformed("array length cuts a value".into()));
                }
                Value::Array(items)
            }
            open @ (b'(' | b'{') => {
                self.align(8)?;
                let inner = &t[1..single_type(t, depth)? - 1];
                let mut members = Vec::new();
                let mut at = 0;
                while at < inner.len() {
                    let n = single_type(&inner[at..], depth + 1)?;
                    members.push(self.value(&inner[at..at + n], depth + 1)?);
                    at += n;
                }
                if open == b'(' {
                    Value::Struct(members)
                } else {
                    let mut it = members.into_iter();
                    match (it.next(), it.next()) {
                        (Some(k), Some(v)) => Value::DictEntry(Box::new(k), Box::new(v)),
                        _ => return Err(Error::Malformed("dict entry without two members".into())),
                    }
                }
            }
            other => {
                return Err(Error::Malformed(format!(
                    "unknown type code {}",
                    quoted(&char::from(other))
                )));
            }
        })
    }

    /// Values of every complete type in `sig`, in order.
    fn values(&mut self, sig: &[u8]) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < sig.len() {
            let n = single_type(&sig[at..], 0)?;
            out.push(self.value(&sig[at..at + n], 0)?);
            at += n;
        }
        Ok(out)
    }
}

/// Decodes one whole message (`bytes` as long as `message_len` said).
pub fn parse(bytes: &[u8]) -> Result<Message, Error> {
    let fixed: &[u8; FIXED_HEADER] = bytes
        .get(..FIXED_HEADER)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(Reader::short)?;
    let total = message_len(fixed)?;
    if bytes.len() != total {
        return Err(Error::Malformed(format!(
            "message of {} bytes, its header says {total}",
            bytes.len()
        )));
    }
    let mut r = Reader {
        data: bytes,
        pos: 4,
        big: bytes[0] == b'B',
    };
    let body_len = r.u32()? as usize;
    let serial = r.u32()?;
    let fields = r.value(b"a(yv)", 0)?;
    r.align(8)?;
    let body = bytes[r.pos..].to_vec();
    if body.len() != body_len {
        return Err(Error::Malformed("body length does not match".into()));
    }
    let mut msg = Message {
        kind: bytes[1],
        serial,
        reply_serial: None,
        error_name: None,
        interface: None,
        member: None,
        sender: None,
        signature: String::new(),
        big_endian: r.big,
        body,
    };
    let Value::Array(fields) = fields else {
        return Err(Error::Malformed("header fields are not an array".into()));
    };
    for field in fields {
        let Value::Struct(pair) = field else { continue };
        let (Some(Value::Byte(code)), Some(Value::Variant(v))) = (pair.first(), pair.get(1)) else {
            continue;
        };
        match (*code, v.as_ref()) {
            (FIELD_REPLY_SERIAL, Value::U32(n)) => msg.reply_serial = Some(*n),
            (FIELD_ERROR_NAME, Value::Str(s)) => msg.error_name = Some(s.clone()),
            (FIELD_INTERFACE, Value::Str(s)) => msg.interface = Some(s.clone()),
            (FIELD_MEMBER, Value::Str(s)) => msg.member = Some(s.clone()),
            (FIELD_SENDER, Value::Str(s)) => msg.sender = Some(s.clone()),
            (FIELD_SIGNATURE, Value::Str(s)) => msg.signature = s.clone(),
            // Path, destination, unix fds: not needed here.
            _ => {}
        }
    }
    Ok(msg)
}

impl Message {
    /// A signal of `interface` named `member`.
    pub fn is_signal(&self, interface: &str, member: &str) -> bool {
        self.kind == SIGNAL
            && self.interface.as_deref() == Some(interface)
            && self.member.as_deref() == Some(member)
    }

    /// The body's values, by the message's signature.
    pub fn args(&self) -> Result<Vec<Value>, Error> {
        let mut r = Reader {
            data: &self.body,
            pos: 0,
            big: self.big_endian,
        };
        let values = r.values(self.signature.as_bytes())?;
        if r.pos != self.body.len() {
            return Err(Error::Malformed(
                "body longer than its signature says".into(),
            ));
        }
        Ok(values)
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
pub(crate) mod tests;
