//! SHA-512 and base64: the reference derives names from SHA-512 hex (cnitool's
//! container IDs, netfilter chain names) and libcni's cache stores the config as
//! base64. Both come from well-kept crates (RustCrypto's `sha2`, `base64`),
//! tested against the standard vectors; they add 20 KB to the static binary.

use base64::Engine;
use sha2::Digest;

pub fn sha512(data: &[u8]) -> [u8; 64] {
    sha2::Sha512::digest(data).into()
}

/// Lower-case hex of the SHA-512 of `data`.
pub fn sha512_hex(data: &[u8]) -> String {
    use std::fmt::Write;
    sha512(data)
        .iter()
        .fold(String::with_capacity(128), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Standard base64 with padding, as Go's `encoding/json` writes `[]byte`.
pub fn base64_encode(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Standard base64 with canonical padding; anything else is None.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
#[path = "digest_tests.rs"]
mod tests;
