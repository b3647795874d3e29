use super::*;

fn delegate(gw: Option<&[&str]>) -> Delegate {
    let mut d = Delegate::load(br#"{"name":"n","type":"bridge"}"#.to_vec(), "t", "1.0.0")
        .expect("delegate");
    d.gateway_request = gw.map(|g| g.iter().map(|s| s.parse().expect("ip")).collect());
    d
}

#[test]
fn filters_follow_the_requests() {
    let mut ds = [delegate(None), delegate(Some(&["10.0.0.1"]))];
    check(&mut ds).expect("one v4 gateway");
    assert!(ds[0].filter_v4 && ds[0].filter_v6);
    assert!(!ds[1].filter_v4 && ds[1].filter_v6);
    let mut ds = [delegate(None), delegate(None)];
    check(&mut ds).expect("none");
    assert!(!ds[0].filter_v4 && !ds[1].filter_v6);
    let mut ds = [delegate(Some(&["10.0.0.1"])), delegate(Some(&["10.0.1.1"]))];
    assert!(check(&mut ds).expect_err("ECMP").msg.contains("ECMP"));
}
