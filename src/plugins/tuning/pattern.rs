//! The regular expressions of tuning's sysctl allowlist, read as the reference
//! reads them: Go's `regexp` (RE2) syntax — alternation, groups, classes, `\d`,
//! counted repetition — matched as `regexp.MatchString` matches, anywhere in
//! the key unless the pattern anchors itself (`^…$`).
//!
//! regex-lite, like Go's engine, runs an automaton and never backtracks: a
//! match costs O(pattern × key) whatever the pattern, so an allowlist line
//! cannot stall ADD.

use crate::quote::quoted;
use std::fmt;

/// A pattern the engine refused, with the engine's reason.
#[derive(Debug)]
pub struct PatternError {
    pattern: String,
    source: regex_lite::Error,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid pattern {}: {}",
            quoted(&self.pattern),
            self.source
        )
    }
}

impl std::error::Error for PatternError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern(regex_lite::Regex);

impl Pattern {
    pub fn compile(re: &str) -> Result<Pattern, PatternError> {
        regex_lite::Regex::new(re)
            .map(Pattern)
            .map_err(|source| PatternError {
                pattern: re.to_string(),
                source,
            })
    }

    /// Go's `MatchString`: true when the pattern matches some part of `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

#[cfg(test)]
#[path = "pattern_tests.rs"]
mod tests;
