//! Kernel constants, one module per uapi header they come from. No logic:
//! names and numbers, so a reader can check each against the header.

pub mod fib_rules;
pub mod genetlink;
pub mod if_addr;
pub mod if_bridge;
pub mod if_ether;
pub mod if_flags;
pub mod if_link;
pub mod ip;
pub mod mptcp;
pub mod mptcp_pm;
pub mod neighbour;
pub mod net_namespace;
pub mod netconf;
pub mod netfilter;
pub mod netfilter_ipv4;
pub mod netlink;
pub mod nf_conntrack_common;
pub mod nf_nat;
pub mod nf_tables;
pub mod nfnetlink;
pub mod nfnetlink_conntrack;
pub mod pkt_cls;
pub mod pkt_sched;
pub mod rtnetlink;
pub mod socket;
pub mod sockios;
pub mod tc_mirred;
pub mod veth;
