//! How setting up the sandbox around a command can fail; each failure is one line on stderr
//! and exit 126.

use std::path::PathBuf;

/// Why the sandbox could not be set up around a command.
#[derive(Debug, thiserror::Error)]
pub(in crate::sandbox) enum LaunchError {
    /// The launcher was started without a command.
    #[error("no command to run")]
    NoCommand,
    /// A standby's input ended before a command came: worker has no use for it.
    #[error("ended before a command came")]
    Unused,
    /// A standby's command cannot be read from its stdin.
    #[error("cannot read the command: {source}")]
    CommandInput {
        /// The read's failure.
        #[source]
        source: std::io::Error,
    },
    /// A standby's command is longer than it reads.
    #[error("the command is longer than {limit} bytes")]
    CommandTooLong {
        /// The most it reads.
        limit: u64,
    },
    /// A standby's input is not its command as JSON.
    #[error("the command is not valid: {source}")]
    CommandInvalid {
        /// What is wrong with it.
        #[source]
        source: serde_json::Error,
    },
    /// A standby's environment change names a variable that cannot be set.
    #[error("cannot set the variable {name:?}")]
    BadVariable {
        /// The variable's name.
        name: String,
    },
    /// A hidden path was created after the view was built, so it is not covered.
    #[error("{} appeared after the sandbox was set up, and is not hidden: the command was not run", path.display())]
    HiddenAppeared {
        /// The hidden path.
        path: PathBuf,
    },
    /// [`super::SPEC_VAR`] is missing.
    #[error("{} is not set", super::SPEC_VAR)]
    SpecUnset {
        /// Why the variable could not be read.
        #[source]
        source: std::env::VarError,
    },
    /// [`super::SPEC_VAR`] is not a [`super::Spec`].
    #[error("{}: {source}", super::SPEC_VAR)]
    SpecInvalid {
        /// What is wrong with it.
        #[source]
        source: serde_json::Error,
    },
    /// The namespaces cannot be created.
    #[error("cannot create namespaces: {source}")]
    Namespaces {
        /// The `unshare` failure.
        #[source]
        source: nix::Error,
    },
    /// `/proc/self/setgroups` cannot be written.
    #[error("setgroups: {source}")]
    Setgroups {
        /// The write's failure.
        #[source]
        source: std::io::Error,
    },
    /// `/proc/self/uid_map` cannot be written.
    #[error("uid_map: {source}")]
    UidMap {
        /// The write's failure.
        #[source]
        source: std::io::Error,
    },
    /// `/proc/self/gid_map` cannot be written.
    #[error("gid_map: {source}")]
    GidMap {
        /// The write's failure.
        #[source]
        source: std::io::Error,
    },
    /// The proxy's forwarder cannot listen inside the namespace.
    #[error("cannot listen for the proxy: {source}")]
    ProxyListen {
        /// The bind's failure.
        #[source]
        source: std::io::Error,
    },
    /// The mounts cannot be made private to the namespace.
    #[error("cannot make the mounts private: {source}")]
    PrivateMounts {
        /// The mount's failure.
        #[source]
        source: nix::Error,
    },
    /// A process cannot be forked.
    #[error("fork: {source}")]
    Fork {
        /// The `fork` failure.
        #[source]
        source: nix::Error,
    },
    /// The init cannot ask to die with the launcher.
    #[error("prctl: {source}")]
    DeathSignal {
        /// The `prctl` failure.
        #[source]
        source: nix::Error,
    },
    /// The working directory cannot be read.
    #[error("working directory: {source}")]
    WorkingDirectory {
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The command's view of the filesystem cannot be built.
    #[error(transparent)]
    View(#[from] crate::sandbox::view::ViewError),
    /// The working directory cannot be entered again in the view.
    #[error("cannot enter {}: {source}", path.display())]
    EnterWorkingDirectory {
        /// The working directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The file size limit cannot be set.
    #[error("RLIMIT_FSIZE: {source}")]
    FileSizeLimit {
        /// The `setrlimit` failure.
        #[source]
        source: nix::Error,
    },
    /// The Landlock ruleset cannot be made or applied.
    #[error("Landlock: {source}")]
    Landlock {
        /// The failure.
        #[source]
        source: landlock::RulesetError,
    },
    /// The kernel accepted the ruleset but enforces none of it.
    #[error("Landlock is not enforced by this kernel")]
    LandlockNotEnforced,
    /// `SIGCHLD` cannot be blocked.
    #[error("sigprocmask: {source}")]
    SignalMask {
        /// The failure.
        #[source]
        source: nix::Error,
    },
    /// The pipe the launcher tells the init on cannot be made.
    #[error("pipe: {source}")]
    Pipe {
        /// The `pipe2` failure.
        #[source]
        source: nix::Error,
    },
    /// The launcher ended before telling the init to start the command.
    #[error("the launcher ended before the command could start")]
    LauncherGone,
    /// An argument of the command contains a NUL byte.
    #[error("the command contains a NUL byte")]
    NulByte {
        /// The argument's conversion failure.
        #[source]
        source: std::ffi::NulError,
    },
}
