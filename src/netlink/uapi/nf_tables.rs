//! From linux/netfilter/nf_tables.h (the part more than one encoder uses).

// Attributes of a `meta` expression.
pub const NFTA_META_DREG: u16 = 1;
pub const NFTA_META_KEY: u16 = 2;

// enum nft_meta_keys
pub const NFT_META_IIFNAME: u32 = 6;
pub const NFT_META_NFPROTO: u32 = 15;
