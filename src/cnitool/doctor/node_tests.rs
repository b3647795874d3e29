use super::*;

#[test]
fn an_object_settles_after_min_age_of_sightings() {
    let mut s = Sightings {
        min_age: Duration::from_secs(300),
        now: 1000,
        before: [("old".to_string(), 600), ("young".to_string(), 900)].into(),
        seen: BTreeMap::new(),
    };
    assert!(s.settled("old"));
    assert!(!s.settled("young"));
    assert!(!s.settled("new"));
    assert_eq!(s.seen.get("new"), Some(&1000));
    assert_eq!(s.seen.get("old"), Some(&600));
    s.min_age = Duration::ZERO;
    assert!(s.settled("new"));
}
