//! The command line of `cargo xtask soak` (clap derive, like `bench`'s).

use std::path::PathBuf;

use clap::Parser;

use crate::bench::args::at_least_one;

/// Fewest frames a soak tells growth from warm-up with.
const LEAST_FRAMES: u64 = 100;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(
    name = "soak",
    bin_name = "cargo xtask soak",
    about = "Check that long runs do not leak",
    long_about = "Streams many frames through each sink (null, raw, hdf5, hdf5 with deflate) at a small grid, \
                  samples the process's resident memory (VmRSS) and open descriptors while it runs, and fails if \
                  either grows after the warm-up by more than the tolerance printed with the table."
)]
pub struct Args {
    /// Frames per sink; the first 10 % are the warm-up
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = enough_frames)]
    pub frames: u64,
    /// Grid rows
    #[arg(long, value_name = "R", default_value_t = 32, value_parser = at_least_one::<usize>)]
    pub rows: usize,
    /// Grid columns
    #[arg(long, value_name = "C", default_value_t = 32, value_parser = at_least_one::<usize>)]
    pub cols: usize,
    /// Adapter: all, vulkan, gl, 0,1 or a part of a name
    #[arg(long, value_name = "SEL", default_value = "0")]
    pub devices: String,
    /// Where raw and hdf5 write, in a directory of the soak's own removed afterwards [default:
    /// the current directory]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// KiB of resident-memory growth allowed on top of the rule, for short runs where the
    /// allocator's own warm-up (glibc's dynamic mmap threshold, arenas) is larger than any
    /// leak the run could show (smoke runs only)
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub rss_slack_kib: u64,
}

/// A frame count of at least [`LEAST_FRAMES`].
fn enough_frames(text: &str) -> Result<u64, String> {
    let frames: u64 = at_least_one(text)?;
    if frames < LEAST_FRAMES {
        return Err(format!("{frames} is too few to tell growth from warm-up: use {LEAST_FRAMES} or more"));
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("soak").chain(s.split_whitespace()))
    }

    #[test]
    fn parses_flags_and_rejects_nonsense() -> Result<(), clap::Error> {
        let a = args("")?;
        assert_eq!(
            (a.frames, a.rows, a.cols, a.devices.as_str(), a.out, a.rss_slack_kib),
            (10_000, 32, 32, "0", None, 0)
        );
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
