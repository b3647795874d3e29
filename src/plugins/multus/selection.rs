//! Network selection: the cluster default network (and `defaultNetworks`),
//! the pod's `v1.multus-cni.io/default-network` override and its
//! `k8s.v1.cni.cncf.io/networks` selections, each resolved to a delegate
//! (a NAD, a config in `confDir`, or a file), with the policies a tenant's
//! selection is held to: namespace isolation, `maxAttachments`,
//! `annotationPortMappings`, and no `deviceID` for a device-plugin pool.

use super::Call;
use super::annotations::{self, Pod, Selection, Verb};
use super::delegates::Delegate;
use super::nad::{self, NadIndex};
use crate::cni::config::absolute_path;
use crate::cni::result::go_escape;
use crate::cni::{CniResult, Code, Error};
use crate::quote::quoted;
use serde_json::Value;
use std::path::Path;

impl Call<'_> {
    /// The default network alone (GC, STATUS).
    pub(super) fn default_network(&self) -> CniResult<Delegate> {
        self.default_delegates(None, false)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::invalid_config("no default network"))
    }

    /// The default network first (master), then `defaultNetworks` (not for
    /// pods of a system namespace); `v1.multus-cni.io/default-network`
    /// replaces the first.
    pub(super) fn default_delegates(
        &self,
        pod: Option<&Pod>,
        with_default_networks: bool,
    ) -> CniResult<Vec<Delegate>> {
        let s = &self.s;
        let mut out = Vec::new();
        if s.cluster_network.is_empty() {
            for (i, raw) in s.delegates.iter().enumerate() {
                // Go marshals the map again: keys sorted.
                let bytes = go_escape(&Value::Object(raw.clone()).to_string()).into_bytes();
                let d = Delegate::load(bytes, &format!("delegates[{i}]"), &s.cni_version)
                    .map_err(|e| e.context(format!("failed to load delegate {i} config")))?;
                out.push(d);
            }
        } else {
            let d = self.net_delegate(&s.cluster_network).map_err(|e| {
                e.context(format!(
                    "failed to get clusterNetwork {} in namespace {}",
                    s.cluster_network, s.multus_namespace
                ))
            })?;
            out.push(d);
            let namespace = annotations::pod_namespace(&self.k8s);
            if with_default_networks && !s.is_system_namespace(&namespace) {
                for net in &s.default_networks {
                    out.push(self.net_delegate(net)?);
                }
            }
        }
        if let Some(text) =
            pod.and_then(|p| p.annotations.get(annotations::DEFAULT_NETWORK_ANNOTATION))
        {
            let selections = annotations::parse_networks(text, &s.multus_namespace)
                .map_err(|e| e.context("failed to parse the default-network annotation"))?;
            if selections.len() > 1 {
                return Err(Error::invalid_config(format!(
                    "more than one default network is specified: {text}"
                )));
            }
            if let (Some(sel), Some(pod)) = (selections.first(), pod) {
                // The override is a selection like any other: isolation holds,
                // but for multusNamespace, where cluster networks live (the
                // override's namespace when it names none, as in Multus).
                if sel.namespace != s.multus_namespace {
                    annotations::check_isolation(s, &pod.namespace, sel)?;
                }
                out[0] = self.nad_delegate(sel, Verb::Add)?;
            }
        }
        if let Some(first) = out.first_mut() {
            first.master = true;
        }
        Ok(out)
    }

    /// A `clusterNetwork`/`defaultNetworks` entry (Multus's `getNetDelegate`):
    /// a name is a NAD in `multusNamespace`, else a config of that name in
    /// `confDir`; a path is a directory (its first config) or a config file.
    fn net_delegate(&self, net: &str) -> CniResult<Delegate> {
        let s = &self.s;
        if !net.contains('/') {
            let sel = Selection {
                name: net.to_string(),
                namespace: s.multus_namespace.clone(),
                ..Selection::default()
            };
            if let Ok(d) = self.nad_delegate(&sel, Verb::Add) {
                return Ok(d);
            }
            let bytes = nad::config_from_dir(net, &s.conf_dir)
                .map_err(|e| e.context(format!("cannot find network {net}")))?;
            let source = format!("{}/{net}", s.conf_dir.display());
            return Delegate::load(bytes, &source, &s.cni_version);
        }
        let path = absolute_path(Some(net), "", "clusterNetwork/defaultNetworks entry")?;
        let meta = std::fs::metadata(&path).map_err(|e| {
            Error::caused_by(Code::InvalidConfig, format!("cannot find network {net}"), e)
        })?;
        if meta.is_dir() {
            let bytes = nad::config_from_dir("", &path)?;
            return Delegate::load(bytes, net, &s.cni_version);
        }
        let bytes = crate::files::read_limited(&path, crate::files::MAX_FILE).map_err(|e| {
            Error::caused_by(Code::Io, format!("error reading {}", path.display()), e)
        })?;
        if path.extension().is_some_and(|x| x == "conflist") {
            // A list file takes `<dir>/<name>/*.conf` too, as libcni loads it.
            let list = crate::libcni::conf::list_from_bytes(&bytes, &path)?;
            let dir = path.parent().unwrap_or(Path::new("/"));
            let list = crate::libcni::conf::with_extra_plugins(list, dir)?;
            let mut obj: serde_json::Map<String, Value> = crate::cni::json::from_slice(&bytes)
                .map_err(|e| Error::caused_by(Code::Decode, format!("error loading {net}"), e))?;
            obj.insert(
                "plugins".into(),
                Value::Array(
                    list.plugins
                        .iter()
                        .map(|p| Value::Object(p.raw.clone()))
                        .collect(),
                ),
            );
            let full = go_escape(&Value::Object(obj).to_string()).into_bytes();
            return Delegate::load(full, net, &s.cni_version);
        }
        Delegate::load(bytes, net, &s.cni_version)
    }

    /// The NADs of `netAttachDefDir`, read once per call.
    fn nads(&self) -> CniResult<&NadIndex> {
        if self.nads.get().is_none() {
            let index = NadIndex::load(&self.s.nad_dir)?;
            let _ = self.nads.set(index);
        }
        self.nads
            .get()
            .ok_or_else(|| Error::internal("network attachment definitions not loaded"))
    }

    /// The delegate of one selection (Multus's `getKubernetesDelegate`).
    pub(super) fn nad_delegate(&self, sel: &Selection, verb: Verb) -> CniResult<Delegate> {
        let s = &self.s;
        let nad = self
            .nads()?
            .find(&sel.namespace, &sel.name)?
            .ok_or_else(|| {
                Error::invalid_config(format!(
                    "cannot find a network-attachment-definition ({}) in namespace ({}) in {}",
                    sel.name,
                    sel.namespace,
                    s.nad_dir.display()
                ))
            })?;
        let resource = nad
            .annotations
            .get(nad::RESOURCE_NAME_ANNOTATION)
            .cloned()
            .unwrap_or_default();
        // The pool's device is the one allocated to the pod; a tenant's
        // deviceID would pick any device of the node (its main NIC too).
        if !resource.is_empty() && !sel.device_id.is_empty() && verb == Verb::Add {
            return Err(Error::invalid_config(format!(
                "network-attachment-definition {}/{} takes its device from resource {resource}: \
                 the selection's deviceID {} is refused",
                nad.namespace,
                nad.name,
                quoted(&sel.device_id)
            )));
        }
        let bytes = nad::cni_config(nad, &s.conf_dir)?;
        let source = format!(
            "net-attach-def {}/{} ({})",
            nad.namespace,
            nad.name,
            nad.source.display()
        );
        let mut d = Delegate::for_selection(bytes, sel, &source, &s.cni_version)?;
        if !resource.is_empty() {
            d.device_id.clear();
        }
        d.resource_name = resource;
        Ok(d)
    }

    /// The networks the pod's selection annotation asks for, in order, after
    /// `defaults` attachments of the default networks. ADD refuses the whole
    /// pod for one refused selection; DEL (of a pod whose cached list is
    /// gone) skips that selection and deletes the others.
    pub(super) fn selected(
        &self,
        pod: Option<&Pod>,
        defaults: usize,
        verb: Verb,
    ) -> CniResult<Vec<Delegate>> {
        let Some(pod) = pod else {
            return Ok(Vec::new());
        };
        let Some(text) = pod.annotations.get(annotations::NETWORKS_ANNOTATION) else {
            return Ok(Vec::new());
        };
        let mut selections = annotations::parse_networks(text, &pod.namespace)?;
        let max = self.s.max_attachments;
        if verb == Verb::Del {
            // No ADD ever attached more than any maxAttachments allows (the
            // key may have been lowered since, so not today's value).
            selections.truncate(super::config::MAX_ATTACHMENTS_LIMIT.saturating_sub(defaults));
        }
        if verb == Verb::Add && defaults + selections.len() > max {
            return Err(Error::invalid_config(format!(
                "the pod asks for {} networks besides its {defaults} default ones: at most {max} \
                 attachments per pod (maxAttachments)",
                selections.len()
            )));
        }
        let mut out = Vec::new();
        for sel in &selections {
            match self.selection_delegate(sel, &pod.namespace, verb) {
                Ok(d) => out.push(d),
                Err(e) if verb == Verb::Del => self
                    .s
                    .log
                    .error(&format!("Multus: skipping {} on DEL: {e}", sel.full_name())),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// One selection's delegate, after the policies a tenant's selection is
    /// held to: namespace isolation and `annotationPortMappings`.
    fn selection_delegate(
        &self,
        sel: &Selection,
        pod_namespace: &str,
        verb: Verb,
    ) -> CniResult<Delegate> {
        annotations::check_isolation(&self.s, pod_namespace, sel)?;
        if verb == Verb::Add
            && !self.s.annotation_port_mappings
            && sel.port_mappings.as_ref().is_some_and(|p| !p.is_empty())
        {
            return Err(Error::invalid_config(format!(
                "network {}: portMappings in the pod's annotation are not honoured \
                 (annotationPortMappings is false)",
                sel.full_name()
            )));
        }
        self.nad_delegate(sel, verb)
            .map_err(|e| e.context(format!("failed getting the delegate {}", sel.full_name())))
    }
}
