use super::*;
use std::os::unix::process::ExitStatusExt;

#[test]
fn a_failed_version_check_says_what_the_name_did_and_what_was_expected() {
    let text = version_failure(
        std::process::ExitStatus::from_raw(0),
        b"reference bridge\n",
        b"",
    );
    assert_eq!(
        text,
        "asked for VERSION (CNI_COMMAND=VERSION), it exited with status 0 and printed \
             \"reference bridge\" on stdout, nothing on stderr; a CNI plugin exits 0 printing a \
             JSON object with \"supportedVersions\""
    );
    let killed = version_failure(std::process::ExitStatus::from_raw(9), b"", b"");
    assert!(killed.contains("it was killed by signal 9"), "{killed}");
    let long = version_failure(
        std::process::ExitStatus::from_raw(3 << 8),
        &[b'x'; 500],
        b"",
    );
    assert!(
        long.contains("exited with status 3") && long.contains("xxx\"..."),
        "{long}"
    );
}
