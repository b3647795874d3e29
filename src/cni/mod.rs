//! The CNI protocol: environment, configuration, results, errors, versions, and
//! the dispatcher every plugin plugs into through [`Plugin`].

pub mod capabilities;
pub mod config;
pub mod delegate;
pub mod deleting;
pub mod dispatch;
pub mod env;
pub mod error;
pub mod hint;
pub mod json;
pub mod result;
pub mod stub;
pub mod version;

pub use config::{CniArgs, NetConf};
pub use env::{CmdArgs, Command};
pub use error::{CniResult, Code, Error};
pub use result::NetResult;

/// Finds a plugin of this binary by name. The plugin table lives above the
/// protocol layer: the front end hands it down, so `cni` knows no plugin.
pub type Lookup = fn(&str) -> Option<&'static PluginInfo>;

/// A [`Lookup`] that knows no plugin: every delegate is exec'd.
pub fn no_plugins(_: &str) -> Option<&'static PluginInfo> {
    None
}

/// One verb's inputs, parsed and validated before any plugin code runs.
#[derive(Clone)]
pub struct Invocation {
    pub command: Command,
    pub env: CmdArgs,
    pub conf: NetConf,
    pub cni_args: CniArgs,
    /// This binary's plugins, for delegates that run in-process.
    pub plugins: Lookup,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("command", &self.command)
            .field("env", &self.env)
            .field("conf", &self.conf)
            .field("cni_args", &self.cni_args)
            .finish_non_exhaustive()
    }
}

/// A plugin implements the verbs; the dispatcher does everything else.
/// GC and STATUS default to success, as in reference plugins that lack them.
pub trait Plugin: Sync {
    fn add(&self, inv: &Invocation) -> CniResult<NetResult>;
    fn del(&self, inv: &Invocation) -> CniResult<()>;
    fn check(&self, inv: &Invocation) -> CniResult<()>;
    /// The checks ADD makes of the config before any kernel, disk or network
    /// work, for `cnitool validate`: every struct the verbs read is decoded (a
    /// recording config learns the keys) and what ADD would refuse is refused.
    /// prevResult is not needed: the runtime supplies it.
    fn validate(&self, inv: &Invocation) -> CniResult<()>;
    /// ADD hands `ipam.type`'s plugin the config (validate checks that plugin too).
    fn delegates_ipam(&self) -> bool {
        false
    }
    /// The configs ADD builds and hands whole to another plugin (flannel's
    /// delegate), as far as the config alone builds them, each with the key
    /// of ours it comes from: `cnitool validate` checks them as that plugin
    /// reads them. None where the config cannot build one (validate says why).
    fn handed_on(
        &self,
        _inv: &Invocation,
    ) -> Vec<(&'static str, serde_json::Map<String, serde_json::Value>)> {
        Vec::new()
    }
    fn gc(&self, _inv: &Invocation) -> CniResult<()> {
        Ok(())
    }
    fn status(&self, _inv: &Invocation) -> CniResult<()> {
        Ok(())
    }
}

/// Which CNI_ARGS keys a plugin reads (besides `IgnoreUnknown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgsPolicy {
    /// The reference plugin never parses CNI_ARGS: anything is accepted.
    Ignored,
    /// Parsed strictly: keys outside this list fail unless `IgnoreUnknown` is true.
    Keys(&'static [&'static str]),
}

/// What dispatch needs of a plugin (its row of the plugin table).
#[derive(Clone, Copy)]
pub struct PluginInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub cni_args: ArgsPolicy,
    pub plugin: &'static dyn Plugin,
}

impl PluginInfo {
    /// The "about" line printed when CNI_COMMAND is absent.
    pub fn about(&self) -> String {
        format!(
            "CNI {} plugin cni-multi v{}",
            self.name,
            env!("CARGO_PKG_VERSION")
        )
    }
}
