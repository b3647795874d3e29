//! A plugin name as `cni-multi install` lays it out: a two-line script
//! whose `#!` line runs the binary, not a symbolic link to it.
//!
//! Installers of other projects copy their own files over plugin names (`cp
//! -f`, `install`, `shutil.copyfile`, `tar x`, `dd`). Through a symbolic link
//! most of them write into the link's target, the one binary every name runs;
//! a stub is a file of its own, so such a write costs that name only. The
//! kernel execs `<binary> --stub <stub path> <args>` (the stub's path as the
//! runtime named it), so dispatch finds the plugin in the stub's file name.

use crate::quote::quoted;
/// The argument the stub's `#!` line passes before the stub's path.
pub const FLAG: &str = "--stub";

/// The binary's file name beside its stubs.
pub const BINARY: &str = "cni-multi";

/// Longer than any stub: a file this long is read whole to see whether it is one.
pub const MAX_LEN: u64 = 512;

/// The second line: what an operator reading the file learns.
const NOTE: &str =
    "# cni-multi plugin stub: runs the binary above as the plugin this file is named after\n";

/// Longest `#!` line every supported kernel reads whole (128 bytes before
/// Linux 5.1, including the newline).
const MAX_LINE: usize = 127;

/// Why a path cannot be a stub's `#!` interpreter.
#[derive(Debug)]
pub struct Unusable(String);

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unusable {}

/// The stub for a binary at `binary` (the path runtimes will exec it by):
/// Err says why that path cannot be a `#!` interpreter.
pub fn text(binary: &str) -> Result<String, Unusable> {
    if !binary.starts_with('/') {
        return Err(Unusable(format!(
            "{binary} is not an absolute path",
            binary = quoted(&binary)
        )));
    }
    if binary.chars().any(|c| c.is_whitespace() || c.is_control()) {
        let why = format!(
            "{binary} holds white space or a control character",
            binary = quoted(&binary)
        );
        return Err(Unusable(why));
    }
    let line = format!("#!{binary} {FLAG}");
    if line.len() > MAX_LINE {
        let why = format!(
            "{binary} is too long for a #! line ({} bytes, at most {MAX_LINE})",
            line.len(),
            binary = quoted(&binary)
        );
        return Err(Unusable(why));
    }
    Ok(format!("{line}\n{NOTE}"))
}

/// The binary a stub names, when `bytes` are exactly a stub `text` writes.
pub fn parse(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (line, rest) = text.split_once('\n')?;
    let binary = line
        .strip_prefix("#!")?
        .strip_suffix(FLAG)?
        .strip_suffix(' ')?;
    (rest == NOTE && self::text(binary).ok()? == text).then_some(binary)
}

/// The arguments as if the stub were a link: `[<binary>, --stub, <stub>,
/// args...]` becomes `[<stub>, args...]`; anything else is unchanged.
pub fn as_link_args<T: AsRef<std::ffi::OsStr> + Clone>(args: &[T]) -> Vec<T> {
    match args {
        [_, flag, stub, rest @ ..] if flag.as_ref() == FLAG => {
            std::iter::once(stub).chain(rest).cloned().collect()
        }
        _ => args.to_vec(),
    }
}

#[cfg(test)]
#[path = "stub_tests.rs"]
mod tests;
