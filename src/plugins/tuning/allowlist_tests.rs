use super::*;

#[test]
fn allowlist_lines_are_tried_in_order_and_a_bad_one_names_its_line() {
    let lines = allowlist_lines(
        "# comment\n\n  ^net\\.core\\.(somaxconn|rmem_max)$ \n(unclosed\n^net\\.ipv4\\.conf\\.eth0\\.\\w+$\n",
    );
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0].0, 3);
    // An earlier line allows the key: the bad line is never reached (as the reference).
    assert_eq!(allowed(&lines, "net.core.somaxconn", "eth0"), Ok(true));
    // Reached: an error naming the file and line, code 7, keeping the cause.
    let e = allowed(&lines, "net.ipv4.conf.IFNAME.arp_notify", "eth0").expect_err("bad line");
    assert_eq!(e.code, 7);
    assert!(
        e.msg.starts_with(&format!(
            "{ALLOWLIST} line 4: invalid pattern \"(unclosed\""
        )),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
    let good = allowlist_lines("^net\\.ipv4\\.conf\\.eth0\\.\\w+$\nsomaxconn");
    // IFNAME may match as written or with the interface name put in.
    assert_eq!(
        allowed(&good, "net.ipv4.conf.IFNAME.arp_notify", "eth0"),
        Ok(true)
    );
    assert_eq!(
        allowed(&good, "net.ipv4.conf.IFNAME.arp_notify", "eth1"),
        Ok(false)
    );
    // Unanchored patterns match anywhere, as Go's MatchString.
    assert_eq!(allowed(&good, "net.core.somaxconn", "eth0"), Ok(true));
    assert_eq!(allowed(&good, "net.core.rmem_max", "eth0"), Ok(false));
}
