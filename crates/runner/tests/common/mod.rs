//! Helpers shared by the runner's integration tests.
#![allow(dead_code, reason = "each test binary uses a different subset")]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::Path;

use wgpipe::compute::{DeviceSelector, GpuDevice, gray_scott, open_devices};
use wgpipe::storage::open_output;

pub mod cli;
pub mod netcdf_files;
pub mod python;

/// `n` devices on the first adapter (lavapipe in CI).
pub fn lavapipe(n: usize) -> Vec<GpuDevice> {
    open_devices(&DeviceSelector::Indices(vec![0]), n).unwrap()
}

/// Frames of field 0 of every stream of an output, as f32.
pub fn read_all(path: &Path) -> Vec<Vec<Vec<f32>>> {
    let out = open_output(path).unwrap();
    (0..out.streams().len())
        .map(|s| (0..out.streams()[s].frames).map(|i| out.read_f32(s, 0, i).unwrap()).collect())
        .collect()
}

/// v after `steps` steps of Gray-Scott on the CPU twin.
pub fn twin_v(rows: usize, cols: usize, seed: u64, noise: f32, steps: u64) -> Vec<f32> {
    let p = gray_scott::GrayScottParams::default();
    let s = gray_scott::cpu_run(gray_scott::initial_state(rows, cols, seed, noise), rows, cols, &p, steps);
    s[rows * cols..].to_vec()
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}
