//! The multus config: Multus's thin-plugin keys, plus the two this
//! implementation adds to work without an API server (`podDir`,
//! `netAttachDefDir`), validated once per call.

use super::log::{Level, Logger};
use crate::cni::config::absolute_path;
use crate::cni::{CniResult, Error, Invocation};
use crate::libcni::Runtime;
use crate::libcni::cache::Cache;
use crate::quote::quoted;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const DEFAULT_CONF_DIR: &str = "/etc/cni/multus/net.d";
pub const DEFAULT_CNI_DIR: &str = "/var/lib/cni/multus";
pub const DEFAULT_BIN_DIR: &str = "/opt/cni/bin";
pub const DEFAULT_POD_DIR: &str = "/etc/cni/multus/pods";
pub const DEFAULT_NAD_DIR: &str = "/etc/cni/multus/net-attach-defs";

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    conf_dir: String,
    cni_dir: String,
    bin_dir: String,
    delegates: Option<Vec<Map<String, Value>>>,
    cluster_network: String,
    default_networks: Vec<String>,
    kubeconfig: String,
    log_file: String,
    log_level: String,
    log_to_stderr: Option<bool>,
    readiness_indicator_file: String,
    namespace_isolation: bool,
    global_namespaces: String,
    system_namespaces: Option<Vec<String>>,
    multus_namespace: String,
    retry_delete_on_error: bool,
    auxiliary_cni_chain_name: String,
    pod_dir: String,
    net_attach_def_dir: String,
    runtime_config: Option<RuntimeConfig>,
    annotation_port_mappings: Option<bool>,
    max_attachments: Option<u64>,
    kubelet_checkpoint_file: String,
}

/// Attachments a pod may have (the default network included) unless
/// `maxAttachments` says otherwise: each one costs an interface, addresses from
/// shared ranges and a delegate run, and tenants choose how many they ask for.
pub const DEFAULT_MAX_ATTACHMENTS: usize = 32;
/// The most `maxAttachments` may allow: no pod ever got more attachments.
pub const MAX_ATTACHMENTS_LIMIT: usize = 4096;

/// `portMappings` as Multus re-encodes it for delegates (lower-case keys,
/// whatever casing the runtime sent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PortMapEntry {
    #[serde(rename = "hostPort")]
    pub host_port: i64,
    #[serde(rename = "containerPort")]
    pub container_port: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
}

/// `bandwidth` as Multus re-encodes it: every key, always.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BandwidthEntry {
    #[serde(rename = "ingressRate")]
    pub ingress_rate: i64,
    #[serde(rename = "ingressBurst")]
    pub ingress_burst: i64,
    #[serde(rename = "egressRate")]
    pub egress_rate: i64,
    #[serde(rename = "egressBurst")]
    pub egress_burst: i64,
}

/// What the runtime passed multus in `runtimeConfig`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RuntimeConfig {
    pub port_mappings: Option<Vec<PortMapEntry>>,
    pub bandwidth: Option<BandwidthEntry>,
    pub ips: Option<Vec<String>>,
    pub mac: String,
    pub infiniband_guid: String,
    pub device_id: String,
    #[serde(rename = "CNIDeviceInfoFile")]
    pub device_info_file: String,
    #[serde(rename = "io.kubernetes.cri.pod-annotations")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
}

/// The pod as CNI_ARGS names it (Kubernetes runtimes send all four).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct K8sArgs {
    pub namespace: String,
    pub name: String,
    pub infra_container_id: String,
    pub uid: String,
}

impl K8sArgs {
    pub fn of(inv: &Invocation) -> K8sArgs {
        let get = |k: &str| inv.cni_args.get(k).unwrap_or_default().to_string();
        K8sArgs {
            namespace: get("K8S_POD_NAMESPACE"),
            name: get("K8S_POD_NAME"),
            infra_container_id: get("K8S_POD_INFRA_CONTAINER_ID"),
            uid: get("K8S_POD_UID"),
        }
    }

    /// Multus's error prefix for a pod: `[namespace/name/uid]`.
    pub fn tag(&self) -> String {
        format!("{}/{}/{}", self.namespace, self.name, self.uid)
    }
}

/// Everything a verb needs from the config, validated.
#[derive(Debug)]
pub struct Conf {
    pub conf_dir: PathBuf,
    pub cni_dir: PathBuf,
    pub bin_dir: PathBuf,
    pub pod_dir: PathBuf,
    pub nad_dir: PathBuf,
    pub readiness_file: Option<PathBuf>,
    pub delegates: Vec<Map<String, Value>>,
    pub cluster_network: String,
    pub default_networks: Vec<String>,
    pub kubeconfig: String,
    pub namespace_isolation: bool,
    pub global_namespaces: Vec<String>,
    pub system_namespaces: Vec<String>,
    pub multus_namespace: String,
    pub retry_delete_on_error: bool,
    pub auxiliary_chain: String,
    pub runtime_config: RuntimeConfig,
    /// Whether a selection's `portMappings` reach its delegates (Multus: yes).
    pub annotation_port_mappings: bool,
    pub max_attachments: usize,
    /// The kubelet's device allocations (device-plugin pools).
    pub kubelet_checkpoint: PathBuf,
    pub cni_version: String,
    pub log: Logger,
}

impl Conf {
    pub fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        let delegates = k.delegates.unwrap_or_default();
        if delegates.is_empty() && k.cluster_network.is_empty() {
            return Err(Error::invalid_config(
                "at least one delegate/clusterNetwork must be specified",
            ));
        }
        let level = if k.log_level.is_empty() {
            Level::Panic
        } else {
            Level::parse(&k.log_level).ok_or_else(|| {
                Error::invalid_config(format!(
                    "invalid logLevel {}: not panic/error/verbose/debug",
                    quoted(&k.log_level)
                ))
            })?
        };
        let log_file = (!k.log_file.is_empty())
            .then(|| absolute_path(Some(&k.log_file), "", "logFile"))
            .transpose()?;
        let readiness_file = (!k.readiness_indicator_file.is_empty())
            .then(|| {
                absolute_path(
                    Some(&k.readiness_indicator_file),
                    "",
                    "readinessindicatorfile",
                )
            })
            .transpose()?;
        let global_namespaces = if k.global_namespaces.is_empty() {
            vec!["default".to_string()]
        } else {
            k.global_namespaces
                .split(',')
                .map(|s| s.trim().to_string())
                .collect()
        };
        let max_attachments = match k.max_attachments {
            None => DEFAULT_MAX_ATTACHMENTS,
            Some(n) if (1..=MAX_ATTACHMENTS_LIMIT as u64).contains(&n) => n as usize,
            Some(n) => {
                return Err(Error::invalid_config(format!(
                    "invalid maxAttachments {n}: must be 1 to {MAX_ATTACHMENTS_LIMIT}"
                )));
            }
        };
        let multus_namespace = if k.multus_namespace.is_empty() {
            "kube-system".to_string()
        } else {
            k.multus_namespace
        };
        Ok(Conf {
            conf_dir: absolute_path(Some(&k.conf_dir), DEFAULT_CONF_DIR, "confDir")?,
            cni_dir: absolute_path(Some(&k.cni_dir), DEFAULT_CNI_DIR, "cniDir")?,
            bin_dir: absolute_path(Some(&k.bin_dir), DEFAULT_BIN_DIR, "binDir")?,
            pod_dir: absolute_path(Some(&k.pod_dir), DEFAULT_POD_DIR, "podDir")?,
            nad_dir: absolute_path(
                Some(&k.net_attach_def_dir),
                DEFAULT_NAD_DIR,
                "netAttachDefDir",
            )?,
            readiness_file,
            delegates,
            cluster_network: k.cluster_network,
            default_networks: k.default_networks,
            kubeconfig: k.kubeconfig,
            namespace_isolation: k.namespace_isolation,
            global_namespaces,
            system_namespaces: k
                .system_namespaces
                .unwrap_or_else(|| vec!["kube-system".to_string()]),
            multus_namespace,
            retry_delete_on_error: k.retry_delete_on_error,
            auxiliary_chain: k.auxiliary_cni_chain_name,
            runtime_config: k.runtime_config.unwrap_or_default(),
            annotation_port_mappings: k.annotation_port_mappings.unwrap_or(true),
            max_attachments,
            kubelet_checkpoint: absolute_path(
                Some(&k.kubelet_checkpoint_file),
                super::devices::KUBELET_CHECKPOINT,
                "kubeletCheckpointFile",
            )?,
            cni_version: inv.conf.cni_version().to_string(),
            log: Logger {
                level,
                stderr: k.log_to_stderr.unwrap_or(true),
                file: log_file,
            },
        })
    }

    /// Keys that only mean something with an API server are accepted, and said
    /// once to be unused, so a Multus config drops in unchanged.
    pub fn report_unused(&self) {
        if !self.kubeconfig.is_empty() {
            eprintln!(
                "multus: kubeconfig {} is not used: pods and network attachment \
                 definitions are read from the runtime's pod annotations and from files",
                quoted(&self.kubeconfig)
            );
        }
    }

    /// Whether the readiness indicator file is there (no file configured: ready).
    pub fn ready(&self) -> CniResult<bool> {
        match &self.readiness_file {
            None => Ok(true),
            Some(path) => match std::fs::metadata(path) {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(Error::caused_by(
                    crate::cni::Code::Internal,
                    format!("failed to check readinessindicatorfile {}", path.display()),
                    e,
                )),
            },
        }
    }

    /// The runtime every delegate runs through: `binDir` searched before
    /// CNI_PATH, results cached under `cniDir`, this binary's plugins in-process.
    pub fn runtime(&self, inv: &Invocation) -> Runtime {
        let mut cni_path = vec![self.bin_dir.clone()];
        cni_path.extend(inv.env.path.iter().cloned());
        Runtime {
            cni_path,
            cache: Cache::new(&self.cni_dir),
            plugins: inv.plugins,
        }
    }

    /// A system namespace gets no `defaultNetworks`.
    pub fn is_system_namespace(&self, namespace: &str) -> bool {
        self.system_namespaces.iter().any(|n| n == namespace)
    }
}
