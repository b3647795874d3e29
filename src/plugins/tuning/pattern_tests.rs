use super::*;

fn m(re: &str, text: &str) -> bool {
    Pattern::compile(re).expect("compiles").is_match(text)
}

#[test]
fn matches_like_go_match_string() {
    assert!(m(
        r"^net\.ipv4\.conf\.eth0\.[a-z_]+$",
        "net.ipv4.conf.eth0.arp_notify"
    ));
    assert!(!m(
        r"^net\.ipv4\.conf\.eth0\.[a-z_]+$",
        "net.ipv4.conf.eth1.arp_notify"
    ));
    assert!(!m(r"^net\.core\.somaxconn$", "net.core.somaxconnx"));
    // Unanchored: a match anywhere, as MatchString.
    assert!(m(r"somaxconn", "net.core.somaxconn"));
    assert!(m(r"core\.some?", "net.core.somaxconn"));
    assert!(m(r"^net\.ipv6\..*$", "net.ipv6.conf.all.forwarding"));
    assert!(m(r"^a[^b]?c$", "ac") && m(r"^a[^b]?c$", "axc") && !m(r"^a[^b]?c$", "abc"));
    // What the old subset refused: alternation, groups, \d, counted repetition.
    let re = r"^net\.ipv4\.(conf|neigh)\.(IFNAME|eth\d{1,2})\.(arp_\w+|rp_filter)$";
    assert!(m(re, "net.ipv4.conf.IFNAME.arp_notify"));
    assert!(m(re, "net.ipv4.neigh.eth12.rp_filter"));
    assert!(!m(re, "net.ipv4.neigh.eth123.rp_filter"));
    assert!(!m(re, "net.ipv4.route.eth1.rp_filter"));
    assert!(m(
        r"^net\.core\.(somaxconn|netdev_max_backlog)$",
        "net.core.somaxconn"
    ));
    assert!(m(r"^net\.[[:alpha:]]+\.x$", "net.core.x"));
    // `.` does not match a newline (Go: without (?s)); `$` is the end of text.
    assert!(!m(r"^net.x$", "net\nx"));
    assert!(!m(r"^net$", "net\n"));
}

#[test]
fn unparsable_patterns_are_errors_naming_the_pattern() {
    for bad in ["(a|b", "[ab", r"a\", "a{2,1}", "*a"] {
        let e = Pattern::compile(bad).expect_err(bad);
        let reason = std::error::Error::source(&e).expect("keeps the cause");
        assert_eq!(e.to_string(), format!("invalid pattern {bad:?}: {reason}"));
    }
}

/// Regression (fuzz target allowlist, a slow unit in the old matcher) and
/// the classic catastrophic patterns of backtracking engines on a
/// 2000-byte non-matching key: a backtracking engine needs on the order of
/// 2^2000 steps for these, so finishing at all is the proof (no clock: the
/// emulated kernel lane is tens of times slower than a host).
#[test]
fn no_exponential_backtracking() {
    let text = "a".repeat(2000);
    for re in [
        ".+.*.+.+.*.+.*.+.*.+.*.+.*.+.*.+.*x$",
        "^(a+)+$b",
        "^(a|a)*x$",
        "^(a*)*x$",
        "^(a|aa)+x$",
    ] {
        let p = Pattern::compile(re).expect("compiles");
        assert!(!p.is_match(&text), "{re}");
    }
    assert!(m(
        ".+.*.+.+.*.+.*.+.*.+.*.+.*.+.*.+.*x$",
        &format!("{text}x")
    ));
}
