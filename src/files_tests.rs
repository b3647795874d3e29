use super::*;

#[test]
fn a_temporary_file_names_its_writer() {
    assert_eq!(tmp_writer(".net-c1-eth0.tmp123"), Some(123));
    assert_eq!(tmp_writer(".c1@eth0.json.tmp9"), Some(9));
    for other in ["net-c1-eth0", ".net.tmp", ".net.tmpx", ".x.tmp0"] {
        assert_eq!(tmp_writer(other), None, "{other}");
    }
}
use std::os::unix::fs::PermissionsExt;

#[test]
fn private_state_is_written_whole_0600_in_a_0700_dir() {
    let root = std::env::temp_dir().join(format!("cni-multi-private-{}", std::process::id()));
    let path = root.join("state").join("ctr-1");
    write_private_atomic(&path, b"first").expect("write");
    write_private_atomic(&path, b"second").expect("overwrite");
    assert_eq!(std::fs::read(&path).expect("read"), b"second");
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().expect("dir")), 0o700);
    let names: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    // A missing file's error names its path.
    let e = read_limited(root.join("absent"), 10).expect_err("absent");
    assert!(e.to_string().contains("absent"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn state_names_are_the_plain_ones_while_they_fit_and_bounded_past_it() {
    let name = |id: &str| state_name("", id, "_eth0.json");
    // Up to NAME_MAX the name is the reference's, whatever it holds.
    let fits = "a".repeat(NAME_MAX - "_eth0.json".len());
    assert_eq!(name(&fits), format!("{fits}_eth0.json"));
    // Past it the ID is its token: a readable prefix and a hash of all of it.
    let long = format!("{}b", "a".repeat(999));
    let bounded = name(&long);
    assert_eq!(bounded, format!("{}_eth0.json", id_token(&long)));
    assert!(bounded.starts_with(&"a".repeat(64)) && bounded.len() <= NAME_MAX);
    assert!(is_id_token(&id_token(&long)) && is_bounded_name(&bounded));
    let sha = crate::digest::sha512_hex(long.as_bytes());
    assert!(id_token(&long).ends_with(&format!("~{}", &sha[..32])));
    // IDs that differ only past the prefix get names of their own.
    assert_ne!(bounded, name(&format!("{}c", "a".repeat(999))));
    for other in ["abc", "a~b", "~0123", &format!("a~{}", "g".repeat(32))] {
        assert!(!is_id_token(other), "{other}");
    }
    // Parts besides the ID too long: the whole name is shortened, its
    // extension kept.
    let net = "n".repeat(250);
    let cache = state_name(&format!("{net}-"), "c1", "-eth0");
    assert!(
        cache.len() <= NAME_MAX && cache.starts_with(&net[..200]),
        "{cache}"
    );
    assert_ne!(cache, state_name(&format!("{net}-"), "c2", "-eth0"));
    let json = state_name(&"r".repeat(300), "c1", "@eth0.json");
    assert!(json.len() <= NAME_MAX && json.ends_with(".json"), "{json}");
    // Every ID the env layer takes (1024 bytes) fits.
    let max = "z".repeat(1024);
    for (before, after) in [("", ""), ("", ".status"), ("net-", "-eth0")] {
        assert!(state_name(before, &max, after).len() <= NAME_MAX);
    }
}

#[test]
fn a_name_at_the_limit_is_written_through_a_temporary_name_that_fits() {
    let root = std::env::temp_dir().join(format!("cni-multi-namemax-{}", std::process::id()));
    let path = root.join("x".repeat(NAME_MAX));
    write_private_atomic(&path, b"state").expect("write");
    assert_eq!(read_state_limited(&path, 10).expect("read"), b"state");
    let _ = std::fs::remove_dir_all(&root);
    // A writer's temporary name still names its writer.
    let tmp = format!(".{}.tmp7", shortened(&"x".repeat(300), "", 200));
    assert_eq!(tmp_writer(&tmp), Some(7));
}

#[test]
fn no_two_attachments_share_a_record() {
    let dir = Path::new("/state");
    // Underscores in either part cannot make two attachments share a file.
    assert_ne!(
        attachment_record(dir, "a_b", "c"),
        attachment_record(dir, "a", "b_c")
    );
    // The first `@` ends the container ID, which can hold none.
    assert!(!crate::cni::env::is_valid_name("a@b"));
}

#[test]
fn state_is_never_opened_through_a_symlink() {
    let root = std::env::temp_dir().join(format!("cni-multi-nofollow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    create_dir_mode(&root, 0o700).expect("dir");
    let victim = root.join("victim");
    std::fs::write(&victim, "precious").expect("victim");
    let link = root.join("state");
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    for how in [StateOpen::Read, StateOpen::ReadWrite, StateOpen::CreateNew] {
        let e = open_state(&link, how).expect_err("a symlink is refused");
        assert!(
            e.to_string().contains(&link.display().to_string()),
            "{how:?}: {e}"
        );
    }
    assert!(read_state_limited(&link, 100).is_err());
    // An atomic write replaces the link itself; its target is untouched.
    write_private_atomic(&link, b"ours").expect("write");
    assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
    assert!(!std::fs::symlink_metadata(&link).expect("stat").is_symlink());
    assert_eq!(read_state_limited(&link, 100).expect("read"), b"ours");
    // A new file is new: anything at the path fails CreateNew.
    let e = open_state(&victim, StateOpen::CreateNew).expect_err("exists");
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_file_over_the_limit_is_an_error_naming_it_and_is_not_read_whole() {
    let path = std::env::temp_dir().join(format!("cni-multi-big-{}", std::process::id()));
    let f = std::fs::File::create(&path).expect("create");
    // Sparse: 1 GB on disk costs nothing, and must not be read into memory.
    f.set_len(1 << 30).expect("size");
    let e = read_limited(&path, 1024).expect_err("too big");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    std::fs::write(&path, b"small").expect("write");
    assert_eq!(read_limited(&path, 5).expect("fits"), b"small");
    let _ = std::fs::remove_file(&path);
}
