//! Kernel constants, one module per uapi header they come from. No logic:
//! names and numbers, so a reader can check each against the header.

pub mod if_bridge;
pub mod if_link;
pub mod ip;
pub mod rtnetlink;
pub mod veth;
