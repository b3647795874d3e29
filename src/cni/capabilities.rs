//! The capability arguments runtimes pass in `runtimeConfig` (the CNI
//! conventions), typed once for every plugin. Runtimes written in Go send some
//! of them from structs without JSON tags (containerd: `HostPort`,
//! `IngressRate`, `Servers`); [`crate::cni::json`] matches those keys as Go does.

use serde::Deserialize;

/// `portMappings`: one published port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename = "PortMapEntry", default)]
pub struct PortMapping {
    #[serde(rename = "hostPort")]
    pub host_port: i64,
    #[serde(rename = "containerPort")]
    pub container_port: i64,
    pub protocol: String,
    #[serde(rename = "hostIP")]
    pub host_ip: String,
}

/// `bandwidth`: rates in bits/s, bursts in bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename = "BandwidthEntry", default)]
pub struct Bandwidth {
    #[serde(rename = "ingressRate")]
    pub ingress_rate: u64,
    #[serde(rename = "ingressBurst")]
    pub ingress_burst: u64,
    #[serde(rename = "egressRate")]
    pub egress_rate: u64,
    #[serde(rename = "egressBurst")]
    pub egress_burst: u64,
}

impl Bandwidth {
    /// No rate and no burst in either direction: nothing to apply.
    pub fn is_empty(&self) -> bool {
        *self == Bandwidth::default()
    }
}

/// `dns`: what the runtime wants in the container's resolv.conf.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Dns {
    pub servers: Vec<String>,
    pub searches: Vec<String>,
    pub options: Vec<String>,
    pub domain: String,
}
