//! Multus's log: `logLevel` (panic < error < verbose < debug; panic by default,
//! so nothing but a panic is printed unless asked), `logToStderr` (default on)
//! and `logFile`, one `<RFC 3339 time> [<level>] <message>` line each. A log
//! that cannot be written is dropped: it must never fail the attachment.

use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Panic,
    Error,
    Verbose,
    Debug,
}

impl Level {
    /// Multus's names, any case; None for an unknown name.
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.to_ascii_lowercase().as_str() {
            "panic" => Level::Panic,
            "error" => Level::Error,
            "verbose" => Level::Verbose,
            "debug" => Level::Debug,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Level::Panic => "panic",
            Level::Error => "error",
            Level::Verbose => "verbose",
            Level::Debug => "debug",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Logger {
    pub level: Level,
    pub stderr: bool,
    pub file: Option<PathBuf>,
}

impl Default for Logger {
    fn default() -> Self {
        Logger {
            level: Level::Panic,
            stderr: true,
            file: None,
        }
    }
}

impl Logger {
    pub fn log(&self, level: Level, msg: &str) {
        if level > self.level {
            return;
        }
        let line = format!("{} [{}] {msg}\n", rfc3339_now(), level.name());
        if self.stderr {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        if let Some(path) = &self.file {
            use std::os::unix::fs::OpenOptionsExt;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path);
            if let Ok(mut f) = file {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }

    pub fn error(&self, msg: &str) {
        self.log(Level::Error, msg);
    }

    pub fn verbose(&self, msg: &str) {
        self.log(Level::Verbose, msg);
    }

    pub fn debug(&self, msg: &str) {
        self.log(Level::Debug, msg);
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// Days since the epoch to a civil date (Howard Hinnant's algorithm).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
