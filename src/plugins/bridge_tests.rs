use super::vlans::trunk_ids;
use super::*;

#[test]
fn trunk_ranges() {
    let t = |v: serde_json::Value| {
        let keys: Vec<TrunkKeys> = crate::cni::json::from_value(v).expect("keys");
        trunk_ids(&keys).map_err(|e| e.code)
    };
    assert_eq!(
        t(serde_json::json!([{"minID": 100, "maxID": 102}, {"id": 5}, {"id": 101}])),
        Ok(vec![5, 100, 101, 102])
    );
    assert_eq!(t(serde_json::json!([{"minID": 100}])), Err(7));
    assert_eq!(t(serde_json::json!([{"id": 4095}])), Err(7));
    assert_eq!(t(serde_json::json!([{"minID": 9, "maxID": 3}])), Err(7));
}

#[test]
fn gateways_default_to_network_plus_one() {
    let mut r = NetResult::new();
    r.ips.push(crate::cni::result::IpConfig {
        interface: Some(2),
        address: "10.1.2.7/24".parse().expect("cidr"),
        gateway: None,
    });
    let addrs = assign_gateways(&mut r, true);
    assert_eq!(addrs, vec!["10.1.2.1/24".parse::<IpNet>().expect("cidr")]);
    assert_eq!(r.ips[0].gateway, Some("10.1.2.1".parse().expect("ip")));
    assert_eq!(r.routes.len(), 1);
    assert_eq!(r.routes[0].dst.to_string(), "0.0.0.0/0");
}

#[test]
fn group_fwd_mask_range_and_restricted_groups() {
    assert_eq!(forwardable_groups(0), Ok(None), "0: the bridge's own mask");
    assert_eq!(forwardable_groups(0x4000), Ok(Some(0x4000)));
    assert_eq!(forwardable_groups(0xfff8), Ok(Some(0xfff8)));
    for bad in [-1, 65536] {
        let e = forwardable_groups(bad).expect_err("range");
        assert_eq!((e.code, e.msg), (7, format!("invalid groupFwdMask {bad}")));
    }
    for restricted in [1, 2, 4, 0x4001] {
        assert_eq!(forwardable_groups(restricted).map_err(|e| e.code), Err(7));
    }
    assert_eq!(
        group_fwd_mask_in_range(7),
        Ok(7),
        "DEL checks the range only"
    );
}

mod masquerading {
    use super::*;
    use crate::cni::env::Command;
    use crate::netfilter::apply::Fake;
    use crate::netfilter::masq::{Op, Plan};
    use crate::netfilter::{Backend, Choice};
    use crate::plugins::masquerade;

    fn invocation(command: Command, keys: serde_json::Value) -> Invocation {
        let conf = serde_json::json!({
            "cniVersion": "1.0.0", "name": "mynet", "type": "bridge", "isGateway": true,
            "ipam": {"type": "host-local", "subnet": "10.88.0.0/16"},
            "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.88.0.5/16"}]},
        });
        crate::plugins::test_support::invocation(command, "ctr1", conf, keys)
    }

    fn plan(addresses: &[&str]) -> Plan {
        let nets: Vec<IpNet> = addresses.iter().map(|a| a.parse().expect("net")).collect();
        Plan::new("mynet", "ctr1", "eth0", &nets)
    }

    /// What bridge's ADD hands the netfilter layer: its config decoded, then
    /// the rules for the addresses IPAM gave.
    fn add(inv: &Invocation, nf: &Fake) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let ips = ["10.88.0.5/16".parse().expect("net")];
        Ok(conf.masq.add(nf, inv.conf.name(), "ctr1", "eth0", &ips)?)
    }

    /// What bridge's DEL hands it: the keys read as DEL reads them, the
    /// addresses from prevResult.
    fn del(inv: &Invocation, nf: &Fake) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        let masq = Masquerade::for_del(k.ip_masq, k.ip_masq_backend.as_deref());
        masquerade::del(inv, masq, nf)
    }

    /// With `ipMasqBackend`, ADD and DEL go to that backend only, whatever
    /// else is usable, with the attachment's plan.
    #[test]
    fn add_and_del_go_to_the_configured_backend() {
        for (value, backend) in [
            ("iptables", Backend::IPTABLES),
            ("nftables", Backend::Nftables),
        ] {
            let nf = Fake::with(&[Backend::IPTABLES, Backend::Nftables]);
            let keys = serde_json::json!({"ipMasq": true, "ipMasqBackend": value});
            add(&invocation(Command::Add, keys.clone()), &nf).expect("ADD");
            del(&invocation(Command::Del, keys), &nf).expect("DEL");
            assert_eq!(
                nf.applied(),
                [
                    (backend, Op::Add(plan(&["10.88.0.5/16"]))),
                    (backend, Op::Del(plan(&["10.88.0.5/16"]))),
                ],
                "{value}"
            );
        }
    }

    /// Without it, ADD writes to the backend detection picks (iptables where
    /// its tools are, else nftables) and DEL cleans each usable one, since
    /// ADD may have picked either.
    #[test]
    fn without_a_backend_add_detects_and_del_cleans_each_usable_one() {
        let keys = serde_json::json!({"ipMasq": true});
        let both = Fake::with(&[Backend::IPTABLES, Backend::Nftables]);
        add(&invocation(Command::Add, keys.clone()), &both).expect("ADD");
        del(&invocation(Command::Del, keys.clone()), &both).expect("DEL");
        let mine = plan(&["10.88.0.5/16"]);
        assert_eq!(
            both.applied(),
            [
                (Backend::IPTABLES, Op::Add(mine.clone())),
                (Backend::IPTABLES, Op::Del(mine.clone())),
                (Backend::Nftables, Op::Del(mine.clone())),
            ]
        );
        let nft_only = Fake::with(&[Backend::Nftables]);
        add(&invocation(Command::Add, keys.clone()), &nft_only).expect("ADD");
        del(&invocation(Command::Del, keys.clone()), &nft_only).expect("DEL");
        assert_eq!(
            nft_only.applied(),
            [
                (Backend::Nftables, Op::Add(mine.clone())),
                (Backend::Nftables, Op::Del(mine.clone())),
            ]
        );
        // iptables installed but unusable here: its failure sends ADD to nftables.
        let broken = Fake {
            broken: Some(Backend::IPTABLES),
            ..Fake::with(&[Backend::IPTABLES, Backend::Nftables])
        };
        add(&invocation(Command::Add, keys.clone()), &broken).expect("ADD");
        assert_eq!(
            broken.applied(),
            [
                (Backend::IPTABLES, Op::Add(mine.clone())),
                (Backend::Nftables, Op::Add(mine.clone())),
            ]
        );
        // Configured, it is not left for another.
        let keys = serde_json::json!({"ipMasq": true, "ipMasqBackend": "iptables"});
        let broken = Fake {
            broken: Some(Backend::IPTABLES),
            ..Fake::with(&[Backend::IPTABLES, Backend::Nftables])
        };
        add(&invocation(Command::Add, keys), &broken).expect_err("iptables fails");
        assert_eq!(broken.applied(), [(Backend::IPTABLES, Op::Add(mine))]);
    }

    /// An unknown `ipMasqBackend` is refused when the config is decoded (code
    /// 7, before anything is applied), ipMasq on or off; DEL takes it as unset.
    #[test]
    fn an_unknown_backend_fails_decoding_but_not_del() {
        for on in [true, false] {
            let keys = serde_json::json!({"ipMasq": on, "ipMasqBackend": "ebtables"});
            let e = Conf::load(&invocation(Command::Add, keys.clone())).err();
            let e = e.expect("refused");
            assert_eq!(e.code, 7);
            assert!(e.msg.contains("unknown backend \"ebtables\""), "{}", e.msg);
            let nf = Fake::with(&[Backend::Nftables]);
            del(&invocation(Command::Del, keys), &nf).expect("DEL");
            let wanted = match on {
                true => vec![(Backend::Nftables, Op::Del(plan(&["10.88.0.5/16"])))],
                false => Vec::new(),
            };
            assert_eq!(nf.applied(), wanted);
        }
        let keys = serde_json::json!({"ipMasq": true, "ipMasqBackend": ""});
        let conf = Conf::load(&invocation(Command::Add, keys)).expect("empty is unset");
        assert_eq!(conf.masq, Masquerade::On(Choice::Detect));
    }

    /// Off, or without addresses, nothing is applied; a container whose
    /// configuration fails gets its masquerading taken back.
    #[test]
    fn nothing_without_ipmasq_and_rolled_back_with_the_container() {
        let nf = Fake::with(&[Backend::IPTABLES, Backend::Nftables]);
        let off = serde_json::json!({"ipMasq": false});
        add(&invocation(Command::Add, off.clone()), &nf).expect("ADD");
        del(&invocation(Command::Del, off), &nf).expect("DEL");
        let on = serde_json::json!({"ipMasq": true, "ipMasqBackend": "nftables"});
        let conf = Conf::load(&invocation(Command::Add, on)).expect("conf");
        conf.masq
            .add(&nf, "mynet", "ctr1", "eth0", &[])
            .expect("no addresses");
        assert!(nf.applied().is_empty());
        let ips = ["10.88.0.5/16".parse().expect("net")];
        let failed = conf
            .masq
            .add_during(&nf, "mynet", "ctr1", "eth0", &ips, || {
                Err(Error::internal("container setup failed"))
            });
        assert_eq!(
            failed.map_err(|e| e.msg),
            Err("container setup failed".into())
        );
        let mine = plan(&["10.88.0.5/16"]);
        assert_eq!(
            nf.applied(),
            [
                (Backend::Nftables, Op::Add(mine.clone())),
                (Backend::Nftables, Op::Del(mine)),
            ]
        );
    }
}

/// The keys that decide together are read into one value each, as the
/// reference reads them.
#[test]
fn keys_decide_role_hairpin_and_container() {
    let load = |keys: serde_json::Value| {
        let conf = serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge"});
        let inv = crate::plugins::test_support::invocation(
            crate::cni::env::Command::Add,
            "c",
            conf,
            keys,
        );
        Conf::load(&inv).map_err(|e| e.msg)
    };
    let role = |keys| load(keys).map(|c| c.role);
    assert_eq!(role(serde_json::json!({})), Ok(Role::Switch));
    assert_eq!(
        role(serde_json::json!({"isGateway": true})),
        Ok(Role::Gateway)
    );
    for is_gateway in [true, false] {
        let keys = serde_json::json!({"isGateway": is_gateway, "isDefaultGateway": true});
        assert_eq!(role(keys), Ok(Role::DefaultGateway));
    }
    let hairpin = |keys| load(keys).map(|c| c.hairpin);
    assert_eq!(hairpin(serde_json::json!({})), Ok(Hairpin::None));
    assert_eq!(
        hairpin(serde_json::json!({"hairpinMode": true})),
        Ok(Hairpin::Veth)
    );
    assert_eq!(
        hairpin(serde_json::json!({"promiscMode": true})),
        Ok(Hairpin::PromiscuousBridge)
    );
    let both = hairpin(serde_json::json!({"hairpinMode": true, "promiscMode": true}));
    assert!(both.is_err_and(|e| e.contains("hairpin mode and promiscuous mode")));
    let container = |keys| load(keys).map(|c| c.container);
    let ipam = serde_json::json!({"type": "host-local", "subnet": "10.1.0.0/24"});
    assert_eq!(container(serde_json::json!({})), Ok(Container::Up));
    assert_eq!(
        container(serde_json::json!({"disableContainerInterface": true})),
        Ok(Container::Down)
    );
    assert_eq!(
        container(serde_json::json!({"ipam": ipam, "enabledad": true})),
        Ok(Container::Addressed { dad: true })
    );
    assert_eq!(
        container(serde_json::json!({"ipam": ipam})),
        Ok(Container::Addressed { dad: false })
    );
    let refused = container(serde_json::json!({"ipam": ipam, "disableContainerInterface": true}));
    assert!(refused.is_err_and(|e| e.contains("disableContainerInterface")));
}
