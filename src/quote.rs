//! Names in error texts and messages, quoted: a string or path between
//! double quotes with its control characters and quotes escaped (what
//! Rust's `{:?}` of a string prints, as Go's `%q` does), so a name with white
//! space or a terminal escape in it reads as one name. The one place
//! `{:?}` formats anything a user reads: every other text shows a value
//! with its `Display` (tests/it/house.rs checks).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A value shown quoted.
pub struct Quoted<'a, T: ?Sized>(&'a T);

/// `x` quoted: `"name"`, `"a\"b"`, `"tab\there"`.
pub fn quoted<T: Quote + ?Sized>(x: &T) -> Quoted<'_, T> {
    Quoted(x)
}

/// What can be quoted: text and paths.
pub trait Quote {
    fn quote(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

macro_rules! quote_as_debug {
    ($($t:ty),*) => {$(
        impl Quote for $t {
            fn quote(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // The caller's formatter: `{:.40}` cuts as `{:.40?}` did.
                fmt::Debug::fmt(self, f)
            }
        }
    )*};
}

quote_as_debug!(
    str,
    String,
    std::borrow::Cow<'_, str>,
    char,
    Path,
    PathBuf,
    OsStr,
    OsString,
    std::path::Display<'_>
);

impl<T: Quote + ?Sized> Quote for &T {
    fn quote(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).quote(f)
    }
}

impl<T: Quote + ?Sized> fmt::Display for Quoted<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.quote(f)
    }
}

/// A duration as people write it: `1.5s`, `250ms`, `10s`.
pub struct Took(pub Duration);

impl fmt::Display for Took {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Duration's Debug is already that form; it has no Display.
        write!(f, "{:?}", self.0)
    }
}

/// One line of a daemon's log (dhcp, flanneld): `who: msg`, with the C
/// library's words as CNI errors have them (no " (os error N)").
pub fn log_line(who: &str, msg: impl fmt::Display) -> String {
    let text = msg.to_string();
    format!("{who}: {}", without_os_error_numbers(&text))
}

/// `text` without the " (os error N)" Rust's `io::Error` appends to the C
/// library's words ("Not a directory (os error 20)" reads "Not a directory").
/// Error texts reach users through CNI errors and cnitool, which apply it;
/// the errno itself stays in the error's `source()`. Linear in the text.
pub fn without_os_error_numbers(text: &str) -> std::borrow::Cow<'_, str> {
    const MARK: &str = " (os error ";
    if !text.contains(MARK) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let closed = digits > 0 && after.as_bytes().get(digits) == Some(&b')');
        let end = if closed {
            at + MARK.len() + digits + 1
        } else {
            at + MARK.len()
        };
        if closed {
            out.push_str(&rest[..at]);
        } else {
            out.push_str(&rest[..end]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
#[path = "quote_tests.rs"]
mod tests;
