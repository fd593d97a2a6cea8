//! `examples/own_producer.rs` (an application's own three-pass wgpu pipeline streamed through
//! wgpipe as a `FrameSource`) run for real on lavapipe: the HDF5 file holds both swarms with
//! the declared layout, and every frame equals the example's CPU computation bit for bit.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

#[path = "../../../examples/own_producer.rs"]
mod own_producer;

use own_producer::{BINS, FRAMES, PARTICLES, STEPS_PER_FRAME, SWARMS, cpu_frames, frame_layout};
use wgpipe::compute::DeviceSelector;
use wgpipe::storage::{DType, open_output};

#[test]
fn the_examples_particles_reach_the_file_as_the_cpu_computes_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("particles.h5");
    let report = own_producer::run(&path, DeviceSelector::Indices(vec![0])).unwrap();
    assert_eq!(report.sink.frames, FRAMES * SWARMS.len() as u64);
    assert!(report.devices.iter().all(|d| d.compute_seconds > 0.0), "{report}");

    let out = open_output(&path).unwrap();
    assert_eq!(out.fields(), frame_layout().as_slice());
    assert_eq!(out.fields()[1].dtype, DType::U32);
    for &(name, seed) in &SWARMS {
        let s = out.stream_index(name).unwrap();
        assert!(out.streams()[s].complete, "{name}");
        assert_eq!(out.streams()[s].frames, FRAMES);
        let steps: Vec<u64> = (1..=FRAMES).map(|i| i * STEPS_PER_FRAME).collect();
        assert_eq!(out.steps(s).unwrap(), steps);
        let want = cpu_frames(seed);
        for (i, (pos, density)) in want.iter().enumerate() {
            let got_pos = out.read_field(s, 0, i as u64).unwrap().bytes;
            let want_pos: Vec<u8> = pos.iter().flat_map(|x| x.to_le_bytes()).collect();
            assert!(got_pos == want_pos, "{name} frame {i}: positions differ from the CPU's");
            let got_density = out.read_field(s, 1, i as u64).unwrap().bytes;
            let want_density: Vec<u8> = density.iter().flat_map(|x| x.to_le_bytes()).collect();
            assert!(got_density == want_density, "{name} frame {i}: the histogram differs from the CPU's");
            assert_eq!(density.iter().sum::<u32>() as usize, PARTICLES, "every particle is binned");
        }
        // The particles moved and the histogram is not uniform: the check compares something.
        assert_ne!(want[0].0, want[FRAMES as usize - 1].0);
        assert!(want[0].1.iter().any(|c| *c as usize > PARTICLES / (BINS * BINS)));
    }
}

/// A source that records nothing and fails at frame `fail_at`, with frames of `bytes` bytes.
struct Failing {
    bytes: u64,
    fail_at: u64,
}

impl wgpipe::FrameSource for Failing {
    fn frame_bytes(&self) -> u64 {
        self.bytes
    }

    fn encode_frame(
        &mut self,
        index: u64,
        _encoder: &mut wgpipe::compute::wgpu::CommandEncoder,
        _staging: &wgpipe::compute::wgpu::Buffer,
    ) -> Result<u64, wgpipe::BoxError> {
        if index == self.fail_at { Err("the simulation diverged".into()) } else { Ok(index) }
    }
}

#[test]
fn a_frame_sources_mistakes_are_errors_that_name_it() {
    use wgpipe::storage::{FieldSpec, NullSink};
    use wgpipe::{Job, Pipeline};
    let run = |bytes: u64, layout: Option<Vec<FieldSpec>>| {
        let job = Job::from_source("s", move |_: &wgpipe::compute::GpuDevice| {
            Ok(Box::new(Failing { bytes, fail_at: 3 }) as Box<dyn wgpipe::FrameSource>)
        });
        let mut b = Pipeline::builder().devices(DeviceSelector::Indices(vec![0]), 1).frames(5).jobs(vec![job]);
        if let Some(layout) = layout {
            b = b.frame_layout(layout);
        }
        b.sink(NullSink::default()).run().err().map(|e| e.to_string()).unwrap_or_default()
    };
    let e = run(16, None);
    assert!(e.contains("call .frame_layout(fields)"), "{e}");
    let layout = vec![FieldSpec::new("a", DType::U8, [16])];
    let e = run(16, Some(layout.clone()));
    assert!(e.contains("frame source s: the simulation diverged"), "{e}");
    let e = run(8, Some(layout));
    assert!(e.contains("stream s: its frame source makes frames of 8 bytes, but the frame layout holds 16"), "{e}");
}
