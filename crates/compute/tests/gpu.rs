//! GPU tests: they run on whatever adapter wgpu finds (lavapipe in CI).
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::{gpu, max_abs_diff};
use wgpipe_compute::tuning::{self, InvocationWidth, WorkgroupShapes, prefers_wide_invocations, workgroup_size};
use wgpipe_compute::{
    Boundary, DeviceSelector, Error, FieldSim, FrameProducer, GpuDevice, Grid, KernelSpec, ReadbackConfig, WgslSource,
    cpu_twin, gray_scott, gray_scott_3d, list_adapters, open_devices, shipped,
};

fn grid(rows: usize, cols: usize) -> Grid {
    Grid::new(&[rows, cols]).unwrap()
}

/// 512 steps on the GPU and on the CPU twin agree. The bound: both compute in f32 with the
/// same operation order, so they differ only where the GPU compiler fuses a multiply-add
/// (one rounding, ~6e-8 relative) per operation; Gray-Scott at these parameters is
/// dissipative, so these differences stay near 1e-6 rather than growing. 1e-4 leaves room
/// and is still far below any pattern-level error (which shows as O(0.1) differences).
#[test]
fn gray_scott_matches_cpu_twin_over_512_steps() {
    let gpu = gpu();
    let (rows, cols) = (48, 40);
    let params = gray_scott::GrayScottParams::default();
    // Noise makes every cell evolve, so the periodic wrap at the edges is exercised too.
    let init = gray_scott::initial_state(rows, cols, 42, 0.05);
    let mut sim = FieldSim::new(&gpu, &params.kernel(), &grid(rows, cols), &init).unwrap();
    sim.run_steps(512).unwrap();
    let on_gpu = sim.read_state().unwrap();
    let on_cpu = gray_scott::cpu_run(init.clone(), rows, cols, &params, 512);
    let diff = max_abs_diff(&on_gpu, &on_cpu);
    assert!(diff <= 1e-4, "GPU and CPU twin differ by {diff}");
    // The state really evolved (a broken kernel that copies src to dst would pass otherwise).
    assert!(max_abs_diff(&on_gpu, &init) > 0.05, "the state did not evolve");
}

/// The shipped 2-D shader at 8 cells of a row per invocation (CPU adapters' width, forced
/// here so that a GPU runs it too) and at the adapter's own width: rows shorter than 8, rows
/// of 8 and rows that end mid-invocation, with either boundary rule, give one step equal to
/// the twin written from the model (cpu_twin's stencil). One step of an irregular state: a
/// wrong neighbour or a skipped cell shows as a difference of O(0.01).
#[test]
fn gray_scott_updates_every_cell_of_ragged_rows_with_either_boundary() {
    let gpu = gpu();
    let p = gray_scott::GrayScottParams::default();
    for (rows, cols) in [(3, 1), (5, 7), (4, 8), (6, 17), (2, 24), (3, 70)] {
        let grid = grid(rows, cols);
        let cells = grid.cells();
        // Values in [0, 1), no two neighbours alike.
        let init: Vec<f32> =
            (0..2 * cells).map(|i| (wgpipe_compute::noise::uniform_noise(5, i as u32, 0) + 1.0) * 0.5).collect();
        for (boundary, width) in
            Boundary::ALL.into_iter().flat_map(|b| [(b, InvocationWidth::PerAdapter), (b, InvocationWidth::Cells(8))])
        {
            let spec = p.kernel().with_boundary(boundary).with_invocation_width(width);
            let mut sim = FieldSim::new(&gpu, &spec, &grid, &init).unwrap();
            sim.run_steps(1).unwrap();
            let on_gpu = sim.read_state().unwrap();
            let (u, v) = init.split_at(cells);
            let mut twin = vec![0.0f32; 2 * cells];
            for c in cpu_twin::Cell::all(&grid, boundary) {
                let (lu, lv) = (cpu_twin::laplacian9(u, &c), cpu_twin::laplacian9(v, &c));
                let uvv = u[c.i] * v[c.i] * v[c.i];
                twin[c.i] = u[c.i] + p.dt * (p.du * lu - uvv + p.feed * (1.0 - u[c.i]));
                twin[cells + c.i] = v[c.i] + p.dt * (p.dv * lv + uvv - (p.feed + p.kill) * v[c.i]);
            }
            let diff = max_abs_diff(&on_gpu, &twin);
            assert!(diff <= 1e-6, "{grid} grid, {boundary}, {width:?}: GPU and twin differ by {diff}");
        }
    }
}

#[test]
fn other_parameters_reach_the_shader() {
    let gpu = gpu();
    let (rows, cols) = (20, 30);
    let params = gray_scott::GrayScottParams { du: 0.16, dv: 0.08, feed: 0.035, kill: 0.065, dt: 0.5 };
    let init = gray_scott::initial_state(rows, cols, 0, 0.0);
    let mut sim = FieldSim::new(&gpu, &params.kernel(), &grid(rows, cols), &init).unwrap();
    sim.run_steps(64).unwrap();
    let diff = max_abs_diff(&sim.read_state().unwrap(), &gray_scott::cpu_run(init, rows, cols, &params, 64));
    assert!(diff <= 1e-4, "GPU and CPU twin differ by {diff}");
}

fn frames_with_ring(gpu: &GpuDevice, ring: usize, work_ahead: bool) -> Vec<(u64, u64, Vec<u8>)> {
    let (rows, cols) = (32, 24);
    let params = gray_scott::GrayScottParams::default();
    let init = gray_scott::initial_state(rows, cols, 3, 0.02);
    let sim = FieldSim::new(gpu, &params.kernel(), &grid(rows, cols), &init).unwrap();
    let config =
        ReadbackConfig { steps_per_frame: 7, frames: 6, staging_buffers: ring, fields: vec![1, 0], work_ahead };
    let mut producer = FrameProducer::new(sim, config).unwrap();
    assert_eq!(producer.frame_bytes(), 2 * rows * cols * 4);
    let mut out = Vec::new();
    let mut buf = vec![0u8; producer.frame_bytes()];
    while let Some(info) = producer.next_into(&mut buf).unwrap() {
        out.push((info.index, info.step, buf.clone()));
    }
    assert!(producer.next_into(&mut buf).unwrap().is_none(), "a finished producer stays finished");
    out
}

#[test]
fn readback_rings_of_1_2_3_give_identical_frames() {
    let gpu = gpu();
    let one = frames_with_ring(&gpu, 1, true);
    assert_eq!(one.len(), 6);
    for (i, (index, step, _)) in one.iter().enumerate() {
        assert_eq!(*index, i as u64);
        assert_eq!(*step, (i as u64 + 1) * 7, "frame i holds the state after (i + 1) × steps_per_frame steps");
    }
    assert_eq!(frames_with_ring(&gpu, 2, true), one);
    assert_eq!(frames_with_ring(&gpu, 3, true), one);
    assert_eq!(frames_with_ring(&gpu, 3, false), one, "without work-ahead (the sync baseline)");
    // Frame 2 is v then u after 21 steps, as the CPU twin computes them.
    let (rows, cols) = (32, 24);
    let cpu = gray_scott::cpu_run(gray_scott::initial_state(rows, cols, 3, 0.02), rows, cols, &Default::default(), 21);
    let frame: Vec<f32> = bytemuck::pod_collect_to_vec(&one[2].2);
    let cells = rows * cols;
    assert!(max_abs_diff(&frame[..cells], &cpu[cells..]) <= 1e-4, "field v");
    assert!(max_abs_diff(&frame[cells..], &cpu[..cells]) <= 1e-4, "field u");
}

#[test]
fn wrong_buffer_size_and_bad_config_are_errors() {
    let gpu = gpu();
    let params = gray_scott::GrayScottParams::default();
    let sim = || FieldSim::new(&gpu, &params.kernel(), &grid(8, 8), &gray_scott::initial_state(8, 8, 0, 0.0)).unwrap();
    let config =
        ReadbackConfig { steps_per_frame: 1, frames: 1, staging_buffers: 2, fields: vec![1], work_ahead: true };
    let mut p = FrameProducer::new(sim(), config.clone()).unwrap();
    let err = p.next_into(&mut [0u8; 3]).unwrap_err();
    assert!(matches!(err, Error::BufferSize { expected: 256, got: 3 }), "{err}");
    for bad in [
        ReadbackConfig { staging_buffers: 0, ..config.clone() },
        ReadbackConfig { steps_per_frame: 0, ..config.clone() },
        ReadbackConfig { fields: vec![2], ..config.clone() },
    ] {
        assert!(matches!(FrameProducer::new(sim(), bad), Err(Error::InvalidKernel { .. })));
    }
    let err = FieldSim::new(&gpu, &params.kernel(), &grid(8, 8), &[0.0; 5]).unwrap_err();
    assert!(err.to_string().contains("expected 2 fields × 8×8 = 128"), "{err}");
    let err = FieldSim::new(&gpu, &params.kernel(), &Grid::new(&[2, 4, 8]).unwrap(), &[0.0; 128]).unwrap_err();
    assert!(err.to_string().contains("written for 2-D grids and the grid 2×4×8 is 3-D"), "{err}");
}

/// A user kernel from a file: heat diffusion, checked against its own CPU twin, with each
/// boundary rule: periodic keeps the heat on the torus, zero-flux keeps it inside the box.
#[test]
fn custom_wgsl_kernel_from_a_file_runs_with_either_boundary() {
    let gpu = gpu();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders-wgsl/heat.wgsl");
    let (rows, cols) = (13, 17); // not multiples of the 16×16 workgroup
    let g = grid(rows, cols);
    let mut init = vec![0.0f32; rows * cols];
    init[6 * cols + 8] = 100.0;
    init[0] = 50.0; // at the corner, to exercise the boundary
    let mut finals = Vec::new();
    for boundary in Boundary::ALL {
        let spec = KernelSpec::new("heat", WgslSource::from_file(path).unwrap(), vec!["u".into()], vec![0.1])
            .with_boundary(boundary);
        let mut sim = FieldSim::new(&gpu, &spec, &g, &init).unwrap();
        sim.run_steps(20).unwrap();
        let mut cpu = init.clone();
        for _ in 0..20 {
            let prev = cpu.clone();
            for c in cpu_twin::Cell::all(&g, boundary) {
                cpu[c.i] = prev[c.i] + 0.1 * cpu_twin::laplacian9(&prev, &c);
            }
        }
        let gpu_state = sim.read_state().unwrap();
        let diff = max_abs_diff(&gpu_state, &cpu);
        assert!(diff <= 1e-3, "{boundary}: GPU and CPU twin differ by {diff}");
        let total: f32 = gpu_state.iter().sum();
        assert!((total - 150.0).abs() < 1e-2, "{boundary}: heat is conserved, got {total}");
        finals.push(gpu_state);
    }
    // Heat from the corner crosses to the opposite corner only on the torus.
    let far = rows * cols - 1;
    assert!(
        finals[0][far] > 1.0 && finals[1][far] < 1e-3,
        "periodic {} vs zero-flux {}",
        finals[0][far],
        finals[1][far]
    );
}

#[test]
fn invalid_wgsl_reports_file_line_and_column() {
    let gpu = gpu();
    let g = grid(8, 8);
    let code = "@compute @workgroup_size(8, 8)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    let x = undefined_thing;\n}\n";
    let spec = KernelSpec::new("broken", WgslSource::new("my/step.wgsl", code), vec!["u".into()], vec![]);
    let err = FieldSim::new(&gpu, &spec, &g, &[0.0; 64]).unwrap_err();
    let Error::Wgsl(w) = &err else { panic!("expected a WGSL error, got {err}") };
    assert_eq!((w.file.as_str(), w.line, w.column), ("my/step.wgsl", Some(3), Some(13)), "{err}");
    assert!(err.to_string().starts_with("invalid WGSL: my/step.wgsl:3:13: "), "{err}");

    // Valid syntax that fails validation: writing to the read-only `u_in`.
    let code = "@compute @workgroup_size(8, 8)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    u_in[0] = 1.0;\n}\n";
    let spec = KernelSpec::new("ro", WgslSource::new("ro.wgsl", code), vec!["u".into()], vec![]);
    let err = FieldSim::new(&gpu, &spec, &g, &[0.0; 64]).unwrap_err();
    assert!(matches!(&err, Error::Wgsl(w) if w.file == "ro.wgsl" && w.line == Some(3)), "{err}");

    // A 3-D helper in a kernel compiled for 2-D grids: the prelude has no such function.
    let code = "@compute @workgroup_size(8, 8)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    u_out[0] = laplacian7_u(cell(id));\n}\n";
    let spec = KernelSpec::new("rank", WgslSource::new("r.wgsl", code), vec!["u".into()], vec![]);
    let err = FieldSim::new(&gpu, &spec, &g, &[0.0; 64]).unwrap_err();
    assert!(matches!(&err, Error::Wgsl(w) if w.file == "r.wgsl" && w.line == Some(3)), "{err}");
    assert!(err.to_string().contains("laplacian7_u"), "{err}");

    let spec = KernelSpec::new("nomain", WgslSource::new("n.wgsl", "fn helper() {}\n"), vec!["u".into()], vec![]);
    let err = FieldSim::new(&gpu, &spec, &g, &[0.0; 64]).unwrap_err();
    assert!(err.to_string().contains("no compute entry point named `main`"), "{err}");

    // Field names become WGSL identifiers, so they must be ones.
    let spec = KernelSpec::new("names", WgslSource::new("n.wgsl", "fn helper() {}\n"), vec!["my-u".into()], vec![]);
    let err = FieldSim::new(&gpu, &spec, &g, &[0.0; 64]).unwrap_err();
    assert!(matches!(err, Error::InvalidKernel { .. }), "{err}");
    assert!(err.to_string().contains("\"my-u\" is not a valid WGSL identifier"), "{err}");

    // A workgroup spanning z on a 2-D grid would leave most invocations idle.
    let code = "@compute @workgroup_size(4, 4, 4)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n}\n";
    let spec = KernelSpec::new("wg", WgslSource::new("wg.wgsl", code), vec!["u".into()], vec![]);
    let err = FieldSim::new(&gpu, &spec, &g, &[0.0; 64]).unwrap_err();
    assert!(err.to_string().contains("[4, 4, 4], which spans axes a 2-D grid lacks"), "{err}");

    let err = WgslSource::from_file("/nonexistent/step.wgsl").unwrap_err();
    assert!(err.to_string().contains("/nonexistent/step.wgsl"), "{err}");
}

/// `CELLS_PER_INVOCATION_X = N`: invocation x updates cells N·x .. N·x + N − 1 of its row, the
/// dispatch covers the grid with N times fewer invocations along x (neither fewer, which
/// would leave cells unwritten, nor more), and a value outside 1–64 or not a u32 is refused.
#[test]
fn cells_per_invocation_shrinks_the_dispatch_and_is_checked() {
    let gpu = gpu();
    let kernel = |value: &str| {
        let code = format!(
            "const CELLS_PER_INVOCATION_X{value};\n\
             @compute @workgroup_size(4, 2)\n\
             fn main(@builtin(global_invocation_id) id: vec3<u32>) {{\n\
                 for (var j = 0u; j < 3u; j++) {{\n\
                     let x = id.x * 3u + j;\n\
                     if (x < grid.nx && id.y < grid.ny) {{ u_out[id.y * grid.nx + x] = f32(id.x) + 1.0; }}\n\
                 }}\n\
             }}\n"
        );
        KernelSpec::new("n", WgslSource::new("n.wgsl", code), vec!["u".into()], vec![])
    };
    let (rows, cols) = (5, 29);
    let mut sim = FieldSim::new(&gpu, &kernel(": u32 = 3u"), &grid(rows, cols), &vec![0.0; rows * cols]).unwrap();
    assert_eq!(sim.workgroup_size(), [4, 2, 1]);
    assert_eq!(sim.cells_per_workgroup(), [12, 2, 1], "4 invocations of 3 cells along x, 2 rows");
    sim.run_steps(1).unwrap();
    let expected: Vec<f32> = (0..rows * cols).map(|i| ((i % cols) / 3) as f32 + 1.0).collect();
    assert_eq!(sim.read_state().unwrap(), expected, "every cell written by invocation x / 3");

    // Declared `override` (with an `@id` too), a forced width reaches both the dispatch and
    // the shader.
    let code = "override CELLS_PER_INVOCATION_X: u32 = 3u;\n\
         @compute @workgroup_size(4, 2)\n\
         fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n\
             for (var j = 0u; j < CELLS_PER_INVOCATION_X; j++) {\n\
                 let x = id.x * CELLS_PER_INVOCATION_X + j;\n\
                 if (x < grid.nx && id.y < grid.ny) { u_out[id.y * grid.nx + x] = f32(id.x) + 1.0; }\n\
             }\n\
         }\n";
    for (n, code) in [(1, code.to_owned()), (2, code.to_owned()), (5, format!("@id(7) {code}"))] {
        let spec = KernelSpec::new("o", WgslSource::new("o.wgsl", code), vec!["u".into()], vec![])
            .with_invocation_width(InvocationWidth::Cells(n));
        let mut sim = FieldSim::new(&gpu, &spec, &grid(rows, cols), &vec![0.0; rows * cols]).unwrap();
        assert_eq!(sim.cells_per_workgroup(), [4 * n, 2, 1]);
        sim.run_steps(1).unwrap();
        let expected: Vec<f32> = (0..rows * cols).map(|i| ((i % cols) as u32 / n) as f32 + 1.0).collect();
        assert_eq!(sim.read_state().unwrap(), expected, "every cell written by invocation x / {n}");
    }

    let shipped = FieldSim::new(&gpu, &gray_scott::GrayScottParams::default().kernel(), &grid(8, 8), &[0.0; 128]);
    let width = if prefers_wide_invocations(gpu.adapter()) { 8 } else { 1 };
    let [wx, wy, _] = workgroup_size(2, tuning::workgroup_shapes(gpu.adapter()));
    assert_eq!(
        shipped.unwrap().cells_per_workgroup(),
        [wx * width, wy, 1],
        "the 2-D Gray-Scott: {width} cells × the adapter's {wx} × {wy}"
    );
    for bad in [": u32 = 0u", ": u32 = 65u", ": i32 = 3i", " = 3", " = 3.0"] {
        let err = FieldSim::new(&gpu, &kernel(bad), &grid(rows, cols), &vec![0.0; rows * cols]).unwrap_err();
        assert!(err.to_string().contains("CELLS_PER_INVOCATION_X must be a u32 literal from 1 to 64"), "{bad}: {err}");
    }
}

/// The shipped Gray-Scott kernels declare their width `override`: 8 cells per invocation on
/// CPU drivers, 1 on GPUs (`InvocationWidth`); every shipped kernel takes the prelude's
/// workgroup shapes, the CPU drivers' or the GPUs' (`WorkgroupShapes`). Every width and both
/// shapes give the same bits, on ragged grids and every boundary, so a run's result does not
/// depend on the adapter's choices; a forced width or shape reaches the dispatch.
#[test]
fn every_invocation_width_and_workgroup_shape_of_the_shipped_kernels_gives_the_same_bits() {
    let gpu = gpu();
    let (cpu, gpus) = (Some(WorkgroupShapes::CpuDriver), Some(WorkgroupShapes::Gpu));
    let launches = [
        (InvocationWidth::PerAdapter, None),
        (InvocationWidth::Cells(1), None),
        (InvocationWidth::Cells(3), None),
        (InvocationWidth::Cells(8), None),
        (InvocationWidth::PerAdapter, cpu),
        (InvocationWidth::PerAdapter, gpus),
        (InvocationWidth::Cells(3), gpus),
        (InvocationWidth::Cells(8), cpu),
    ];
    let launched = |spec: KernelSpec, (width, shapes): (InvocationWidth, Option<WorkgroupShapes>)| match shapes {
        Some(shapes) => spec.with_invocation_width(width).with_workgroup_shapes(shapes),
        None => spec.with_invocation_width(width),
    };
    for boundary in Boundary::ALL {
        // Rows of 37 cells end in a partial window of 8; of 40 and 36, rows a multiple of 4
        // long, one of 8 and one not.
        for (rows, cols) in [(13, 37), (5, 40), (13, 36)] {
            let init = gray_scott::initial_state(rows, cols, 5, 0.05);
            let states: Vec<Vec<f32>> = launches
                .iter()
                .map(|l| {
                    let spec = launched(gray_scott::GrayScottParams::default().kernel().with_boundary(boundary), *l);
                    let mut sim = FieldSim::new(&gpu, &spec, &grid(rows, cols), &init).unwrap();
                    if let (InvocationWidth::Cells(n), Some(shapes)) = l {
                        let [wx, wy, _] = workgroup_size(2, *shapes);
                        assert_eq!(sim.cells_per_workgroup(), [wx * n, wy, 1], "{l:?}");
                    }
                    sim.run_steps(40).unwrap();
                    sim.read_state().unwrap()
                })
                .collect();
            for (l, s) in launches.iter().zip(&states).skip(1) {
                assert!(s == &states[0], "2-D {rows}x{cols}, {boundary:?}: {l:?} differs from the adapter's launch");
            }
        }
        let (rows, cols) = (13, 37);
        let init = gray_scott::initial_state(rows, cols, 5, 0.05);
        // Heat has no width to choose, only shapes.
        let heat = KernelSpec::new(
            "heat",
            WgslSource::new(shipped::HEAT.file, shipped::HEAT.source),
            shipped::HEAT.fields.iter().map(|f| (*f).to_owned()).collect(),
            vec![0.2],
        )
        .with_boundary(boundary);
        let heat_init = &init[rows * cols..];
        let heat_states: Vec<Vec<f32>> = [None, cpu, gpus]
            .into_iter()
            .map(|shapes| {
                let spec = shapes.map_or_else(|| heat.clone(), |s| heat.clone().with_workgroup_shapes(s));
                let mut sim = FieldSim::new(&gpu, &spec, &grid(rows, cols), heat_init).unwrap();
                sim.run_steps(40).unwrap();
                sim.read_state().unwrap()
            })
            .collect();
        assert!(heat_states.iter().all(|s| s == &heat_states[0]), "heat, {boundary:?}: the shapes differ");
        assert!(heat_states[0] != heat_init, "heat, {boundary:?}: nothing diffused");
    }
    // The 3-D Gray-Scott runs a brick of 8 × 2 × 2 cells per invocation on a CPU driver and a
    // plain row under a forced width: an odd number of rows and planes and a row length no
    // multiple of 8 leave every brick's edge cases in the grid. Rows of 24 cells are whole
    // aligned quads (the brick moves them as vec4s); of 20, all but the last 4 cells.
    let params = gray_scott_3d::GrayScott3dParams { noise: 0.02, ..Default::default() };
    let brick = if prefers_wide_invocations(gpu.adapter()) { [8, 2, 2] } else { [1, 1, 1] };
    let shapes3 = [[7, 11, 21], [5, 3, 24], [3, 5, 20], [2, 1, 16]];
    for (shape, boundary) in shapes3.iter().flat_map(|s| Boundary::ALL.map(|b| (s, b))) {
        let grid3 = Grid::new(shape).unwrap();
        let init = gray_scott_3d::initial_state(&grid3);
        let states: Vec<Vec<f32>> = launches
            .iter()
            .map(|l| {
                let spec = launched(params.kernel(3).with_boundary(boundary), *l);
                let mut sim = FieldSim::new(&gpu, &spec, &grid3, &init).unwrap();
                if let Some(shapes) = l.1 {
                    let [wx, wy, wz] = workgroup_size(3, shapes);
                    let expected = match l.0 {
                        InvocationWidth::Cells(n) => [wx * n, wy, wz],
                        InvocationWidth::PerAdapter => [wx * brick[0], wy * brick[1], wz * brick[2]],
                    };
                    assert_eq!(sim.cells_per_workgroup(), expected, "{l:?}");
                }
                sim.run_steps(30).unwrap();
                sim.read_state().unwrap()
            })
            .collect();
        for (l, s) in launches.iter().zip(&states).skip(1) {
            assert!(s == &states[0], "3-D {shape:?}, {boundary:?}: {l:?} differs from the adapter's launch");
        }
        assert!(states[0] != init, "3-D {shape:?}, {boundary:?}: nothing changed");
    }
}

/// On a CPU driver the 3-D Gray-Scott's brick takes its path of `vec4` rows where the rows
/// are aligned quads: with that path's u store replaced by zeros, u is all zeros, so the
/// bit-for-bit comparisons above compare that path, not the scalar brick twice. A GPU runs
/// one cell per invocation and never takes it: there the change leaves the state as it was.
#[test]
fn the_3d_brick_moves_aligned_rows_as_vec4s_on_a_cpu_driver() {
    let gpu = gpu();
    let store = "store4_u(q, u + params.dt * du);";
    assert!(shipped::GRAY_SCOTT_3D.source.contains(store), "the quad path's store moved: update this test");
    let spec = gray_scott_3d::GrayScott3dParams::default().kernel(2);
    let broken = KernelSpec {
        wgsl: WgslSource::new("broken.wgsl", shipped::GRAY_SCOTT_3D.source.replace(store, "store4_u(q, vec4(0.0));")),
        ..spec.clone()
    };
    let grid3 = Grid::new(&[3, 3, 16]).unwrap();
    let init = gray_scott_3d::initial_state(&grid3);
    let run = |spec: &KernelSpec| {
        let mut sim = FieldSim::new(&gpu, spec, &grid3, &init).unwrap();
        sim.run_steps(1).unwrap();
        sim.read_state().unwrap()
    };
    let (shipped_state, broken_state) = (run(&spec), run(&broken));
    let u = ..grid3.cells();
    assert!(shipped_state[u].iter().all(|x| *x != 0.0), "the shipped kernel left u at zero");
    if prefers_wide_invocations(gpu.adapter()) {
        assert!(broken_state[u].iter().all(|x| *x == 0.0), "some u was not written by the vec4 path");
    } else {
        assert!(broken_state == shipped_state, "a GPU took the CPU drivers' vec4 path");
    }
}

/// A grid the adapter's workgroup shapes cannot dispatch runs with the CPU drivers' shapes,
/// which the size checks before the devices open allow for: 300000 rows need 75000
/// workgroups of the GPUs' 4 rows, more than a device's 65535 per axis, and 18750 of 16. On
/// a CPU driver the shapes are those already; on a GPU this is the fall-back.
#[test]
fn a_grid_too_tall_for_the_gpu_shapes_runs_with_the_cpu_drivers_shapes() {
    let gpu = gpu();
    let (rows, cols) = (300_000, 1);
    let init = gray_scott::initial_state(rows, cols, 5, 0.05);
    let kernel = gray_scott::GrayScottParams::default().kernel();
    let mut sim = FieldSim::new(&gpu, &kernel, &grid(rows, cols), &init).unwrap();
    assert_eq!(sim.workgroup_size(), workgroup_size(2, WorkgroupShapes::CpuDriver));
    sim.run_steps(3).unwrap();
    let mut cpu_shapes = FieldSim::new(
        &gpu,
        &kernel.clone().with_workgroup_shapes(WorkgroupShapes::CpuDriver),
        &grid(rows, cols),
        &init,
    )
    .unwrap();
    cpu_shapes.run_steps(3).unwrap();
    assert!(sim.read_state().unwrap() == cpu_shapes.read_state().unwrap());
    // Forced, the GPUs' shapes are refused, naming the grid and the limit.
    let forced = FieldSim::new(&gpu, &kernel.with_workgroup_shapes(WorkgroupShapes::Gpu), &grid(rows, cols), &init);
    let err = forced.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("75000"), "{err}");
}

/// A kernel naga accepts but wgpu rejects (a binding outside wgpipe's layout) is an error
/// of the crate, not a panic of wgpu's default error handler.
#[test]
fn wgpu_validation_errors_become_errors() {
    let gpu = gpu();
    let code = "@group(0) @binding(7) var<storage, read> extra: array<f32>;\n@compute @workgroup_size(8, 8)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    u_out[0] = extra[0];\n}\n";
    let spec = KernelSpec::new("extra", WgslSource::new("extra.wgsl", code), vec!["u".into()], vec![]);
    let err = FieldSim::new(&gpu, &spec, &grid(8, 8), &[0.0; 64]).unwrap_err();
    assert!(matches!(err, Error::Gpu { .. }), "{err}");
    assert!(err.to_string().contains(gpu.label()), "the error names the device: {err}");
}

#[test]
fn adapters_are_listed_and_selected() {
    let adapters = list_adapters();
    assert!(!adapters.is_empty(), "no adapters: install mesa-vulkan-drivers");
    for (i, a) in adapters.iter().enumerate() {
        assert_eq!(a.index, i);
        assert!(!a.name.is_empty());
    }
    // The same adapter opened twice gives two working, independent devices.
    let first = &adapters[0];
    let two = open_devices(&DeviceSelector::Indices(vec![0]), 2).unwrap();
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|d| d.adapter() == first));
    assert_ne!(two[0].label(), two[1].label());
    let by_name = open_devices(&DeviceSelector::Name(first.name.to_uppercase()), 1).unwrap();
    assert!(by_name.iter().all(|d| d.adapter().name == first.name));

    let err = open_devices(&DeviceSelector::Name("no-such-gpu-xyz".into()), 1).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("no-such-gpu-xyz") && msg.contains(&first.name) && msg.contains("wgpipe devices"), "{msg}");
    let err = open_devices(&DeviceSelector::Indices(vec![99]), 1).unwrap_err();
    assert!(err.to_string().contains("index 99"), "{err}");
}

#[test]
fn selectors_parse() {
    assert_eq!(DeviceSelector::parse("all").unwrap(), DeviceSelector::All);
    assert_eq!(DeviceSelector::parse("All-Backends").unwrap(), DeviceSelector::AllBackends);
    assert_eq!(DeviceSelector::parse("Vulkan").unwrap(), DeviceSelector::Backend(wgpu::Backend::Vulkan));
    assert_eq!(DeviceSelector::parse("gl").unwrap(), DeviceSelector::Backend(wgpu::Backend::Gl));
    assert_eq!(DeviceSelector::parse("0, 2").unwrap(), DeviceSelector::Indices(vec![0, 2]));
    assert_eq!(DeviceSelector::parse("llvmpipe").unwrap(), DeviceSelector::Name("llvmpipe".into()));
    assert!(DeviceSelector::parse("  ").is_err());
}

/// The default selection opens exactly the adapters `default_picks` takes, each once, and
/// never the same physical adapter through two backends: where wgpu lists llvmpipe on GL
/// beside lavapipe on Vulkan (CI), only the Vulkan one opens; with one backend
/// (`WGPU_BACKEND=vulkan`) the one adapter opens.
#[test]
fn the_default_selection_opens_what_default_picks_takes() {
    let listed = wgpipe_compute::list_adapters();
    let expected: Vec<_> = DeviceSelector::All.choose(&listed).into_iter().cloned().collect();
    let opened: Vec<_> = open_devices(&DeviceSelector::All, 1).unwrap().iter().map(|d| d.adapter().clone()).collect();
    assert_eq!(opened, expected);
    assert!(!opened.is_empty(), "listed {listed:?}, nothing opened");
    let vulkan_cpu =
        listed.iter().any(|a| a.backend == wgpu::Backend::Vulkan && a.device_type == wgpu::DeviceType::Cpu);
    if vulkan_cpu && listed.iter().any(|a| a.backend == wgpu::Backend::Gl) {
        assert!(opened.len() < listed.len(), "listed {listed:?}, opened {opened:?}");
        assert!(opened.iter().all(|a| a.backend != wgpu::Backend::Gl), "GL duplicates Vulkan here: {opened:?}");
    }
}

/// Every adapter wgpu sees on every backend (in CI: lavapipe on Vulkan and llvmpipe on GL;
/// the one adapter under `WGPU_BACKEND=vulkan`) computes the same Gray-Scott state as the CPU
/// twin: the cross-backend promise, checked wherever there is more than one backend.
#[test]
fn every_adapter_agrees_with_the_cpu_twin() {
    let devices = open_devices(&DeviceSelector::AllBackends, 1).unwrap();
    let (rows, cols) = (24, 24);
    let params = gray_scott::GrayScottParams::default();
    let init = gray_scott::initial_state(rows, cols, 9, 0.05);
    let cpu = gray_scott::cpu_run(init.clone(), rows, cols, &params, 100);
    for gpu in &devices {
        let mut sim = FieldSim::new(gpu, &params.kernel(), &grid(rows, cols), &init).unwrap();
        sim.run_steps(100).unwrap();
        let diff = max_abs_diff(&sim.read_state().unwrap(), &cpu);
        assert!(diff <= 1e-4, "{} differs from the CPU twin by {diff}", gpu.label());
    }
}

/// A device lost mid-run (here: destroyed) turns into an error of the crate, not a panic or
/// a hang, both for plain steps and for the readback ring.
#[test]
fn device_loss_becomes_an_error() {
    let gpu = gpu();
    let params = gray_scott::GrayScottParams::default();
    let init = gray_scott::initial_state(16, 16, 0, 0.0);
    let mut sim = FieldSim::new(&gpu, &params.kernel(), &grid(16, 16), &init).unwrap();
    let config =
        ReadbackConfig { steps_per_frame: 2, frames: 50, staging_buffers: 2, fields: vec![1], work_ahead: true };
    let mut producer =
        FrameProducer::new(FieldSim::new(&gpu, &params.kernel(), &grid(16, 16), &init).unwrap(), config).unwrap();
    let mut buf = vec![0u8; producer.frame_bytes()];
    assert!(producer.next_into(&mut buf).unwrap().is_some());
    gpu.device().destroy();
    let err = sim.run_steps(4).and_then(|()| sim.read_state().map(drop)).unwrap_err();
    assert!(matches!(err, Error::DeviceLost { .. } | Error::Gpu { .. }), "{err}");
    let err = (0..50).map(|_| producer.next_into(&mut buf)).find_map(Result::err).expect("the ring reports the loss");
    assert!(matches!(err, Error::DeviceLost { .. } | Error::Gpu { .. }), "{err}");
    assert!(err.to_string().contains(gpu.label()), "{err}");
}

/// Every listed adapter opened twice, both devices stepping at once on their own threads. For
/// GL (llvmpipe, in CI) each copy has its own EGL context: before, the copies shared one and
/// wgpu's GL backend panicked with EGL `BadAccess` when the second thread took it.
#[test]
fn every_adapter_opened_twice_runs_on_two_threads() {
    for adapter in wgpipe_compute::list_adapters() {
        opened_twice_runs_on_two_threads(adapter.index);
    }
}

fn opened_twice_runs_on_two_threads(index: usize) {
    let devices = open_devices(&DeviceSelector::Indices(vec![index]), 2).unwrap();
    assert_eq!(devices.len(), 2);
    let (rows, cols) = (16, 16);
    let params = gray_scott::GrayScottParams::default();
    let init = gray_scott::initial_state(rows, cols, 3, 0.05);
    let cpu = gray_scott::cpu_run(init.clone(), rows, cols, &params, 40);
    std::thread::scope(|s| {
        let runs: Vec<_> = devices
            .iter()
            .map(|gpu| {
                s.spawn(|| {
                    let mut sim = FieldSim::new(gpu, &params.kernel(), &grid(rows, cols), &init).unwrap();
                    for _ in 0..20 {
                        sim.run_steps(2).unwrap();
                        sim.read_state().unwrap();
                    }
                    max_abs_diff(&sim.read_state().unwrap(), &cpu)
                })
            })
            .collect();
        for run in runs {
            let diff = run.join().expect("a device thread panicked");
            assert!(diff <= 1e-4, "differs from the CPU twin by {diff}");
        }
    });
}
