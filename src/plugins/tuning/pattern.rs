//! The regular expressions of tuning's sysctl allowlist: literals, `.`, `\x`,
//! `[...]` classes (ranges, `^` negation), `*` `+` `?`, and `^`/`$` anchors, with
//! Go's `MatchString` semantics (a match anywhere unless anchored). Enough for
//! allowlists like `^net\.ipv4\.conf\.IFNAME\.[a-z_]+$`; anything else is refused.

use std::fmt;

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    TrailingBackslash,
    UnclosedClass { pattern: String },
    Unsupported { found: char, pattern: String },
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatternError::TrailingBackslash => f.write_str("trailing backslash"),
            PatternError::UnclosedClass { pattern } => write!(f, "unclosed class in {pattern:?}"),
            PatternError::Unsupported { found, pattern } => {
                write!(f, "unsupported {found:?} in allowlist pattern {pattern:?}")
            }
        }
    }
}

impl std::error::Error for PatternError {}

#[derive(Debug, Clone, PartialEq)]
enum Atom {
    Any,
    Char(char),
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

impl Atom {
    fn matches(&self, c: char) -> bool {
        match self {
            Atom::Any => true,
            Atom::Char(x) => *x == c,
            Atom::Class { negated, items } => {
                items.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Repeat {
    One,
    ZeroOrMore,
    OneOrMore,
    ZeroOrOne,
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    start_anchored: bool,
    end_anchored: bool,
    items: Vec<(Atom, Repeat)>,
}

impl Pattern {
    pub fn compile(re: &str) -> Result<Pattern, PatternError> {
        let mut chars: Vec<char> = re.chars().collect();
        let start_anchored = chars.first() == Some(&'^');
        if start_anchored {
            chars.remove(0);
        }
        let end_anchored =
            chars.last() == Some(&'$') && !(chars.len() >= 2 && chars[chars.len() - 2] == '\\');
        if end_anchored {
            chars.pop();
        }
        let mut items = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let atom = match chars[i] {
                '.' => Atom::Any,
                '\\' => {
                    i += 1;
                    Atom::Char(*chars.get(i).ok_or(PatternError::TrailingBackslash)?)
                }
                '[' => {
                    i += 1;
                    let negated = chars.get(i) == Some(&'^');
                    if negated {
                        i += 1;
                    }
                    let mut set = Vec::new();
                    while chars.get(i).is_some_and(|c| *c != ']') {
                        let lo = chars[i];
                        if chars.get(i + 1) == Some(&'-')
                            && chars.get(i + 2).is_some_and(|c| *c != ']')
                        {
                            set.push((lo, chars[i + 2]));
                            i += 3;
                        } else {
                            set.push((lo, lo));
                            i += 1;
                        }
                    }
                    if chars.get(i) != Some(&']') {
                        return Err(PatternError::UnclosedClass {
                            pattern: re.to_string(),
                        });
                    }
                    Atom::Class {
                        negated,
                        items: set,
                    }
                }
                c @ ('(' | ')' | '|' | '{' | '}' | '*' | '+' | '?' | '^' | '$') => {
                    return Err(PatternError::Unsupported {
                        found: c,
                        pattern: re.to_string(),
                    });
                }
                c => Atom::Char(c),
            };
            i += 1;
            let repeat = match chars.get(i) {
                Some('*') => Repeat::ZeroOrMore,
                Some('+') => Repeat::OneOrMore,
                Some('?') => Repeat::ZeroOrOne,
                _ => Repeat::One,
            };
            if repeat != Repeat::One {
                i += 1;
            }
            items.push((atom, repeat));
        }
        Ok(Pattern {
            start_anchored,
            end_anchored,
            items,
        })
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.is_match_counting(text).0
    }

    /// The match, and how many (position, item) pairs were evaluated: at most
    /// one evaluation per pair, whatever the pattern.
    fn is_match_counting(&self, text: &str) -> (bool, usize) {
        let chars: Vec<char> = text.chars().collect();
        let starts = if self.start_anchored {
            0..=0
        } else {
            0..=chars.len()
        };
        // (position, item) pairs already known not to match: without them,
        // patterns like `.*.*.*x` backtrack exponentially (found by fuzzing);
        // with them every pair is tried once.
        let mut failed = vec![false; (chars.len() + 1) * (self.items.len() + 1)];
        let mut steps = 0;
        let matched = starts
            .into_iter()
            .any(|s| self.match_at(&chars, s, 0, &mut failed, &mut steps));
        (matched, steps)
    }

    fn match_at(
        &self,
        text: &[char],
        pos: usize,
        item: usize,
        failed: &mut [bool],
        steps: &mut usize,
    ) -> bool {
        let key = pos * (self.items.len() + 1) + item;
        if failed[key] {
            return false;
        }
        *steps += 1;
        let rest = &text[pos..];
        let Some((atom, repeat)) = self.items.get(item) else {
            // The end of the pattern: a result that never needs memoizing.
            return !self.end_anchored || rest.is_empty();
        };
        let (min, max) = match repeat {
            Repeat::One => (1, 1),
            Repeat::ZeroOrOne => (0, 1),
            Repeat::ZeroOrMore => (0, usize::MAX),
            Repeat::OneOrMore => (1, usize::MAX),
        };
        let run = rest
            .iter()
            .take_while(|c| atom.matches(**c))
            .count()
            .min(max);
        let matched = (min..=run)
            .rev()
            .any(|n| self.match_at(text, pos + n, item + 1, failed, steps));
        failed[key] = !matched;
        matched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(re: &str, text: &str) -> bool {
        Pattern::compile(re).expect("compiles").is_match(text)
    }

    #[test]
    fn matches_like_go() {
        assert!(m(
            r"^net\.ipv4\.conf\.eth0\.[a-z_]+$",
            "net.ipv4.conf.eth0.arp_notify"
        ));
        assert!(!m(
            r"^net\.ipv4\.conf\.eth0\.[a-z_]+$",
            "net.ipv4.conf.eth1.arp_notify"
        ));
        assert!(!m(r"^net\.core\.somaxconn$", "net.core.somaxconnx"));
        assert!(m(r"somaxconn", "net.core.somaxconn"));
        assert!(m(r"^net\.ipv6\..*$", "net.ipv6.conf.all.forwarding"));
        assert!(m(r"^a[^b]?c$", "ac") && m(r"^a[^b]?c$", "axc") && !m(r"^a[^b]?c$", "abc"));
        let refused = |re: &str| Pattern::compile(re).map(drop).map_err(|e| e.to_string());
        assert_eq!(
            refused("(a|b)"),
            Err(r#"unsupported '(' in allowlist pattern "(a|b)""#.into())
        );
        assert_eq!(refused("[ab"), Err(r#"unclosed class in "[ab""#.into()));
        assert_eq!(refused(r"a\"), Err("trailing backslash".into()));
    }

    /// Regression (fuzz target allowlist, a slow unit): stacked repeats over a
    /// text that does not match backtracked exponentially; now each (position,
    /// pattern item) pair is evaluated at most once.
    #[test]
    fn stacked_repeats_do_not_backtrack_exponentially() {
        let re = ".+.*.+.+.*.+.*.+.*.+.*.+.*.+.*.+.*x$";
        let p = Pattern::compile(re).expect("compiles");
        let text = "a".repeat(300);
        let (matched, steps) = p.is_match_counting(&text);
        assert!(!matched);
        assert!(
            steps <= (text.len() + 1) * (p.items.len() + 1),
            "{steps} evaluations"
        );
        assert!(p.is_match(&format!("{text}x")));
    }
}
