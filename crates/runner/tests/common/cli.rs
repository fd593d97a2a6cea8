//! Running the `wgpipe` binary from a test.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `wgpipe ARGS` in `dir`, with no standard input.
pub fn wgpipe(dir: &Path, args: &[&str]) -> Output {
    #[expect(clippy::unwrap_used, reason = "tests fail loudly")]
    Command::new(env!("CARGO_BIN_EXE_wgpipe")).current_dir(dir).args(args).stdin(Stdio::null()).output().unwrap()
}

/// What a run printed, stdout then stderr.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A small Gray-Scott run config writing `path`, with `extra` lines in `[output]`.
pub fn small_config(path: &str, extra: &str) -> String {
    format!(
        "[grid]\nrows = 6\ncols = 5\n[run]\nframes = 3\nsteps_per_frame = 4\n[devices]\nselect = [0]\n\
         [output]\npath = \"{path}\"\n{extra}\n"
    )
}
