//! Developer tasks for wgpipe: `cargo xtask <task>`.

fn main() {
    eprintln!("no xtask tasks yet");
}
