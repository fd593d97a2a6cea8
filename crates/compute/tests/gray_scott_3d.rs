//! The 3-D Gray-Scott model (the ADIOS2 tutorial's) on the GPU: against its f32 CPU twin,
//! with and without noise, across a resume, and against an independent float64 numpy
//! implementation (tests/python/gray_scott_3d_reference.py).
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;

use common::{gpu, max_abs_diff, python_with_numpy, run_gpu};
use wgpipe_compute::gray_scott_3d::{self, GrayScott3dParams, L};
use wgpipe_compute::{FieldSim, GpuDevice, Grid};

/// GPU and twin both compute in f32 in the same order; they differ where the GPU compiler
/// fuses a multiply-add (one rounding fewer, ~6e-8 relative per operation). The model is
/// stable at these parameters, so such differences stay near 1e-6 over these steps; 1e-4
/// leaves room and is far below what a wrong stencil, sign or noise term gives (≥ 1e-3).
const TWIN_TOLERANCE: f32 = 1e-4;

#[test]
fn gpu_matches_the_cpu_twin_without_and_with_noise() {
    let gpu = gpu();
    // Not a cube and no multiple of the 8×8×4 workgroup, with the cube clipped on z; the
    // second's rows are whole aligned quads (moved as vec4s on CPU drivers), its rows and
    // planes odd in number.
    for shape in [[10, 20, 18], [9, 13, 24]] {
        twin_without_and_with_noise(&gpu, Grid::new(&shape).unwrap());
    }
}

/// The GPU against the CPU twin on `grid`, without noise and with.
fn twin_without_and_with_noise(gpu: &GpuDevice, grid: Grid) {
    let init = gray_scott_3d::initial_state(&grid);
    let steps = 60;
    let mut results = Vec::new();
    for noise in [0.0, 0.02] {
        let params = GrayScott3dParams { noise, ..Default::default() };
        let seed = 11;
        let on_gpu = run_gpu(gpu, &params.kernel(seed), &grid, &init, steps);
        let on_cpu = gray_scott_3d::cpu_run(init.clone(), &grid, &params, seed, 0, u64::from(steps));
        let diff = max_abs_diff(&on_gpu, &on_cpu);
        assert!(diff <= TWIN_TOLERANCE, "{grid}, noise {noise}: GPU and CPU twin differ by {diff}");
        assert!(max_abs_diff(&on_gpu, &init) > 0.05, "{grid}, noise {noise}: the state did not evolve");
        results.push(on_gpu);
    }
    // The noise reaches the state: u differs from the noiseless run by ~dt · noise per step.
    let diff = max_abs_diff(&results[0], &results[1]);
    assert!(diff > 0.01, "{grid}: noise 0.02 changed the state by only {diff}");
}

/// A run stopped after 25 steps and resumed from its state gives bit for bit the state of an
/// uninterrupted run: the noise is keyed by the absolute step, not drawn from a stream.
#[test]
fn a_resumed_run_equals_an_uninterrupted_one() {
    let gpu = gpu();
    let grid = Grid::new(&[16, 16, 16]).unwrap();
    let params = GrayScott3dParams { noise: 0.05, ..Default::default() };
    let kernel = params.kernel(3);
    let init = gray_scott_3d::initial_state(&grid);
    let whole = run_gpu(&gpu, &kernel, &grid, &init, 40);
    let halfway = run_gpu(&gpu, &kernel, &grid, &init, 25);
    let mut resumed = FieldSim::new(&gpu, &kernel, &grid, &halfway).unwrap().starting_at_step(25);
    resumed.run_steps(15).unwrap();
    assert_eq!(resumed.steps(), 40);
    let resumed = resumed.read_state().unwrap();
    assert!(whole.iter().zip(&resumed).all(|(a, b)| a.to_bits() == b.to_bits()), "resumed run differs");
    // Not by construction: resuming at the wrong step draws other noise.
    let mut wrong = FieldSim::new(&gpu, &kernel, &grid, &halfway).unwrap();
    wrong.run_steps(15).unwrap();
    assert_ne!(wrong.read_state().unwrap(), whole, "the noise ignores the step");
}

/// The tutorial's L = 64 grid on the GPU against numpy in float64, written apart from this
/// crate; the script states its tolerance and why.
#[test]
fn an_independent_float64_numpy_model_agrees_at_l_64() {
    let gpu = gpu();
    let grid = Grid::new(&[L, L, L]).unwrap();
    let steps = 100;
    let dir = tempfile::tempdir().unwrap();
    for (noise, seed) in [(0.0, 0), (0.001, 42)] {
        let params = GrayScott3dParams { noise, ..Default::default() };
        let state = run_gpu(&gpu, &params.kernel(seed), &grid, &gray_scott_3d::initial_state(&grid), steps);
        let (u, v) = state.split_at(grid.cells());
        std::fs::write(dir.path().join("u.f32"), bytemuck::cast_slice::<f32, u8>(u)).unwrap();
        std::fs::write(dir.path().join("v.f32"), bytemuck::cast_slice::<f32, u8>(v)).unwrap();
        let named: Vec<String> = params.named().iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        let run = format!(
            "{{\"shape\": [{L}, {L}, {L}], \"steps\": {steps}, \"seed\": {seed}, \"params\": {{{}}}}}",
            named.join(", ")
        );
        std::fs::write(dir.path().join("run.json"), run).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/gray_scott_3d_reference.py");
        let out = Command::new(python_with_numpy()).arg(script).arg(dir.path()).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "noise {noise}: the float64 reference disagrees:\n{text}");
        assert!(text.contains("ok: u and v match"), "{text}");
        eprintln!("noise {noise}: {}", text.trim());
    }
}
