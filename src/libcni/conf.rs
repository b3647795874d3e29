//! Network configurations as libcni finds them in a directory: `.conflist`
//! files first, then single-plugin `.conf`/`.json` files wrapped into lists.

use crate::cni::version;
use crate::cni::{CniResult, Code, Error};
use crate::quote::quoted;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One plugin of a list: its type and its whole JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginConf {
    pub plugin_type: String,
    pub raw: Map<String, Value>,
}

/// A network: its plugins in order, with the bytes libcni caches.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkList {
    pub name: String,
    pub cni_version: String,
    pub disable_check: bool,
    pub disable_gc: bool,
    pub plugins: Vec<PluginConf>,
    /// The file's bytes (a wrapped single conf: the wrapper libcni builds).
    pub bytes: Vec<u8>,
    pub source: PathBuf,
}

fn err(source: &Path, msg: impl std::fmt::Display) -> Error {
    Error::invalid_config(format!("{}: {msg}", source.display()))
}

/// As `err`, keeping the cause as the error's source.
fn err_from(source: &Path, cause: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::caused_by(Code::InvalidConfig, source.display(), cause)
}

/// `true`/`false` or the strings "true"/"false" in any case, as libcni accepts.
fn loose_bool(v: Option<&Value>, key: &str, source: &Path) -> CniResult<bool> {
    match v {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(other) => Err(err(source, format!("{key} must be a boolean, not {other}"))),
    }
}

fn plugin_conf(v: &Value, source: &Path, index: usize) -> CniResult<PluginConf> {
    let raw = v
        .as_object()
        .ok_or_else(|| err(source, format!("plugin {index} is not a JSON object")))?;
    let plugin_type = raw.get("type").and_then(Value::as_str).unwrap_or_default();
    if plugin_type.is_empty() {
        return Err(err(source, format!("plugin {index} has no 'type'")));
    }
    Ok(PluginConf {
        plugin_type: plugin_type.to_string(),
        raw: raw.clone(),
    })
}

/// The list's version: the highest of `cniVersions` (≤ the newest we speak) and
/// `cniVersion`; without `cniVersions`, `cniVersion` verbatim.
fn resolve_version(obj: &Map<String, Value>, source: &Path) -> CniResult<String> {
    let declared = match obj.get("cniVersion") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(err(
                source,
                format!("cniVersion must be a string, not {other}"),
            ));
        }
    };
    let Some(list) = obj.get("cniVersions").filter(|v| !v.is_null()) else {
        return Ok(declared);
    };
    let list = list
        .as_array()
        .ok_or_else(|| err(source, "cniVersions must be a list of strings"))?;
    let mut candidates: Vec<String> = Vec::new();
    for v in list {
        let s = v
            .as_str()
            .ok_or_else(|| err(source, "cniVersions must be a list of strings"))?;
        version::parse(s).map_err(|e| {
            err(
                source,
                format!("invalid cniVersions entry {s}: {e}", s = quoted(&s)),
            )
        })?;
        candidates.push(s.to_string());
    }
    if !declared.is_empty() {
        candidates.push(declared.clone());
    }
    let mut best: Option<String> = None;
    for c in candidates {
        let newest = version::compare(&c, version::CURRENT).map_err(|e| err_from(source, e))?;
        if newest == std::cmp::Ordering::Greater {
            continue;
        }
        let better = match &best {
            None => true,
            Some(b) => {
                version::compare(&c, b).map_err(|e| err_from(source, e))?
                    == std::cmp::Ordering::Greater
            }
        };
        if better {
            best = Some(c);
        }
    }
    Ok(best.unwrap_or(declared))
}

/// Parses a `.conflist`.
pub fn list_from_bytes(bytes: &[u8], source: &Path) -> CniResult<NetworkList> {
    let obj: Map<String, Value> = crate::cni::json::from_slice(bytes)
        .map_err(|e| err(source, format!("error parsing configuration list: {e}")))?;
    let name = match obj.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(err(source, "error parsing configuration list: no name")),
    };
    let plugins = match obj.get("plugins") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(err(
                source,
                "error parsing configuration list: no plugins in list",
            ));
        }
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| plugin_conf(v, source, i))
            .collect::<CniResult<_>>()?,
        Some(_) => return Err(err(source, "'plugins' must be a list")),
    };
    let load_only_inlined = loose_bool(
        obj.get("loadOnlyInlinedPlugins"),
        "loadOnlyInlinedPlugins",
        source,
    )?;
    if load_only_inlined && plugins.is_empty() {
        return Err(err(
            source,
            "loadOnlyInlinedPlugins is set but the list has no plugins",
        ));
    }
    Ok(NetworkList {
        cni_version: resolve_version(&obj, source)?,
        disable_check: loose_bool(obj.get("disableCheck"), "disableCheck", source)?,
        disable_gc: loose_bool(obj.get("disableGC"), "disableGC", source)?,
        name,
        plugins,
        bytes: bytes.to_vec(),
        source: source.to_path_buf(),
    })
}

/// Parses a single-plugin `.conf`/`.json` and wraps it into a one-plugin list.
pub fn conf_from_bytes(bytes: &[u8], source: &Path) -> CniResult<NetworkList> {
    let value: Value = crate::cni::json::from_slice(bytes)
        .map_err(|e| err(source, format!("error parsing configuration: {e}")))?;
    let plugin = plugin_conf(&value, source, 0)?;
    let name = plugin
        .raw
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let cni_version = plugin
        .raw
        .get("cniVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // libcni marshals a map: keys sorted, compact.
    let wrapper = serde_json::json!({
        "cniVersion": cni_version,
        "name": name,
        "plugins": [value],
    });
    Ok(NetworkList {
        name,
        cni_version,
        disable_check: false,
        disable_gc: false,
        plugins: vec![plugin],
        bytes: crate::cni::result::go_escape(&wrapper.to_string()).into_bytes(),
        source: source.to_path_buf(),
    })
}

/// Regular files of `dir` with one of these extensions, sorted by name.
fn files_with(dir: &Path, extensions: &[&str]) -> CniResult<Vec<PathBuf>> {
    crate::files::files_with(dir, extensions).map_err(|e| err_from(dir, e))
}

fn read(path: &Path) -> CniResult<Vec<u8>> {
    crate::files::read_limited(path, crate::files::MAX_FILE).map_err(|e| err_from(path, e))
}

/// Every network of the directory, in libcni's lookup order (lists first).
pub fn load_all(dir: &Path) -> CniResult<Vec<NetworkList>> {
    let mut out = Vec::new();
    for path in files_with(dir, &["conflist"])? {
        out.push(with_extra_plugins(
            list_from_bytes(&read(&path)?, &path)?,
            dir,
        )?);
    }
    for path in files_with(dir, &["conf", "json"])? {
        out.push(conf_from_bytes(&read(&path)?, &path)?);
    }
    Ok(out)
}

/// The network called `name` (libcni's `LoadNetworkConf`): any unparsable file
/// on the way is an error, as in libcni.
pub fn load(dir: &Path, name: &str) -> CniResult<NetworkList> {
    let lists = files_with(dir, &["conflist"])?;
    let singles = files_with(dir, &["conf", "json"])?;
    if lists.is_empty() && singles.is_empty() {
        return Err(Error::invalid_config(format!(
            "no net configurations found in {}",
            dir.display()
        )));
    }
    for path in &lists {
        let list = list_from_bytes(&read(path)?, path)?;
        if list.name == name {
            return with_extra_plugins(list, dir);
        }
    }
    for path in &singles {
        let list = conf_from_bytes(&read(path)?, path)?;
        if list.name == name {
            return Ok(list);
        }
    }
    Err(Error::invalid_config(format!(
        "no net configuration with name {name} in {}",
        dir.display(),
        name = quoted(&name)
    )))
}

/// Appends `<dir>/<name>/*.conf` unless the list says loadOnlyInlinedPlugins.
pub fn with_extra_plugins(mut list: NetworkList, dir: &Path) -> CniResult<NetworkList> {
    let obj: Map<String, Value> = crate::cni::json::from_slice(&list.bytes).unwrap_or_default();
    let only_inlined = loose_bool(
        obj.get("loadOnlyInlinedPlugins"),
        "loadOnlyInlinedPlugins",
        &list.source,
    )?;
    if !only_inlined && crate::cni::env::is_valid_name(&list.name) {
        for path in files_with(&dir.join(&list.name), &["conf"])? {
            let value: Value = crate::cni::json::from_slice(&read(&path)?)
                .map_err(|e| err(&path, format!("error parsing configuration: {e}")))?;
            list.plugins
                .push(plugin_conf(&value, &path, list.plugins.len())?);
        }
    }
    if list.plugins.is_empty() {
        return Err(err(&list.source, "no plugin configs found"));
    }
    Ok(list)
}

#[cfg(test)]
#[path = "conf_tests.rs"]
mod tests;
