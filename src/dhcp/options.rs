//! The plugin's `provide` and `request` lists as option codes and bytes, with
//! the reference's option names (plugins/ipam/dhcp/options.go).

use super::wire::code;
use super::{Error, Result};
use crate::quote::quoted;
use serde::Deserialize;

/// `provide` entry as in the reference config: `{"option": name-or-code, "value": str}`
/// or `{"option": ..., "fromArg": key}` (the value of that CNI_ARGS key).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Provide {
    pub option: String,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default, rename = "fromArg")]
    pub from_arg: Option<String>,
}

/// `request` entry: `{"option": name-or-code, "skipDefault": bool}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RequestOption {
    pub option: String,
    #[serde(default, rename = "skipDefault")]
    pub skip_default: bool,
}

/// The names the reference accepts (its `optionNameToID`).
pub const NAMES: [(&str, u8); 6] = [
    ("dhcp-client-identifier", code::CLIENT_ID),
    ("subnet-mask", code::SUBNET_MASK),
    ("routers", code::ROUTER),
    ("host-name", code::HOST_NAME),
    ("user-class", code::USER_CLASS),
    ("vendor-class-identifier", code::VENDOR_CLASS_ID),
];

/// What the reference requests unless an entry says `skipDefault`: routers, subnet mask.
pub const DEFAULT_REQUEST: [u8; 2] = [code::ROUTER, code::SUBNET_MASK];

/// Longest value of one provided option (one option instance).
const MAX_VALUE: usize = 255;

/// The code of a reference option name or of a decimal code. 0 (pad) and 255
/// (end) are refused: the reference takes them and sends a broken message.
pub fn code_of(name: &str) -> Result<u8> {
    if let Some((_, c)) = NAMES.iter().find(|(n, _)| *n == name) {
        return Ok(*c);
    }
    // As Go's ParseUint(name, 10, 8): digits only, no sign.
    if !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_digit())
        && let Ok(c @ 1..=254) = name.parse::<u8>()
    {
        return Ok(c);
    }
    Err(Error::UnknownOption(name.to_string()))
}

/// The provided options as (code, bytes), value strings sent as their bytes.
/// As the reference: a `fromArg` key present in CNI_ARGS wins over `value`, a
/// later entry for the same code replaces an earlier one, values are at most
/// 255 bytes. An entry that gives nothing to send (no value, `fromArg` key
/// absent) is refused rather than silently dropped.
pub fn provided(list: &[Provide], cni_args: &[(String, String)]) -> Result<Vec<(u8, Vec<u8>)>> {
    let mut out: Vec<(u8, Vec<u8>)> = Vec::new();
    for p in list {
        let c = code_of(&p.option)?;
        let value = p.value.as_deref().filter(|v| !v.is_empty());
        if let Some(v) = value
            && v.len() > MAX_VALUE
        {
            return Err(Error::InvalidOption(format!(
                "value of option {} is {} bytes, more than {MAX_VALUE}",
                quoted(&p.option),
                v.len()
            )));
        }
        let from_arg = match p.from_arg.as_deref() {
            Some(key) => {
                let found = cni_args.iter().rev().find(|(k, _)| k == key);
                match (found, value) {
                    (Some((_, v)), _) if v.len() > MAX_VALUE => {
                        return Err(Error::InvalidOption(format!(
                            "value of option {} from CNI_ARGS {key} is {} bytes, more than \
                             {MAX_VALUE}",
                            quoted(&p.option),
                            v.len(),
                            key = quoted(&key)
                        )));
                    }
                    (Some((_, v)), _) => Some(v.as_str()),
                    (None, Some(_)) => None,
                    (None, None) => {
                        return Err(Error::InvalidOption(format!(
                            "option {} takes its value from CNI_ARGS {key}, which is not set",
                            quoted(&p.option),
                            key = quoted(&key)
                        )));
                    }
                }
            }
            None => None,
        };
        let Some(v) = from_arg.or(value) else {
            return Err(Error::InvalidOption(format!(
                "option {} has neither a value nor fromArg",
                quoted(&p.option)
            )));
        };
        let bytes = v.as_bytes().to_vec();
        match out.iter_mut().find(|(o, _)| *o == c) {
            Some(slot) => slot.1 = bytes,
            None => out.push((c, bytes)),
        }
    }
    Ok(out)
}

/// The parameter request list (option 55): the listed codes in order, then
/// routers and subnet mask unless an entry says `skipDefault`; no duplicates.
/// Entries with an empty option only carry `skipDefault`, as in the reference.
pub fn requested(list: &[RequestOption]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut add = |c: u8| {
        if !out.contains(&c) {
            out.push(c);
        }
    };
    for r in list.iter().filter(|r| !r.option.is_empty()) {
        add(code_of(&r.option)?);
    }
    if !list.iter().any(|r| r.skip_default) {
        DEFAULT_REQUEST.iter().for_each(|c| add(*c));
    }
    Ok(out)
}

/// Option 61 as the reference sends it: type 0 then `<cid>/<net>/<if>` cut to
/// 254 bytes (so the option is at most 255).
pub fn client_id(container_id: &str, net_name: &str, ifname: &str) -> Vec<u8> {
    let text = format!("{container_id}/{net_name}/{ifname}");
    let bytes = text.as_bytes();
    let mut id = Vec::with_capacity(bytes.len().min(254) + 1);
    id.push(0);
    id.extend_from_slice(&bytes[..bytes.len().min(254)]);
    id
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
