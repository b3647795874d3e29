//! Go's `flag` syntax and value forms, for the daemons that keep a Go
//! program's command line (`dhcp daemon`, `flanneld`).

use crate::quote::quoted;
use std::ffi::OsString;
use std::time::Duration;

/// `-name[=v]` => `--name[=v]`, and `-name v` => `--name=v` for flags that
/// take a value (so a value starting with `-` stays a value, as in Go);
/// `--` and what follows are left alone.
pub fn go_to_gnu(args: &[OsString], valued: &[&str]) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::with_capacity(args.len());
    let mut value_next = false;
    let mut rest = false;
    for arg in args {
        let text = arg.to_string_lossy();
        if value_next {
            value_next = false;
            if let Some(flag) = out.last_mut() {
                flag.push("=");
                flag.push(arg);
            }
            continue;
        }
        if rest {
            out.push(arg.clone());
            continue;
        }
        if text == "--" {
            rest = true;
            out.push(arg.clone());
            continue;
        }
        let body = text
            .strip_prefix("--")
            .or_else(|| text.strip_prefix('-'))
            .filter(|b| !b.is_empty());
        let Some(body) = body else {
            out.push(arg.clone());
            continue;
        };
        let name = body.split('=').next().unwrap_or(body);
        value_next = !body.contains('=') && valued.contains(&name);
        if name == "h" && !text.starts_with("--") {
            out.push(arg.clone());
        } else {
            out.push(OsString::from(format!("--{body}")));
        }
    }
    out
}

/// A flag value that does not parse (clap prints it with the flag's name).
#[derive(Debug, PartialEq, Eq)]
pub struct BadValue(String);

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(s: &str) -> Result<bool, BadValue> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(BadValue(format!(
            "invalid boolean value {s}",
            s = quoted(&s)
        ))),
    }
}

/// Go's `time.ParseDuration` for non-negative durations: `300ms`, `10s`,
/// `1m30s`, `1.5h`, `0` (units ns, us, µs, ms, s, m, h).
pub fn parse_go_duration(s: &str) -> Result<Duration, BadValue> {
    let bad = || {
        BadValue(format!(
            "invalid duration {s} (examples: 10s, 1m30s, 500ms)",
            s = quoted(&s)
        ))
    };
    let text = s.strip_prefix('+').unwrap_or(s);
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() || text.starts_with('-') {
        return Err(bad());
    }
    let mut total: f64 = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (number, tail) = rest.split_at(number_len);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(bad());
        }
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = next;
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

#[cfg(test)]
#[path = "goflags_tests.rs"]
mod tests;
