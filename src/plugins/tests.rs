use super::*;

#[test]
fn names_are_unique_and_exact() {
    for (i, p) in PLUGINS.iter().enumerate() {
        assert!(PLUGINS[i + 1..].iter().all(|q| q.name() != p.name()));
        assert!(std::ptr::eq(lookup(p.name()).expect("listed"), &p.info));
    }
    assert!(lookup("vla").is_none());
    assert!(lookup("cni-multi").is_none());
}
