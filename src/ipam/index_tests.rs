use super::*;

struct Dir(PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("cni-index-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        Dir(p)
    }
    fn put(&self, name: &str, content: &str) {
        std::fs::write(self.0.join(name), content).expect("write");
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn held(ip: &str, id: &str, ifname: &str) -> Held {
    Held {
        ip: ip.parse().expect("ip"),
        container_id: id.into(),
        ifname: ifname.into(),
    }
}

fn names(v: Vec<(String, Held)>) -> Vec<String> {
    v.into_iter().map(|(n, _)| n).collect()
}

#[test]
fn a_sealed_index_is_trusted_and_its_entries_answer_without_the_files() {
    let d = Dir::new("sealed");
    d.put("10.0.0.2", "a\r\neth0");
    d.put("10.0.0.3", "b");
    d.put("last_reserved_ip.0", "10.0.0.3");
    let mut i = Index::new(&d.0);
    assert_eq!(i.load().expect("load"), Trust::Rebuilt, "no seal yet");
    i.persist().expect("persist");
    let mut i = Index::new(&d.0);
    assert_eq!(i.load().expect("load"), Trust::Sealed);
    assert_eq!(names(i.holding("a", "eth0").expect("a")), ["10.0.0.2"]);
    assert_eq!(names(i.holding("b", "").expect("legacy b")), ["10.0.0.3"]);
    assert!(i.holding("a", "eth1").expect("a eth1").is_empty());
    // Proof that the files were not read: an in-place rewrite (no
    // directory change) is not seen.
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.0.join("10.0.0.2"))
        .and_then(|mut f| f.write_all(b"z"))
        .expect("rewrite in place");
    let mut i = Index::new(&d.0);
    assert_eq!(i.load().expect("load"), Trust::Sealed);
    assert_eq!(names(i.holding("a", "eth0").expect("a")), ["10.0.0.2"]);
}

#[test]
fn any_file_created_or_removed_after_the_seal_breaks_it_even_within_a_tick() {
    for change in ["create", "remove"] {
        let d = Dir::new(&format!("broken-{change}"));
        d.put("10.0.0.2", "a\r\neth0");
        let mut i = Index::new(&d.0);
        i.load().expect("load");
        i.persist().expect("persist");
        // At once: the same coarse clock tick as the seal.
        match change {
            "create" => d.put("10.0.0.4", "d\r\neth1"),
            _ => std::fs::remove_file(d.0.join("10.0.0.2")).expect("rm"),
        }
        let mut i = Index::new(&d.0);
        assert_eq!(i.load().expect("load"), Trust::Rebuilt, "{change}");
        let d_held = names(i.holding("d", "eth1").expect("d"));
        let a_held = names(i.holding("a", "eth0").expect("a"));
        match change {
            "create" => assert_eq!((d_held.len(), a_held.len()), (1, 1)),
            _ => assert_eq!((d_held.len(), a_held.len()), (0, 0)),
        }
    }
}

#[test]
fn changes_are_kept_and_the_last_release_takes_the_index_away() {
    let d = Dir::new("changes");
    let mut i = Index::new(&d.0);
    i.load().expect("load");
    d.put("10.0.0.2", "a\r\neth0");
    i.added("10.0.0.2", held("10.0.0.2", "a", "eth0"))
        .expect("add");
    d.put("fd00::2", "a\r\neth0");
    i.added("fd00::2", held("fd00::2", "a", "eth0"))
        .expect("add");
    i.persist().expect("persist");
    let mut i = Index::new(&d.0);
    assert_eq!(i.load().expect("load"), Trust::Sealed);
    assert_eq!(
        names(i.holding("a", "eth0").expect("a")),
        ["10.0.0.2", "fd00::2"]
    );
    for name in ["10.0.0.2", "fd00::2"] {
        std::fs::remove_file(d.0.join(name)).expect("rm");
        i.removed(name, &held(name, "a", "eth0")).expect("removed");
    }
    i.persist().expect("persist");
    let left: Vec<String> = std::fs::read_dir(&d.0)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_damaged_or_foreign_seal_is_not_trusted() {
    let d = Dir::new("torn");
    d.put("10.0.0.2", "a\r\neth0");
    let path = d.0.join(INDEX_FILE);
    for damage in ["torn", "truncated", "version 1"] {
        let mut i = Index::new(&d.0);
        i.load().expect("load");
        i.changed = true;
        i.persist().expect("persist");
        assert_eq!(Index::new(&d.0).load().expect("load"), Trust::Sealed);
        let good = std::fs::read(&path).expect("seal");
        let bad = match damage {
            "torn" => {
                let mut torn = good.clone();
                let at = SEAL_MAGIC.len() + 3;
                torn[at] = if torn[at] == b'1' { b'2' } else { b'1' };
                torn
            }
            "truncated" => good[..good.len() - 2].to_vec(),
            _ => b"\0cni-multi host-local owner index 1\n".to_vec(),
        };
        // In place: the directory still shows T.
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut f| f.write_all(&bad))
            .expect("write in place");
        let mut i = Index::new(&d.0);
        assert_eq!(i.load().expect("load"), Trust::Rebuilt, "{damage}");
        assert_eq!(names(i.holding("a", "eth0").expect("a")), ["10.0.0.2"]);
    }
}

#[test]
fn owners_with_separators_round_trip_and_no_index_file_reads_as_an_owner() {
    let d = Dir::new("escape");
    d.put("10.0.0.2", "we\tird\\id\0\r\neth\n0");
    d.put("fd00::2", "v6\r\neth0");
    let mut i = Index::new(&d.0);
    i.load().expect("load");
    i.persist().expect("persist");
    let mut i = Index::new(&d.0);
    assert_eq!(i.load().expect("load"), Trust::Sealed);
    assert_eq!(
        names(i.holding("we\tird\\id\0", "eth\n0").expect("weird")),
        ["10.0.0.2"]
    );
    // The reference compares each file's trimmed content with
    // `<id>\r\n<ifname>` or `<id>`: an ID from the environment cannot
    // hold the NUL every index file starts with.
    let mut files = vec![d.0.join(INDEX_FILE)];
    for e in std::fs::read_dir(d.0.join(ENTRIES_DIR)).expect("entries") {
        files.push(e.expect("entry").path());
    }
    assert_eq!(files.len(), 3);
    for f in files {
        let text = std::fs::read_to_string(&f).expect("index file");
        assert!(text.trim().starts_with('\0'), "{}", f.display());
        let name = f.file_name().expect("name").to_string_lossy().into_owned();
        assert!(name.parse::<IpAddr>().is_err());
    }
}
