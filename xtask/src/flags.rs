//! The hand-parsed command line of `cargo xtask codegen`: `--flag value` and `--flag=value`
//! (`bench`, `bench-report` and `soak` parse theirs with clap).

use anyhow::{Context, Result};

/// The arguments of a command, read flag by flag.
pub struct Flags<'a> {
    args: std::slice::Iter<'a, String>,
}

impl<'a> Flags<'a> {
    /// Reads `argv` (the command's arguments, without the command itself).
    pub fn new(argv: &'a [String]) -> Self {
        Flags { args: argv.iter() }
    }

    /// The next argument as a flag, with its value when written `--flag=value`.
    pub fn next_flag(&mut self) -> Option<(&'a str, Option<&'a str>)> {
        let arg = self.args.next()?;
        Some(match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
            _ => (arg.as_str(), None),
        })
    }

    /// The value of `flag`: `inline` (from `--flag=value`) or the next argument.
    pub fn value(&mut self, flag: &str, inline: Option<&str>) -> Result<String> {
        match inline {
            Some(v) => Ok(v.to_owned()),
            None => self.args.next().cloned().with_context(|| format!("{flag} needs a value")),
        }
    }
}
