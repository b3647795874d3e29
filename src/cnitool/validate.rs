//! `cnitool validate`: the configs themselves, checked as the plugins check
//! them, before a pod meets them. For every network of the config directory
//! (or the ones named): each plugin on CNI_PATH and speaking the list's
//! version; for cni-multi's own plugins, the plugin's own validation (the
//! checks its ADD makes before any kernel or disk work: types, values,
//! required keys), the IPAM plugin `ipam.type` names present and validated the
//! same way, and the keys no plugin reads (what each plugin decodes its config
//! into is recorded while it validates: the structs are the only description)
//! with the nearest key it does read; a network whose name an earlier file
//! already has (libcni takes the first). Exit 1 on errors, 0 with warnings.

use super::Settings;
use crate::cni::env::{CmdArgs, Command};
use crate::cni::json::Recorder;
use crate::cni::{PluginInfo, version};
use crate::libcni::conf::{self, NetworkList, PluginConf};
use crate::quote::quoted;
use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub(super) struct ValidateArgs {
    /// Networks to check (default: every network of the config directory)
    nets: Vec<String>,
    /// Print the findings as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Error,
    Warning,
}

/// One thing wrong with a network.
#[derive(Debug, Serialize)]
struct Finding {
    level: Level,
    /// The plugin it is about (empty: the file or the list).
    #[serde(skip_serializing_if = "String::is_empty")]
    plugin: String,
    /// That plugin's index in the list.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
    /// The key's path in the plugin's config (or the list's).
    #[serde(skip_serializing_if = "String::is_empty")]
    key: String,
    message: String,
    /// The known key nearest to an unknown one.
    #[serde(skip_serializing_if = "Option::is_none")]
    suggestion: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PluginReport {
    #[serde(rename = "type")]
    plugin_type: String,
    /// What its VERSION lists (None: it could not be asked).
    versions: Option<Vec<String>>,
    /// Its keys were checked: it is one of cni-multi's plugins.
    keys_checked: bool,
    /// The IPAM plugin it hands `ipam` to, when it is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    ipam: Option<Box<PluginReport>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NetworkReport {
    name: String,
    file: String,
    cni_version: String,
    /// The earlier file with a network of this name, which libcni takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    shadowed_by: Option<String>,
    plugins: Vec<PluginReport>,
    findings: Vec<Finding>,
}

impl NetworkReport {
    fn new(name: &str, file: &Path, cni_version: &str) -> NetworkReport {
        NetworkReport {
            name: name.to_string(),
            file: file.display().to_string(),
            cni_version: cni_version.to_string(),
            shadowed_by: None,
            plugins: Vec::new(),
            findings: Vec::new(),
        }
    }

    fn push(&mut self, level: Level, plugin: (&str, Option<usize>), key: &str, message: String) {
        self.findings.push(Finding {
            level,
            plugin: plugin.0.to_string(),
            index: plugin.1,
            key: key.to_string(),
            message,
            suggestion: None,
        });
    }

    /// A plugin's error: its key (the details of a decoding error) apart.
    fn push_error(&mut self, plugin: (&str, Option<usize>), e: &crate::cni::Error) {
        self.push_error_within(plugin, e, "");
    }

    /// The same for a config handed on from our key `within`: its key is
    /// named under that one.
    fn push_error_within(
        &mut self,
        plugin: (&str, Option<usize>),
        e: &crate::cni::Error,
        within: &str,
    ) {
        match crate::cni::config::error_key(e) {
            Some(key) if !within.is_empty() => self.push(
                Level::Error,
                plugin,
                &format!("{within}.{key}"),
                e.msg.clone(),
            ),
            Some(key) => self.push(Level::Error, plugin, key, e.msg.clone()),
            None => self.push(Level::Error, plugin, within, e.to_string()),
        }
    }

    fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }
}

/// Runs `validate`; the exit status.
pub(super) fn main(settings: Result<Settings>, args: &ValidateArgs) -> i32 {
    let reports = settings.and_then(|s| check(&s, &args.nets));
    let reports = match reports {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cnitool: {}", super::report(&e));
            return 1;
        }
    };
    let errors: usize = reports.iter().map(|r| r.count(Level::Error)).sum();
    let warnings: usize = reports.iter().map(|r| r.count(Level::Warning)).sum();
    if args.json {
        #[derive(Serialize)]
        struct Output<'a> {
            networks: &'a [NetworkReport],
            errors: usize,
            warnings: usize,
        }
        let out = Output {
            networks: &reports,
            errors,
            warnings,
        };
        println!("{}", crate::cni::result::to_pretty_json(&out));
    } else {
        let summary = format!(
            "{} checked: {}, {}",
            plural(reports.len(), "network"),
            plural(errors, "error"),
            plural(warnings, "warning")
        );
        let text = text(&reports);
        if errors > 0 {
            eprintln!("cnitool: {summary}:\n{text}");
        } else {
            println!("{text}\n{summary}");
        }
    }
    i32::from(errors > 0)
}

fn plural(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// One block per network: `NAME (FILE):`, then a line per plugin (`ok` or
/// `FAIL`, its versions) and per finding (`FAIL` or `WARN`, the key, what).
fn text(reports: &[NetworkReport]) -> String {
    let mut out = Vec::new();
    for r in reports {
        out.push(format!("{} ({}):", r.name, r.file));
        let line = |f: &Finding| {
            let level = match f.level {
                Level::Error => "FAIL",
                Level::Warning => "WARN",
            };
            let plugin = if f.plugin.is_empty() { "-" } else { &f.plugin };
            let mut what = match f.key.as_str() {
                "" => f.message.clone(),
                key => format!("{key}: {}", f.message),
            };
            if let Some(s) = &f.suggestion {
                what.push_str(&format!(" (did you mean {s}?)", s = quoted(&s)));
            }
            format!("{level}\t{plugin}\t{what}")
        };
        out.extend(r.findings.iter().filter(|f| f.index.is_none()).map(line));
        for (i, p) in r.plugins.iter().enumerate() {
            let wanted = version::effective(&r.cni_version);
            for (q, role) in std::iter::once((p, String::new())).chain(
                p.ipam
                    .as_deref()
                    .map(|q| (q, format!(" (IPAM of {})", p.plugin_type))),
            ) {
                if q.versions.iter().flatten().any(|s| s == wanted) {
                    out.push(format!("ok\t{}\tsupports {wanted}{role}", q.plugin_type));
                }
                if !q.keys_checked {
                    out.push(format!(
                        "-\t{}\tkeys not checked: not a cni-multi plugin{role}",
                        q.plugin_type
                    ));
                }
            }
            out.extend(r.findings.iter().filter(|f| f.index == Some(i)).map(line));
        }
    }
    out.join("\n")
}

/// Keys of a network list file, as libcni reads them (exactly).
const LIST_KEYS: &[&str] = &[
    "cniVersion",
    "cniVersions",
    "name",
    "plugins",
    "disableCheck",
    "disableGC",
    "loadOnlyInlinedPlugins",
];

/// A file of the config directory, read as libcni reads it.
struct Loaded {
    file: PathBuf,
    list: crate::cni::CniResult<NetworkList>,
}

/// Every config file, in libcni's order: lists first, then single configs.
fn load_dir(dir: &Path) -> Result<Vec<Loaded>> {
    let files = |ext: &[&str]| {
        crate::files::files_with(dir, ext)
            .with_context(|| format!("failed to read the config directory {}", dir.display()))
    };
    let read = |path: &Path| {
        crate::files::read_limited(path, crate::files::MAX_FILE)
            .map_err(|e| crate::cni::Error::caused_by(crate::cni::Code::Io, path.display(), e))
    };
    let mut out = Vec::new();
    for file in files(&["conflist"])? {
        let list = read(&file)
            .and_then(|b| conf::list_from_bytes(&b, &file))
            .and_then(|l| conf::with_extra_plugins(l, dir));
        out.push(Loaded { file, list });
    }
    for file in files(&["conf", "json"])? {
        let list = read(&file).and_then(|b| conf::conf_from_bytes(&b, &file));
        out.push(Loaded { file, list });
    }
    if out.is_empty() {
        anyhow::bail!("no net configurations found in {}", dir.display());
    }
    Ok(out)
}

fn check(s: &Settings, names: &[String]) -> Result<Vec<NetworkReport>> {
    let loaded = load_dir(&s.conf_dir)?;
    let mut reports = Vec::new();
    let mut first: Vec<(String, PathBuf)> = Vec::new();
    for l in &loaded {
        let list = match &l.list {
            Ok(list) => list,
            Err(e) => {
                // A file libcni cannot read breaks every lookup that reaches it.
                let mut r = NetworkReport::new("", &l.file, "");
                r.push(Level::Error, ("", None), "", e.to_string());
                reports.push(r);
                continue;
            }
        };
        let winner = first
            .iter()
            .find(|(name, _)| *name == list.name)
            .map(|(_, f)| f.clone());
        if winner.is_none() {
            first.push((list.name.clone(), l.file.clone()));
        }
        if !names.is_empty() && !names.contains(&list.name) {
            continue;
        }
        let mut r = check_network(s, list);
        if let Some(winner) = winner {
            r.push(
                Level::Warning,
                ("", None),
                "name",
                format!(
                    "network {} is also in {}, which wins (libcni takes the first): this file is never used",
                    quoted(&list.name),
                    winner.display()
                ),
            );
            r.shadowed_by = Some(winner.display().to_string());
        }
        reports.push(r);
    }
    for name in names {
        if !first.iter().any(|(n, _)| n == name) {
            let mut r = NetworkReport::new(name, &s.conf_dir, "");
            r.push(
                Level::Error,
                ("", None),
                "",
                format!(
                    "no net configuration with name {name} in {}",
                    s.conf_dir.display(),
                    name = quoted(&name)
                ),
            );
            reports.push(r);
        }
    }
    Ok(reports)
}

fn check_network(s: &Settings, list: &NetworkList) -> NetworkReport {
    let mut r = NetworkReport::new(&list.name, &list.source, &list.cni_version);
    if list.source.extension().is_some_and(|e| e == "conflist") {
        list_keys(list, &mut r);
    }
    let wanted = version::effective(&list.cni_version).to_string();
    for (i, p) in list.plugins.iter().enumerate() {
        let at = (p.plugin_type.as_str(), Some(i));
        let versions = supported(s, p, &wanted, at, &mut r);
        let info = crate::plugins::lookup(&p.plugin_type);
        let mut report = PluginReport {
            plugin_type: p.plugin_type.clone(),
            versions,
            keys_checked: info.is_some(),
            ipam: None,
        };
        if let Some(info) = info {
            report.ipam = plugin_keys(s, list, i, info, &wanted, &mut r);
        }
        r.plugins.push(report);
    }
    r
}

/// The plugin's VERSION answer, an error unless it lists `wanted`.
fn supported(
    s: &Settings,
    p: &PluginConf,
    wanted: &str,
    at: (&str, Option<usize>),
    r: &mut NetworkReport,
) -> Option<Vec<String>> {
    match s.runtime.plugin_versions(p) {
        Ok(v) if v.iter().any(|x| x == wanted) => Some(v),
        Ok(v) => {
            r.push(
                Level::Error,
                at,
                "",
                format!("supports {} but not {wanted}", v.join(", ")),
            );
            Some(v)
        }
        Err(e) => {
            r.push(Level::Error, at, "", e.msg);
            None
        }
    }
}

/// Unknown keys of the list itself.
fn list_keys(list: &NetworkList, r: &mut NetworkReport) {
    let Ok(obj) = crate::cni::json::from_slice::<Map<String, Value>>(&list.bytes) else {
        return;
    };
    let known: Vec<String> = LIST_KEYS.iter().map(|k| k.to_string()).collect();
    for key in obj.keys().filter(|k| !LIST_KEYS.contains(&k.as_str())) {
        r.findings.push(Finding {
            level: Level::Warning,
            plugin: String::new(),
            index: None,
            key: key.clone(),
            message: "unknown key: libcni does not read it".into(),
            suggestion: nearest(key, &known),
        });
    }
}

/// The plugin's own validation of its config as it would receive it, with
/// its IPAM plugin's, every decoding recorded: errors, and the keys neither
/// reads; then the same of each config it hands on whole (flannel's
/// delegate). Returns what was found of the IPAM plugin.
fn plugin_keys(
    s: &Settings,
    list: &NetworkList,
    i: usize,
    info: &'static PluginInfo,
    wanted: &str,
    r: &mut NetworkReport,
) -> Option<Box<PluginReport>> {
    let stdin = crate::libcni::stdin_for(&list.plugins[i], list, None, None, &[]);
    let at = (info.name, Some(i));
    let recorder = Arc::new(Recorder::default());
    let Some(inv) = prepared(s, info, &stdin, &recorder, at, "", r) else {
        unknown_keys(&recorder, info.name, None, i, "", r);
        return None;
    };
    if let Err(e) = info.plugin.validate(&inv) {
        r.push_error(at, &e);
    }
    let mut ipam = None;
    if info.plugin.delegates_ipam()
        && let Some(t) = inv.conf.ipam_type()
    {
        let ipam_at = (t, Some(i));
        match crate::cni::delegate::find_in_path(t, &s.runtime.cni_path) {
            Err(e) => r.push(
                Level::Error,
                at,
                "ipam.type",
                format!(
                    "the IPAM plugin {t} is not there: {}",
                    e.msg,
                    t = quoted(&t)
                ),
            ),
            Ok(_) => {
                let conf = PluginConf {
                    plugin_type: t.to_string(),
                    raw: Map::new(),
                };
                let versions = supported(s, &conf, wanted, ipam_at, r);
                let ipam_info = crate::plugins::lookup(t);
                if let Some(ipam_info) = ipam_info
                    && let Err(e) = ipam_info.plugin.validate(&inv)
                {
                    r.push_error(ipam_at, &e);
                }
                ipam = Some(Box::new(PluginReport {
                    plugin_type: t.to_string(),
                    versions,
                    keys_checked: ipam_info.is_some(),
                    ipam: None,
                }));
            }
        }
    }
    let checked_ipam = ipam
        .as_deref()
        .filter(|q| q.keys_checked)
        .map(|q| q.plugin_type.as_str());
    unknown_keys(&recorder, info.name, checked_ipam, i, "", r);
    for (key, conf) in info.plugin.handed_on(&inv) {
        handed_on_keys(s, &conf, key, i, r);
    }
    ipam
}

/// The invocation `info`'s ADD would get from `stdin`, its decoding recorded
/// by `recorder`; None (with the error reported, under our key `within` for
/// a config handed on) when the config is refused.
fn prepared(
    s: &Settings,
    info: &'static PluginInfo,
    stdin: &[u8],
    recorder: &Arc<Recorder>,
    at: (&str, Option<usize>),
    within: &str,
    r: &mut NetworkReport,
) -> Option<crate::cni::Invocation> {
    let env = CmdArgs {
        container_id: "cnitool-validate".into(),
        netns: String::new(),
        ifname: "eth0".into(),
        args: String::new(),
        path: s.runtime.cni_path.clone(),
        netns_override: false,
    };
    let prepared = crate::cni::dispatch::prepare_recorded(
        info,
        s.runtime.plugins,
        Command::Add,
        env,
        stdin,
        Some(recorder.clone()),
    );
    prepared
        .map_err(|e| r.push_error_within(at, &e, within))
        .ok()
}

/// A config the plugin at `i` hands on whole from its key `key` (flannel's
/// `delegate`), checked as its own plugin reads it: that plugin's errors,
/// and the keys neither it nor its IPAM plugin reads, named `key.<name>`
/// (those under `ipam` are the plugin's own `ipam`, named as they are). The
/// IPAM plugin's errors are not reported: its ranges come from the node at
/// ADD time (flannel's subnet.env), not from the config.
fn handed_on_keys(
    s: &Settings,
    conf: &Map<String, Value>,
    key: &str,
    i: usize,
    r: &mut NetworkReport,
) {
    let plugin_type = conf.get("type").and_then(Value::as_str).unwrap_or_default();
    let Some(info) = crate::plugins::lookup(plugin_type) else {
        return;
    };
    let at = (info.name, Some(i));
    let stdin = Value::Object(conf.clone()).to_string().into_bytes();
    let recorder = Arc::new(Recorder::default());
    let Some(inv) = prepared(s, info, &stdin, &recorder, at, key, r) else {
        unknown_keys(&recorder, info.name, None, i, key, r);
        return;
    };
    if let Err(e) = info.plugin.validate(&inv) {
        r.push_error_within(at, &e, key);
    }
    let mut checked_ipam = None;
    if info.plugin.delegates_ipam()
        && let Some(ipam_info) = inv.conf.ipam_type().and_then(crate::plugins::lookup)
    {
        let _ = ipam_info.plugin.validate(&inv);
        checked_ipam = Some(ipam_info.name);
    }
    unknown_keys(&recorder, info.name, checked_ipam, i, key, r);
}

/// Warnings for the keys no decoding knew, each with the nearest known key;
/// those under `ipam` belong to the IPAM plugin when it was checked. Outside
/// `ipam`, a config handed on from our key `within` names its keys under it.
fn unknown_keys(
    recorder: &Recorder,
    plugin: &str,
    ipam: Option<&str>,
    i: usize,
    within: &str,
    r: &mut NetworkReport,
) {
    for u in recorder.unknown_keys() {
        let under_ipam = u.at == "ipam" || u.at.starts_with("ipam.") || u.at.starts_with("ipam[");
        let owner = match ipam {
            Some(t) if under_ipam => t,
            _ => plugin,
        };
        let key = if within.is_empty() || under_ipam {
            u.path()
        } else {
            format!("{within}.{}", u.path())
        };
        r.findings.push(Finding {
            level: Level::Warning,
            plugin: owner.to_string(),
            index: Some(i),
            key,
            message: format!("unknown key: {owner} does not read it"),
            suggestion: nearest(&u.key, &u.known),
        });
    }
}

/// The known key nearest to `key` by edit distance, case-folded, when near
/// enough to be a misspelling of it.
fn nearest(key: &str, known: &[String]) -> Option<String> {
    let fold = |s: &str| s.to_lowercase().chars().collect::<Vec<char>>();
    let k = fold(key);
    let limit = (k.len() / 3).max(2);
    known
        .iter()
        .map(|f| (distance(&k, &fold(f)), f))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, f)| f.clone())
}

/// Levenshtein distance.
fn distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
