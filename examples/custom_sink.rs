//! A user sink: keeps per-frame statistics (min, max, mean of each field) instead of data.
//!
//! It implements `wgpipe::storage::Backend` (storing only) and is passed wrapped in
//! `Checked`, which drives it through the sink protocol: it receives every frame of every
//! stream in order, checked against the layout, on the writer thread, while the GPUs keep
//! computing, and `Checked` counts and checksums what it took.
//!
//! `cargo run --release -p wgpipe --example custom_sink`

use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{Backend, Checked, DType, Error, Fields, Frame, Outcome, Result, StreamLayout};

/// Per stream, per frame: (step, min, max, mean) of the first field.
#[derive(Default)]
struct StatsSink {
    names: Vec<String>,
    stats: Vec<Vec<(u64, f32, f32, f32)>>,
}

impl Backend for StatsSink {
    /// What this sink cannot take, refused before any device opens.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        if layout.fields.first().is_none_or(|f| f.dtype != DType::F32) {
            return Err(Error::InvalidLayout("StatsSink needs a float32 first field".into()));
        }
        Ok(())
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.check_layout(layout)?;
        self.names = layout.streams.iter().map(|s| s.name.clone()).collect();
        self.stats = vec![Vec::new(); layout.streams.len()];
        Ok(())
    }

    /// `frame` fits the layout (checked by `Checked`): `fields.get(0)` is the first field.
    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let field = fields.get(0);
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
        Ok(None)
    }

    fn finish(&mut self, _outcome: &Outcome<'_>) -> Result<()> {
        for (name, stats) in self.names.iter().zip(&self.stats) {
            println!("stream {name}:");
            println!("{:>8} {:>10} {:>10} {:>10}", "step", "min v", "max v", "mean v");
            for (step, min, max, mean) in stats {
                println!("{step:>8} {min:>10.4} {max:>10.4} {mean:>10.4}");
            }
        }
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let report = Pipeline::builder()
        .grid(128, 128)
        .frames(10)
        .steps_per_frame(100)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(Checked::from(StatsSink::default()))
        .run()?;
    println!("{report}");
    Ok(())
}
