use super::*;

fn parse(args: &[&str]) -> Result<Flags, clap::Error> {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    Flags::parse_from_go(&args)
}

#[test]
fn go_and_gnu_flags_are_both_accepted() {
    let f = parse(&[
        "-socketpath",
        "/tmp/d.sock",
        "--pidfile=/run/d.pid",
        "-hostprefix=/host",
        "-broadcast",
        "-timeout",
        "1m30s",
        "--resendmax",
        "5s",
        "-resendtimeout=1h",
        "-statedir",
        "/var/lib/d",
    ])
    .expect("flags");
    assert_eq!(f.socketpath, Some(PathBuf::from("/tmp/d.sock")));
    assert_eq!(f.pidfile, Some(PathBuf::from("/run/d.pid")));
    assert_eq!(f.hostprefix, "/host");
    assert!(f.broadcast);
    assert_eq!(f.timeout, Duration::from_secs(90));
    assert_eq!(f.resendmax, Duration::from_secs(5));
    assert_eq!(f.resendtimeout, Duration::from_secs(3600));
    assert_eq!(f.statedir, Some(PathBuf::from("/var/lib/d")));
}

#[test]
fn defaults_are_the_references() {
    let f = parse(&[]).expect("no flags");
    assert_eq!(f.socketpath, None);
    assert!(!f.broadcast);
    assert_eq!(f.timeout, Duration::from_secs(10));
    assert_eq!(f.resendmax, Duration::from_secs(62));
    assert_eq!(f.resendtimeout, Duration::from_secs(208));
    // Go bools take `=value`; a value that looks like a flag stays a value.
    let f = parse(&["-broadcast=false", "-hostprefix", "-odd"]).expect("flags");
    assert!(!f.broadcast);
    assert_eq!(f.hostprefix, "-odd");
    assert!(parse(&["-nosuchflag"]).is_err());
    assert!(parse(&["-timeout", "ten"]).is_err());
}
