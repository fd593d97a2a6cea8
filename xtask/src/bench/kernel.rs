//! `bench kernel`: the step kernels alone, on one device, and the shipped Gray-Scott shaders
//! against the shaders they replaced.
//!
//! Every shipped kernel runs on a grid or two ([`cases`]): its [`FieldSim`] is set up once,
//! warmed up, then timed over `--reps` repetitions of `run_steps(n)` (submit and wait, no
//! readback), `n` chosen so that every timing covers about [`CELL_STEPS_PER_TIMING`]
//! cell-steps and, on a fast GPU, lasts [`MIN_TIMING`] at least. Figures: cell-steps/s, and effective bytes/s under the byte model *every field
//! is read once and written once per cell-step* (`2 × fields × 4` bytes: what the step must
//! move at the least, neighbours served from cache), which compares with a device's memory
//! bandwidth.
//!
//! The 2-D Gray-Scott cases also run [`BASELINE`], the shader before the prelude wrapped
//! neighbours with `select` (integer `%` per neighbour, fixed 16×16 workgroup, one cell per
//! invocation), the 3-D ones [`ONE_CELL_3D`] (the 3-D shader before it updated several cells
//! per invocation) and, on CPU drivers, [`scalar_brick_3d`] (its brick before the rows of
//! vec4s) and the plain row of 8 cells, and optionally a `--candidate` (2-D) or `--candidate-3d` shader; the
//! variants alternate within each repetition (the order rotates) so that the ratios see the
//! same machine. After the bench every variant has done the same steps from the same start:
//! the kept shaders must match the shipped ones bit for bit (same update, same summation
//! order), a candidate's difference is reported.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use wgpipe::compute::gray_scott::{self, GrayScottParams};
use wgpipe::compute::gray_scott_3d::{self, GrayScott3dParams};
use wgpipe::compute::tuning::{self, InvocationWidth, WorkgroupShapes, prefers_wide_invocations};
use wgpipe::compute::{FieldSim, GpuDevice, Grid, KernelSpec, WgslSource, shipped};

use super::stats::Summary;

/// The 2-D Gray-Scott shader before the `select` rewrite, against today's bindings.
pub const BASELINE: &str = include_str!("baseline_gray_scott.wgsl");

/// The 3-D Gray-Scott shader before it updated several cells per invocation: one cell per
/// invocation through the prelude's `cell` and `laplacian7_*`.
pub const ONE_CELL_3D: &str = include_str!("one_cell_gray_scott_3d.wgsl");

/// The branch of the shipped 3-D shader that moves the brick's rows as vec4s.
const QUADS_BRANCH: &str = "    if (quads) {";

/// The 3-D Gray-Scott kernel as it was before its brick moved whole aligned rows as vec4s:
/// the shipped shader with that branch never taken, so every brick takes the scalar loads
/// and stores it took before (the same code, not a copy of it).
pub fn scalar_brick_3d(shipped: &KernelSpec) -> Result<KernelSpec> {
    let code = &shipped.wgsl.code;
    if !code.contains(QUADS_BRANCH) {
        bail!("{}: no `{}` to disable for the scalar brick: update the bench", shipped.wgsl.name, QUADS_BRANCH.trim());
    }
    let wgsl = WgslSource::new(
        "scalar brick (the shipped 3-D shader without quads)",
        code.replace(QUADS_BRANCH, "    if (false && quads) {"),
    );
    Ok(KernelSpec { wgsl, ..shipped.clone() })
}

/// Cell-steps per timing (16 steps at 1024²): on lavapipe a timing of a second or more for
/// the shipped shaders and the slower baseline, long enough for the submission overhead to
/// vanish, short enough for `--reps 7` of every case to take minutes, not hours.
const CELL_STEPS_PER_TIMING: usize = 1 << 24;

/// Shortest timing: on a real GPU the cell-steps above take microseconds, where submitting
/// and waiting would count; the steps per timing grow until the shipped kernel takes this long.
const MIN_TIMING: f64 = 0.1;

/// Most steps per timing.
const MAX_STEPS: u32 = 1 << 16;

/// Untimed steps each variant runs first (pipeline compiled, buffers touched).
const WARMUP_STEPS: u32 = 2;

/// Seed and noise of the 2-D start state (any fixed values do).
const SEED: u64 = 7;
const NOISE: f32 = 0.02;

/// Heat's diffusion parameter, as in `configs/heat.toml`.
const HEAT_ALPHA: f32 = 0.2;

/// What the kernel bench found.
pub struct KernelResult {
    pub json: Value,
    pub table: String,
}

/// One kernel variant measured on a case.
struct Variant {
    label: String,
    sim: FieldSim,
    seconds: Vec<f64>,
}

/// A kernel on a grid, with the variants that run on it.
struct Case {
    kernel: &'static str,
    grid: Grid,
    /// Kernels by label; the first is the shipped one.
    specs: Vec<(String, KernelSpec)>,
    initial: Vec<f32>,
}

/// What runs beside the shipped kernels: the candidates, and the per-adapter choices the
/// adapter did not get.
pub struct Variants<'a> {
    /// `--candidate` shaders, on the 2-D Gray-Scott cases.
    pub candidates_2d: &'a [(String, WgslSource)],
    /// `--candidate-3d` shaders, on the 3-D ones.
    pub candidates_3d: &'a [(String, WgslSource)],
    /// The cells per invocation the adapter did not get (`InvocationWidth`).
    pub other_width: InvocationWidth,
    /// The workgroup shapes it did not get (`WorkgroupShapes`).
    pub other_shapes: WorkgroupShapes,
}

/// The shipped kernels and grids measured, each Gray-Scott with its predecessor and `v`'s
/// candidates. With `grid_2d` (rows, cols), only the 2-D Gray-Scott on that grid; with
/// `large`, the Gray-Scott models on 4096² and 256³ too (64 MiB a field: what a GPU's memory,
/// not its caches, must serve). Every Gray-Scott case also runs the shipped kernel at the
/// other width, and every case with the other shapes: what each per-adapter choice is worth.
fn cases(v: &Variants<'_>, grid_2d: Option<(usize, usize)>, large: bool) -> Result<Vec<Case>> {
    if let Some((rows, cols)) = grid_2d {
        return Ok(vec![gray_scott_2d_case(v, rows, cols)?]);
    }
    let mut cases = vec![
        gray_scott_2d_case(v, 1024, 1024)?,
        gray_scott_2d_case(v, 512, 512)?,
        heat_case(v, 1024)?,
        gray_scott_3d_case(v, 64)?,
        gray_scott_3d_case(v, 128)?,
    ];
    if large {
        cases.insert(2, gray_scott_2d_case(v, 4096, 4096)?);
        cases.push(gray_scott_3d_case(v, 256)?);
    }
    Ok(cases)
}

/// The 2-D Gray-Scott on `rows` × `cols`: the shipped kernel, the `%` baseline, the other
/// width and shapes, and the candidates (variants that differ in their WGSL only).
fn gray_scott_2d_case(v: &Variants<'_>, rows: usize, cols: usize) -> Result<Case> {
    let shipped = GrayScottParams::default().kernel();
    let variant = |wgsl: WgslSource| KernelSpec { wgsl, ..shipped.clone() };
    let mut specs = vec![
        ("current".to_owned(), shipped.clone()),
        ("baseline".to_owned(), variant(WgslSource::new("xtask/src/bench/baseline_gray_scott.wgsl", BASELINE))),
        ("other-width".to_owned(), shipped.clone().with_invocation_width(v.other_width)),
        ("other-shapes".to_owned(), shipped.clone().with_workgroup_shapes(v.other_shapes)),
    ];
    for (label, c) in v.candidates_2d {
        specs.push((label.clone(), variant(c.clone())));
    }
    Ok(Case {
        kernel: gray_scott::NAME,
        grid: Grid::new(&[rows, cols])?,
        specs,
        initial: gray_scott::initial_state(rows, cols, SEED, NOISE),
    })
}

/// Heat on `side`²: the shipped kernel and the other shapes.
fn heat_case(v: &Variants<'_>, side: usize) -> Result<Case> {
    let fields = shipped::HEAT.fields.iter().map(|f| (*f).to_owned()).collect();
    let wgsl = WgslSource::new(shipped::HEAT.file, shipped::HEAT.source);
    let spec = KernelSpec::new("heat", wgsl, fields, vec![HEAT_ALPHA]).with_rank(shipped::HEAT.rank);
    // The Gray-Scott start's v: a square of ones with noise, something to diffuse.
    let initial = gray_scott::initial_state(side, side, SEED, NOISE).split_off(side * side);
    Ok(Case {
        kernel: "heat",
        grid: Grid::new(&[side, side])?,
        specs: vec![
            ("current".to_owned(), spec.clone()),
            ("other-shapes".to_owned(), spec.with_workgroup_shapes(v.other_shapes)),
        ],
        initial,
    })
}

/// The 3-D Gray-Scott on `side`³: the shipped kernel, the one-cell predecessor, the other
/// width and shapes, on CPU drivers the row of 8 and the scalar brick, and the candidates.
fn gray_scott_3d_case(v: &Variants<'_>, side: usize) -> Result<Case> {
    let grid = Grid::new(&[side, side, side])?;
    let shipped = GrayScott3dParams::default().kernel(SEED);
    let variant = |wgsl: WgslSource| KernelSpec { wgsl, ..shipped.clone() };
    let mut specs = vec![
        ("current".to_owned(), shipped.clone()),
        ("one-cell".to_owned(), variant(WgslSource::new("xtask/src/bench/one_cell_gray_scott_3d.wgsl", ONE_CELL_3D))),
        ("other-width".to_owned(), shipped.clone().with_invocation_width(v.other_width)),
        ("other-shapes".to_owned(), shipped.clone().with_workgroup_shapes(v.other_shapes)),
    ];
    // Where the adapter gets the 8 × 2 × 2 brick (a CPU driver), the plain row of 8 cells
    // it replaced (a forced width is one row per invocation), and the brick of scalar
    // loads and stores that its rows of vec4s replaced.
    if v.other_width == InvocationWidth::Cells(1) {
        specs.push(("row-of-8".to_owned(), shipped.clone().with_invocation_width(InvocationWidth::Cells(8))));
        specs.push(("scalar-brick".to_owned(), scalar_brick_3d(&shipped)?));
    }
    for (label, c) in v.candidates_3d {
        specs.push((label.clone(), variant(c.clone())));
    }
    Ok(Case { kernel: gray_scott_3d::NAME, grid, specs, initial: gray_scott_3d::initial_state(&grid) })
}

/// Runs every case (or the 2-D Gray-Scott on `grid_2d` only) on `gpu` with `reps`
/// alternating repetitions.
pub fn run(
    gpu: &GpuDevice,
    reps: usize,
    candidates_2d: &[(String, WgslSource)],
    candidates_3d: &[(String, WgslSource)],
    grid_2d: Option<(usize, usize)>,
    large: bool,
) -> Result<KernelResult> {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "kernel step throughput on {}: median [min–max] of {reps} repetitions, variants alternating",
        gpu.label()
    );
    let _ = writeln!(table, "  effective bytes: every field read once and written once per cell-step");
    let mut cases_json = Vec::new();
    // The width the adapter did not get: 1 cell per invocation on a CPU driver, 8 on a GPU.
    let (this, other) = if prefers_wide_invocations(gpu.adapter()) { (8, 1) } else { (1, 8) };
    let other_width = InvocationWidth::Cells(other);
    let _ = writeln!(table, "  shipped Gray-Scott kernels: {this} cells per invocation here; other-width: {other}");
    let shapes = tuning::workgroup_shapes(gpu.adapter());
    let other_shapes = WorkgroupShapes::ALL.into_iter().find(|s| *s != shapes).unwrap_or(shapes);
    let _ = writeln!(
        table,
        "  workgroup shapes: the {} ones here; other-shapes: the {} ones",
        shapes.name(),
        other_shapes.name()
    );
    let variants = Variants { candidates_2d, candidates_3d, other_width, other_shapes };
    for case in cases(&variants, grid_2d, large)? {
        let (text, json) = run_case(gpu, &case, reps)?;
        table.push_str(&text);
        cases_json.push(json);
    }
    let json = json!({
        "reps": reps,
        "byte_model": "every field read once and written once per cell-step: 2 x fields x 4 bytes",
        "cases": cases_json,
    });
    Ok(KernelResult { json, table })
}

/// Steps per timing: `least`, or more until the shipped kernel (the first variant) takes
/// [`MIN_TIMING`]. Every variant runs the same steps while this is found, so that their
/// states still compare bit for bit after the bench.
fn steps_per_timing(variants: &mut [Variant], least: u32, kernel: &str) -> Result<u32> {
    let mut steps = least;
    loop {
        let mut shipped = f64::INFINITY;
        for (k, v) in variants.iter_mut().enumerate() {
            let start = Instant::now();
            v.sim.run_steps(steps).with_context(|| format!("calibrating {kernel} ({})", v.label))?;
            if k == 0 {
                shipped = start.elapsed().as_secs_f64();
            }
        }
        if shipped >= MIN_TIMING || steps >= MAX_STEPS {
            return Ok(steps);
        }
        let factor = (MIN_TIMING / shipped.max(1e-9)).ceil().clamp(2.0, 1024.0) as u32;
        steps = steps.saturating_mul(factor).min(MAX_STEPS);
    }
}

/// One case: its variants set up, warmed up and timed in rotation, their rates as a table
/// and JSON, and their states checked against the shipped kernel's.
fn run_case(gpu: &GpuDevice, case: &Case, reps: usize) -> Result<(String, Value)> {
    let cells = case.grid.cells();
    let fields = case.specs.first().map_or(1, |(_, s)| s.fields.len());
    let least = u32::try_from((CELL_STEPS_PER_TIMING / cells).clamp(4, 1 << 12)).unwrap_or(4);
    let shape: Vec<String> = case.grid.shape().iter().rev().map(usize::to_string).collect();
    let shape = shape.join("x");
    let mut variants = set_up(gpu, case, &shape, reps)?;
    let steps = steps_per_timing(&mut variants, least, case.kernel)?;
    time_in_rotation(&mut variants, steps, reps, case.kernel)?;
    let mut text = String::new();
    let _ = writeln!(text, "{} {shape} ({steps} steps per timing):", case.kernel);
    let cell_steps = cells as f64 * f64::from(steps);
    let variants_json = rates(&variants, cell_steps, fields, &mut text);
    let mut json = json!({
        "kernel": case.kernel, "grid": case.grid.shape(), "cells": cells, "fields": fields,
        "steps_per_timing": steps, "bytes_per_cell_step": 2 * fields * 4, "variants": variants_json,
    });
    check_against_shipped(case, &shape, &variants, &mut text, &mut json)?;
    Ok((text, json))
}

/// Every variant of `case` on `gpu`, set up from the case's start and warmed up.
fn set_up(gpu: &GpuDevice, case: &Case, shape: &str, reps: usize) -> Result<Vec<Variant>> {
    let mut variants = Vec::new();
    for (label, spec) in &case.specs {
        let mut sim = FieldSim::new(gpu, spec, &case.grid, &case.initial)
            .with_context(|| format!("setting up {} ({label}) on {shape}", case.kernel))?;
        sim.run_steps(WARMUP_STEPS).with_context(|| format!("warming up {} ({label})", case.kernel))?;
        variants.push(Variant { label: label.clone(), sim, seconds: Vec::with_capacity(reps) });
    }
    Ok(variants)
}

/// `reps` timings of `steps` steps of every variant, the order rotating between repetitions.
fn time_in_rotation(variants: &mut [Variant], steps: u32, reps: usize, kernel: &str) -> Result<()> {
    let n = variants.len();
    for rep in 0..reps {
        for k in 0..n {
            let v = &mut variants[(rep + k) % n];
            let start = Instant::now();
            v.sim.run_steps(steps).with_context(|| format!("running {kernel} ({})", v.label))?;
            v.seconds.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(())
}

/// Each variant's cell-steps/s and effective GB/s (`cell_steps` per timing, `fields` read and
/// written once each), a line each into `text`, as JSON by label.
fn rates(variants: &[Variant], cell_steps: f64, fields: usize, text: &mut String) -> serde_json::Map<String, Value> {
    let bytes = cell_steps * (2 * fields * 4) as f64;
    let mut variants_json = serde_json::Map::new();
    for v in variants {
        let rate: Vec<f64> = v.seconds.iter().map(|s| cell_steps / s).collect();
        let gbps: Vec<f64> = v.seconds.iter().map(|s| bytes / s / 1e9).collect();
        let _ = writeln!(
            text,
            "  {:<11} {} Mcell-steps/s, {} GB/s effective",
            v.label,
            Summary::of(&rate.iter().map(|r| r / 1e6).collect::<Vec<_>>()).text(1),
            Summary::of(&gbps).text(2)
        );
        variants_json.insert(
            v.label.to_owned(),
            json!({
                "seconds": Summary::json(&v.seconds),
                "cell_steps_per_s": Summary::json(&rate),
                "effective_gb_per_s": Summary::json(&gbps),
            }),
        );
    }
    variants_json
}

/// Each variant's speedup over the shipped kernel (the first) and whether their states hold
/// the same bits, into `text` and `json`; an error when a kept variant's bits differ (they
/// compute the same update in the same order), a candidate's difference only reported.
fn check_against_shipped(
    case: &Case,
    shape: &str,
    variants: &[Variant],
    text: &mut String,
    json: &mut Value,
) -> Result<()> {
    let Some(current) = variants.first() else { return Ok(()) };
    let state = current.sim.read_state().context("reading the shipped kernel's state")?;
    for v in &variants[1..] {
        let key = v.label.replace('-', "_");
        let ratio: Vec<f64> = v.seconds.iter().zip(&current.seconds).map(|(o, c)| o / c).collect();
        let _ = writeln!(
            text,
            "  speedup over {}: {}x (its time / the shipped shader's, per repetition)",
            v.label,
            Summary::of(&ratio).text(2)
        );
        json[format!("speedup_over_{key}")] = Summary::json(&ratio);
        let other = v.sim.read_state().with_context(|| format!("reading the {} kernel's state", v.label))?;
        let same = bit_identical(&state, &other);
        let verdict = match (same, max_abs_difference(&state, &other)) {
            (true, _) => "bit-identical".to_owned(),
            (false, Some(d)) => format!("differs: max |difference| {d:e}"),
            (false, None) => "differs: NaN in a state".to_owned(),
        };
        let _ = writeln!(text, "  {} vs shipped after {} steps: {verdict}", v.label, current.sim.steps());
        json[format!("check_{key}")] = json!(verdict);
        if !v.label.starts_with("candidate") && !same {
            bail!(
                "{} {shape}: the {} shader and the shipped one disagree after {} steps ({verdict}); they \
                 compute the same update in the same order and must give the same bits",
                case.kernel,
                v.label,
                current.sim.steps()
            );
        }
    }
    Ok(())
}

/// The largest |a - b| over both states, `None` when their lengths differ or one holds NaN.
fn max_abs_difference(a: &[f32], b: &[f32]) -> Option<f32> {
    if a.len() != b.len() {
        return None;
    }
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).try_fold(0.0f32, |m, d| if d.is_nan() { None } else { Some(m.max(d)) })
}

fn bit_identical(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_and_identity() {
        assert_eq!(max_abs_difference(&[1.0, 2.0], &[1.0, 2.5]), Some(0.5));
        assert_eq!(max_abs_difference(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(max_abs_difference(&[f32::NAN], &[1.0]), None);
        assert!(bit_identical(&[1.0, -0.0], &[1.0, -0.0]));
        assert!(!bit_identical(&[0.0], &[-0.0]), "signed zeros differ in bits");
    }

    #[test]
    fn every_case_and_the_kept_candidates_compile_with_their_prelude() -> Result<()> {
        // The shared-memory tile variant kept beside the bench for `--candidate`, and the 3-D
        // candidates measured on an NVIDIA H200, kept with their figures (docs, "Benchmarks").
        let candidate =
            [("candidate".to_owned(), WgslSource::new("tile_gray_scott.wgsl", include_str!("tile_gray_scott.wgsl")))];
        let kept = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/bench/h200-candidates");
        let mut candidate_3d = Vec::new();
        for entry in std::fs::read_dir(&kept).with_context(|| kept.display().to_string())? {
            let path = entry?.path();
            candidate_3d.push((path.display().to_string(), WgslSource::from_file(&path)?));
        }
        assert_eq!(candidate_3d.len(), 2, "the two 3-D candidates of the benchmark page");
        let variants = Variants {
            candidates_2d: &candidate,
            candidates_3d: &candidate_3d,
            other_width: InvocationWidth::Cells(1),
            other_shapes: WorkgroupShapes::Gpu,
        };
        for case in cases(&variants, None, false)? {
            for (label, spec) in &case.specs {
                spec.check().with_context(|| format!("{} ({label})", case.kernel))?;
                assert_eq!(spec.rank, case.grid.rank(), "{} ({label})", case.kernel);
                assert_eq!(case.initial.len(), case.grid.cells() * spec.fields.len(), "{}", case.kernel);
            }
        }
        Ok(())
    }
}
