use super::*;

#[test]
fn go_durations() {
    let ok = [
        ("0", 0.0),
        ("10s", 10.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("2h45m", 9900.0),
        ("1h2m3.5s", 3723.5),
        ("100us", 0.0001),
        ("5µs", 0.000005),
        ("+7s", 7.0),
    ];
    for (text, secs) in ok {
        let d = parse_go_duration(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!((d.as_secs_f64() - secs).abs() < 1e-9, "{text}: {d:?}");
    }
    for bad in ["", "10", "s", "-1s", "1x", "1..5s", ".s", "1s2", "1d"] {
        assert!(parse_go_duration(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn go_bools() {
    for t in ["1", "t", "T", "true", "TRUE", "True"] {
        assert_eq!(parse_go_bool(t), Ok(true));
    }
    for f in ["0", "f", "F", "false", "FALSE", "False"] {
        assert_eq!(parse_go_bool(f), Ok(false));
    }
    assert!(parse_go_bool("yes").is_err());
}
