//! A user kernel: heat diffusion from a WGSL file, with its own initial state, into raw files.
//!
//! The WGSL (`shaders-wgsl/heat.wgsl`) contains only the step: wgpipe's prelude, generated from
//! the field names, provides the bindings (`grid`, `u_in`, `u_out`) and helpers (`cell`,
//! `laplacian9_u`); the kernel declares its own `Params` at binding 1, filled from the `params`
//! list in declaration order.
//!
//! `cargo run --release -p wgpipe --example custom_kernel -- [OUT_DIR]`

use anyhow::Context as _;
use wgpipe::Pipeline;
use wgpipe::compute::{KernelSpec, WgslSource};
use wgpipe::storage::{RawSink, SinkOptions};

fn main() -> anyhow::Result<()> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "heat-raw".to_owned());
    let shader = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shaders-wgsl/heat.wgsl");
    let alpha = 0.1f32;
    let kernel = KernelSpec::new("heat", WgslSource::from_file(shader)?, vec!["u".to_owned()], vec![alpha]);
    let (rows, cols) = (128, 128);
    let report = Pipeline::builder()
        .grid(rows, cols)
        .frames(20)
        .steps_per_frame(25)
        // A hot spot per stream, placed differently on each device.
        .kernel(kernel, move |stream, grid| {
            let (rows, cols) = (grid.ny(), grid.nx());
            let mut u = vec![0.0f32; rows * cols];
            let (r, c) = (rows / 4 + stream * rows / 3 % rows, cols / 2);
            u[r * cols + c] = 1000.0;
            u
        })
        .sink(RawSink::new(SinkOptions::new(&out).with_overwrite(true)))
        .run()
        .with_context(|| format!("running the heat kernel into {out}"))?;
    println!("{report}");
    println!("read it with: numpy.fromfile('{out}/stream0.u.bin', dtype='<f4').reshape(-1, {rows}, {cols})");
    Ok(())
}
