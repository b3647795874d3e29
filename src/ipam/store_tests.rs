use super::*;

#[test]
fn rewrite_in_place_leaves_only_the_new_content() {
    let dir = std::env::temp_dir().join(format!("cni-store-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("last_reserved_ip.0");
    write_private(&path, b"2001:db8::ffff:ffff").expect("first write");
    write_private(&path, b"10.0.0.2").expect("shorter write");
    assert_eq!(std::fs::read(&path).expect("read"), b"10.0.0.2");
    write_private(&path, b"10.100.100.100").expect("longer write");
    assert_eq!(std::fs::read(&path).expect("read"), b"10.100.100.100");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}
