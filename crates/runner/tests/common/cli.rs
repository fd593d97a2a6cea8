//! Running the `wgpipe` binary from a test.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};

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

/// `wgpipe ARGS` started in `dir` with no standard input and stdout discarded; its stderr
/// lines arrive on the receiver as it prints them.
pub fn spawn_with_stderr(dir: &Path, args: &[&str]) -> (Child, Receiver<String>) {
    #[expect(clippy::unwrap_used, reason = "tests fail loudly")]
    let mut child = Command::new(env!("CARGO_BIN_EXE_wgpipe"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = match child.stderr.take() {
        Some(stderr) => lines(stderr),
        None => channel().1,
    };
    (child, rx)
}

/// The lines of `stream` on a receiver, as they are written.
pub fn lines(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Lines from `rx` (kept in `seen`) until one satisfies `wanted`, which it returns; panics with
/// everything seen when none comes within 120 s.
pub fn wait_for(rx: &Receiver<String>, seen: &mut Vec<String>, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
        seen.push(line.clone());
        if wanted(&line) {
            return line;
        }
    }
    panic!("the run never printed what was waited for; it printed:\n{}", seen.join("\n"));
}

/// N of a `--progress frames` line `written N/TOTAL frames`; `None` for every other line, the
/// `written per stream: ...` line printed before it among them.
pub fn written_count(line: &str) -> Option<u64> {
    line.strip_prefix("written ")?.strip_suffix(" frames")?.split_once('/')?.0.parse().ok()
}

/// Lines from `rx` (kept in `seen`) until the run (`--progress frames`) reports at least
/// `frames` frames written; returns that line.
pub fn wait_for_written(rx: &Receiver<String>, seen: &mut Vec<String>, frames: u64) -> String {
    wait_for(rx, seen, |line| written_count(line).is_some_and(|n| n >= frames))
}
