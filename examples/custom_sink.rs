//! A user sink: keeps per-frame statistics (min, max, mean of each field) instead of data.
//!
//! Any type implementing `wgpipe::storage::Sink` plugs in; it receives every frame of every
//! stream in order, on the writer thread, while the GPUs keep computing.
//!
//! `cargo run --release -p wgpipe --example custom_sink`

use std::ops::Range;
use std::time::Instant;

use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{DType, Error, Frame, Result, Sink, SinkSummary, StreamLayout};

/// Per stream, per frame: (step, min, max, mean) of the first field.
#[derive(Default)]
struct StatsSink {
    names: Vec<String>,
    /// Where the first field lies in every frame's bytes.
    first: Range<usize>,
    stats: Vec<Vec<(u64, f32, f32, f32)>>,
    summary: SinkSummary,
}

impl Sink for StatsSink {
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        let first = layout.fields.first().filter(|f| f.dtype == DType::F32);
        let first = first.and_then(|_| layout.field_range(0));
        self.first = first.ok_or_else(|| Error::InvalidLayout("StatsSink needs a float32 first field".into()))?;
        self.names = layout.streams.iter().map(|s| s.name.clone()).collect();
        self.stats = vec![Vec::new(); layout.streams.len()];
        Ok(())
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        let field = frame.data.get(self.first.clone()).unwrap_or_default();
        let values = field.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let (mut min, mut max, mut sum, mut n) = (f32::INFINITY, f32::NEG_INFINITY, 0.0f64, 0usize);
        for v in values {
            min = min.min(v);
            max = max.max(v);
            sum += f64::from(v);
            n += 1;
        }
        let mean = if n > 0 { (sum / n as f64) as f32 } else { 0.0 };
        if let Some(s) = self.stats.get_mut(frame.stream) {
            s.push((frame.step, min, max, mean));
        }
        self.summary.record(frame, start);
        Ok(())
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        for (name, stats) in self.names.iter().zip(&self.stats) {
            println!("stream {name}:");
            println!("{:>8} {:>10} {:>10} {:>10}", "step", "min v", "max v", "mean v");
            for (step, min, max, mean) in stats {
                println!("{step:>8} {min:>10.4} {max:>10.4} {mean:>10.4}");
            }
        }
        Ok(self.summary.clone())
    }
}

fn main() -> anyhow::Result<()> {
    let report = Pipeline::builder()
        .grid(128, 128)
        .frames(10)
        .steps_per_frame(100)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(StatsSink::default())
        .run()?;
    println!("{report}");
    Ok(())
}
