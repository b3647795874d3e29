//! Reading files whose size we do not control (state, caches, configs, files
//! named by a config): bounded, so a huge file is an error naming it instead of
//! a plugin that reads a gigabyte into memory.

use std::io::{self, Read};
use std::path::Path;

/// Largest config, cache or state file read whole.
pub const MAX_FILE: u64 = 16 << 20;

/// The whole file, or an error (InvalidData) naming it when it is larger than `limit`.
pub fn read_limited(path: impl AsRef<Path>, limit: u64) -> io::Result<Vec<u8>> {
    let path = path.as_ref();
    let file = std::fs::File::open(path)?;
    let mut out = Vec::new();
    file.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {limit} bytes", path.display()),
        ));
    }
    Ok(out)
}

/// As `read_limited`, as text (invalid UTF-8 is an error, as for `read_to_string`).
pub fn read_string_limited(path: impl AsRef<Path>, limit: u64) -> io::Result<String> {
    String::from_utf8(read_limited(path, limit)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_limit_is_an_error_naming_it_and_is_not_read_whole() {
        let path = std::env::temp_dir().join(format!("cni-multi-big-{}", std::process::id()));
        let f = std::fs::File::create(&path).expect("create");
        // Sparse: 1 GB on disk costs nothing, and must not be read into memory.
        f.set_len(1 << 30).expect("size");
        let e = read_limited(&path, 1024).expect_err("too big");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        std::fs::write(&path, b"small").expect("write");
        assert_eq!(read_limited(&path, 5).expect("fits"), b"small");
        let _ = std::fs::remove_file(&path);
    }
}
