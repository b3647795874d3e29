use super::*;

/// Every item runs, on threads of their own, and the first error in the
/// items' order is returned.
#[test]
fn each_parallel_runs_all_and_returns_the_first_error() {
    use std::sync::Mutex;
    let seen = Mutex::new(Vec::new());
    let outcome = each_parallel(&[1, 2, 3], |i| {
        seen.lock()
            .expect("lock")
            .push((*i, std::thread::current().id()));
        match i {
            1 => Ok(()),
            n => Err(Error::InvalidConfig(format!("item {n}"))),
        }
    });
    assert!(matches!(outcome, Err(Error::InvalidConfig(m)) if m == "item 2"));
    let seen = seen.into_inner().expect("lock");
    assert_eq!(seen.len(), 3);
    let here = std::thread::current().id();
    assert!(seen.iter().all(|(_, t)| *t != here), "{seen:?}");
    // One item runs here, without a thread.
    let mut ran_on = None;
    let ran = Mutex::new(&mut ran_on);
    each_parallel(&[1], |_| {
        **ran.lock().expect("lock") = Some(std::thread::current().id());
        Ok(())
    })
    .expect("one item");
    assert_eq!(ran_on, Some(here));
}

#[test]
fn names_follow_the_reference() {
    let full = sha512_hex(b"mynetabc123");
    assert_eq!(
        chain_name("", "mynet", "abc123"),
        format!("CNI-{}", &full[..24])
    );
    assert_eq!(
        chain_name("DN-", "mynet", "abc123"),
        format!("CNI-DN-{}", &full[..21])
    );
    assert_eq!(chain_name("DN-", "a", "b").len(), 28);
    assert_eq!(attachment_comment("n", "c"), "name: \"n\" id: \"c\"");
}
