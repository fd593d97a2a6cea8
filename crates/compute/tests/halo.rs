//! A grid split into blocks with halo exchange ([`BlockSim`]) against the whole grid run by
//! [`FieldSim`]: bit for bit, with and without noise, for uneven splits.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::gpu;
use wgpipe_compute::gray_scott_3d::{self, GrayScott3dParams};
use wgpipe_compute::tuning::{InvocationWidth, WorkgroupShapes, prefers_wide_invocations};
use wgpipe_compute::{
    Block, BlockSim, Boundary, Faces, FieldSim, GpuDevice, Grid, KernelSpec, Side, WgslSource, exchange_in_process,
    gray_scott,
};

/// The blocks of a Cartesian split: per axis, the sizes of its parts (C order).
fn blocks(grid: &Grid, parts: [&[usize]; 3]) -> Vec<Block> {
    let starts = |sizes: &[usize]| sizes.iter().scan(0, |at, n| Some((std::mem::replace(at, *at + n), *n))).collect();
    let [z, y, x]: [Vec<(usize, usize)>; 3] = parts.map(starts);
    let mut out = Vec::new();
    for (oz, nz) in &z {
        for (oy, ny) in &y {
            for (ox, nx) in &x {
                out.push(Block::new(grid, &[*oz, *oy, *ox], &[*nz, *ny, *nx]).unwrap());
            }
        }
    }
    out
}

/// Runs `steps` steps of `spec` split into `blocks`, exchanging halos in process before every
/// step, and gathers every field of the whole grid.
fn run_split(gpu: &GpuDevice, spec: &KernelSpec, blocks: &[Block], init: &[f32], steps: u32) -> Vec<f32> {
    let fields = spec.fields.len();
    let mut sims: Vec<BlockSim> =
        blocks.iter().map(|b| BlockSim::new(gpu, spec, b, &b.extract(init, fields).unwrap()).unwrap()).collect();
    for _ in 0..steps {
        exchange_in_process(&mut sims).unwrap();
        for sim in &mut sims {
            sim.run_step().unwrap();
        }
    }
    let mut state = vec![f32::NAN; init.len()];
    let all: Vec<usize> = (0..fields).collect();
    for sim in &sims {
        assert_eq!(sim.steps(), u64::from(steps));
        sim.block().place(&sim.read_block(&all).unwrap(), fields, &mut state).unwrap();
    }
    state
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn split_runs_are_bit_identical_to_the_whole_grid() {
    let gpu = gpu();
    let grid = Grid::new(&[24, 20, 16]).unwrap();
    let init = gray_scott_3d::initial_state(&grid);
    let steps = 30;
    let splits: [[&[usize]; 3]; 4] = [
        // 2×2×2, uneven on every axis.
        [&[11, 13], &[9, 11], &[7, 9]],
        // 3×1×2: one block along y is its own neighbour across the periodic edge.
        [&[7, 8, 9], &[20], &[10, 6]],
        // One block: every ghost comes from the block itself.
        [&[24], &[20], &[16]],
        // Blocks one and two cells thick: both faces of a block read the same layer.
        [&[1, 2, 21], &[20], &[3, 13]],
    ];
    let mut whole_runs = Vec::new();
    for noise in [0.0, 0.05] {
        let kernel = GrayScott3dParams { noise, ..Default::default() }.kernel(7);
        let mut sim = FieldSim::new(&gpu, &kernel, &grid, &init).unwrap();
        sim.run_steps(steps).unwrap();
        let whole = sim.read_state().unwrap();
        // Not by construction: the state evolved across the blocks' faces (the cube of
        // (0.25, 0.33) straddles every cut), and the noise changed it.
        assert!(whole.iter().zip(&init).any(|(a, b)| (a - b).abs() > 0.01), "noise {noise}: no evolution");
        for parts in splits {
            // The blocks at the adapter's width and shapes, and at the other ones (1 cell per
            // invocation and the GPUs' shapes on a CPU adapter, 8 and the CPU drivers' on a
            // GPU), so that both run split on every machine.
            let (other, other_shapes) = if prefers_wide_invocations(gpu.adapter()) {
                (1, WorkgroupShapes::Gpu)
            } else {
                (8, WorkgroupShapes::CpuDriver)
            };
            let other_width = kernel.clone().with_invocation_width(InvocationWidth::Cells(other));
            let launches = [kernel.clone(), other_width.clone(), other_width.with_workgroup_shapes(other_shapes)];
            for kernel in launches {
                let width = (kernel.invocation_width, kernel.workgroup_shapes);
                let split = run_split(&gpu, &kernel, &blocks(&grid, parts), &init, steps);
                let differing = bits(&split).iter().zip(bits(&whole)).filter(|(a, b)| **a != *b).count();
                assert_eq!(
                    differing, 0,
                    "noise {noise}, split {parts:?}, {width:?}: {differing} values differ from the whole run"
                );
            }
        }
        whole_runs.push(whole);
    }
    assert_ne!(bits(&whole_runs[0]), bits(&whole_runs[1]), "the noise did not reach the state");
}

/// Without the exchange the ghosts stay 0 and the split run departs from the whole one: the
/// bit-identity above comes from the halos, not from blocks that never look past their faces.
#[test]
fn without_exchange_a_split_run_differs() {
    let gpu = gpu();
    let grid = Grid::new(&[12, 10, 8]).unwrap();
    let init = gray_scott_3d::initial_state(&grid);
    let kernel = GrayScott3dParams { noise: 0.0, ..Default::default() }.kernel(0);
    let block = Block::new(&grid, &[0, 0, 0], &[6, 10, 8]).unwrap();
    let mut sim = BlockSim::new(&gpu, &kernel, &block, &block.extract(&init, 2).unwrap()).unwrap();
    sim.run_step().unwrap();
    let mut whole = FieldSim::new(&gpu, &kernel, &grid, &init).unwrap();
    whole.run_steps(1).unwrap();
    let expected = block.extract(&whole.read_state().unwrap(), 2).unwrap();
    assert_ne!(bits(&sim.read_block(&[0, 1]).unwrap()), bits(&expected));
}

/// `read_faces` returns each boundary layer, field after field, in C order of the other axes.
#[test]
fn faces_hold_the_boundary_layers_in_c_order() {
    let gpu = gpu();
    let grid = Grid::new(&[6, 7, 8]).unwrap();
    let block = Block::new(&grid, &[1, 2, 3], &[3, 4, 5]).unwrap();
    // Field k's value at global cell i is 1000 k + i: every value names its cell and field.
    let global: Vec<f32> = (0..2).flat_map(|k| (0..grid.cells()).map(move |i| (1000 * k + i) as f32)).collect();
    let kernel = GrayScott3dParams::default().kernel(0);
    let mut sim = BlockSim::new(&gpu, &kernel, &block, &block.extract(&global, 2).unwrap()).unwrap();
    let faces = sim.read_faces().unwrap();
    let (o, s) = (block.offset(), block.shape());
    for axis in 0..3 {
        for side in Side::BOTH {
            // The face's layer is a block of thickness 1 at the block's first or last cell.
            let mut offset = o.to_vec();
            let mut shape = s.to_vec();
            if side == Side::High {
                offset[axis] += s[axis] - 1;
            }
            shape[axis] = 1;
            let layer = Block::new(&grid, &offset, &shape).unwrap();
            let expected = layer.extract(&global, 2).unwrap();
            assert_eq!(expected.len(), block.face_len(axis, 2));
            assert_eq!(faces.get(axis, side), &expected[..], "axis {axis} {side:?}");
        }
    }
    assert_eq!(faces.as_slice().len(), 2 * 2 * (4 * 5 + 3 * 5 + 3 * 4));
    // The state itself is what was uploaded.
    assert_eq!(sim.read_block(&[1]).unwrap(), block.extract(&global, 2).unwrap()[block.cells()..]);
}

#[test]
fn what_a_split_cannot_do_is_refused_clearly() {
    let gpu = gpu();
    let grid = Grid::new(&[8, 8, 8]).unwrap();
    let init = gray_scott_3d::initial_state(&grid);
    let half = Block::new(&grid, &[0, 0, 0], &[4, 8, 8]).unwrap();
    let part = half.extract(&init, 2).unwrap();
    let zero_flux = GrayScott3dParams::default().kernel(0).with_boundary(Boundary::ZeroFlux);
    let e = BlockSim::new(&gpu, &zero_flux, &half, &part).unwrap_err().to_string();
    assert!(e.contains("split domains support the periodic boundary") && e.contains("zero-flux"), "{e}");
    assert!(e.contains("offset [0, 0, 0] of shape [4, 8, 8]"), "{e}");

    let periodic = GrayScott3dParams::default().kernel(0);
    let e = BlockSim::new(&gpu, &periodic, &half, &part[1..]).unwrap_err().to_string();
    assert!(e.contains("holds 511 values, expected 2 fields × 256 cells"), "{e}");

    let flat = Grid::new(&[16, 16]).unwrap();
    let kernel = gray_scott::GrayScottParams::default().kernel();
    let e = BlockSim::new(&gpu, &kernel, &Block::whole(&flat), &gray_scott::initial_state(16, 16, 0, 0.0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("corner ghosts"), "{e}");

    let mut sim = BlockSim::new(&gpu, &periodic, &half, &part).unwrap();
    let e = sim.write_ghosts(&Faces::new(&Block::whole(&grid), 2)).unwrap_err().to_string();
    assert!(e.contains("layout of another block") && e.contains("Faces::new of this block"), "{e}");
    let e = sim.read_block(&[2]).unwrap_err().to_string();
    assert!(e.contains("no field 2"), "{e}");
}

/// A whole grid with the zero-flux boundary runs as one block too: its ghosts mirror its own
/// boundary layers, as the zero-flux prelude's neighbours do.
#[test]
fn one_zero_flux_block_equals_the_whole_grid() {
    let gpu = gpu();
    let grid = Grid::new(&[10, 9, 12]).unwrap();
    let init = gray_scott_3d::initial_state(&grid);
    let kernel = GrayScott3dParams { noise: 0.05, ..Default::default() }.kernel(3).with_boundary(Boundary::ZeroFlux);
    let split = run_split(&gpu, &kernel, &[Block::whole(&grid)], &init, 20);
    let mut sim = FieldSim::new(&gpu, &kernel, &grid, &init).unwrap();
    sim.run_steps(20).unwrap();
    assert_eq!(bits(&split), bits(&sim.read_state().unwrap()));
}

/// 1-D: the 3-point stencil needs one ghost cell at each end; noise keyed by `global_index`.
#[test]
fn a_one_dimensional_split_is_bit_identical_too() {
    let gpu = gpu();
    let wgsl = "@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)\n\
        fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n\
            if (!in_grid(id)) { return; }\n\
            let c = cell(id);\n\
            u_out[c.i] = u_in[c.i] + 0.25 * laplacian3_u(c) + 0.01 * uniform_noise(global_index(c));\n\
        }\n";
    let kernel = KernelSpec::new("diffusion-1d", WgslSource::new("diffusion-1d", wgsl), vec!["u".into()], vec![])
        .with_rank(1)
        .with_seed(5);
    let grid = Grid::new(&[300]).unwrap();
    let init: Vec<f32> = (0..300).map(|i| if (140..160).contains(&i) { 1.0 } else { 0.0 }).collect();
    let mut whole = FieldSim::new(&gpu, &kernel, &grid, &init).unwrap();
    whole.run_steps(40).unwrap();
    let whole = whole.read_state().unwrap();
    let blocks = [[0, 150], [150, 7], [157, 143]].map(|[o, n]| Block::new(&grid, &[o], &[n]).unwrap());
    let split = run_split(&gpu, &kernel, &blocks, &init, 40);
    assert_eq!(bits(&split), bits(&whole));
    assert!(whole[165] > 0.01, "the pulse spread across the cut at 157");
}

/// A split run resumed from its gathered state at step 12 (`starting_at_step`) ends where an
/// uninterrupted whole run does: the blocks key their noise by the absolute step too.
#[test]
fn a_resumed_split_run_equals_an_uninterrupted_whole_one() {
    let gpu = gpu();
    let grid = Grid::new(&[12, 10, 8]).unwrap();
    let init = gray_scott_3d::initial_state(&grid);
    let kernel = GrayScott3dParams { noise: 0.05, ..Default::default() }.kernel(9);
    let parts: [&[usize]; 3] = [&[5, 7], &[10], &[4, 4]];
    let halfway = run_split(&gpu, &kernel, &blocks(&grid, parts), &init, 12);
    let mut sims: Vec<BlockSim> = blocks(&grid, parts)
        .iter()
        .map(|b| BlockSim::new(&gpu, &kernel, b, &b.extract(&halfway, 2).unwrap()).unwrap().starting_at_step(12))
        .collect();
    for _ in 0..8 {
        exchange_in_process(&mut sims).unwrap();
        for sim in &mut sims {
            sim.run_step().unwrap();
        }
    }
    let mut resumed = vec![f32::NAN; init.len()];
    for sim in &sims {
        assert_eq!(sim.steps(), 20);
        sim.block().place(&sim.read_block(&[0, 1]).unwrap(), 2, &mut resumed).unwrap();
    }
    let mut whole = FieldSim::new(&gpu, &kernel, &grid, &init).unwrap();
    whole.run_steps(20).unwrap();
    assert_eq!(bits(&resumed), bits(&whole.read_state().unwrap()));
}
