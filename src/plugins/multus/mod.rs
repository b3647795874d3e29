//! multus: a Multus-compatible delegating plugin (the Kubernetes Network
//! Attachment Definition spec). ADD attaches the cluster default network, then
//! each network the pod's `k8s.v1.cni.cncf.io/networks` annotation selects,
//! each through its own plugin chain with libcni's semantics (`crate::libcni`, its
//! results cached under `cniDir`), and prints the default network's result;
//! the network-status goes to `<cniDir>/<containerID>.status`. DEL replays the
//! delegate list cached at ADD. Where Multus asks the API server, this reads
//! what the runtime hands over (the pod annotations capability) and files (pod
//! objects, NAD manifests, CNI configs), so it also serves runtimes without
//! Kubernetes.

mod annotations;
mod config;
mod delegate_cache;
mod delegates;
mod devices;
mod devinfo;
mod gateway;
mod log;
mod nad;
mod selection;
mod status;

pub use config::DEFAULT_CNI_DIR;
pub(crate) use config::Keys;
pub use delegate_cache::cached_container;
pub use devinfo::{DEVICE_INFO_DIR, device_info_owner};
pub use status::status_path;

use crate::cni::result::{NetResult, Versioned};
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::libcni::cache::Cached;
use crate::libcni::{Attachment, Runtime, RuntimeConf};
use crate::netlink::Socket;
use crate::netns::NetNs;
use crate::quote::quoted;
use annotations::Verb;
use config::{Conf, K8sArgs};
use delegate_cache::LoadError;
use delegates::Delegate;
use nad::NadIndex;
use serde_json::Value;
use std::cell::OnceCell;
use std::path::Path;

pub struct Multus;

impl Plugin for Multus {
    /// Its own keys; the delegates are networks of their own.
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        Call::new(inv)?.add()
    }

    fn del(&self, inv: &Invocation) -> CniResult<()> {
        Call::new(inv)?.del()
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        Call::new(inv)?.check()
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        Call::new(inv)?.gc()
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        Call::new(inv)?.status()
    }
}

/// One verb's state: the settings, the pod's CNI_ARGS, the runtime every
/// delegate runs through, and the NAD manifests once read.
struct Call<'a> {
    inv: &'a Invocation,
    s: Conf,
    k8s: K8sArgs,
    runtime: Runtime,
    nads: OnceCell<NadIndex>,
}

impl<'a> Call<'a> {
    fn new(inv: &'a Invocation) -> CniResult<Call<'a>> {
        let s = Conf::load(inv)?;
        s.report_unused();
        Ok(Call {
            k8s: K8sArgs::of(inv),
            runtime: s.runtime(inv),
            s,
            inv,
            nads: OnceCell::new(),
        })
    }

    /// `Multus: [namespace/name/uid]: <what>: <error>`, the error's code kept.
    fn cmd_err(&self, what: &str) -> impl Fn(Error) -> Error + use<> {
        let prefix = format!("Multus: [{}]: {what}", self.k8s.tag());
        move |e| e.context(&prefix)
    }

    fn readiness_message(&self) -> String {
        let path = self
            .s
            .readiness_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        format!(
            "have you checked that your default network is ready? still waiting for \
             readinessindicatorfile @ {path}"
        )
    }

    fn add(&self) -> CniResult<NetResult> {
        self.ready_for_add()?;
        let (delegates, ifnames) = self.plan()?;
        let container_id = &self.inv.env.container_id;
        let cache_file = delegate_cache::cache_path(&self.s.cni_dir, container_id);
        delegate_cache::save(&cache_file, container_id, &delegates)
            .map_err(self.cmd_err("error saving the delegates"))?;
        let (result, statuses) = self.attach_all(&delegates, &ifnames, &cache_file)?;
        status::write(&self.s.cni_dir, container_id, &statuses)?;
        // No delegate printed a result: an empty one of the current version.
        Ok(result.unwrap_or_else(NetResult::new))
    }

    /// The readiness indicator file is there, and no key asks for what is
    /// not supported.
    fn ready_for_add(&self) -> CniResult<()> {
        if !self.s.ready()? {
            return Err(self.cmd_err(&self.readiness_message())(Error::new(
                Code::TryAgainLater,
                "the file does not exist",
            )));
        }
        if !self.s.auxiliary_chain.is_empty() {
            return Err(Error::invalid_config(
                "auxiliaryCNIChainName is not supported: it needs the passthru plugin",
            ));
        }
        Ok(())
    }

    /// The pod's attachments, in order, with their interface names: the
    /// default networks, then its selections, each with its device if it
    /// comes from a device-plugin pool. Nothing is attached yet.
    fn plan(&self) -> CniResult<(Vec<Delegate>, Vec<String>)> {
        let inv = self.inv;
        let pod = annotations::load_pod(&self.s, &self.k8s, Verb::Add)
            .map_err(self.cmd_err("error reading the pod"))?;
        let mut delegates = self
            .default_delegates(pod.as_ref(), true)
            .map_err(self.cmd_err("failed to get clusterNetwork/defaultNetworks"))?;
        let defaults = delegates.len();
        delegates.extend(
            self.selected(pod.as_ref(), defaults, Verb::Add)
                .map_err(self.cmd_err("error loading k8s delegates"))?,
        );
        gateway::check(&mut delegates).map_err(self.cmd_err("error loading k8s delegates"))?;
        let ifnames = ifnames(&delegates, &inv.env.ifname)
            .map_err(self.cmd_err("error loading k8s delegates"))?;
        let (uid, id) = (&self.k8s.uid, &inv.env.container_id);
        devices::assign(&self.s, uid, id, &mut delegates, &ifnames);
        // DEL and GC find the default network's interface name in the cache.
        if let (Some(first), Some(name)) = (delegates.first_mut(), ifnames.first()) {
            first.ifname_request.clone_from(name);
        }
        Ok((delegates, ifnames))
    }

    /// Every attachment's ADD, in order; the first failure takes down what
    /// was attempted, in reverse. The result to print (the default
    /// network's; without one, the first) and every attachment's status.
    fn attach_all(
        &self,
        delegates: &[Delegate],
        ifnames: &[String],
        cache_file: &Path,
    ) -> CniResult<(Option<NetResult>, Vec<status::NetworkStatus>)> {
        let mut result: Option<NetResult> = None;
        let mut statuses = Vec::new();
        for (idx, (d, ifname)) in delegates.iter().zip(ifnames).enumerate() {
            // An interface name the pod already has fails this attachment
            // before it runs; unlike Multus, its rollback then leaves that
            // interface alone (it is not this attachment's).
            let outcome = match self.ifname_free(d, ifname) {
                Ok(()) => self.add_one(d, ifname).map_err(|e| (e, idx + 1)),
                Err(e) => Err((e, idx)),
            };
            let added = match outcome {
                Ok(added) => added,
                Err((e, attempted)) => {
                    // Errors of the teardown are ignored (DEL is idempotent),
                    // but a clean one also drops the cached list, so no later
                    // DEL repeats it.
                    if self.del_range(delegates, ifnames, attempted).is_empty() {
                        let _ = std::fs::remove_file(cache_file);
                    }
                    let net = &d.list.name;
                    return Err(e.context(format!(
                        "[{}:{net}]: error adding container to network {}",
                        self.k8s.tag(),
                        quoted(net)
                    )));
                }
            };
            statuses.extend(self.statuses(d, ifname, added.as_ref()));
            if d.master || result.is_none() {
                result = added.or(result);
            }
        }
        Ok((result, statuses))
    }

    /// An attachment's network-status entries, with its device's info.
    fn statuses(
        &self,
        d: &Delegate,
        ifname: &str,
        added: Option<&NetResult>,
    ) -> Vec<status::NetworkStatus> {
        let merged = d.merged_runtime_config(&self.s.runtime_config);
        let info_file = d.device_info_file(&merged, &self.inv.env.container_id, ifname);
        let info = status::read_device_info(&info_file);
        status::statuses(added, &d.name, d.master, ifname, info)
    }

    /// Multus's `validateIfName`: the pod must not have the name yet.
    fn ifname_free(&self, d: &Delegate, ifname: &str) -> CniResult<()> {
        if link_exists(&self.inv.env.netns, ifname)? {
            return Err(Error::invalid_config(format!(
                "DelegateAdd: cannot set {} interface name to {}: validateIfName: \
                 interface name {ifname} already exists",
                quoted(d.plugin_type()),
                quoted(ifname)
            )));
        }
        Ok(())
    }

    /// One delegate's ADD: its list runs; `default-route` is applied to what
    /// it made.
    fn add_one(&self, d: &Delegate, ifname: &str) -> CniResult<Option<NetResult>> {
        let inv = self.inv;
        let rt = d.runtime_conf(inv, &self.k8s, &self.s.runtime_config, ifname, true);
        self.s.log.debug(&format!(
            "DelegateAdd: {} ({}) as {ifname}: CNI_ARGS {}, capabilities {}",
            d.name,
            d.list.name,
            rt.args
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(";"),
            Value::Object(rt.capability_args.clone())
        ));
        let value = self.runtime.add(&d.list, &rt)?;
        if value.is_null() {
            return Ok(None);
        }
        let result = Versioned::parse_own(value, &d.list.cni_version)
            .map_err(|e| Error::caused_by(Code::Decode, "failed to read the delegate's result", e))?
            .into_current()?;
        if !result.interfaces.is_empty() || !result.ips.is_empty() {
            gateway::apply(
                d,
                &inv.env.netns,
                ifname,
                &self.runtime.cache,
                &inv.env.container_id,
            )?;
        }
        Ok(Some(result))
    }

    /// DEL of the first `count` delegates, in reverse, every one even when
    /// one fails; the errors, in that order.
    fn del_range(&self, delegates: &[Delegate], ifnames: &[String], count: usize) -> Vec<Error> {
        let mut errors = Vec::new();
        for idx in (0..count).rev() {
            let d = &delegates[idx];
            let rt = d.runtime_conf(
                self.inv,
                &self.k8s,
                &self.s.runtime_config,
                &ifnames[idx],
                false,
            );
            if let Err(e) = self.runtime.del(&d.list, &rt) {
                errors.push(del_error(d, e));
            }
            remove_device_info(d, &self.s, &rt);
        }
        errors
    }

    fn del(&self) -> CniResult<()> {
        self.warn_unready_on_del()?;
        let container_id = &self.inv.env.container_id;
        let cache_file = delegate_cache::cache_path(&self.s.cni_dir, container_id);
        let status_file = status::status_path(&self.s.cni_dir, container_id);
        let Some((mut delegates, from_cache)) = self.delegates_to_delete(&cache_file)? else {
            // Nothing cached and no pod to read: nothing is known to delete,
            // and failing would block the pod forever.
            self.s.log.error(&format!(
                "Multus: failed to get the cached delegates file {}, cannot properly delete",
                cache_file.display()
            ));
            let _ = std::fs::remove_file(&status_file);
            return Ok(());
        };
        let mut ifnames: Vec<String> = delegates
            .iter()
            .enumerate()
            .map(|(i, d)| d.ifname(&self.inv.env.ifname, i))
            .collect();
        // A selection repeated with the same interface is one attachment.
        let mut seen = std::collections::BTreeSet::new();
        let unique: Vec<bool> = (delegates.iter().zip(&ifnames))
            .map(|(d, i)| seen.insert((d.list.name.clone(), i.clone())))
            .collect();
        let mut keep = unique.iter().copied();
        delegates.retain(|_| keep.next().unwrap_or(true));
        let mut keep = unique.iter().copied();
        ifnames.retain(|_| keep.next().unwrap_or(true));
        let errors = self.del_range(&delegates, &ifnames, delegates.len());
        let remove = !self.s.retry_delete_on_error
            || errors.is_empty()
            || errors
                .iter()
                .any(|e| e.msg.contains("no such file or directory"));
        if from_cache && remove {
            let _ = std::fs::remove_file(&cache_file);
        }
        if remove {
            let _ = std::fs::remove_file(&status_file);
        }
        joined(errors)
    }

    /// DEL goes on without the readiness indicator file, and says so.
    fn warn_unready_on_del(&self) -> CniResult<()> {
        if !self.s.ready()? {
            let path = self
                .s
                .readiness_file
                .as_ref()
                .map(|p| p.display().to_string());
            self.s.log.verbose(&format!(
                "warning: readinessindicatorfile @ {} does not exist on CNI DEL",
                path.unwrap_or_default()
            ));
        }
        Ok(())
    }

    /// The delegates DEL runs and whether they came from the cache: the
    /// cached list, else the pod's annotations as at ADD. None: neither.
    fn delegates_to_delete(&self, cache_file: &Path) -> CniResult<Option<(Vec<Delegate>, bool)>> {
        let bad = match delegate_cache::load(cache_file, &self.s.cni_version) {
            Ok(Some(d)) => return Ok(Some((d, true))),
            Err(LoadError::Read(e)) => return Err(e),
            Ok(None) => None,
            Err(LoadError::Parse(e)) => {
                self.s
                    .log
                    .error(&format!("Multus: failed to load netconf: {e}"));
                Some(e)
            }
        };
        match (self.rebuild()?, bad) {
            (Some(d), _) => Ok(Some((d, false))),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(None),
        }
    }

    /// The delegates of a pod whose list was not cached, from its annotations
    /// as at ADD (None: no pod to read). A selection that no longer resolves
    /// still lets the default network go.
    fn rebuild(&self) -> CniResult<Option<Vec<Delegate>>> {
        let Some(pod) = annotations::load_pod(&self.s, &self.k8s, Verb::Del)? else {
            return Ok(None);
        };
        let mut delegates = self
            .default_delegates(Some(&pod), true)
            .map_err(self.cmd_err("failed to get clusterNetwork/defaultNetworks"))?;
        match self.selected(Some(&pod), delegates.len(), Verb::Del) {
            Ok(more) => delegates.extend(more),
            Err(e) => self.s.log.error(&format!(
                "Multus: failed to get delegates: {e}, but continue to delete clusterNetwork"
            )),
        }
        Ok(Some(delegates))
    }

    /// CHECK of every cached delegate, in order.
    fn check(&self) -> CniResult<()> {
        let inv = self.inv;
        let cache_file = delegate_cache::cache_path(&self.s.cni_dir, &inv.env.container_id);
        let delegates = match delegate_cache::load(&cache_file, &self.s.cni_version) {
            Ok(Some(d)) => d,
            Ok(None) => {
                return Err(Error::internal(format!(
                    "no cached delegates for container {} in {}: was it added with this cniDir?",
                    quoted(&inv.env.container_id),
                    self.s.cni_dir.display()
                )));
            }
            Err(LoadError::Read(e) | LoadError::Parse(e)) => return Err(e),
        };
        for (idx, d) in delegates.iter().enumerate() {
            let ifname = d.ifname(&inv.env.ifname, idx);
            let rt = d.runtime_conf(inv, &self.k8s, &self.s.runtime_config, &ifname, false);
            self.runtime.check(&d.list, &rt).map_err(|e| {
                let (kind, what) = if d.is_list() {
                    ("ConflistCheck", d.list.name.as_str())
                } else {
                    ("DelegateCheck", d.plugin_type())
                };
                e.context(format!(
                    "DelegateCheck: error invoking {kind} - {what}",
                    what = quoted(&what)
                ))
            })?;
        }
        Ok(())
    }

    /// GC: every cached pod not in `cni.dev/valid-attachments` is deleted
    /// (without that key nothing is known to be stale), then the default
    /// network's GC runs with the attachments still cached as valid (Multus).
    fn gc(&self) -> CniResult<()> {
        if !self.s.ready()? {
            return Err(self.cmd_err(&self.readiness_message())(Error::new(
                Code::TryAgainLater,
                "the file does not exist",
            )));
        }
        let mut errors: Vec<String> = Vec::new();
        if let Some(valid) = self.inv.conf.valid_attachments()? {
            for container_id in cached_containers(&self.s.cni_dir)? {
                if valid.iter().any(|a| a.container_id == container_id) {
                    continue;
                }
                if let Err(e) = self.del_stale(&container_id) {
                    errors.push(e.msg);
                }
            }
        }
        let default = self.default_network()?;
        let attachments: Vec<Attachment> = self
            .runtime
            .cache
            .entries()?
            .into_iter()
            .filter(|e| !e.container_id.is_empty())
            .map(|e| Attachment {
                container_id: e.container_id,
                ifname: e.ifname,
            })
            .collect();
        if let Err(e) = self.runtime.gc(&default.list, Some(&attachments)) {
            errors.push(format!("error in GC command: {}", e.msg));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::internal(errors.join("; ")))
        }
    }

    /// DEL of a pod known only by its cached delegate list: each attachment
    /// with the netns, CNI_ARGS and capabilities its cached result recorded.
    fn del_stale(&self, container_id: &str) -> CniResult<()> {
        let cache_file = delegate_cache::cache_path(&self.s.cni_dir, container_id);
        let delegates = match delegate_cache::load(&cache_file, &self.s.cni_version) {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(()),
            Err(LoadError::Read(e)) => return Err(e),
            // Not a delegate list: not ours to delete.
            Err(LoadError::Parse(e)) => {
                self.s
                    .log
                    .error(&format!("GC: skipping {}: {e}", cache_file.display()));
                return Ok(());
            }
        };
        let mut errors = Vec::new();
        for (idx, d) in delegates.iter().enumerate().rev() {
            let ifname = if d.master && d.ifname_request.is_empty() {
                self.cached_master_ifname(&delegates, container_id)
            } else {
                d.ifname("", idx)
            };
            let mut rt = RuntimeConf {
                container_id: container_id.to_string(),
                ifname: ifname.clone(),
                ..RuntimeConf::default()
            };
            if let Ok(Some(Cached::Entry(e))) =
                self.runtime.cache.read(&d.list.name, container_id, &ifname)
            {
                rt.netns = e.netns;
                rt.args = e.cni_args.into_iter().map(|[k, v]| (k, v)).collect();
                rt.capability_args = e.capability_args;
            }
            if let Err(e) = self.runtime.del(&d.list, &rt) {
                errors.push(del_error(d, e).msg);
            }
            remove_device_info(d, &self.s, &rt);
        }
        if !errors.is_empty() {
            return Err(Error::internal(format!(
                "container {container_id}: errors: {}",
                errors.join(" / ")
            )));
        }
        let _ = std::fs::remove_file(&cache_file);
        let _ = std::fs::remove_file(status::status_path(&self.s.cni_dir, container_id));
        Ok(())
    }

    /// The default network's interface of a list Multus cached (it records
    /// none): the one cached result of that network for the container that
    /// no other delegate explains, else Kubernetes' `eth0`.
    fn cached_master_ifname(&self, delegates: &[Delegate], container_id: &str) -> String {
        let others: Vec<String> = delegates
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, d)| d.ifname("", i))
            .collect();
        self.runtime
            .cache
            .entries_of(&delegates[0].list.name)
            .unwrap_or_default()
            .into_iter()
            .find(|e| e.container_id == container_id && !others.contains(&e.ifname))
            .map_or_else(|| "eth0".to_string(), |e| e.ifname)
    }

    /// STATUS: the readiness indicator file, then the default network's STATUS.
    fn status(&self) -> CniResult<()> {
        if !self.s.ready()? {
            return Err(Error::new(Code::NotAvailable, self.readiness_message()));
        }
        let default = self.default_network()?;
        self.runtime.status(&default.list)
    }
}

/// Each delegate's interface name; two attachments may not share one (the
/// spec's §4.1.2.1.5), refused before anything is attached.
fn ifnames(delegates: &[Delegate], runtime_ifname: &str) -> CniResult<Vec<String>> {
    let names: Vec<String> = delegates
        .iter()
        .enumerate()
        .map(|(i, d)| d.ifname(runtime_ifname, i))
        .collect();
    for (i, name) in names.iter().enumerate() {
        crate::cni::env::validate_ifname(name)?;
        if let Some(j) = names[..i].iter().position(|n| n == name) {
            return Err(Error::invalid_config(format!(
                "interface name {name} of network {} is already used by network {}",
                delegates[i].name,
                delegates[j].name,
                name = quoted(&name)
            )));
        }
    }
    Ok(names)
}

/// Whether the pod already has a link of this name.
fn link_exists(netns: &str, ifname: &str) -> CniResult<bool> {
    let ns = NetNs::open(netns).map_err(|e| {
        Error::from(e).context(format!("validateIfName: no net namespace {netns} found"))
    })?;
    ns.run(|| -> CniResult<bool> {
        match Socket::open()?.link_by_name(ifname) {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e.into()),
        }
    })?
}

/// Every delegate was tried: no error is success; else the first error keeps
/// its code and the message lists them all (Multus's "errors: a / b").
fn joined(mut errors: Vec<Error>) -> CniResult<()> {
    if errors.is_empty() {
        return Ok(());
    }
    let msgs: Vec<String> = errors.iter().map(|e| e.msg.clone()).collect();
    let mut first = errors.remove(0);
    if msgs.len() > 1 {
        first.msg = format!("errors: {}", msgs.join(" / "));
    }
    Err(first)
}

/// A delegate's DEL error as Multus words it.
fn del_error(d: &Delegate, e: Error) -> Error {
    let (kind, what) = if d.is_list() {
        ("ConflistDel", d.list.name.as_str())
    } else {
        ("DelegateDel", d.plugin_type())
    };
    e.context(format!(
        "DelegateDel: error invoking {kind} - {what}",
        what = quoted(&what)
    ))
}

/// The device-info file of an attachment with a `deviceID` goes with it.
fn remove_device_info(d: &Delegate, s: &Conf, rt: &RuntimeConf) {
    let merged = d.merged_runtime_config(&s.runtime_config);
    if !merged.device_id.is_empty() {
        let _ = std::fs::remove_file(d.device_info_file(&merged, &rt.container_id, &rt.ifname));
    }
}

/// The container IDs with a cached delegate list in `cniDir` (status files,
/// the results directory and temporary files are not lists).
fn cached_containers(cni_dir: &Path) -> CniResult<Vec<String>> {
    let entries = match std::fs::read_dir(cni_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::caused_by(
                Code::Io,
                format!("failed to read {}", cni_dir.display()),
                e,
            ));
        }
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().to_str().map(String::from)?;
            if crate::files::is_id_token(&name) {
                // A long ID's list: the ID is inside.
                return delegate_cache::cached_container(&e.path());
            }
            (crate::cni::env::is_valid_name(&name) && !name.ends_with(".status")).then_some(name)
        })
        .collect();
    out.sort();
    Ok(out)
}
