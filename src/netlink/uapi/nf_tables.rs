//! From linux/netfilter/nf_tables.h: the messages, the attributes of tables,
//! chains, rules and of each expression we encode, and their values.

// enum nft_registers
pub const NFT_REG_VERDICT: u32 = 0;
pub const NFT_REG_1: u32 = 1;
pub const NFT_REG_2: u32 = 2;

// enum nft_verdicts (sharing their space with linux/netfilter.h's NF_*)
pub const NFT_JUMP: i32 = -3;
pub const NFT_GOTO: i32 = -4;
pub const NFT_RETURN: i32 = -5;

// enum nf_tables_msg_types
pub const NFT_MSG_NEWTABLE: u16 = 0;
pub const NFT_MSG_DELTABLE: u16 = 2;
pub const NFT_MSG_NEWCHAIN: u16 = 3;
pub const NFT_MSG_GETCHAIN: u16 = 4;
pub const NFT_MSG_DELCHAIN: u16 = 5;
pub const NFT_MSG_NEWRULE: u16 = 6;
pub const NFT_MSG_GETRULE: u16 = 7;
pub const NFT_MSG_DELRULE: u16 = 8;
pub const NFT_MSG_GETSET: u16 = 10;
pub const NFT_MSG_DELSET: u16 = 11;
pub const NFT_MSG_DELSETELEM: u16 = 14;
pub const NFT_MSG_DELOBJ: u16 = 20;
pub const NFT_MSG_DELFLOWTABLE: u16 = 24;
pub const NFT_MSG_DESTROYTABLE: u16 = 26;
pub const NFT_MSG_DESTROYFLOWTABLE: u16 = 32;

// enum nft_list_attributes
pub const NFTA_LIST_ELEM: u16 = 1;

// enum nft_hook_attributes
pub const NFTA_HOOK_HOOKNUM: u16 = 1;
pub const NFTA_HOOK_PRIORITY: u16 = 2;

// enum nft_table_attributes
pub const NFTA_TABLE_NAME: u16 = 1;
pub const NFTA_TABLE_FLAGS: u16 = 2;
pub const NFTA_TABLE_USERDATA: u16 = 6;

// enum nft_chain_attributes
pub const NFTA_CHAIN_TABLE: u16 = 1;
pub const NFTA_CHAIN_HANDLE: u16 = 2;
pub const NFTA_CHAIN_NAME: u16 = 3;
pub const NFTA_CHAIN_HOOK: u16 = 4;
pub const NFTA_CHAIN_POLICY: u16 = 5;
pub const NFTA_CHAIN_USE: u16 = 6;
pub const NFTA_CHAIN_TYPE: u16 = 7;

// enum nft_rule_attributes
pub const NFTA_RULE_TABLE: u16 = 1;
pub const NFTA_RULE_CHAIN: u16 = 2;
pub const NFTA_RULE_HANDLE: u16 = 3;
pub const NFTA_RULE_EXPRESSIONS: u16 = 4;
pub const NFTA_RULE_COMPAT: u16 = 5;
pub const NFTA_RULE_USERDATA: u16 = 7;

// enum nft_rule_compat_attributes
pub const NFTA_RULE_COMPAT_PROTO: u16 = 1;
pub const NFTA_RULE_COMPAT_FLAGS: u16 = 2;

// enum nft_set_attributes
pub const NFTA_SET_TABLE: u16 = 1;

// enum nft_data_attributes
pub const NFTA_DATA_VALUE: u16 = 1;
pub const NFTA_DATA_VERDICT: u16 = 2;

// enum nft_verdict_attributes
pub const NFTA_VERDICT_CODE: u16 = 1;
pub const NFTA_VERDICT_CHAIN: u16 = 2;

// enum nft_expr_attributes
pub const NFTA_EXPR_NAME: u16 = 1;
pub const NFTA_EXPR_DATA: u16 = 2;

// enum nft_immediate_attributes
pub const NFTA_IMMEDIATE_DREG: u16 = 1;
pub const NFTA_IMMEDIATE_DATA: u16 = 2;

// enum nft_bitwise_attributes
pub const NFTA_BITWISE_SREG: u16 = 1;
pub const NFTA_BITWISE_DREG: u16 = 2;
pub const NFTA_BITWISE_LEN: u16 = 3;
pub const NFTA_BITWISE_MASK: u16 = 4;
pub const NFTA_BITWISE_XOR: u16 = 5;
pub const NFTA_BITWISE_OP: u16 = 6;

// enum nft_cmp_ops
pub const NFT_CMP_EQ: u32 = 0;
pub const NFT_CMP_NEQ: u32 = 1;

// enum nft_cmp_attributes
pub const NFTA_CMP_SREG: u16 = 1;
pub const NFTA_CMP_OP: u16 = 2;
pub const NFTA_CMP_DATA: u16 = 3;

// enum nft_payload_bases
pub const NFT_PAYLOAD_LL_HEADER: u32 = 0;
pub const NFT_PAYLOAD_NETWORK_HEADER: u32 = 1;
pub const NFT_PAYLOAD_TRANSPORT_HEADER: u32 = 2;

// enum nft_payload_attributes
pub const NFTA_PAYLOAD_DREG: u16 = 1;
pub const NFTA_PAYLOAD_BASE: u16 = 2;
pub const NFTA_PAYLOAD_OFFSET: u16 = 3;
pub const NFTA_PAYLOAD_LEN: u16 = 4;

// enum nft_meta_keys
pub const NFT_META_MARK: u32 = 3;
pub const NFT_META_IIFNAME: u32 = 6;
pub const NFT_META_OIFNAME: u32 = 7;
pub const NFT_META_NFPROTO: u32 = 15;
pub const NFT_META_L4PROTO: u32 = 16;

// enum nft_meta_attributes
pub const NFTA_META_DREG: u16 = 1;
pub const NFTA_META_KEY: u16 = 2;

// enum nft_ct_keys
pub const NFT_CT_STATE: u32 = 0;

// enum nft_ct_attributes
pub const NFTA_CT_DREG: u16 = 1;
pub const NFTA_CT_KEY: u16 = 2;

// enum nft_counter_attributes
pub const NFTA_COUNTER_BYTES: u16 = 1;
pub const NFTA_COUNTER_PACKETS: u16 = 2;

// enum nft_fib_attributes
pub const NFTA_FIB_DREG: u16 = 1;
pub const NFTA_FIB_RESULT: u16 = 2;
pub const NFTA_FIB_FLAGS: u16 = 3;

// enum nft_fib_result
pub const NFT_FIB_RESULT_ADDRTYPE: u32 = 3;

// enum nft_fib_flags
pub const NFTA_FIB_F_DADDR: u32 = 1 << 1;

// enum nft_nat_types
pub const NFT_NAT_DNAT: u32 = 1;

// enum nft_nat_attributes
pub const NFTA_NAT_TYPE: u16 = 1;
pub const NFTA_NAT_FAMILY: u16 = 2;
pub const NFTA_NAT_REG_ADDR_MIN: u16 = 3;
pub const NFTA_NAT_REG_PROTO_MIN: u16 = 5;
pub const NFTA_NAT_FLAGS: u16 = 7;

// enum nft_match_attributes and enum nft_target_attributes (numbered alike)
pub const NFTA_MATCH_NAME: u16 = 1;
pub const NFTA_MATCH_REV: u16 = 2;
pub const NFTA_MATCH_INFO: u16 = 3;
pub const NFTA_TARGET_NAME: u16 = 1;
pub const NFTA_TARGET_REV: u16 = 2;
pub const NFTA_TARGET_INFO: u16 = 3;
