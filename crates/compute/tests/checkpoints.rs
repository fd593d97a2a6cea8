//! Saving a producer's state with its frames and resuming from it: the frames after the
//! saved one are bit for bit those of an uninterrupted run, with noise, for a 2-D and a 3-D
//! kernel, with f32 and f16 frames.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::gpu;
use wgpipe_compute::gray_scott_3d::{self, GrayScott3dParams};
use wgpipe_compute::{FieldSim, FrameProducer, GpuDevice, Grid, KernelSpec, OutputDType, ReadbackConfig, gray_scott};

const FRAMES: u64 = 7;

fn producer(gpu: &GpuDevice, kernel: &KernelSpec, grid: &Grid, init: &[f32], dtype: OutputDType) -> FrameProducer {
    let sim = FieldSim::new(gpu, kernel, grid, init).unwrap();
    // Only the last field is read back: the state must still hold every field.
    let fields = vec![kernel.fields.len() - 1];
    let config = ReadbackConfig { steps_per_frame: 3, frames: FRAMES, staging_buffers: 3, fields, work_ahead: true };
    FrameProducer::with_dtype(sim, config, dtype).unwrap()
}

/// A frame as produced: index, step, bytes.
type Produced = (u64, u64, Vec<u8>);
/// A saved state and the index of the frame it was saved with.
type Saved = (u64, Vec<u8>);

/// Every frame and the states saved with them.
fn run(mut p: FrameProducer) -> (Vec<Produced>, Vec<Saved>) {
    let mut buf = vec![0u8; p.frame_bytes()];
    let (mut frames, mut states) = (Vec::new(), Vec::new());
    while let Some(info) = p.next_into(&mut buf).unwrap() {
        frames.push((info.index, info.step, buf.clone()));
        if let Some(state) = p.take_state() {
            states.push((info.index, state));
        }
    }
    (frames, states)
}

fn check(gpu: &GpuDevice, kernel: &KernelSpec, grid: &Grid, init: &[f32], dtype: OutputDType) {
    let label = format!("{} {dtype:?}", kernel.name);
    let mut saving = producer(gpu, kernel, grid, init, dtype);
    assert_eq!(saving.state_bytes(), (grid.cells() * kernel.fields.len() * 4) as u64, "{label}");
    saving.save_state_every(3).unwrap();
    let (whole, states) = run(saving);
    assert_eq!(whole.len() as u64, FRAMES, "{label}");
    // Frames 2 and 5 carry a state; the last frame (6) ends the stream and carries none.
    assert_eq!(states.iter().map(|s| s.0).collect::<Vec<_>>(), [2, 5], "{label}");
    let (plain, _) = run(producer(gpu, kernel, grid, init, dtype));
    assert_eq!(plain, whole, "{label}: saving states changed the frames");
    for (saved_with, state) in &states {
        let mut resumed = producer(gpu, kernel, grid, init, dtype);
        resumed.resume_at(saved_with + 1, state).unwrap();
        let (rest, _) = run(resumed);
        assert_eq!(rest, whole[*saved_with as usize + 1..], "{label}: resumed after frame {saved_with}");
    }
    // Not by construction: the saved state is not the initial one, and restoring at the
    // wrong frame draws other steps (and, with noise, other noise).
    let mut wrong = producer(gpu, kernel, grid, init, dtype);
    wrong.resume_at(states[0].0 + 2, &states[0].1).unwrap();
    assert_ne!(run(wrong).0[0].2, whole[states[0].0 as usize + 2].2, "{label}");
}

#[test]
fn a_producer_resumed_from_a_saved_state_continues_bit_for_bit() {
    let gpu = gpu();
    let grid = Grid::new(&[17, 23]).unwrap();
    let kernel = gray_scott::GrayScottParams::default().kernel().with_seed(9);
    let init = gray_scott::initial_state(17, 23, 4, 0.05);
    check(&gpu, &kernel, &grid, &init, OutputDType::F32);
    check(&gpu, &kernel, &grid, &init, OutputDType::F16);
    let grid = Grid::new(&[9, 10, 12]).unwrap();
    let kernel = GrayScott3dParams { noise: 0.05, ..Default::default() }.kernel(3);
    check(&gpu, &kernel, &grid, &gray_scott_3d::initial_state(&grid), OutputDType::F32);
}

#[test]
fn a_saved_state_of_another_size_and_a_late_resume_are_refused() {
    let gpu = gpu();
    let grid = Grid::new(&[8, 8]).unwrap();
    let kernel = gray_scott::GrayScottParams::default().kernel();
    let init = gray_scott::initial_state(8, 8, 0, 0.0);
    let mut p = producer(&gpu, &kernel, &grid, &init, OutputDType::F32);
    let e = p.resume_at(1, &[0u8; 12]).unwrap_err().to_string();
    assert!(e.contains("12 bytes") && e.contains("512"), "{e}");
    let e = p.resume_at(FRAMES + 1, &vec![0u8; 512]).unwrap_err().to_string();
    assert!(e.contains("past the 7 frames"), "{e}");
    let mut buf = vec![0u8; p.frame_bytes()];
    p.next_into(&mut buf).unwrap();
    let e = p.resume_at(1, &vec![0u8; 512]).unwrap_err().to_string();
    assert!(e.contains("before its first frame"), "{e}");
}

#[test]
fn a_state_saved_once_comes_with_that_frame_only() {
    let gpu = gpu();
    let grid = Grid::new(&[8, 8]).unwrap();
    let kernel = gray_scott::GrayScottParams::default().kernel();
    let init = gray_scott::initial_state(8, 8, 0, 0.0);
    let mut p = producer(&gpu, &kernel, &grid, &init, OutputDType::F32);
    p.save_state_once(4).unwrap();
    let (_, states) = run(p);
    assert_eq!(states.iter().map(|s| s.0).collect::<Vec<_>>(), [4]);
    let mut p = producer(&gpu, &kernel, &grid, &init, OutputDType::F32);
    p.save_state_once(0).unwrap();
    p.save_state_every(3).unwrap();
    let (_, states) = run(p);
    assert_eq!(states.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 2, 5]);
}
