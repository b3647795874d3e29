use super::*;
use crate::ipam::range::Range;

fn set(ranges: &[(&str, Option<&str>, Option<&str>)]) -> RangeSet {
    let ranges: Vec<Range> = ranges
        .iter()
        .map(|(subnet, start, end)| Range {
            subnet: subnet.parse().expect("subnet"),
            range_start: start.map(|s| s.parse().expect("start")),
            range_end: end.map(|s| s.parse().expect("end")),
            gateway: None,
        })
        .collect();
    RangeSet::canonicalize(&ranges).expect("valid set")
}

fn ips(c: Candidates) -> Vec<String> {
    c.map(|(ip, _)| ip.to_string()).collect()
}

#[test]
fn fresh_start_skips_network_gateway_and_broadcast() {
    let s = set(&[("10.0.0.0/29", None, None)]);
    assert_eq!(
        ips(Candidates::new(&s, None)),
        ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]
    );
}

#[test]
fn resumes_after_last_reserved_and_wraps_across_ranges() {
    let s = set(&[
        ("10.0.0.0/29", None, None),
        ("10.0.1.0/29", Some("10.0.1.4"), None),
    ]);
    let last = Some("10.0.0.5".parse().expect("ip"));
    assert_eq!(
        ips(Candidates::new(&s, last)),
        [
            "10.0.0.6", "10.0.1.4", "10.0.1.5", "10.0.1.6", "10.0.0.2", "10.0.0.3", "10.0.0.4",
            "10.0.0.5"
        ]
    );
    // A last IP outside the set (ranges changed) restarts from the beginning.
    let outside = Some("192.168.0.1".parse().expect("ip"));
    assert_eq!(
        ips(Candidates::new(&s, outside))
            .first()
            .map(String::as_str),
        Some("10.0.0.2")
    );
}

#[test]
fn v6_ranges_end_at_the_last_address() {
    let s = set(&[("fd00::/126", None, None)]);
    assert_eq!(ips(Candidates::new(&s, None)), ["fd00::2", "fd00::3"]);
}
