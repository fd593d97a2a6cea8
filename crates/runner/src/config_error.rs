//! Errors of loading a run configuration: each names where the bad value came from. (Beside
//! `config`, not in it: the crate's [`crate::Error`] holds one, and `config` uses that error.)

use std::fmt;
use std::path::PathBuf;

/// Where a config value came from, for messages: a file line, a `--set` argument, or the file
/// as a whole when the key is absent from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A line of a config file (1-based).
    Line {
        /// The file (or the name of a built-in config).
        file: String,
        /// 1-based line.
        line: usize,
    },
    /// A `--set key=value` argument, as the user wrote it.
    Set(String),
    /// A file, without a more precise place (e.g. a key left at its default).
    File(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Line { file, line } => write!(f, "{file} line {line}"),
            Origin::Set(arg) => write!(f, "--set {arg}"),
            Origin::File(file) => f.write_str(file),
        }
    }
}

/// Everything that can be wrong with a run configuration.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file cannot be read.
    #[error("cannot read config file {path}: {source}; check the path, or run without a file for the default")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{origin}: invalid TOML: {message}")]
    Syntax {
        /// Where.
        origin: Origin,
        /// The parser's explanation.
        message: String,
    },
    /// A `--set` argument is not `key=value` with a dotted key.
    #[error("--set {arg}: {message}")]
    BadSet {
        /// The argument.
        arg: String,
        /// What is wrong and how to write it.
        message: String,
    },
    /// A key is unknown, has the wrong type or an out-of-range value.
    #[error("{origin}: {key}: {message}")]
    Invalid {
        /// Where the value came from.
        origin: Origin,
        /// The dotted key, e.g. `grid.rows`.
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The adapters `devices.select` names cannot be opened (none found, none matches, a
    /// device refused to open).
    #[error("{origin}: devices.select: {source}")]
    Devices {
        /// Where the selection was configured.
        origin: Origin,
        /// The compute crate's error.
        source: Box<wgpipe_compute::Error>,
    },
    /// The kernel's WGSL cannot be read or does not validate.
    #[error("{origin}: {key}: {source}")]
    Kernel {
        /// Where the kernel was configured.
        origin: Origin,
        /// The key naming the kernel (`kernel.wgsl` or `kernel.name`).
        key: String,
        /// The compute crate's error (file:line:column for WGSL problems).
        source: Box<wgpipe_compute::Error>,
    },
}

/// Result with [`ConfigError`].
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;
