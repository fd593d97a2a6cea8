//! Helpers the compute crate's GPU tests share: a device, a Python with numpy, comparisons.
#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::PathBuf;
use std::process::Command;

use wgpipe_compute::{DeviceSelector, FieldSim, GpuDevice, Grid, KernelSpec, open_devices};

/// The first adapter wgpu lists, whatever its backend (lavapipe in CI; the only one under
/// `WGPU_BACKEND=vulkan`).
pub fn gpu() -> GpuDevice {
    open_devices(&DeviceSelector::Indices(vec![0]), 1)
        .expect("tests need a GPU adapter; without a GPU: apt-get install mesa-vulkan-drivers libvulkan1")
        .remove(0)
}

/// The `bytes` bytes that `record` copies into a mappable buffer (`MAP_READ | COPY_DST`),
/// after one submission of what it recorded.
pub fn read_back(
    gpu: &GpuDevice,
    bytes: u64,
    record: impl FnOnce(&mut wgpipe_compute::wgpu::CommandEncoder, &wgpipe_compute::wgpu::Buffer),
) -> Vec<u8> {
    use wgpipe_compute::wgpu;
    let staging = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("test readback"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    record(&mut encoder, &staging);
    let (tx, rx) = std::sync::mpsc::channel();
    encoder.map_buffer_on_submit(&staging, wgpu::MapMode::Read, .., move |r| tx.send(r).unwrap());
    gpu.wait(gpu.queue().submit([encoder.finish()])).unwrap();
    rx.recv().unwrap().unwrap();
    let out = staging.get_mapped_range(..).unwrap().to_vec();
    staging.unmap();
    out
}

/// Largest absolute difference between two equally long slices.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Runs `steps` steps of `spec` on `grid` from `init` and reads every field back.
pub fn run_gpu(gpu: &GpuDevice, spec: &KernelSpec, grid: &Grid, init: &[f32], steps: u32) -> Vec<f32> {
    let mut sim = FieldSim::new(gpu, spec, grid, init).unwrap();
    sim.run_steps(steps).unwrap();
    sim.read_state().unwrap()
}

/// What to install when no Python with numpy is found.
pub const PYTHON_HINT: &str = "install numpy for python3 (Debian: apt-get install python3-numpy), \
or point WGPIPE_PYTHON at a Python that has it";

/// A Python interpreter that imports numpy: `$WGPIPE_PYTHON` if set (and then it must work),
/// else `python3` on PATH, else `/usr/bin/python3`. Panics with what to install otherwise:
/// the independent numpy checks are part of the suite, never skipped.
pub fn python_with_numpy() -> PathBuf {
    let works =
        |python: &PathBuf| Command::new(python).args(["-c", "import numpy"]).output().is_ok_and(|o| o.status.success());
    if let Some(chosen) = std::env::var_os("WGPIPE_PYTHON") {
        let chosen = PathBuf::from(chosen);
        assert!(works(&chosen), "WGPIPE_PYTHON={} cannot import numpy: {PYTHON_HINT}", chosen.display());
        return chosen;
    }
    ["python3", "/usr/bin/python3"]
        .map(PathBuf::from)
        .into_iter()
        .find(works)
        .unwrap_or_else(|| panic!("no python3 that imports numpy (tried python3 and /usr/bin/python3): {PYTHON_HINT}"))
}
