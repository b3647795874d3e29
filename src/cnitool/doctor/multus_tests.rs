use super::*;

#[test]
fn per_pod_file_names() {
    assert_eq!(owner_of("abc123"), Some(("abc123", ACTION)));
    assert_eq!(owner_of("abc123.status"), Some(("abc123", STATUS_ACTION)));
    // The results directory is left out by its file type.
    assert_eq!(owner_of("results"), Some(("results", ACTION)));
    assert_eq!(owner_of(".abc123.tmp"), None);
    assert_eq!(owner_of(".status"), None);
}
