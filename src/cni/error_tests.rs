use super::*;

#[test]
fn status_codes_50_and_51_are_the_spec_s() {
    assert_eq!(Error::new(Code::NotAvailable, "x").code, 50);
    assert_eq!(Error::new(Code::LimitedConnectivity, "x").code, 51);
}

#[test]
fn json_matches_reference_layout() {
    let e = Error::new(Code::InvalidEnv, "bad").with_details("x");
    assert_eq!(
        e.to_json(),
        "{\n    \"code\": 4,\n    \"msg\": \"bad\",\n    \"details\": \"x\"\n}"
    );
    let e = Error::new(Code::Decode, "bad");
    assert_eq!(e.to_json(), "{\n    \"code\": 6,\n    \"msg\": \"bad\"\n}");
}

#[test]
fn anyhow_keeps_a_wrapped_cni_error() {
    let inner = Error::new(Code::InvalidConfig, "nope");
    let wrapped: Error = anyhow::Error::new(inner.clone()).into();
    assert_eq!(wrapped, inner);
    let plain: Error = anyhow::anyhow!("boom").into();
    assert_eq!(plain.code, 999);
}

#[test]
fn context_keeps_the_cause_as_source() {
    let io = std::io::Error::from_raw_os_error(nix::libc::EEXIST);
    let cause = io.to_string();
    let e = Err::<(), _>(io)
        .context("failed to create \"x\"")
        .unwrap_err();
    assert_eq!(e.code, 999);
    // The message in the C library's words; the source keeps the errno.
    assert_eq!(e.msg, "failed to create \"x\": File exists");
    let source = std::error::Error::source(&e).expect("a source");
    assert_eq!(source.to_string(), cause);
    // The source is not part of the JSON.
    assert!(!e.to_json().contains("source"));
}

/// The hint goes into the details: the message, which runtimes and the
/// reference's tests read, stays the sentence of what failed; context
/// keeps the hint, and details already there are not replaced.
#[test]
fn a_hint_is_the_details_and_the_message_stays_the_sentence() {
    let exists = || {
        hint::for_errno(
            nix::libc::EEXIST,
            hint::Doing::Link("eth0"),
            hint::running_as_root(),
        )
    };
    let e = Error::internal("create macvlan link \"eth0\": File exists")
        .with_hint(exists())
        .context("failed to create macvlan");
    assert_eq!(
        e.to_json(),
        "{\n    \"code\": 999,\n    \"msg\": \"failed to create macvlan: create macvlan link \
             \\\"eth0\\\": File exists\",\n    \"details\": \"a link named \\\"eth0\\\" already \
             exists in that namespace: choose another interface name, or delete the stale link\"\n}"
    );
    let keyed = Error::invalid_config("bad").with_details("key master");
    assert_eq!(keyed.with_hint(exists()).details, "key master");
    assert_eq!(Error::internal("x").with_hint(None).details, "");
}
