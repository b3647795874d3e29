use super::*;

#[test]
fn quoting_escapes_what_would_break_the_name() {
    assert_eq!(quoted("a b").to_string(), "\"a b\"");
    assert_eq!(quoted("a\"b\t\u{1b}").to_string(), "\"a\\\"b\\t\\u{1b}\"");
    assert_eq!(quoted(Path::new("/x y")).to_string(), "\"/x y\"");
    assert_eq!(quoted(&String::from("s")).to_string(), "\"s\"");
    assert_eq!(
        format!("{:.3}", quoted("abcdef")),
        format!("{:.3?}", "abcdef")
    );
    assert_eq!(Took(Duration::from_millis(1500)).to_string(), "1.5s");
}

#[test]
fn os_error_numbers_are_cut_and_the_rest_is_kept() {
    let cut = |s: &str| without_os_error_numbers(s).into_owned();
    assert_eq!(
        cut("failed to create /x/n: Not a directory (os error 20)"),
        "failed to create /x/n: Not a directory"
    );
    assert_eq!(
        cut("a: Permission denied (os error 13): b: No such file or directory (os error 2)"),
        "a: Permission denied: b: No such file or directory"
    );
    for kept in [
        "plain",
        "x (os error )",
        "x (os error 1",
        "x (os error 1a)",
        "(os error 5)",
    ] {
        assert_eq!(cut(kept), kept);
    }
    assert!(matches!(
        without_os_error_numbers("plain"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn a_daemons_log_line_reads_the_c_library_words() {
    let e = std::io::Error::from_raw_os_error(20);
    assert_eq!(
        log_line("flanneld", format_args!("writing /run/x: {e}")),
        "flanneld: writing /run/x: Not a directory"
    );
}
