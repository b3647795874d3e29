use super::*;

fn render(state: &State) -> Option<String> {
    let ips: Vec<IpNet> = vec!["10.22.0.5/16".parse().expect("net")];
    let mine: Vec<&IpNet> = ips.iter().collect();
    quick_add(Family::V4, "CNI-abc", &mine, "name: \"n\" id: \"c\"", state)
        .map(|b| b.render().expect("render"))
}

/// The reference's rules, whichever way the state was learnt; a jump
/// already there is not added again.
#[test]
fn quick_adds_write_the_reference_rules_once() {
    let rules = "-A CNI-abc -d 10.22.0.5/16 -j ACCEPT -m comment --comment \"name: \\\"n\\\" id: \\\"c\\\"\"\n\
                     -A CNI-abc ! -d 224.0.0.0/4 -j MASQUERADE -m comment --comment \"name: \\\"n\\\" id: \\\"c\\\"\"\n";
    let jump = "-A POSTROUTING -s 10.22.0.5 -j CNI-abc -m comment --comment \"name: \\\"n\\\" id: \\\"c\\\"\"\n";
    for state in [State::Unread, State::Absent] {
        assert_eq!(
            render(&state).as_deref(),
            Some(format!("*nat\n-N CNI-abc\n{rules}{jump}COMMIT\n").as_str())
        );
    }
    let there = State::Present(vec![("10.22.0.5".parse().expect("ip"), "x".into())]);
    assert_eq!(
        render(&there).as_deref(),
        Some(format!("*nat\n:CNI-abc - [0:0]\n{rules}COMMIT\n").as_str())
    );
    let other = State::Present(vec![("10.22.0.9".parse().expect("ip"), "x".into())]);
    assert_eq!(
        render(&other).as_deref(),
        Some(format!("*nat\n:CNI-abc - [0:0]\n{rules}{jump}COMMIT\n").as_str())
    );
    assert_eq!(render(&State::Unclear), None);
}

fn plan() -> Plan {
    Plan::new(
        "mynet",
        "ctr1",
        "eth0",
        &["10.88.0.5/16".parse().expect("net")],
    )
}

/// What ADD writes passes, as ADD wrote it and as iptables-save prints it.
#[test]
fn check_passes_on_what_add_writes() {
    let p = plan();
    let written = add_batch(&p, Family::V4, &Saved::default());
    let saved = Saved::parse(&written.render().expect("render"));
    check_saved(&p, Family::V4, &saved).expect("as written");
    let (chain, _) = names(&p);
    let printed = Saved::parse(&format!(
        "*nat\n:POSTROUTING ACCEPT [0:0]\n:{chain} - [0:0]\n\
             -A POSTROUTING -s 10.88.0.5/32 -m comment --comment \"name: \\\"mynet\\\" id: \\\"ctr1\\\"\" -j {chain}\n\
             -A {chain} -d 10.88.0.0/16 -m comment --comment \"name: \\\"mynet\\\" id: \\\"ctr1\\\"\" -j ACCEPT\n\
             -A {chain} ! -d 224.0.0.0/4 -m comment --comment \"name: \\\"mynet\\\" id: \\\"ctr1\\\"\" -j MASQUERADE\n\
             COMMIT\n"
    ));
    check_saved(&p, Family::V4, &printed).expect("as printed");
}

/// A missing chain, jump or rule fails, naming what is missing.
#[test]
fn check_names_what_is_missing() {
    let p = plan();
    let (chain, _) = names(&p);
    let full = Saved::parse(
        &add_batch(&p, Family::V4, &Saved::default())
            .render()
            .expect("render"),
    );
    let without = |drop: &dyn Fn(&(String, String)) -> bool| {
        let mut s = full.clone();
        s.rules.retain(|r| !drop(r));
        check_saved(&p, Family::V4, &s)
            .expect_err("missing")
            .to_string()
    };
    let e = without(&|(c, _)| c == "POSTROUTING");
    assert!(
        e.contains(&format!("no POSTROUTING jump from 10.88.0.5 to {chain}")),
        "{e}"
    );
    let e = without(&|(_, r)| r.contains("MASQUERADE"));
    assert!(e.contains("no MASQUERADE rule"), "{e}");
    let e = without(&|(_, r)| r.contains("ACCEPT"));
    assert!(e.contains("does not accept 10.88.0.0/16"), "{e}");
    let mut s = full.clone();
    s.chains.clear();
    let e = check_saved(&p, Family::V4, &s)
        .expect_err("no chain")
        .to_string();
    assert!(e.contains(&format!("chain {chain} is missing")), "{e}");
    // Another attachment's chain is not this one's.
    let other = Plan::new("mynet", "ctr2", "eth0", &p.addresses);
    assert!(check_saved(&other, Family::V4, &full).is_err());
}

/// GC reads back only chains of the reference's form named for the
/// commented network and container.
#[test]
fn gc_takes_only_this_networks_stale_chains() {
    let mut text = String::from("*nat\n:POSTROUTING ACCEPT [0:0]\n");
    for (net, cid) in [("mynet", "ctr1"), ("mynet", "old"), ("other", "old")] {
        let p = Plan::new(net, cid, "eth0", &["10.88.0.5/16".parse().expect("net")]);
        let (chain, _) = names(&p);
        text.push_str(&format!(":{chain} - [0:0]\n"));
        let b = add_batch(&p, Family::V4, &Saved::default())
            .render()
            .expect("r");
        text.extend(
            b.lines()
                .filter(|l| l.starts_with("-A"))
                .map(|l| format!("{l}\n")),
        );
    }
    // A rule commented for mynet/old in a chain not named for it is left.
    text.push_str("-A CNI-0123456789abcdef01234567 -m comment --comment \"name: \\\"mynet\\\" id: \\\"old\\\"\" -j ACCEPT\n");
    let saved = Saved::parse(&text);
    let out = gc_batch("mynet", &["ctr1".into()], Family::V4, &saved)
        .render()
        .expect("render");
    let old = chain_name("", "mynet", "old");
    assert!(out.contains(&format!("-X {old}")), "{out}");
    assert_eq!(out.matches("-X ").count(), 1, "{out}");
    assert_eq!(out.matches("-D POSTROUTING").count(), 1, "{out}");
    assert!(gc_batch("mynet", &["ctr1".into(), "old".into()], Family::V4, &saved).is_empty());
}

/// Network `a` with container `bc` and `ab` with `c` hash to one chain:
/// GC of `a` leaves it to the live attachment of `ab`.
#[test]
fn gc_leaves_a_chain_another_attachment_shares() {
    assert_eq!(chain_name("", "a", "bc"), chain_name("", "ab", "c"));
    let mut text = String::from("*nat\n:POSTROUTING ACCEPT [0:0]\n");
    for (net, cid, ip) in [("a", "bc", "10.88.0.5/16"), ("ab", "c", "10.89.0.5/16")] {
        let p = Plan::new(net, cid, "eth0", &[ip.parse().expect("net")]);
        let b = add_batch(&p, Family::V4, &Saved::default())
            .render()
            .expect("r");
        text.extend(
            b.lines()
                .filter(|l| l.starts_with("-A"))
                .map(|l| format!("{l}\n")),
        );
    }
    let saved = Saved::parse(&text);
    assert!(gc_batch("a", &[], Family::V4, &saved).is_empty());
}

/// The reader names each attachment's chain with its owner and sources.
#[test]
fn masqueraded_reads_owners_and_sources() {
    let mut text = String::from("*nat\n:POSTROUTING ACCEPT [0:0]\n");
    for (net, cid, ip) in [
        ("mynet", "ctr1", "10.88.0.5/16"),
        ("other", "old", "10.89.0.6/16"),
    ] {
        let p = Plan::new(net, cid, "eth0", &[ip.parse().expect("net")]);
        let b = add_batch(&p, Family::V4, &Saved::default())
            .render()
            .expect("r");
        text.extend(
            b.lines()
                .filter(|l| l.starts_with("-A"))
                .map(|l| format!("{l}\n")),
        );
    }
    // iptables-save prints the source as a /32.
    let text = text.replace("-s 10.88.0.5 ", "-s 10.88.0.5/32 ");
    let got = masqueraded(&Saved::parse(&text));
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].network, "mynet");
    assert_eq!(got[0].container_id, "ctr1");
    assert_eq!(got[0].chain, chain_name("", "mynet", "ctr1"));
    assert_eq!(
        got[0].sources,
        vec!["10.88.0.5".parse::<IpAddr>().expect("ip")]
    );
    assert_eq!(
        got[1].sources,
        vec!["10.89.0.6".parse::<IpAddr>().expect("ip")]
    );
}
