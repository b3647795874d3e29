//! The kernel's MPTCP path manager (generic netlink family `mptcp_pm`):
//! endpoints (addresses it may announce or open subflows from) and the
//! per-namespace limits. Message building is pure and tested byte for byte.

use super::genl::GenlSocket;
pub use super::uapi::mptcp::{
    MPTCP_PM_ADDR_FLAG_BACKUP, MPTCP_PM_ADDR_FLAG_FULLMESH, MPTCP_PM_ADDR_FLAG_SIGNAL,
    MPTCP_PM_ADDR_FLAG_SUBFLOW,
};
use super::uapi::mptcp_pm::{
    MPTCP_PM_ADDR_ATTR_ADDR4, MPTCP_PM_ADDR_ATTR_ADDR6, MPTCP_PM_ADDR_ATTR_FAMILY,
    MPTCP_PM_ADDR_ATTR_FLAGS, MPTCP_PM_ADDR_ATTR_ID, MPTCP_PM_ADDR_ATTR_IF_IDX, MPTCP_PM_ATTR_ADDR,
    MPTCP_PM_ATTR_RCV_ADD_ADDRS, MPTCP_PM_ATTR_SUBFLOWS, MPTCP_PM_CMD_ADD_ADDR,
    MPTCP_PM_CMD_DEL_ADDR, MPTCP_PM_CMD_GET_ADDR, MPTCP_PM_CMD_GET_LIMITS, MPTCP_PM_CMD_SET_LIMITS,
    MPTCP_PM_NAME, MPTCP_PM_VER,
};
use super::uapi::socket::{AF_INET, AF_INET6};
use super::wire::{self, Body, NESTED};
use super::{Error, Result};
use std::net::IpAddr;

/// The flags an endpoint can be given (the kernel sets others itself).
pub const FLAGS: [(&str, u32); 4] = [
    ("signal", MPTCP_PM_ADDR_FLAG_SIGNAL),
    ("subflow", MPTCP_PM_ADDR_FLAG_SUBFLOW),
    ("backup", MPTCP_PM_ADDR_FLAG_BACKUP),
    ("fullmesh", MPTCP_PM_ADDR_FLAG_FULLMESH),
];
/// The kernel's bound on both limits: MPTCP_PM_ADDR_MAX, not in a uapi
/// header (net/mptcp/protocol.h).
pub const LIMIT_MAX: u32 = 8;

/// One path-manager endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The kernel's id (0 when adding: it picks one).
    pub id: u8,
    pub address: IpAddr,
    pub flags: u32,
    /// The interface it is bound to (0: none).
    pub ifindex: i32,
}

/// The path manager's per-namespace limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub subflows: u32,
    pub add_addr_accepted: u32,
}

/// ADD_ADDR's (and DEL_ADDR's) attributes for an endpoint.
pub fn endpoint_attrs(e: &Endpoint) -> Vec<u8> {
    Body::default()
        .nest(MPTCP_PM_ATTR_ADDR | NESTED, |b| {
            let b = match e.address {
                IpAddr::V4(_) => b.u16(MPTCP_PM_ADDR_ATTR_FAMILY, AF_INET.into()),
                IpAddr::V6(_) => b.u16(MPTCP_PM_ADDR_ATTR_FAMILY, AF_INET6.into()),
            };
            let b = if e.id != 0 {
                b.u8(MPTCP_PM_ADDR_ATTR_ID, e.id)
            } else {
                b
            };
            let b = match e.address {
                IpAddr::V4(_) => b.ip(MPTCP_PM_ADDR_ATTR_ADDR4, e.address),
                IpAddr::V6(_) => b.ip(MPTCP_PM_ADDR_ATTR_ADDR6, e.address),
            };
            let b = b.u32(MPTCP_PM_ADDR_ATTR_FLAGS, e.flags);
            if e.ifindex != 0 {
                b.attr(MPTCP_PM_ADDR_ATTR_IF_IDX, &e.ifindex.to_ne_bytes())
            } else {
                b
            }
        })
        .into_bytes()
}

/// SET_LIMITS' attributes.
pub fn limits_attrs(l: Limits) -> Vec<u8> {
    Body::default()
        .u32(MPTCP_PM_ATTR_RCV_ADD_ADDRS, l.add_addr_accepted)
        .u32(MPTCP_PM_ATTR_SUBFLOWS, l.subflows)
        .into_bytes()
}

/// An endpoint of a GET_ADDR reply.
pub fn parse_endpoint(attrs: &[u8]) -> Option<Endpoint> {
    let addr = wire::find(attrs, MPTCP_PM_ATTR_ADDR)?;
    let address = wire::find(addr, MPTCP_PM_ADDR_ATTR_ADDR4)
        .or_else(|| wire::find(addr, MPTCP_PM_ADDR_ATTR_ADDR6))
        .and_then(wire::as_ip)?;
    Some(Endpoint {
        id: wire::find(addr, MPTCP_PM_ADDR_ATTR_ID)
            .and_then(|p| p.first().copied())
            .unwrap_or(0),
        address,
        flags: wire::find(addr, MPTCP_PM_ADDR_ATTR_FLAGS)
            .and_then(wire::as_u32)
            .unwrap_or(0),
        ifindex: wire::find(addr, MPTCP_PM_ADDR_ATTR_IF_IDX)
            .and_then(wire::as_u32)
            .map_or(0, u32::cast_signed),
    })
}

/// The path manager of the calling thread's namespace.
pub struct PathManager(GenlSocket);

impl PathManager {
    /// None when the kernel has no MPTCP.
    pub fn open() -> Result<Option<PathManager>> {
        Ok(GenlSocket::open(MPTCP_PM_NAME, MPTCP_PM_VER)?.map(PathManager))
    }

    pub fn endpoints(&mut self) -> Result<Vec<Endpoint>> {
        let replies = self
            .0
            .dump(MPTCP_PM_CMD_GET_ADDR, &[], "list MPTCP endpoints")?;
        Ok(replies.iter().filter_map(|r| parse_endpoint(r)).collect())
    }

    pub fn add(&mut self, e: &Endpoint) -> Result<()> {
        let op = format!("add MPTCP endpoint {}", e.address);
        self.0
            .request(MPTCP_PM_CMD_ADD_ADDR, &endpoint_attrs(e), &op)?;
        Ok(())
    }

    /// Deletes an endpoint by its id (and address).
    pub fn del(&mut self, e: &Endpoint) -> Result<()> {
        let op = format!("delete MPTCP endpoint {}", e.address);
        self.0
            .request(MPTCP_PM_CMD_DEL_ADDR, &endpoint_attrs(e), &op)?;
        Ok(())
    }

    pub fn limits(&mut self) -> Result<Limits> {
        let replies = self
            .0
            .request(MPTCP_PM_CMD_GET_LIMITS, &[], "read MPTCP limits")?;
        let get = |ty| {
            replies
                .iter()
                .find_map(|r| wire::find(r, ty).and_then(wire::as_u32))
        };
        match (
            get(MPTCP_PM_ATTR_SUBFLOWS),
            get(MPTCP_PM_ATTR_RCV_ADD_ADDRS),
        ) {
            (Some(subflows), Some(add_addr_accepted)) => Ok(Limits {
                subflows,
                add_addr_accepted,
            }),
            _ => Err(Error::local("read MPTCP limits", "no limits in the reply")),
        }
    }

    pub fn set_limits(&mut self, l: Limits) -> Result<()> {
        self.0.request(
            MPTCP_PM_CMD_SET_LIMITS,
            &limits_attrs(l),
            "set MPTCP limits",
        )?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "mptcp_tests.rs"]
mod tests;
