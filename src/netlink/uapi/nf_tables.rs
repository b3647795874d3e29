//! From linux/netfilter/nf_tables.h (the part more than one encoder uses).

// Attributes of a `meta` expression.
pub const NFTA_META_DREG: u16 = 1;
pub const NFTA_META_KEY: u16 = 2;

// enum nft_meta_keys
pub const NFT_META_IIFNAME: u32 = 6;
pub const NFT_META_NFPROTO: u32 = 15;

// enum nf_tables_msg_types: the messages whose commit leaves objects for the
// deferred destruction.
pub const NFT_MSG_DELTABLE: u16 = 2;
pub const NFT_MSG_DELCHAIN: u16 = 5;
pub const NFT_MSG_DELRULE: u16 = 8;
pub const NFT_MSG_DELSET: u16 = 11;
pub const NFT_MSG_DELSETELEM: u16 = 14;
pub const NFT_MSG_DELOBJ: u16 = 20;
pub const NFT_MSG_DELFLOWTABLE: u16 = 24;
pub const NFT_MSG_DESTROYTABLE: u16 = 26;
pub const NFT_MSG_DESTROYFLOWTABLE: u16 = 32;
