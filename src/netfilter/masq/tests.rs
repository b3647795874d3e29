use super::*;
use crate::netfilter::apply::Fake;
use crate::netfilter::{Flavour, Kept};

fn kept(id: &str) -> Vec<Kept> {
    vec![Kept {
        container_id: id.into(),
        ifname: "eth0".into(),
    }]
}

/// GC goes where DEL goes: the configured backend, else each usable
/// one; off, nowhere.
#[test]
fn gc_in_the_configured_backend_or_each_usable_one() {
    let both = [Backend::IPTABLES, Backend::Nftables];
    let gc = |network: &str| Op::Gc {
        network: network.into(),
        keep: kept("ctr1"),
    };
    for (masquerade, wanted) in [
        (Masquerade::Off, Vec::new()),
        (
            Masquerade::On(Choice::Configured(Backend::Nftables)),
            vec![(Backend::Nftables, gc("n"))],
        ),
        (
            Masquerade::On(Choice::Detect),
            vec![(Backend::IPTABLES, gc("n")), (Backend::Nftables, gc("n"))],
        ),
    ] {
        let nf = Fake::with(&both);
        masquerade.gc(&nf, "n", kept("ctr1")).expect("gc");
        assert_eq!(nf.applied(), wanted, "{masquerade:?}");
    }
}

/// The keys decode once, as ADD and as DEL take them.
#[test]
fn keys_decode_once_into_a_masquerade() {
    let on = |b| Masquerade::from_keys(true, b).map_err(|e| e.to_string());
    assert_eq!(on(None), Ok(Masquerade::On(Choice::Detect)));
    assert_eq!(
        on(Some("iptables")),
        Ok(Masquerade::On(Choice::Configured(Backend::Iptables(
            Flavour::Default
        ))))
    );
    assert_eq!(
        on(Some("bogus")),
        Err("unknown backend \"bogus\" (iptables or nftables)".into())
    );
    assert!(Masquerade::from_keys(false, Some("bogus")).is_err());
    assert_eq!(
        Masquerade::for_del(true, Some("bogus")),
        Masquerade::On(Choice::Detect)
    );
    assert_eq!(
        Masquerade::for_del(false, Some("nftables")),
        Masquerade::Off
    );
}
