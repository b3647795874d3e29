//! DHCPv4 for the dhcp IPAM plugin and its lease daemon (layer "protocols",
//! beside netfilter: it uses netlink and netns, and knows no CNI code).
//!
//! - `wire`: DHCP messages and options, encoded and decoded (pure; fuzzed).
//! - `options`: the reference's option names (`routers`, `subnet-mask`, ...)
//!   and the plugin's `provide` / `request` lists as option codes and bytes.
//! - `lease`: a lease as the daemon keeps it (on disk too) and the CNI result
//!   it gives (address and mask, gateway, routes from 121 or 33, DNS).
//! - `client`: the client run in the container's netns on its interface:
//!   DISCOVER/OFFER/REQUEST/ACK over AF_PACKET, renewal over UDP unicast,
//!   rebind, RELEASE; retries and backoff as the reference.
//! - `protocol`: the plugin <-> daemon messages over the unix socket (JSON
//!   lines, versioned).
//! - `daemon`: `dhcp daemon` itself (flags, socket, lease keepers, state
//!   files); it uses nothing above this layer.

pub mod client;
pub mod daemon;
pub mod error;
pub mod lease;
pub mod options;
pub mod protocol;
mod sockets;
pub mod wire;

pub use error::{Error, Result};
