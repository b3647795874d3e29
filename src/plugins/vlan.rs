//! vlan: an 802.1q interface on a master, created straight into the container.

use crate::attach::{self, Addressing};
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netlink::link::{Kind, Link, LinkKind, NewLink};
use serde::Deserialize;

pub struct Vlan;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    master: String,
    vlan_id: i64,
    mtu: i64,
    link_in_container: bool,
}

struct Conf {
    master: Link,
    id: u16,
    mtu: Option<u32>,
    link_in_container: bool,
}

/// The keys, with the checks that need no master: the VLAN ID.
fn checked(inv: &Invocation) -> CniResult<(Keys, u16)> {
    let k: Keys = inv.conf.plugin_keys()?;
    if k.master.is_empty() {
        return Err(Error::invalid_config(
            "\"master\" field is required. It specifies the host interface name to create the VLAN for.",
        )
        .with_details("key master"));
    }
    let id = u16::try_from(k.vlan_id)
        .ok()
        .filter(|id| *id <= 4094)
        .ok_or_else(|| {
            Error::invalid_config(format!(
                "invalid VLAN ID {} (must be between 0 and 4094 inclusive)",
                k.vlan_id
            ))
        })?;
    Ok((k, id))
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let (k, id) = checked(inv)?;
        let master = attach::find_master(inv, &k.master, k.link_in_container)?;
        Ok(Conf {
            mtu: attach::mtu_within_master(k.mtu, &master)?,
            master,
            id,
            link_in_container: k.link_in_container,
        })
    }
}

fn needs_ipam(inv: &Invocation) -> CniResult<()> {
    match inv.conf.ipam_type() {
        Some(_) => Ok(()),
        None => Err(Error::invalid_config("IPAM config missing 'type' key")),
    }
}

impl Plugin for Vlan {
    fn delegates_ipam(&self) -> bool {
        true
    }

    /// ADD's checks short of looking the master up (which bounds the MTU).
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        let (k, _) = checked(inv)?;
        crate::cni::config::link_name_key("master", &k.master)?;
        attach::optional_mtu(k.mtu)?;
        needs_ipam(inv)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        needs_ipam(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        let mut spec = NewLink::new(
            "",
            Kind::Vlan {
                parent: conf.master.index,
                id: conf.id,
            },
        );
        spec.mtu = conf.mtu;
        let link = attach::create_in_container(&ns, spec, ifname, conf.link_in_container)?;
        attach::finish_single(inv, &ns, &link, false, Addressing::Ipam { required: true })
    }

    /// Unlike the reference, DEL does not need the master to exist.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let _: Keys = inv.conf.plugin_keys()?;
        attach::del_single(inv)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let link = attach::check_single(inv, Some(LinkKind::Vlan))?;
        if link.vlan_id() != Some(conf.id) {
            return Err(Error::internal(format!(
                "container vlan id does not match the config's {}",
                conf.id
            )));
        }
        Ok(())
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        attach::gc_ipam(inv)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        attach::status_ipam(inv)
    }
}
