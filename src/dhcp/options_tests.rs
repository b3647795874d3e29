use super::*;

fn provide(option: &str, value: Option<&str>, from_arg: Option<&str>) -> Provide {
    Provide {
        option: option.into(),
        value: value.map(String::from),
        from_arg: from_arg.map(String::from),
    }
}

fn request(option: &str, skip_default: bool) -> RequestOption {
    RequestOption {
        option: option.into(),
        skip_default,
    }
}

#[test]
fn names_and_decimal_codes() {
    for (name, c) in [
        ("dhcp-client-identifier", 61),
        ("subnet-mask", 1),
        ("routers", 3),
        ("host-name", 12),
        ("user-class", 77),
        ("vendor-class-identifier", 60),
        ("121", 121),
        ("6", 6),
        ("012", 12),
        ("254", 254),
        ("1", 1),
    ] {
        assert_eq!(code_of(name).ok(), Some(c), "{name}");
    }
    for bad in [
        "", "0", "255", "256", "+12", "-1", " 12", "12 ", "router", "Routers", "0x0c",
    ] {
        assert!(
            matches!(code_of(bad), Err(Error::UnknownOption(ref n)) if n == bad),
            "{bad:?}"
        );
    }
}

#[test]
fn provided_values_are_bytes_and_from_arg_wins() {
    let args = vec![
        ("K8S_POD_NAME".to_string(), "pod-a".to_string()),
        ("IgnoreUnknown".to_string(), "1".to_string()),
    ];
    let list = [
        provide("host-name", Some("fallback"), Some("K8S_POD_NAME")),
        provide("60", Some("cni-multi"), None),
        provide("user-class", Some("x"), Some("ABSENT")),
    ];
    let got = provided(&list, &args).expect("provided");
    assert_eq!(
        got,
        vec![
            (12, b"pod-a".to_vec()),
            (60, b"cni-multi".to_vec()),
            (77, b"x".to_vec())
        ]
    );
    // A later entry for the same code replaces the earlier one.
    let list = [
        provide("host-name", Some("a"), None),
        provide("12", Some("b"), None),
    ];
    assert_eq!(
        provided(&list, &[]).expect("provided"),
        vec![(12, b"b".to_vec())]
    );
    // An empty CNI_ARGS value is sent empty, as the reference does.
    let args = vec![("K".to_string(), String::new())];
    assert_eq!(
        provided(&[provide("host-name", None, Some("K"))], &args).expect("empty"),
        vec![(12, Vec::new())]
    );
}

#[test]
fn provided_refuses_what_it_cannot_send() {
    let long = "x".repeat(256);
    let ok = "x".repeat(255);
    assert!(provided(&[provide("host-name", Some(&ok), None)], &[]).is_ok());
    let e = provided(&[provide("host-name", Some(&long), None)], &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e}");
    let args = vec![("K".to_string(), long.clone())];
    let e = provided(&[provide("host-name", None, Some("K"))], &args).unwrap_err();
    assert!(e.to_string().contains("CNI_ARGS \"K\""), "{e}");
    let e = provided(&[provide("host-name", None, Some("K"))], &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e}");
    let e = provided(&[provide("host-name", None, None)], &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e}");
    let e = provided(&[provide("hostname", Some("a"), None)], &[]).unwrap_err();
    assert!(matches!(e, Error::UnknownOption(_)), "{e}");
}

#[test]
fn request_list_as_the_reference() {
    assert_eq!(requested(&[]).expect("default"), vec![3, 1]);
    assert_eq!(
        requested(&[request("121", false), request("routers", false)]).expect("list"),
        vec![121, 3, 1]
    );
    assert_eq!(
        requested(&[request("6", true), request("121", false)]).expect("skip"),
        vec![6, 121]
    );
    // An entry with no option only carries skipDefault.
    assert_eq!(
        requested(&[request("", true)]).expect("none"),
        Vec::<u8>::new()
    );
    assert!(matches!(
        requested(&[request("nope", false)]),
        Err(Error::UnknownOption(_))
    ));
}

#[test]
fn client_id_is_type_zero_and_cut_to_254() {
    assert_eq!(client_id("c1", "net", "eth0"), b"\0c1/net/eth0".to_vec());
    let long = "a".repeat(300);
    let id = client_id(&long, "net", "eth0");
    assert_eq!(id.len(), 255);
    assert_eq!(id[0], 0);
    assert!(id[1..].iter().all(|b| *b == b'a'));
}
