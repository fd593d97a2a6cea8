//! Developer tasks for wgpipe: `cargo xtask <task>`.
//!
//! `main` only dispatches; each task lives in its own module.
//!
//! - `bench`: pipeline overhead, non-blocking I/O efficiency, sweep and microbenchmarks
//!   (`cargo xtask bench --help`).
//! - `soak`: many frames through every sink, failing if memory or descriptors grow
//!   (`cargo xtask soak --help`).
//! - `codegen`: writes the files generated from the source, such as the configuration
//!   reference (`cargo xtask codegen --help`; in the library, so that tests call it).

mod bench;
mod soak;

use xtask::{codegen, flags};

use std::process::ExitCode;

#[expect(unsafe_code, reason = "quiet_vulkan_display_probe changes the environment: before any thread")]
fn main() -> ExitCode {
    // SAFETY: the first statement of `main`: no other thread exists yet. The benches' lines
    // stay free of Mesa's "error: XDG_RUNTIME_DIR is invalid" on a machine without a display.
    unsafe { wgpipe::compute::headless::quiet_vulkan_display_probe() };
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("bench") => bench::main(args.collect()),
        Some("soak") => soak::main(args.collect()),
        Some("codegen") => codegen::main(args.collect()),
        Some("help" | "--help" | "-h") | None => {
            println!(
                "usage: cargo xtask <task>\n\ntasks:\n  bench    measure the pipeline (cargo xtask bench --help)\n  \
                 soak     check that long runs do not leak (cargo xtask soak --help)\n  \
                 codegen  write the generated files, or --check them (cargo xtask codegen --help)"
            );
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(anyhow::anyhow!("unknown task {other:?}: try `cargo xtask help`")),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
