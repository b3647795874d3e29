//! The skel: turns env + stdin into an [`Invocation`], runs the gates of the spec
//! in the reference's order, calls the plugin and prints the outcome.

use crate::cni::config::{CniArgs, NetConf};
use crate::cni::env::{self, CmdArgs, Command};
use crate::cni::error::{CniResult, Code, Error};
use crate::cni::json::Json;
use crate::cni::version;
use crate::cni::{ArgsPolicy, Invocation, Lookup, PluginInfo};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;

/// Largest network configuration read from stdin (16 MiB).
pub const MAX_STDIN: u64 = crate::files::MAX_FILE;

/// Runs one plugin invocation against the process environment and stdio.
/// Returns the exit status.
pub fn run_main(info: &PluginInfo, plugins: Lookup) -> i32 {
    let getenv = |k: &str| std::env::var(k).ok();
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    run(
        info,
        plugins,
        &getenv,
        &mut std::io::stdin().lock(),
        &mut stdout,
        &mut stderr,
    )
}

/// The dispatcher with its inputs injected, so tests and in-process delegation
/// need no process state.
pub fn run(
    info: &PluginInfo,
    plugins: Lookup,
    getenv: &dyn Fn(&str) -> Option<String>,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let (cmd, args) = match env::read(getenv) {
        Ok(v) => v,
        Err(e) => {
            if getenv("CNI_COMMAND").unwrap_or_default().is_empty() {
                // No command at all: a person ran us by hand.
                let _ = writeln!(stderr, "{}", info.about());
                let _ = writeln!(
                    stderr,
                    "CNI protocol versions supported: {}",
                    version::SUPPORTED.join(", ")
                );
                return 0;
            }
            return fail(stdout, &e);
        }
    };
    let Some(command) = Command::parse(&cmd) else {
        return fail(
            stdout,
            &Error::invalid_env(format!("unknown CNI_COMMAND: {cmd}")),
        );
    };
    if command == Command::Version {
        // VERSION ignores stdin.
        let _ = stdout.write_all(version::version_reply().as_bytes());
        return 0;
    }
    let mut input = Vec::new();
    if let Err(e) = stdin.take(MAX_STDIN + 1).read_to_end(&mut input) {
        return fail(
            stdout,
            &Error::new(Code::Io, format!("error reading from stdin: {e}")),
        );
    }
    if input.len() as u64 > MAX_STDIN {
        return fail(
            stdout,
            &Error::decode(format!(
                "error unmarshall network config: stdin is larger than {MAX_STDIN} bytes"
            )),
        );
    }
    match execute(info, plugins, command, args, &input) {
        Ok(Some(out)) => {
            let _ = stdout.write_all(out.as_bytes());
            0
        }
        Ok(None) => 0,
        Err(e) => fail(stdout, &e),
    }
}

fn fail(stdout: &mut dyn Write, e: &Error) -> i32 {
    let _ = stdout.write_all(e.to_json().as_bytes());
    1
}

/// Validates and runs one verb (not VERSION). Returns what goes to stdout.
pub fn execute(
    info: &PluginInfo,
    plugins: Lookup,
    command: Command,
    env: CmdArgs,
    stdin: &[u8],
) -> CniResult<Option<String>> {
    let inv = prepare(info, plugins, command, env, stdin)?;
    let plugin = info.plugin;
    match command {
        Command::Add => {
            refuse_own_netns(&inv.env)?;
            let result = plugin.add(&inv)?;
            Ok(Some(result.render(inv.conf.cni_version())?))
        }
        Command::Del => {
            refuse_own_netns(&inv.env)?;
            crate::cni::deleting::mark(inv.conf.name(), &inv.env.container_id, &inv.env.ifname);
            plugin.del(&inv).map(|_| None)
        }
        Command::Check => plugin.check(&inv).map(|_| None),
        Command::Gc => plugin.gc(&inv).map(|_| None),
        Command::Status => plugin.status(&inv).map(|_| None),
        Command::Version => Ok(Some(version::version_reply())),
    }
}

/// The gates, in the reference's order: stdin JSON and network name, container ID
/// and ifname, then the version rules of the verb, then the typed config and CNI_ARGS.
pub fn prepare(
    info: &PluginInfo,
    plugins: Lookup,
    command: Command,
    env: CmdArgs,
    stdin: &[u8],
) -> CniResult<Invocation> {
    prepare_recorded(info, plugins, command, env, stdin, None)
}

/// As [`prepare`], the config's typed reads recorded into `recorder`
/// (`cnitool validate`: which keys no read knows).
pub fn prepare_recorded(
    info: &PluginInfo,
    plugins: Lookup,
    command: Command,
    env: CmdArgs,
    stdin: &[u8],
    recorder: Option<std::sync::Arc<crate::cni::json::Recorder>>,
) -> CniResult<Invocation> {
    let doc = crate::cni::config::parse_object(stdin)?;
    let name = match doc.field("name") {
        None => "",
        Some(Json::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::decode(format!(
                "error unmarshall network config: name must be a string, not {}",
                other.to_value()
            )));
        }
    };
    env::validate_network_name(name)?;
    if command.has_attachment() {
        env::validate_container_id(&env.container_id)?;
        env::validate_ifname(&env.ifname)?;
    }
    let cni_version = match doc.field("cniVersion") {
        None => "",
        Some(Json::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::decode(format!(
                "decoding version from network config: cniVersion must be a string, not {}",
                other.to_value()
            )));
        }
    };
    check_version_gate(command, cni_version)?;
    let conf = NetConf::recorded(doc, stdin, recorder)?;
    let cni_args = match info.cni_args {
        ArgsPolicy::Ignored => CniArgs::default(),
        ArgsPolicy::Keys(keys) => CniArgs::parse(&env.args, keys)?,
    };
    Ok(Invocation {
        command,
        env,
        conf,
        cni_args,
        plugins,
    })
}

fn check_version_gate(command: Command, config_version: &str) -> CniResult<()> {
    let v = version::effective(config_version);
    let minimum = match command {
        Command::Check => Some("0.4.0"),
        Command::Gc | Command::Status => Some("1.1.0"),
        _ => None,
    };
    if let Some(min) = minimum
        && !version::at_least(v, min)?
    {
        return Err(Error::new(
            Code::IncompatibleVersion,
            format!("config version does not allow {}", command.as_str()),
        ));
    }
    version::check_supported(v)
}

/// CNI_NETNS must not be the plugin's own namespace (code 8). The reference checks
/// this after doing the work; checking first keeps the host untouched.
fn refuse_own_netns(env: &CmdArgs) -> CniResult<()> {
    if env.netns.is_empty() || env.netns_override {
        return Ok(());
    }
    let (Ok(ours), Ok(theirs)) = (
        std::fs::metadata("/proc/self/ns/net"),
        std::fs::metadata(&env.netns),
    ) else {
        return Ok(());
    };
    if ours.dev() == theirs.dev() && ours.ino() == theirs.ino() {
        return Err(Error::new(
            Code::InvalidNetns,
            "plugin's netns and netns from CNI_NETNS should not be the same",
        ));
    }
    Ok(())
}
