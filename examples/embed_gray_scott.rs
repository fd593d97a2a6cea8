//! Gray-Scott embedded in a few lines: one stream per device, all into one HDF5 file.
//!
//! `cargo run --release -p wgpipe --example embed_gray_scott -- [OUT.h5]`

use anyhow::Context as _;
use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{Hdf5Sink, SinkOptions};

fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "embedded.h5".to_owned());
    let report = Pipeline::builder()
        .grid(256, 256)
        .frames(40)
        .steps_per_frame(25)
        .gray_scott(GrayScottParams { feed: 0.035, kill: 0.065, ..Default::default() }, 1, 0.02)
        .sink(Hdf5Sink::new(SinkOptions::new(&path).with_overwrite(true)))
        .run()
        .with_context(|| format!("running Gray-Scott into {path}"))?;
    println!("{report}\nwrote {path}");
    Ok(())
}
