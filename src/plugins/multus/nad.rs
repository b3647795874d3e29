//! NetworkAttachmentDefinitions from files, where Multus asks the API server:
//! the manifests in `netAttachDefDir` (JSON: one object, or a `List` as
//! `kubectl get net-attach-def -A -o json` prints it), and the spec's rules
//! for a NAD's CNI config (§3.4.1): a non-empty `spec.config` (its `name`
//! filled in from the NAD when missing), else the first config in `confDir`
//! whose `name` is the NAD's.

use crate::cni::result::go_escape;
use crate::cni::{CniResult, Code, Error};
use crate::libcni::conf;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// NADs may name a device-plugin resource; it needs the kubelet, so it is
/// reported rather than silently ignored.
pub const RESOURCE_NAME_ANNOTATION: &str = "k8s.v1.cni.cncf.io/resourceName";

/// One NetworkAttachmentDefinition and the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Nad {
    pub namespace: String,
    pub name: String,
    pub config: String,
    pub annotations: BTreeMap<String, String>,
    pub source: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Object {
    kind: String,
    metadata: Meta,
    spec: Spec,
    items: Option<Vec<Object>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Meta {
    name: String,
    namespace: String,
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Spec {
    config: String,
}

/// Every NAD of the directory.
#[derive(Debug, Default)]
pub struct NadIndex {
    nads: Vec<Nad>,
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::caused_by(Code::Io, format!("failed to {what} {}", path.display()), e)
}

/// Regular files of `dir` with one of `extensions`, sorted by name; a missing
/// directory has none.
fn files_with(dir: &Path, extensions: &[&str]) -> CniResult<Vec<PathBuf>> {
    crate::files::files_with(dir, extensions).map_err(|e| io_error("read", dir, e))
}

fn read(path: &Path) -> CniResult<Vec<u8>> {
    crate::files::read_limited(path, crate::files::MAX_FILE).map_err(|e| io_error("read", path, e))
}

impl NadIndex {
    /// Reads every `.json` manifest of `dir`; a manifest that does not parse
    /// fails the lookup (as libcni treats a bad config), objects of other
    /// kinds are skipped.
    pub fn load(dir: &Path) -> CniResult<NadIndex> {
        let mut index = NadIndex::default();
        for path in files_with(dir, &["json"])? {
            let object: Object = crate::cni::json::from_slice(&read(&path)?).map_err(|e| {
                Error::caused_by(
                    Code::Decode,
                    format!(
                        "failed to parse network attachment definitions in {}",
                        path.display()
                    ),
                    e,
                )
            })?;
            index.collect(object, &path, false)?;
        }
        Ok(index)
    }

    fn collect(&mut self, object: Object, path: &Path, in_list: bool) -> CniResult<()> {
        if let Some(items) = object.items {
            for item in items {
                self.collect(item, path, true)?;
            }
            return Ok(());
        }
        let is_nad = object.kind == "NetworkAttachmentDefinition"
            || (object.kind.is_empty() && (in_list || !object.metadata.name.is_empty()));
        if !is_nad {
            return Ok(());
        }
        if object.metadata.name.is_empty() {
            return Err(Error::invalid_config(format!(
                "{}: a network attachment definition without metadata.name",
                path.display()
            )));
        }
        let namespace = if object.metadata.namespace.is_empty() {
            "default".to_string()
        } else {
            object.metadata.namespace
        };
        self.nads.push(Nad {
            namespace,
            name: object.metadata.name,
            config: object.spec.config,
            annotations: object.metadata.annotations,
            source: path.to_path_buf(),
        });
        Ok(())
    }

    /// The NAD `namespace/name`; defined twice is an error naming both files.
    pub fn find(&self, namespace: &str, name: &str) -> CniResult<Option<&Nad>> {
        let found: Vec<&Nad> = self
            .nads
            .iter()
            .filter(|n| n.namespace == namespace && n.name == name)
            .collect();
        match found[..] {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            [first, second, ..] => Err(Error::invalid_config(format!(
                "network-attachment-definition {namespace}/{name} is defined twice ({} and {})",
                first.source.display(),
                second.source.display()
            ))),
        }
    }
}

/// The CNI config of a NAD (the spec's §3.4.1, the NAD client's `GetCNIConfig`).
pub fn cni_config(nad: &Nad, conf_dir: &Path) -> CniResult<Vec<u8>> {
    if nad.config.is_empty() {
        return config_from_dir(&nad.name, conf_dir);
    }
    let mut raw: Map<String, Value> = crate::cni::json::from_str(&nad.config).map_err(|e| {
        Error::caused_by(
            Code::InvalidConfig,
            format!(
                "failed to unmarshal Spec.Config of {}/{} ({})",
                nad.namespace,
                nad.name,
                nad.source.display()
            ),
            e,
        )
    })?;
    let named = raw
        .get("name")
        .is_some_and(|n| !n.is_null() && n.as_str() != Some(""));
    if named {
        return Ok(nad.config.as_bytes().to_vec());
    }
    // §3.4.2: a config without a name gets the NAD's (Go re-marshals a map:
    // keys sorted, compact).
    raw.insert("name".into(), Value::String(nad.name.clone()));
    Ok(go_escape(&Value::Object(raw).to_string()).into_bytes())
}

/// The first `.conf`, `.json` or `.conflist` of `dir` (one pass, by file name)
/// whose `name` is `name` (any, when `name` is empty). A file that does not
/// parse, or a matching `.conf` without `type`, is an error.
pub fn config_from_dir(name: &str, dir: &Path) -> CniResult<Vec<u8>> {
    let files = files_with(dir, &["conf", "json", "conflist"])?;
    if files.is_empty() {
        return Err(Error::invalid_config(format!(
            "no networks found in {}",
            dir.display()
        )));
    }
    for path in files {
        let bytes = read(&path)?;
        let found = if path.extension().is_some_and(|x| x == "conflist") {
            conf::list_from_bytes(&bytes, &path)?.name
        } else {
            conf::conf_from_bytes(&bytes, &path)?.name
        };
        if name.is_empty() || found == name {
            return Ok(bytes);
        }
    }
    Err(Error::invalid_config(format!(
        "no network available in the name {name} in cni dir {}",
        dir.display()
    )))
}

#[cfg(test)]
#[path = "nad_tests.rs"]
mod tests;
