//! CNI errors: the spec's codes and the JSON the runtime reads on stdout.

use super::hint;
use serde::Serialize;
use std::fmt;
use std::sync::Arc;

/// Error codes of the CNI spec (plus libcni's 999 for untyped failures).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    IncompatibleVersion = 1,
    UnsupportedField = 2,
    UnknownContainer = 3,
    InvalidEnv = 4,
    Io = 5,
    Decode = 6,
    InvalidConfig = 7,
    InvalidNetns = 8,
    TryAgainLater = 11,
    /// The plugin is not available (STATUS): upstream's `ErrPluginNotAvailable`.
    NotAvailable = 50,
    /// The plugin works with limited connectivity (STATUS): `ErrLimitedConnectivity`.
    LimitedConnectivity = 51,
    Internal = 999,
}

/// A CNI error as printed to the runtime: `{"code":N,"msg":"…","details":"…"}`.
/// The layer error it came from, if any, stays reachable as `source()`; the
/// message already carries its text ("what: cause").
#[derive(Debug, Clone, Serialize)]
pub struct Error {
    pub code: u32,
    pub msg: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub details: String,
    #[serde(skip)]
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// Two errors are the same when the runtime would see the same JSON.
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        (self.code, &self.msg, &self.details) == (other.code, &other.msg, &other.details)
    }
}

impl Eq for Error {}

pub type CniResult<T> = std::result::Result<T, Error>;

impl Error {
    /// `msg` as the user reads it: the C library's words for an errno,
    /// without Rust's " (os error N)".
    pub fn new(code: Code, msg: impl Into<String>) -> Self {
        Error {
            code: code as u32,
            msg: plain(msg.into()),
            details: String::new(),
            source: None,
        }
    }

    /// An error as another plugin printed it (any code, plugin-specific ones too).
    pub fn from_wire(code: u32, msg: impl Into<String>, details: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
            details: details.into(),
            source: None,
        }
    }

    /// `what: cause` with code `code`, keeping `cause` as the source.
    pub fn caused_by(
        code: Code,
        what: impl fmt::Display,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::new(code, format!("{what}: {cause}")).with_source(cause)
    }

    /// Keeps `cause` as this error's `source()` (the message is left as it is).
    pub fn with_source(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(cause));
        self
    }

    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = plain(details.into());
        self
    }

    /// `hint` (what the user can do, `cni::hint`) as the details, where there
    /// is one: the message stays what failed, in the reference's words.
    pub fn with_hint(self, hint: Option<String>) -> Self {
        match hint {
            Some(hint) if self.details.is_empty() => self.with_details(hint),
            _ => self,
        }
    }

    /// An untyped failure: code 999, like the reference's plain Go errors.
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::new(Code::Internal, msg)
    }

    pub fn invalid_config(msg: impl Into<String>) -> Self {
        Error::new(Code::InvalidConfig, msg)
    }

    pub fn decode(msg: impl Into<String>) -> Self {
        Error::new(Code::Decode, msg)
    }

    pub fn invalid_env(msg: impl Into<String>) -> Self {
        Error::new(Code::InvalidEnv, msg)
    }

    /// Prefix the message with what was being done, keeping code and details.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.msg = plain(format!("{what}: {}", self.msg));
        self
    }

    /// The JSON the reference prints: 4-space indent, key order code, msg, details,
    /// no `cniVersion`, no trailing newline.
    pub fn to_json(&self) -> String {
        crate::cni::result::to_pretty_json(self)
    }
}

/// `text` without Rust's " (os error N)" (`quote::without_os_error_numbers`).
fn plain(text: String) -> String {
    match crate::quote::without_os_error_numbers(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(cut) => cut,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.details.is_empty() {
            write!(f, "{}", self.msg)
        } else {
            write!(f, "{}; {}", self.msg, self.details)
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// `result.context("failed to X")?`: a layer error becomes a CNI error whose
/// message says what was being done, with the layer error kept as its source.
/// The code is the one the layer error maps to (the `From` impls in `error_codes.rs`).
pub trait Context<T> {
    fn context(self, what: impl fmt::Display) -> CniResult<T>;
    /// As `context`, with the text built only on failure.
    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> CniResult<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display) -> CniResult<T> {
        self.map_err(|e| e.into().context(what))
    }

    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> CniResult<T> {
        self.map_err(|e| e.into().context(what()))
    }
}

/// A front end's anyhow error (cnitool, the dhcp daemon) as a CNI error: the
/// whole chain in the message, the error itself kept as the source; a CNI error
/// inside it comes out as it was.
impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<Error>() {
            Ok(cni) => cni,
            Err(e) => {
                let msg = format!("{e:#}");
                let source: Box<dyn std::error::Error + Send + Sync> = e.into();
                Error {
                    source: Some(Arc::from(source)),
                    ..Error::internal(msg)
                }
            }
        }
    }
}

/// io errors become 999 (the reference's plain errors), keeping the io::Error;
/// a user denied a file is told to run as root.
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let hint = e
            .raw_os_error()
            .and_then(|errno| hint::for_errno(errno, hint::Doing::Files, hint::running_as_root()));
        Error::internal(e.to_string())
            .with_hint(hint)
            .with_source(e)
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
