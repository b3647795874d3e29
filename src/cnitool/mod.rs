//! `cni-multi cnitool`: the reference's cnitool (add, check, del, gc, status
//! with its env variables and container IDs) plus `list`, `validate`,
//! `status-of` (multus's network-status of a pod), `netns`, `completion`, `doctor`
//! (stale CNI state of the node), `ls` and `--container-id` (the attachments
//! runtimes made) and `--trace`, as a thin clap front end over `libcni`.

mod attachments;
mod completion;
pub(crate) mod doctor;
mod hint;
mod netns;
mod trace;
mod validate;

use crate::cni::version;
use crate::libcni::cache::{Cache, DEFAULT_CACHE_DIR};
use crate::libcni::conf::{self, NetworkList};
use crate::libcni::{Attachment, Runtime, RuntimeConf, cnitool_container_id};
use crate::netns::named;
use crate::quote::quoted;
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, CommandFactory, Parser, Subcommand};
use serde_json::{Map, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Try and debug CNI networks by hand, with libcni's semantics.
#[derive(Debug, Parser)]
#[command(name = "cni-multi cnitool", about, long_about = None)]
#[command(version = version::BUILD, long_version = version::LONG)]
struct Cli {
    #[command(flatten)]
    opts: Options,
    #[command(subcommand)]
    command: Cmd,
}

/// Every flag overrides the environment variable named in its help.
#[derive(Debug, Args)]
struct Options {
    /// Config directory [env NETCONFPATH, default /etc/cni/net.d]
    #[arg(long, global = true, value_name = "DIR")]
    conf_dir: Option<PathBuf>,
    /// Plugin directories, ':'-separated [env CNI_PATH]
    #[arg(long, global = true, value_name = "DIRS")]
    cni_path: Option<String>,
    /// Result cache directory [default /var/lib/cni]; repeatable: `ls`,
    /// `--container-id` and `netns del` read every one given, others the last
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Vec<PathBuf>,
    /// Interface name in the container [env CNI_IFNAME, default eth0]
    #[arg(long, short = 'i', global = true, value_name = "NAME")]
    ifname: Option<String>,
    /// CNI_ARGS as K=V;K=V [env CNI_ARGS]
    #[arg(long, global = true, value_name = "K=V;...")]
    args: Option<String>,
    /// Capability arguments as a JSON object [env CAP_ARGS]
    #[arg(long, global = true, value_name = "JSON")]
    cap_args: Option<String>,
    /// Print each plugin run (CNI_* variables, stdin, exit, stdout, stderr,
    /// time) on stderr
    #[arg(long, short = 'v', global = true)]
    trace: bool,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Add the container in NETNS to network NET; prints the result
    Add(Target),
    /// Check the container's attachment against the cached result
    Check(Target),
    /// Delete the container from the network (plugins in reverse order)
    Del(Target),
    /// Delete cached attachments of NET not listed with --valid, then GC every plugin
    Gc {
        net: String,
        /// Ignored; accepted for the reference's `cnitool gc <net> <netns>`
        netns: Option<String>,
        /// An attachment to keep, CONTAINERID/IFNAME (repeatable). Without any,
        /// every cached attachment of NET is deleted, as the reference does.
        #[arg(long, value_name = "CONTAINERID/IFNAME")]
        valid: Vec<String>,
    },
    /// Ask every plugin of NET whether it is ready (1.1.0 configs)
    Status {
        net: String,
        /// Ignored; accepted for the reference's `cnitool status <net> <netns>`
        netns: Option<String>,
    },
    /// Print the network-status JSON multus wrote for a pod (NAD spec §5)
    StatusOf {
        /// The pod's container ID, or the netns cnitool added it with (a path,
        /// or a name in /run/netns)
        target: String,
        /// multus's cniDir
        #[arg(long, default_value = crate::plugins::multus::DEFAULT_CNI_DIR, value_name = "DIR")]
        cni_dir: PathBuf,
    },
    /// List the networks of the config directory with their plugin chains
    List,
    /// List the attachments cached by runtimes (libcni's cache), alive or not
    #[command(visible_alias = "attachments")]
    Ls(attachments::LsArgs),
    /// Check the configs: plugins found and speaking the version, keys and
    /// values as each plugin checks them, unknown keys, shadowed networks;
    /// exit 1 on errors, 0 with warnings only
    Validate(validate::ValidateArgs),
    /// List (and with --fix clean up) CNI state of no live attachment; exit
    /// 0 clean, 1 findings remain, 2 the node could not be inspected
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script for cni-multi and cnitool (commands,
    /// flags, network and netns names)
    Completion { shell: completion::Shell },
    /// Named network namespaces under /run/netns, without the ip binary
    Netns {
        #[command(subcommand)]
        action: NetnsCmd,
        /// Directory of named namespaces
        #[arg(long, default_value = named::DEFAULT_DIR, value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Debug, Args)]
struct Target {
    /// Network name (the `name` of a config in the config directory)
    net: String,
    /// Network namespace: a path, or the name of one in /run/netns (a name
    /// never resolves against the current directory)
    #[arg(required_unless_present_any = ["netns_flag", "container_id"])]
    netns: Option<String>,
    /// The network namespace, as a flag
    #[arg(long = "netns", value_name = "NETNS", conflicts_with = "netns")]
    netns_flag: Option<String>,
    /// The container ID to act on (default: cnitool's, from the netns path);
    /// check and del use its cached attachment: the runtime's config,
    /// CNI_ARGS, capability args and netns
    #[arg(long, value_name = "ID")]
    container_id: Option<String>,
}

#[derive(Debug, Subcommand)]
enum NetnsCmd {
    /// Create a named network namespace
    Add { name: String },
    /// Delete a named network namespace
    Del { name: String },
    /// List named network namespaces
    List,
    /// Run a command (no shell) in a named network namespace
    Exec {
        name: String,
        /// The command and its arguments
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<OsString>,
    },
}

pub use completion::candidates;

/// cnitool's command line, for completion and the manual page.
pub fn command() -> clap::Command {
    Cli::command().name("cnitool")
}

/// Runs cnitool with `args` (args[0] is "cnitool"); returns the exit status.
pub fn main(args: Vec<OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let getenv = |k: &str| std::env::var(k).ok();
    if cli.opts.trace {
        trace::install();
    }
    if let Cmd::Doctor(args) = &cli.command {
        return doctor::main(&cli.opts, settings(&cli.opts, &getenv), args);
    }
    if let Cmd::Validate(args) = &cli.command {
        return validate::main(settings(&cli.opts, &getenv), args);
    }
    match run(cli, &getenv) {
        Ok(output) => {
            if !output.is_empty() {
                println!("{output}");
            }
            0
        }
        Err(e) => {
            let root = nix::unistd::geteuid().is_root();
            eprintln!("cnitool: {}", hint::with_root_hint(report(&e), root));
            1
        }
    }
}

/// The error and its causes, "what: cause: cause", each cause once: a CNI
/// error's message already carries its layer error's text, and a layer's
/// text its errno's words.
fn report(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = match cause.downcast_ref::<nix::errno::Errno>() {
            Some(errno) => errno.desc().to_string(),
            None => crate::quote::without_os_error_numbers(&cause.to_string()).into_owned(),
        };
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
    }
    text
}

/// Settings resolved from flags, then env, then defaults.
struct Settings {
    conf_dir: PathBuf,
    runtime: Runtime,
    ifname: String,
    args: Vec<(String, String)>,
    capability_args: Map<String, Value>,
}

fn settings(opts: &Options, getenv: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
    let conf_dir = opts
        .conf_dir
        .clone()
        .or_else(|| getenv("NETCONFPATH").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/etc/cni/net.d"));
    let cni_path = opts
        .cni_path
        .clone()
        .or_else(|| getenv("CNI_PATH"))
        .unwrap_or_default();
    // The reference uses CNI_IFNAME whenever it is set, even empty.
    let ifname = opts
        .ifname
        .clone()
        .or_else(|| getenv("CNI_IFNAME"))
        .unwrap_or_else(|| "eth0".into());
    let raw_args = opts
        .args
        .clone()
        .or_else(|| getenv("CNI_ARGS"))
        .unwrap_or_default();
    let raw_caps = opts
        .cap_args
        .clone()
        .or_else(|| getenv("CAP_ARGS"))
        .unwrap_or_default();
    Ok(Settings {
        conf_dir,
        runtime: Runtime {
            cni_path: crate::cni::env::split_path(&cni_path),
            cache: Cache::new(
                opts.cache_dir
                    .last()
                    .cloned()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_CACHE_DIR)),
            ),
            plugins: crate::plugins::lookup,
        },
        ifname,
        args: parse_cni_args(&raw_args)?,
        capability_args: parse_cap_args(&raw_caps)?,
    })
}

/// `K=V;K=V` strictly: empty keys or values are errors (cnitool's rule).
fn parse_cni_args(raw: &str) -> Result<Vec<(String, String)>> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    raw.split(';')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(anyhow!(
                "invalid CNI_ARGS pair {pair}: expected KEY=VALUE",
                pair = quoted(&pair)
            )),
        })
        .collect()
}

fn parse_cap_args(raw: &str) -> Result<Map<String, Value>> {
    if raw.is_empty() {
        return Ok(Map::new());
    }
    crate::cni::json::from_str(raw).context("CAP_ARGS must be a JSON object")
}

/// A netns argument as a path: a bare name is one under /run/netns, never a
/// file of the current directory; a path is taken as given (a relative one,
/// `./x`, made absolute).
fn netns_path(arg: &str) -> Result<String> {
    if !arg.contains('/') {
        if !crate::cni::env::is_valid_name(arg) {
            bail!(
                "invalid netns name {arg}: a name in {}, or a path",
                named::DEFAULT_DIR,
                arg = quoted(&arg)
            );
        }
        return Ok(format!("{}/{arg}", named::DEFAULT_DIR));
    }
    let abs = std::path::absolute(arg)
        .with_context(|| format!("invalid netns path {arg}", arg = quoted(&arg)))?;
    Ok(abs.to_string_lossy().into_owned())
}

fn load(s: &Settings, net: &str) -> Result<NetworkList> {
    Ok(conf::load(&s.conf_dir, net)?)
}

fn attachment(s: &Settings, t: &Target) -> Result<RuntimeConf> {
    let Some(netns) = t.netns.as_ref().or(t.netns_flag.as_ref()) else {
        bail!("no netns given: NETNS (a path or a name in /run/netns), or --container-id");
    };
    let netns = netns_path(netns)?;
    Ok(RuntimeConf {
        container_id: t
            .container_id
            .clone()
            .unwrap_or_else(|| cnitool_container_id(&netns)),
        netns,
        ifname: s.ifname.clone(),
        args: s.args.clone(),
        capability_args: s.capability_args.clone(),
    })
}

fn run(cli: Cli, getenv: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    if let Cmd::Netns { action, dir } = &cli.command {
        let conf_dir = settings(&cli.opts, getenv).map(|s| s.conf_dir);
        let caches = || {
            let conf_dir = conf_dir.unwrap_or_else(|_| PathBuf::from("/etc/cni/net.d"));
            attachments::cache_dirs(&cli.opts, &conf_dir).unwrap_or_default()
        };
        return netns::run(action, dir, caches);
    }
    if let Cmd::StatusOf { target, cni_dir } = &cli.command {
        return status_of(target, cni_dir);
    }
    if let Cmd::Completion { shell } = &cli.command {
        let exe = std::env::current_exe().context("cannot find this binary")?;
        return Ok(completion::script(*shell, &exe.to_string_lossy()));
    }
    let s = settings(&cli.opts, getenv)?;
    let rt = &s.runtime;
    match &cli.command {
        Cmd::Check(a) | Cmd::Del(a) if a.container_id.is_some() => {
            let check = matches!(cli.command, Cmd::Check(_));
            attachments::by_container_id(&s, &cli.opts, a, check, getenv)
        }
        Cmd::Add(a) => {
            let list = load(&s, &a.net)?;
            let result = rt.add(&list, &attachment(&s, a)?)?;
            Ok(if result.is_null() {
                String::new()
            } else {
                crate::cni::result::to_pretty_json(&result)
            })
        }
        Cmd::Check(a) => {
            let list = load(&s, &a.net)?;
            rt.check(&list, &attachment(&s, a)?)?;
            Ok(String::new())
        }
        Cmd::Del(a) => {
            let list = load(&s, &a.net)?;
            rt.del(&list, &attachment(&s, a)?)?;
            Ok(String::new())
        }
        Cmd::Gc { net, valid, .. } => {
            let list = load(&s, net)?;
            let valid: Option<Vec<Attachment>> = if valid.is_empty() {
                None
            } else {
                Some(
                    valid
                        .iter()
                        .map(|v| parse_valid(v))
                        .collect::<Result<_>>()?,
                )
            };
            rt.gc(&list, valid.as_deref())?;
            Ok(String::new())
        }
        Cmd::Status { net, .. } => {
            let list = load(&s, net)?;
            if let Some(note) = hint::status_skipped(&list) {
                eprintln!("cnitool: {note}");
                return Ok(String::new());
            }
            rt.status(&list)
                .map_err(|e| anyhow!("{} (code {})", e.msg, e.code))?;
            Ok(String::new())
        }
        Cmd::List => {
            let lists = conf::load_all(&s.conf_dir)?;
            Ok(lists
                .iter()
                .map(|l| {
                    let chain: Vec<&str> =
                        l.plugins.iter().map(|p| p.plugin_type.as_str()).collect();
                    format!(
                        "{}\t{}\t{}\t{}",
                        l.name,
                        if l.cni_version.is_empty() {
                            "-"
                        } else {
                            &l.cni_version
                        },
                        chain.join(" -> "),
                        l.source.display()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"))
        }
        Cmd::Ls(args) => attachments::ls(&cli.opts, &s.conf_dir, args),
        Cmd::Netns { .. }
        | Cmd::StatusOf { .. }
        | Cmd::Doctor(_)
        | Cmd::Validate(_)
        | Cmd::Completion { .. } => Ok(String::new()),
    }
}

fn parse_valid(v: &str) -> Result<Attachment> {
    match v.split_once('/') {
        Some((id, ifname)) if !id.is_empty() && !ifname.is_empty() => Ok(Attachment {
            container_id: id.to_string(),
            ifname: ifname.to_string(),
        }),
        _ => bail!("--valid {v}: expected CONTAINERID/IFNAME", v = quoted(&v)),
    }
}

/// `<cniDir>/<containerID>.status`: the target as a container ID, else as the
/// netns whose cnitool container ID it is.
fn status_of(target: &str, cni_dir: &Path) -> Result<String> {
    let mut ids = Vec::new();
    if crate::cni::env::is_valid_name(target) {
        ids.push(target.to_string());
    }
    if let Ok(netns) = netns_path(target) {
        ids.push(cnitool_container_id(&netns));
    }
    for id in &ids {
        let path = crate::plugins::multus::status_path(cni_dir, id);
        match crate::files::read_string_limited(&path, crate::files::MAX_FILE) {
            Ok(text) => return Ok(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", path.display())),
        }
    }
    bail!(
        "no network status for {target} in {} (container IDs tried: {})",
        cni_dir.display(),
        ids.join(", "),
        target = quoted(&target)
    )
}

#[cfg(test)]
mod tests;
