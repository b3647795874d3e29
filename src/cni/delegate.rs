//! Running another plugin (an IPAM plugin, or a main plugin for flannel and
//! multus) the way libcni's `invoke` package does: found on CNI_PATH, given the
//! CNI environment with CNI_COMMAND set and the config on stdin, its stderr kept
//! for the error text and passed on, its stdout decoded as a result or a CNI
//! error. The caller's whole environment is inherited, so the trace context
//! (TRACEPARENT, TRACESTATE, BAGGAGE) reaches every plugin. When the file found is
//! this very binary, the plugin runs in-process: same code, no fork and exec.
//! A tracer (`set_tracer`, cnitool's `--trace`) sees every run: what the
//! plugin received and what it answered.

use crate::cni::dispatch;
use crate::cni::env::{CmdArgs, Command};
use crate::cni::error::{CniResult, Code, Context, Error};
use crate::cni::json;
use crate::cni::result::{NetResult, Versioned};
use crate::cni::{Invocation, Lookup, no_plugins, version};
use crate::quote::quoted;
use serde::Deserialize;
use serde_json::Value;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One plugin run as a tracer sees it: `Start` before it runs, `End` after.
pub enum Event<'e> {
    Start {
        plugin: &'e str,
        /// The file found on CNI_PATH.
        path: &'e Path,
        /// Run in-process (the file is this binary): no exec.
        in_process: bool,
        command: Command,
        /// The CNI_* variables it is given (an empty one is unset).
        env: &'e [(&'static str, OsString)],
        stdin: &'e [u8],
    },
    End {
        plugin: &'e str,
        command: Command,
        /// An exec'd plugin's exit status; in-process, the skel's (0, or 1 with
        /// the error printed).
        status: String,
        stdout: &'e str,
        /// None in-process: the plugin wrote to our stderr directly.
        stderr: Option<&'e [u8]>,
        elapsed: Duration,
    },
}

pub type Tracer = fn(&Event);

static TRACER: OnceLock<Tracer> = OnceLock::new();

/// Every plugin run of this process is reported to `tracer` from now on
/// (the first tracer set stays).
pub fn set_tracer(tracer: Tracer) {
    let _ = TRACER.set(tracer);
}

/// One plugin to delegate to, with the invocation it shares with its caller.
pub struct Delegate<'a> {
    plugin_type: String,
    env: &'a CmdArgs,
    stdin: &'a [u8],
    /// The file whose identity (device, inode) marks "this binary".
    this_binary: PathBuf,
    /// This binary's plugins (none known: every delegate is exec'd).
    plugins: Lookup,
}

impl<'a> Delegate<'a> {
    /// A delegate of type `plugin_type` receiving `stdin` and the caller's env.
    pub fn new(plugin_type: &str, env: &'a CmdArgs, stdin: &'a [u8]) -> CniResult<Delegate<'a>> {
        if plugin_type.is_empty() {
            return Err(Error::invalid_config("no plugin name provided"));
        }
        if plugin_type.contains(['/', '\0']) || plugin_type == ".." || plugin_type == "." {
            return Err(Error::invalid_config(format!(
                "invalid plugin name: {plugin_type}"
            )));
        }
        Ok(Delegate {
            plugin_type: plugin_type.to_string(),
            env,
            stdin,
            this_binary: PathBuf::from("/proc/self/exe"),
            plugins: no_plugins,
        })
    }

    /// Runs the delegate in-process when the file found is this binary and
    /// `plugins` knows its type.
    pub fn in_process(mut self, plugins: Lookup) -> Delegate<'a> {
        self.plugins = plugins;
        self
    }

    /// The IPAM plugin named by `ipam.type`, given the caller's whole config.
    pub fn ipam(inv: &'a Invocation) -> CniResult<Delegate<'a>> {
        let plugin_type = inv
            .conf
            .ipam_type()
            .ok_or_else(|| Error::invalid_config("IPAM config missing 'type' key"))?;
        Ok(Delegate::new(plugin_type, &inv.env, &inv.conf.bytes)?.in_process(inv.plugins))
    }

    pub fn plugin_type(&self) -> &str {
        &self.plugin_type
    }

    /// ADD; the result converted to the current version.
    pub fn add(&self) -> CniResult<NetResult> {
        let stdout = self.run(Command::Add)?.unwrap_or_default();
        self.decode_result(&stdout)
    }

    /// ADD, returning a guard that DELs the delegate unless the caller keeps it:
    /// a later failure of the caller's ADD gives the addresses back.
    pub fn add_guarded(&self) -> CniResult<(NetResult, Rollback<'_, 'a>)> {
        let result = self.add()?;
        Ok((
            result,
            Rollback {
                delegate: self,
                armed: true,
            },
        ))
    }

    pub fn del(&self) -> CniResult<()> {
        self.run(Command::Del).map(drop)
    }

    pub fn check(&self) -> CniResult<()> {
        self.run(Command::Check).map(drop)
    }

    pub fn gc(&self) -> CniResult<()> {
        self.run(Command::Gc).map(drop)
    }

    pub fn status(&self) -> CniResult<()> {
        self.run(Command::Status).map(drop)
    }

    /// One verb for the calling plugin: a failure of the delegate names it,
    /// as libcni names a list's plugin, so the error of a chain says which
    /// plugin failed (`plugin type="host-local" failed (add): ...`).
    fn run(&self, command: Command) -> CniResult<Option<String>> {
        let found = find_in_path(&self.plugin_type, &self.env.path)?;
        self.invoke_found(&found, command).map_err(|e| {
            e.context(format!(
                "plugin type={} failed ({})",
                quoted(&self.plugin_type),
                command.as_str().to_lowercase()
            ))
        })
    }

    /// Runs one verb and returns what the plugin printed (None: nothing to print,
    /// in-process). A runtime uses this directly (and names the plugin itself);
    /// plugins use the verbs above.
    pub fn invoke(&self, command: Command) -> CniResult<Option<String>> {
        let found = find_in_path(&self.plugin_type, &self.env.path)?;
        self.invoke_found(&found, command)
    }

    fn invoke_found(&self, found: &Path, command: Command) -> CniResult<Option<String>> {
        let ours = same_file(found, &self.this_binary)
            .then(|| (self.plugins)(&self.plugin_type))
            .flatten();
        let Some(info) = ours else {
            return self.exec(found, command).map(Some);
        };
        self.traced(found, command, || {
            if command == Command::Version {
                // As the skel: VERSION ignores stdin.
                return Ok(Some(version::version_reply()));
            }
            dispatch::execute(info, self.plugins, command, self.env.clone(), self.stdin)
        })
    }

    /// Runs an in-process plugin, reported to the tracer when there is one.
    fn traced(
        &self,
        path: &Path,
        command: Command,
        run: impl FnOnce() -> CniResult<Option<String>>,
    ) -> CniResult<Option<String>> {
        let Some(tracer) = TRACER.get() else {
            return run();
        };
        let env = self.cni_env(command)?;
        tracer(&Event::Start {
            plugin: &self.plugin_type,
            path,
            in_process: true,
            command,
            env: &env,
            stdin: self.stdin,
        });
        let start = Instant::now();
        let ran = run();
        let (status, stdout) = match &ran {
            Ok(out) => ("exit status: 0", out.clone().unwrap_or_default()),
            Err(e) => ("exit status: 1", e.to_json()),
        };
        tracer(&Event::End {
            plugin: &self.plugin_type,
            command,
            status: status.into(),
            stdout: &stdout,
            stderr: None,
            elapsed: start.elapsed(),
        });
        ran
    }

    /// The CNI_* variables of a run, in the reference's order; an empty value
    /// is unset rather than set empty.
    fn cni_env(&self, command: Command) -> CniResult<Vec<(&'static str, OsString)>> {
        let path_var = std::env::join_paths(&self.env.path)
            .map_err(|e| Error::caused_by(Code::InvalidEnv, "invalid CNI_PATH", e))?;
        Ok(vec![
            ("CNI_COMMAND", command.as_str().into()),
            ("CNI_CONTAINERID", self.env.container_id.as_str().into()),
            ("CNI_NETNS", self.env.netns.as_str().into()),
            ("CNI_IFNAME", self.env.ifname.as_str().into()),
            ("CNI_ARGS", self.env.args.as_str().into()),
            ("CNI_PATH", path_var),
        ])
    }

    /// This binary's own plugin of the type, in-process, whatever CNI_PATH
    /// holds: another implementation's state read our way (the same rules).
    pub fn invoke_ours(&self, command: Command) -> CniResult<Option<String>> {
        let info = (self.plugins)(&self.plugin_type).ok_or_else(|| {
            Error::new(
                Code::Internal,
                format!("no built-in plugin {}", quoted(&self.plugin_type)),
            )
        })?;
        self.traced(&self.this_binary, command, || {
            dispatch::execute(info, self.plugins, command, self.env.clone(), self.stdin)
        })
    }

    /// Runs the plugin as a child process; its stderr is ours.
    fn exec(&self, path: &Path, command: Command) -> CniResult<String> {
        let mut process = Process::new(path);
        process
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let vars = self.cni_env(command)?;
        for (key, value) in &vars {
            if value.is_empty() {
                process.env_remove(key);
            } else {
                process.env(key, value);
            }
        }
        let tracer = TRACER.get();
        if let Some(tracer) = tracer {
            tracer(&Event::Start {
                plugin: &self.plugin_type,
                path,
                in_process: false,
                command,
                env: &vars,
                stdin: self.stdin,
            });
        }
        let start = Instant::now();
        let output = self.spawn_and_wait(&mut process, path);
        let output = match (output, tracer) {
            (Ok(output), _) => output,
            (Err(e), Some(tracer)) => {
                tracer(&Event::End {
                    plugin: &self.plugin_type,
                    command,
                    status: format!("not run: {e}"),
                    stdout: "",
                    stderr: Some(b""),
                    elapsed: start.elapsed(),
                });
                return Err(e);
            }
            (Err(e), None) => return Err(e),
        };
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if let Some(tracer) = tracer {
            // The trace shows the plugin's stderr, so it is not passed on twice.
            tracer(&Event::End {
                plugin: &self.plugin_type,
                command,
                status: output.status.to_string(),
                stdout: &stdout,
                stderr: Some(&output.stderr),
                elapsed: start.elapsed(),
            });
        } else if !output.stderr.is_empty() {
            // As libcni: the plugin's stderr is kept for the error text and
            // then passed on to ours.
            let _ = std::io::stderr().write_all(&output.stderr);
        }
        if output.status.success() {
            return Ok(stdout);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(decode_failure(&stdout, &stderr, &output.status.to_string()))
    }

    /// Starts the plugin, feeds it stdin and collects what it printed.
    fn spawn_and_wait(
        &self,
        process: &mut Process,
        path: &Path,
    ) -> CniResult<std::process::Output> {
        let mut child =
            spawn_retrying(process).with_context(|| format!("failed to run {}", path.display()))?;
        let mut input = child.stdin.take();
        let stdin = self.stdin;
        // Feed stdin from a thread so a plugin that writes before reading cannot
        // deadlock against us; a plugin that never reads just gets EPIPE here.
        std::thread::scope(|s| {
            s.spawn(move || {
                if let Some(pipe) = input.as_mut() {
                    let _ = pipe.write_all(stdin);
                }
                drop(input);
            });
            child.wait_with_output()
        })
        .with_context(|| format!("failed to wait for {}", path.display()))
    }

    /// Parses a delegate's result with its own version (the config's when it has
    /// none), as libcni does, and converts it to the current version.
    fn decode_result(&self, stdout: &str) -> CniResult<NetResult> {
        let value: Value = json::from_str(stdout).map_err(|e| {
            Error::caused_by(
                Code::Decode,
                format!("failed to parse result of {}", self.plugin_type),
                e,
            )
        })?;
        if value.is_null() {
            return Err(Error::internal(format!(
                "{} returned no result",
                self.plugin_type
            )));
        }
        let config_version = json::from_slice::<VersionOnly>(self.stdin)
            .map(|v| v.cni_version)
            .unwrap_or_default();
        Versioned::parse_own(value, version::effective(&config_version))
            .map_err(|e| {
                Error::caused_by(
                    Code::Decode,
                    format!("failed to parse result of {}", self.plugin_type),
                    e,
                )
            })?
            .into_current()
    }
}

#[derive(Deserialize)]
struct VersionOnly {
    #[serde(rename = "cniVersion", default)]
    cni_version: String,
}

/// DELs the delegate when dropped, unless [`Rollback::keep`] was called.
#[must_use = "dropping the guard releases what the delegate added"]
pub struct Rollback<'d, 'a> {
    delegate: &'d Delegate<'a>,
    armed: bool,
}

impl Rollback<'_, '_> {
    /// The caller's ADD succeeded: keep what the delegate added.
    pub fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for Rollback<'_, '_> {
    fn drop(&mut self) {
        if self.armed {
            // The caller reports its own error; a failing DEL must not hide it.
            let _ = self.delegate.del();
        }
    }
}

/// The first `<dir>/<plugin>` on CNI_PATH that is a regular file (libcni does not
/// check the exec bit).
pub fn find_in_path(plugin: &str, paths: &[PathBuf]) -> CniResult<PathBuf> {
    if paths.is_empty() {
        return Err(Error::invalid_env(format!(
            "no paths provided to find plugin {plugin}",
            plugin = quoted(&plugin)
        )));
    }
    paths
        .iter()
        .map(|dir| dir.join(plugin))
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| m.is_file()))
        .ok_or_else(|| {
            let dirs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            Error::internal(format!(
                "failed to find plugin {plugin} in path [{}]",
                dirs.join(" "),
                plugin = quoted(&plugin)
            ))
        })
}

/// Same device and inode: a symlink or hard link to `b` counts as `b`, and
/// so does a plugin stub whose `#!` line runs `b`.
fn same_file(a: &Path, b: &Path) -> bool {
    let same =
        |x: &std::fs::Metadata, y: &std::fs::Metadata| x.dev() == y.dev() && x.ino() == y.ino();
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if same(&ma, &mb) {
        return true;
    }
    if !ma.is_file() || ma.len() > super::stub::MAX_LEN {
        return false;
    }
    std::fs::read(a).is_ok_and(|bytes| {
        super::stub::parse(&bytes)
            .and_then(|binary| std::fs::metadata(binary).ok())
            .is_some_and(|m| same(&m, &mb))
    })
}

/// libcni retries "text file busy" (a plugin being replaced) for up to 5 s.
fn spawn_retrying(process: &mut Process) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match process.spawn() {
            Err(e) if e.raw_os_error() == Some(nix::libc::ETXTBSY) && tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
            other => return other,
        }
    }
}

#[derive(Deserialize)]
struct WireError {
    code: u32,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    details: String,
}

/// A failed plugin's stdout as libcni reads it: a CNI error, or a message saying why not.
fn decode_failure(stdout: &str, stderr: &str, status: &str) -> Error {
    if stdout.trim().is_empty() {
        return Error::internal(if stderr.is_empty() {
            format!("netplugin failed with no error message: {status}")
        } else {
            format!(
                "netplugin failed: {stderr}: {status}",
                stderr = quoted(&stderr)
            )
        });
    }
    match json::from_str::<WireError>(stdout) {
        Ok(e) => Error::from_wire(e.code, e.msg, e.details),
        Err(e) => Error::caused_by(
            Code::Internal,
            format!(
                "netplugin failed but error parsing its diagnostic message {stdout}",
                stdout = quoted(&stdout)
            ),
            e,
        ),
    }
}

#[cfg(test)]
#[path = "delegate_tests.rs"]
mod tests;
