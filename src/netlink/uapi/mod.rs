//! Kernel constants, one module per uapi header they come from. No logic:
//! names and numbers, so a reader can check each against the header.

pub mod fib_rules;
pub mod if_addr;
pub mod if_bridge;
pub mod if_flags;
pub mod if_link;
pub mod ip;
pub mod neighbour;
pub mod netlink;
pub mod nf_tables;
pub mod nfnetlink;
pub mod rtnetlink;
pub mod socket;
pub mod veth;
