//! The command line of `cargo xtask soak`, parsed by hand like `bench`'s.

use std::path::PathBuf;

use crate::flags::Flags;
use anyhow::{Result, bail};

use crate::bench::args::number;

/// Usage text, printed by `--help`.
pub const USAGE: &str = "\
usage: cargo xtask soak [options]

Streams many frames through each sink (null, raw, hdf5, hdf5 with deflate) at a small grid,
samples the process's resident memory (VmRSS) and open descriptors while it runs, and fails
if either grows after the warm-up by more than the tolerance printed with the table.

  --frames N           frames per sink (default 10000; the first 10 % are the warm-up)
  --rows R --cols C    grid (default 32x32)
  --devices SEL        adapter: all, vulkan, gl, 0,1 or a name part (default 0)
  --out DIR            where raw/hdf5 write (default: a temp dir under the current directory)
  --rss-slack-kib K    allow K KiB more growth (default 0; for short smoke runs only)";

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub frames: u64,
    pub rows: usize,
    pub cols: usize,
    pub devices: String,
    pub out: Option<PathBuf>,
    /// KiB of resident-memory growth allowed on top of the rule, for short runs where the
    /// allocator's own warm-up (glibc's dynamic mmap threshold, arenas) is larger than any
    /// leak the run could show.
    pub rss_slack_kib: u64,
    pub help: bool,
}

impl Default for Args {
    fn default() -> Self {
        Args { frames: 10_000, rows: 32, cols: 32, devices: "0".to_owned(), out: None, rss_slack_kib: 0, help: false }
    }
}

/// Parses `--flag value` and `--flag=value` forms.
pub fn parse(argv: &[String]) -> Result<Args> {
    let mut a = Args::default();
    let mut flags = Flags::new(argv);
    while let Some((flag, inline)) = flags.next_flag() {
        let mut value = || flags.value(flag, inline);
        match flag {
            "--frames" => a.frames = number(flag, &value()?)?,
            "--rows" => a.rows = number(flag, &value()?)?,
            "--cols" => a.cols = number(flag, &value()?)?,
            "--devices" => a.devices = value()?,
            "--out" => a.out = Some(PathBuf::from(value()?)),
            "--rss-slack-kib" => a.rss_slack_kib = number(flag, &value()?)?,
            "--help" | "-h" => a.help = true,
            other => bail!("unknown argument {other:?}\n\n{USAGE}"),
        }
    }
    if a.frames < 100 {
        bail!("--frames {} is too few to tell growth from warm-up: use 100 or more", a.frames);
    }
    if a.rows == 0 || a.cols == 0 {
        bail!("--rows and --cols must be at least 1");
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args> {
        parse(&s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
    }

    #[test]
    fn parses_flags_and_rejects_nonsense() -> Result<()> {
        assert_eq!(args("")?, Args::default());
        let a = args("--frames 500 --rows=8 --cols 4 --out /dev/shm")?;
        assert_eq!((a.frames, a.rows, a.cols), (500, 8, 4));
        assert_eq!(a.out, Some(PathBuf::from("/dev/shm")));
        assert!(args("--frames 99").is_err());
        assert!(args("--frames x").is_err());
        assert!(args("--rows 0").is_err());
        assert!(args("--sink raw").is_err());
        Ok(())
    }
}
