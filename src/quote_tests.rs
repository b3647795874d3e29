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
