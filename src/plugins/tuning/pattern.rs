//! The regular expressions of tuning's sysctl allowlist: literals, `.`, `\x`,
//! `[...]` classes (ranges, `^` negation), `*` `+` `?`, and `^`/`$` anchors, with
//! Go's `MatchString` semantics (a match anywhere unless anchored). Enough for
//! allowlists like `^net\.ipv4\.conf\.IFNAME\.[a-z_]+$`; anything else is refused.

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
    pub fn compile(re: &str) -> Result<Pattern, String> {
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
                    Atom::Char(*chars.get(i).ok_or("trailing backslash")?)
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
                        return Err(format!("unclosed class in {re:?}"));
                    }
                    Atom::Class {
                        negated,
                        items: set,
                    }
                }
                c @ ('(' | ')' | '|' | '{' | '}' | '*' | '+' | '?' | '^' | '$') => {
                    return Err(format!("unsupported {c:?} in allowlist pattern {re:?}"));
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
        let chars: Vec<char> = text.chars().collect();
        let starts = if self.start_anchored {
            0..=0
        } else {
            0..=chars.len()
        };
        starts.into_iter().any(|s| self.match_at(&chars[s..], 0))
    }

    fn match_at(&self, text: &[char], item: usize) -> bool {
        let Some((atom, repeat)) = self.items.get(item) else {
            return !self.end_anchored || text.is_empty();
        };
        let (min, max) = match repeat {
            Repeat::One => (1, 1),
            Repeat::ZeroOrOne => (0, 1),
            Repeat::ZeroOrMore => (0, usize::MAX),
            Repeat::OneOrMore => (1, usize::MAX),
        };
        let run = text
            .iter()
            .take_while(|c| atom.matches(**c))
            .count()
            .min(max);
        (min..=run)
            .rev()
            .any(|n| self.match_at(&text[n..], item + 1))
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
        assert!(Pattern::compile("(a|b)").is_err());
        assert!(Pattern::compile("[ab").is_err());
    }
}
