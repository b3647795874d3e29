//! macvlan: a macvlan interface on a master (the default-route interface unless
//! configured), created straight into the container and renamed to CNI_IFNAME.

use crate::attach::{self, Addressing};
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::netlink::link::{Kind, Link, LinkKind, MacvlanMode, NewLink};
use crate::quote::quoted;
use serde::Deserialize;

pub struct Macvlan;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    master: String,
    mode: String,
    mtu: i64,
    mac: Option<String>,
    link_in_container: bool,
    bcqueuelen: Option<u32>,
}

struct Conf {
    master: Link,
    mode: u32,
    mtu: Option<u32>,
    mac: Option<[u8; 6]>,
    link_in_container: bool,
    bc_queue_len: Option<u32>,
}

/// The reference's mode names; empty means bridge.
fn mode_from_str(s: &str) -> CniResult<u32> {
    match s {
        "" | "bridge" => Ok(MacvlanMode::BRIDGE.0),
        "private" => Ok(MacvlanMode::PRIVATE.0),
        "vepa" => Ok(MacvlanMode::VEPA.0),
        "passthru" => Ok(MacvlanMode::PASSTHRU.0),
        other => Err(Error::invalid_config(format!(
            "unknown macvlan mode: {other}",
            other = quoted(&other)
        ))),
    }
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        let mode = mode_from_str(&k.mode)?;
        let master = attach::find_master(inv, &k.master, k.link_in_container)?;
        Ok(Conf {
            mode,
            mtu: attach::mtu_within_master(k.mtu, &master)?,
            mac: attach::requested_mac(inv, k.mac)?,
            link_in_container: k.link_in_container,
            bc_queue_len: k.bcqueuelen,
            master,
        })
    }
}

impl Plugin for Macvlan {
    fn delegates_ipam(&self) -> bool {
        true
    }

    /// ADD's checks short of looking the master up (which bounds the MTU).
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        mode_from_str(&k.mode)?;
        crate::cni::config::link_name_key("master", &k.master)?;
        attach::optional_mtu(k.mtu)?;
        attach::requested_mac(inv, k.mac).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        let mut spec = NewLink::new(
            "",
            Kind::Macvlan {
                parent: conf.master.index,
                mode: conf.mode,
                bc_queue_len: conf.bc_queue_len,
            },
        );
        spec.mtu = conf.mtu;
        spec.mac = conf.mac;
        let link = attach::create_in_container(&ns, spec, ifname, conf.link_in_container)?;
        // Announcements only for addresses: an L2-only link keeps the kernel's
        // defaults (as the reference).
        let announce = inv.conf.ipam_type().is_some();
        attach::finish_single(
            inv,
            &ns,
            &link,
            announce,
            Addressing::Ipam { required: false },
        )
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let _: Keys = inv.conf.plugin_keys()?;
        attach::del_single(inv)
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        let link = attach::check_single(inv, Some(LinkKind::Macvlan))?;
        let want = MacvlanMode(conf.mode);
        if link.macvlan_mode() != Some(want) {
            let found = link
                .macvlan_mode()
                .map_or_else(|| "unknown".to_string(), |m| m.to_string());
            return Err(Error::internal(format!(
                "container macvlan mode {found} does not match the config's {want}"
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
