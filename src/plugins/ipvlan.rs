//! ipvlan: an ipvlan interface on a master, created straight into the container.
//! Chained after another plugin with no IPAM of its own, it reuses prevResult's IPs.

use crate::attach::{self, Addressing};
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netlink::link::{Kind, Link, LinkKind, NewLink};
use crate::quote::quoted;
use serde::Deserialize;

pub struct Ipvlan;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    master: String,
    mode: String,
    mtu: i64,
    link_in_container: bool,
}

fn mode_from_str(s: &str) -> CniResult<u16> {
    match s {
        "" | "l2" => Ok(0),
        "l3" => Ok(1),
        "l3s" => Ok(2),
        other => Err(Error::invalid_config(format!(
            "unknown ipvlan mode: {other}",
            other = quoted(&other)
        ))),
    }
}

struct Conf {
    master: Link,
    mode: u16,
    mtu: Option<u32>,
    link_in_container: bool,
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        let mode = mode_from_str(&k.mode)?;
        let mut master_name = k.master.clone();
        if master_name.is_empty()
            && let Some(prev) = inv.conf.prev_result()?
        {
            // Chained: the single interface of the previous plugin is the master.
            match prev.interfaces.as_slice() {
                [only] if !only.name.is_empty() => master_name = only.name.clone(),
                _ => {
                    return Err(Error::internal(
                        "chained master failure. PrevResult lacks a single named interface",
                    ));
                }
            }
        }
        let master = attach::find_master(inv, &master_name, k.link_in_container)?;
        Ok(Conf {
            mtu: attach::mtu_within_master(k.mtu, &master)?,
            master,
            mode,
            link_in_container: k.link_in_container,
        })
    }
}

impl Plugin for Ipvlan {
    fn delegates_ipam(&self) -> bool {
        true
    }

    /// ADD's checks short of looking the master up (which bounds the MTU).
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        mode_from_str(&k.mode)?;
        crate::cni::config::link_name_key("master", &k.master)?;
        attach::optional_mtu(k.mtu).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        // Chained with no IPAM of its own: prevResult's addresses.
        let addressing = match (inv.conf.ipam_type(), inv.conf.prev_result()?) {
            (None, Some(prev)) if !prev.ips.is_empty() => Addressing::Prev(prev),
            _ => Addressing::Ipam { required: true },
        };
        let mut spec = NewLink::new(
            "",
            Kind::Ipvlan {
                parent: conf.master.index,
                mode: conf.mode,
            },
        );
        spec.mtu = conf.mtu;
        let link = attach::create_in_container(&ns, spec, ifname, conf.link_in_container)?;
        attach::finish_single(inv, &ns, &link, true, addressing)
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let _: Keys = inv.conf.plugin_keys()?;
        attach::del_single(inv)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let link = attach::check_single(inv, Some(LinkKind::Ipvlan))?;
        if link.ipvlan_mode() != Some(conf.mode) {
            return Err(Error::internal(
                "container ipvlan mode does not match the config",
            ));
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
