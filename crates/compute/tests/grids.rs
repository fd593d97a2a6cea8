//! The generated prelude on the GPU: grids of rank 1, 2 and 3, both boundary rules, one
//! buffer pair per field, the step clock and the noise hash, each checked against its CPU twin.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::{gpu, max_abs_diff, run_gpu};
use wgpipe_compute::{Boundary, Error, FieldSim, Grid, KernelSpec, WgslSource, cpu_twin, noise};

/// A deterministic, irregular field: no two neighbours alike, so a wrong index shows.
fn irregular(cells: usize) -> Vec<f32> {
    (0..cells).map(|i| noise::uniform_noise(99, i as u32, 0)).collect()
}

/// A kernel that leaves field `a` as it is and writes into `b` the rank's Laplacian of `a`
/// and into `n` the value of `a` at one corner-most neighbour (all offsets −1 or +1).
fn probe_kernel(rank: usize, boundary: Boundary) -> KernelSpec {
    let (laplacian, offsets) = match rank {
        1 => ("laplacian3_a", "1"),
        2 => ("laplacian9_a", "-1, 1"),
        _ => ("laplacian7_a", "-1, 1, -1"),
    };
    let code = format!(
        "@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)\n\
         fn main(@builtin(global_invocation_id) id: vec3<u32>) {{\n\
             if (!in_grid(id)) {{ return; }}\n\
             let c = cell(id);\n\
             a_out[c.i] = a_in[c.i];\n\
             b_out[c.i] = {laplacian}(c);\n\
             n_out[c.i] = a_in[neighbour(c, {offsets})];\n\
         }}\n"
    );
    KernelSpec::new("probe", WgslSource::new("probe.wgsl", code), vec!["a".into(), "b".into(), "n".into()], vec![])
        .with_rank(rank)
        .with_boundary(boundary)
}

/// Odd sizes that are no multiple of any workgroup edge, and axes of 1 and 2 cells, where a
/// wrap and a clamp pick the same or the only neighbour.
#[test]
fn stencils_and_neighbours_match_the_twin_on_every_rank_and_boundary() {
    let gpu = gpu();
    let shapes: [&[usize]; 6] = [&[1000], &[2], &[13, 17], &[1, 5], &[5, 7, 9], &[2, 1, 3]];
    for shape in shapes {
        let grid = Grid::new(shape).unwrap();
        let cells = grid.cells();
        for boundary in Boundary::ALL {
            let what = format!("{grid} grid, {boundary}");
            let mut init = irregular(cells);
            init.resize(3 * cells, 0.0);
            let out = run_gpu(&gpu, &probe_kernel(grid.rank(), boundary), &grid, &init, 1);
            let a = &init[..cells];
            assert_eq!(&out[..cells], a, "{what}: field a is copied unchanged");
            let mut lap = vec![0.0f32; cells];
            let mut corner = vec![0.0f32; cells];
            for c in cpu_twin::Cell::all(&grid, boundary) {
                lap[c.i] = match grid.rank() {
                    1 => cpu_twin::laplacian3(a, &c),
                    2 => cpu_twin::laplacian9(a, &c),
                    _ => cpu_twin::laplacian7(a, &c),
                };
                corner[c.i] = a[match grid.rank() {
                    1 => c.xp,
                    2 => c.ym + c.xp,
                    _ => c.zm + c.yp + c.xm,
                }];
            }
            // The GPU may fuse a multiply-add (one rounding fewer); values are O(1).
            let diff = max_abs_diff(&out[cells..2 * cells], &lap);
            assert!(diff <= 2e-6, "{what}: Laplacian differs from the twin by {diff}");
            assert!(lap.iter().any(|x| x.abs() > 0.1), "{what}: a meaningful Laplacian");
            assert_eq!(&out[2 * cells..], &corner[..], "{what}: neighbour(c, ..) picks the twin's cell");
        }
    }
}

/// `clock.step` and `uniform_noise` on the GPU are bit for bit the twin's, with a seed and
/// steps beyond 32 bits and a resumed start step, so a split or resumed run draws the same noise.
#[test]
fn the_clock_and_the_noise_hash_are_bitwise_the_twins() {
    let gpu = gpu();
    let grid = Grid::new(&[3, 50, 70]).unwrap();
    let code = "@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)\n\
                fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n\
                    if (!in_grid(id)) { return; }\n\
                    let c = cell(id);\n\
                    r_out[c.i] = uniform_noise(c.i);\n\
                    s_out[c.i] = f32(clock.step);\n\
                    h_out[c.i] = f32(clock.step_hi);\n\
                }\n";
    let seed = (1u64 << 40) + 3;
    let spec =
        KernelSpec::new("clock", WgslSource::new("clock.wgsl", code), vec!["r".into(), "s".into(), "h".into()], vec![])
            .with_rank(3)
            .with_seed(seed);
    let start = (1u64 << 32) + 5;
    let mut sim = FieldSim::new(&gpu, &spec, &grid, &vec![0.0; 3 * grid.cells()]).unwrap().starting_at_step(start);
    assert_eq!(sim.steps(), start);
    sim.run_steps(3).unwrap();
    assert_eq!(sim.steps(), start + 3);
    let out = sim.read_state().unwrap();
    let cells = grid.cells();
    let last = start + 2; // the third step was step `start + 2`
    for (i, gpu) in out[..cells].iter().enumerate() {
        let twin = cpu_twin::uniform_noise(seed, i as u32, last);
        assert_eq!(gpu.to_bits(), twin.to_bits(), "noise at cell {i}: GPU {gpu} vs twin {twin}");
    }
    // Small values, exact in f32: (2^32 + 7) is step 7, step_hi 1.
    assert!(out[cells..2 * cells].iter().all(|s| *s == (last as u32) as f32), "clock.step");
    assert!(out[2 * cells..].iter().all(|s| *s == (last >> 32) as f32), "clock.step_hi");
}

#[test]
fn a_kernel_with_more_fields_than_the_device_has_bindings_is_refused() {
    let gpu = gpu();
    let max = gpu.device().limits().max_storage_buffers_per_shader_stage as usize;
    let fields: Vec<String> = (0..max / 2 + 1).map(|k| format!("f{k}")).collect();
    let code = "@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)\n\
                fn main(@builtin(global_invocation_id) id: vec3<u32>) {}\n";
    let spec = KernelSpec::new("wide", WgslSource::new("wide.wgsl", code), fields.clone(), vec![]);
    let grid = Grid::new(&[2, 2]).unwrap();
    let err = FieldSim::new(&gpu, &spec, &grid, &vec![0.0; 4 * fields.len()]).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("{} in all", 2 * fields.len()))
            && msg.contains(&format!("max_storage_buffers_per_shader_stage of {max}")),
        "{msg}"
    );
    assert!(msg.contains(gpu.label()), "{msg}");
}
