//! Links: look up, set up/down.

use super::{Error, Result, Socket};
use neli::consts::nl::NlmF;
use neli::consts::rtnl::{Ifla, RtAddrFamily, Rtm};
use neli::rtnl::{Ifinfomsg, IfinfomsgBuilder, RtattrBuilder};
use neli::types::{Buffer, RtBuffer};
use nix::libc;

/// What plugins need to know about a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub name: String,
    pub flags: u32,
    pub mtu: u32,
    pub mac: Vec<u8>,
}

impl Link {
    pub fn is_up(&self) -> bool {
        self.flags & libc::IFF_UP as u32 != 0
    }

    /// `aa:bb:…` lowercase, as the reference prints MACs.
    pub fn mac_string(&self) -> String {
        format_mac(&self.mac)
    }

    fn from_msg(msg: &Ifinfomsg) -> Option<Link> {
        let attrs = msg.rtattrs().get_attr_handle();
        let name = attrs
            .get_attr_payload_as_with_len_borrowed::<&[u8]>(Ifla::Ifname)
            .ok()
            .map(|b| {
                String::from_utf8_lossy(b)
                    .trim_end_matches('\0')
                    .to_string()
            })?;
        let mtu = attrs.get_attr_payload_as::<u32>(Ifla::Mtu).unwrap_or(0);
        let mac = attrs
            .get_attr_payload_as_with_len_borrowed::<&[u8]>(Ifla::Address)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        Some(Link {
            index: u32::try_from(*msg.ifi_index()).ok()?,
            name,
            flags: msg.ifi_flags().bits(),
            mtu,
            mac,
        })
    }
}

pub fn format_mac(mac: &[u8]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl Socket {
    /// The link called `name`; an error with errno ENODEV when there is none.
    pub fn link_by_name(&mut self, name: &str) -> Result<Link> {
        let op = format!("get link {name:?}");
        let mut attrs = RtBuffer::<Ifla, Buffer>::new();
        attrs.push(
            RtattrBuilder::default()
                .rta_type(Ifla::Ifname)
                .rta_payload(name)
                .build()
                .map_err(|e| Error::local(&op, e))?,
        );
        let msg = IfinfomsgBuilder::default()
            .ifi_family(RtAddrFamily::Unspecified)
            .rtattrs(attrs)
            .build()
            .map_err(|e| Error::local(&op, e))?;
        let replies: Vec<Ifinfomsg> = self.get(&op, Rtm::Getlink, NlmF::empty(), msg)?;
        replies
            .iter()
            .find_map(Link::from_msg)
            .ok_or_else(|| Error {
                op,
                errno: libc::ENODEV,
                extack: None,
                detail: "no such device".into(),
            })
    }

    /// Every link of this namespace.
    pub fn links(&mut self) -> Result<Vec<Link>> {
        let op = "list links";
        let msg = IfinfomsgBuilder::default()
            .ifi_family(RtAddrFamily::Unspecified)
            .build()
            .map_err(|e| Error::local(op, e))?;
        let replies: Vec<Ifinfomsg> = self.get(op, Rtm::Getlink, NlmF::DUMP, msg)?;
        Ok(replies.iter().filter_map(Link::from_msg).collect())
    }

    /// `ip link set <index> up|down`.
    pub fn set_link_up(&mut self, index: u32, up: bool) -> Result<()> {
        let op = format!("set link {index} {}", if up { "up" } else { "down" });
        let builder = IfinfomsgBuilder::default()
            .ifi_family(RtAddrFamily::Unspecified)
            .ifi_index(i32::try_from(index).map_err(|e| Error::local(&op, e))?);
        let builder = if up { builder.up() } else { builder.down() };
        let msg = builder.build().map_err(|e| Error::local(&op, e))?;
        self.change(&op, Rtm::Setlink, NlmF::empty(), msg)
    }
}
