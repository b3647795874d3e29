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

#[cfg(test)]
#[path = "quote_tests.rs"]
mod tests;
