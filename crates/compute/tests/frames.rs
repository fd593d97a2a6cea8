//! f16 frames (converted on the GPU) and GPU time from timestamp queries, on every adapter
//! (in CI: lavapipe on Vulkan and llvmpipe on GL, both of which offer `TIMESTAMP_QUERY`).
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use wgpipe_compute::{
    BlockObserver, DeviceSelector, FieldSim, FrameProducer, GpuDevice, Grid, KernelSpec, OutputDType, ReadbackConfig,
    WgslSource, gray_scott, open_devices,
};

/// An odd number of cells (15 × 13 = 195), so each packed field ends with a padding half the
/// host copy must leave out, and two fields, so a lost or misplaced half shifts the second.
const ROWS: usize = 15;
const COLS: usize = 13;

fn config(fields: Vec<usize>) -> ReadbackConfig {
    ReadbackConfig { steps_per_frame: 9, frames: 4, staging_buffers: 2, fields, work_ahead: true }
}

/// Gray-Scott on the odd grid, reading back `v` then `u`.
fn gray_scott_frames(gpu: &GpuDevice, dtype: OutputDType) -> FrameProducer {
    let grid = Grid::new(&[ROWS, COLS]).unwrap();
    let params = gray_scott::GrayScottParams::default();
    let init = gray_scott::initial_state(ROWS, COLS, 5, 0.05);
    let sim = FieldSim::new(gpu, &params.kernel(), &grid, &init).unwrap();
    FrameProducer::with_dtype(sim, config(vec![1, 0]), dtype).unwrap()
}

/// Every frame of `p`, with its GPU time.
fn frames(mut p: FrameProducer) -> Vec<(Vec<u8>, Option<Duration>)> {
    let mut buf = vec![0u8; p.frame_bytes()];
    let mut out = Vec::new();
    while let Some(info) = p.next_into(&mut buf).unwrap() {
        out.push((buf.clone(), info.gpu_time));
    }
    out
}

/// Compares an f16 frame with the f32 frame it was converted from, half by half, against
/// IEEE round-to-nearest-even (`half::f16::from_f32`).
fn assert_rounded_to_nearest_even(label: &str, f32_frame: &[u8], f16_frame: &[u8]) {
    let values: Vec<f32> = bytemuck::pod_collect_to_vec(f32_frame);
    assert_eq!(f16_frame.len(), 2 * values.len(), "{label}: an f16 frame has half the bytes");
    for (k, (x, got)) in values.iter().zip(f16_frame.chunks_exact(2)).enumerate() {
        let got = u16::from_le_bytes([got[0], got[1]]);
        let want = half::f16::from_f32(*x).to_bits();
        assert_eq!(got, want, "{label}: value {k} ({x:e}) became {got:#06x}, round-to-nearest-even gives {want:#06x}");
    }
}

/// WGSL lets `pack2x16float` round either way; lavapipe and llvmpipe (GL) round to nearest,
/// ties to even, exactly as IEEE's default, so every half is asserted bit for bit.
#[test]
fn f16_frames_are_the_f32_frames_rounded_to_nearest_even_on_every_adapter() {
    for gpu in open_devices(&DeviceSelector::AllBackends, 1).unwrap() {
        let f32s = frames(gray_scott_frames(&gpu, OutputDType::F32));
        let f16s = frames(gray_scott_frames(&gpu, OutputDType::F16));
        assert_eq!(f16s.len(), 4);
        for ((a, _), (b, _)) in f32s.iter().zip(&f16s) {
            assert_rounded_to_nearest_even(gpu.label(), a, b);
        }
    }
}

/// The rounding's corner cases, through a kernel that leaves its field unchanged (heat
/// diffusion with alpha = 0 adds exactly 0): ties to even, f16 subnormals, values that
/// underflow to 0, the largest finite half, negatives.
#[test]
fn f16_conversion_rounds_ties_to_even_and_keeps_subnormals() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders-wgsl/heat.wgsl");
    let spec = KernelSpec::new("identity", WgslSource::from_file(path).unwrap(), vec!["u".into()], vec![0.0]);
    let grid = Grid::new(&[ROWS, COLS]).unwrap();
    let corner_cases = [
        1.0 + 2f32.powi(-11),                  // a tie between 1 and 1 + 2^-10: to even, 1
        1.0 + 3.0 * 2f32.powi(-11),            // a tie: to even, 1 + 2^-9
        1.0 + 2f32.powi(-11) + 2f32.powi(-20), // just above the tie: up
        6.0e-5,                                // just below the smallest normal half (6.1e-5): subnormal
        1.0e-7,                                // about 1.7 of the smallest subnormal (5.96e-8)
        2.0e-8,                                // below half the smallest subnormal: 0
        65504.0,                               // the largest finite half
        -0.333_333_34,
        0.1,
    ];
    let mut init: Vec<f32> = (0..ROWS * COLS).map(|i| i as f32 / 7.0 - 10.0).collect();
    init[..corner_cases.len()].copy_from_slice(&corner_cases);
    for gpu in open_devices(&DeviceSelector::AllBackends, 1).unwrap() {
        let run = |dtype| {
            let sim = FieldSim::new(&gpu, &spec, &grid, &init).unwrap();
            frames(FrameProducer::with_dtype(sim, config(vec![0]), dtype).unwrap())
        };
        let (f32s, f16s) = (run(OutputDType::F32), run(OutputDType::F16));
        let values: Vec<f32> = bytemuck::pod_collect_to_vec(&f32s[0].0);
        assert_eq!(values, init, "{}: alpha = 0 leaves the field unchanged", gpu.label());
        assert_rounded_to_nearest_even(gpu.label(), &f32s[0].0, &f16s[0].0);
    }
}

/// With `TIMESTAMP_QUERY` (which the test requires of at least one adapter) every frame has a
/// GPU time, positive, and all of them together within the wall time of producing them;
/// without timestamps (forced off) frames carry none. The frames themselves are the same.
#[test]
fn timestamps_give_each_frame_its_gpu_time_and_can_be_turned_off() {
    let devices = open_devices(&DeviceSelector::AllBackends, 1).unwrap();
    let timed: Vec<&GpuDevice> =
        devices.iter().filter(|g| g.device().features().contains(wgpu::Features::TIMESTAMP_QUERY)).collect();
    assert!(
        !timed.is_empty(),
        "no adapter offers TIMESTAMP_QUERY, so GPU timestamps cannot be tested: install Mesa's lavapipe \
         (apt-get install mesa-vulkan-drivers), which offers it"
    );
    for gpu in &devices {
        let with = gray_scott_frames(gpu, OutputDType::F32);
        assert_eq!(with.gpu_timestamps(), timed.iter().any(|t| t.label() == gpu.label()), "{}", gpu.label());
        let start = Instant::now();
        let timed_frames = frames(with);
        let wall = start.elapsed();
        let untimed = frames(gray_scott_frames(gpu, OutputDType::F32).without_timestamps());
        assert!(untimed.iter().all(|(_, t)| t.is_none()), "{}: timestamps were turned off", gpu.label());
        let bytes = |f: &[(Vec<u8>, Option<Duration>)]| f.iter().map(|(b, _)| b.clone()).collect::<Vec<_>>();
        assert_eq!(bytes(&timed_frames), bytes(&untimed), "{}: timestamps change no frame", gpu.label());
        if timed.iter().any(|t| t.label() == gpu.label()) {
            let times: Vec<Duration> = timed_frames.iter().map(|(_, t)| t.expect("every frame is timed")).collect();
            assert!(times.iter().all(|t| !t.is_zero()), "{}: {times:?}", gpu.label());
            let total: Duration = times.iter().sum();
            assert!(total <= wall, "{}: GPU time {total:?} exceeds the wall time {wall:?}", gpu.label());
        }
    }
}

/// Records the blocks [`FrameProducer::next_into_observed`] hands on, and on which threads.
struct Recorder {
    block: usize,
    seen: Mutex<Vec<(usize, Vec<u8>, std::thread::ThreadId)>>,
}

impl BlockObserver for Recorder {
    fn block_bytes(&self) -> usize {
        self.block
    }
    fn observe(&self, index: usize, block: &[u8]) {
        self.seen.lock().unwrap().push((index, block.to_vec(), std::thread::current().id()));
    }
}

/// `next_into_observed` hands on every block of the frame once, with its index, right after
/// copying it (what the runner hashes as it copies), on one thread or several: for f32
/// frames, and for f16 frames, whose fields are copied without their padding half (blocks
/// crossing from one field to the next), small and large enough for several threads.
#[test]
fn an_observed_frame_is_handed_on_whole_block_by_block_on_any_number_of_threads() {
    let gpu = common::gpu();
    // Odd cell counts: each f16 field ends with a padding half. The large grid's f16 frame
    // is just over two threads' share, its f32 frame four.
    let large = (2047, 1025);
    let cases = [
        ((ROWS, COLS), OutputDType::F16, 100),
        (large, OutputDType::F16, 256 << 10),
        (large, OutputDType::F32, 100_000),
    ];
    for ((rows, cols), dtype, block) in cases {
        let grid = Grid::new(&[rows, cols]).unwrap();
        let mut frames_by_threads = Vec::new();
        for threads in [1, 4] {
            let init = gray_scott::initial_state(rows, cols, 5, 0.05);
            let sim = FieldSim::new(&gpu, &gray_scott::GrayScottParams::default().kernel(), &grid, &init).unwrap();
            let config = ReadbackConfig { steps_per_frame: 1, frames: 2, ..config(vec![1, 0]) };
            let mut p = FrameProducer::with_dtype(sim, config, dtype).unwrap().with_copy_threads(threads);
            let mut buf = vec![0u8; p.frame_bytes()];
            let mut frames = Vec::new();
            loop {
                let r = Recorder { block, seen: Mutex::new(Vec::new()) };
                let info = p.next_into_observed(&mut buf, &r).unwrap();
                let mut seen = r.seen.into_inner().unwrap();
                if info.is_none() {
                    assert!(seen.is_empty(), "{dtype:?}: nothing observed after the last frame");
                    break;
                }
                let used: std::collections::HashSet<_> = seen.iter().map(|(_, _, t)| *t).collect();
                let most = (buf.len() / wgpipe_compute::tuning::COPY_BYTES_PER_THREAD).clamp(1, threads);
                assert!(used.len() <= most, "{dtype:?}, {threads} threads: {} threads copied", used.len());
                if most > 1 {
                    assert!(used.len() > 1, "{dtype:?}, {threads} threads: one thread copied a frame of {}", buf.len());
                }
                seen.sort_by_key(|(i, _, _)| *i);
                assert!(seen.iter().enumerate().all(|(k, (i, _, _))| k == *i), "{dtype:?}: each block once");
                assert!(seen.iter().rev().skip(1).all(|(_, b, _)| b.len() == block), "{dtype:?}: whole blocks");
                let observed: Vec<u8> = seen.into_iter().flat_map(|(_, b, _)| b).collect();
                assert!(observed == buf, "{dtype:?}, {threads} threads: the observed blocks are the frame");
                frames.push(buf.clone());
            }
            assert_eq!(frames.len(), 2);
            frames_by_threads.push(frames);
        }
        assert!(frames_by_threads[0] == frames_by_threads[1], "{dtype:?} {rows}x{cols}: 4 threads copy what 1 does");
    }
}
