//! Reductions on the device (`FrameProducer::with_analysis`) against a float64 recomputation
//! from the frame's own fields: min and max exactly, sum and mean to f32 rounding, the PDF per
//! slice bin for bin except values on a bin edge (the definition's rounding in f32 against
//! f64), the downsampled field to rounding; a constant frame's PDF; and the results' place
//! behind packed f16 fields.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use wgpipe_compute::{
    AnalysisSpec, Block, BlockAnalysis, BlockSim, BlockStatistics, FieldSim, FrameProducer, GpuDevice, Grid,
    OutputDType, ReadbackConfig, Reduction, exchange_in_process, gray_scott, gray_scott_3d,
};

fn config(fields: Vec<usize>, frames: u64) -> ReadbackConfig {
    ReadbackConfig { steps_per_frame: 7, frames, staging_buffers: 2, fields, work_ahead: true }
}

/// The 2-D Gray-Scott model on a `rows` × `cols` grid, from its seeded start.
fn gray_scott_2d(gpu: &wgpipe_compute::GpuDevice, rows: usize, cols: usize) -> FieldSim {
    let grid = Grid::new(&[rows, cols]).unwrap();
    let init = gray_scott::initial_state(rows, cols, 5, 0.05);
    FieldSim::new(gpu, &gray_scott::GrayScottParams::default().kernel(), &grid, &init).unwrap()
}

/// Every frame of `p`.
fn frames(mut p: FrameProducer) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; p.frame_bytes()];
    let mut out = Vec::new();
    while p.next_into(&mut buf).unwrap().is_some() {
        out.push(buf.clone());
    }
    out
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// Checks one field's reductions (`results`, keyed by reduction) against `values` on `grid`.
fn check_field(label: &str, grid: &Grid, values: &[f32], spec: &AnalysisSpec, results: &[(Reduction, &[u8])]) {
    let get = |r: Reduction| results.iter().find(|(k, _)| *k == r).map(|(_, b)| *b).unwrap();
    let (mn, mx) = values.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    let sum: f64 = values.iter().map(|&x| f64::from(x)).sum();
    assert_eq!(f32s(get(Reduction::Min)), vec![mn], "{label}: min");
    assert_eq!(f32s(get(Reduction::Max)), vec![mx], "{label}: max");
    let scale = values.iter().map(|x| f64::from(x.abs())).sum::<f64>().max(1e-30);
    let got_sum = f64::from(f32s(get(Reduction::Sum))[0]);
    assert!((got_sum - sum).abs() <= 1e-5 * scale, "{label}: sum {got_sum} against {sum}");
    let got_mean = f64::from(f32s(get(Reduction::Mean))[0]);
    let mean = sum / values.len() as f64;
    assert!((got_mean - mean).abs() <= 1e-5 * scale / values.len() as f64, "{label}: mean {got_mean} against {mean}");

    let n = spec.pdf_bins as usize;
    let (lo, hi) = (f64::from(mn), f64::from(mx));
    let w = (hi - lo) / n as f64;
    let edges = f32s(get(Reduction::Bins));
    for (i, e) in edges.iter().enumerate() {
        let want = lo + i as f64 * w;
        assert!((f64::from(*e) - want).abs() <= 1e-6 * (hi - lo).max(lo.abs()), "{label}: edge {i} {e} against {want}");
    }
    let pdf = u32s(get(Reduction::Pdf));
    let slices = grid.shape()[0];
    let per_slice = values.len() / slices;
    assert_eq!(pdf.len(), slices * n, "{label}: PDF shape");
    for (s, (counts, slice)) in pdf.chunks_exact(n).zip(values.chunks_exact(per_slice)).enumerate() {
        // Counted by the definition in f64; a value within rounding of an edge may fall on
        // either side of it: it widens the bounds of both bins.
        let mut lower = vec![0u32; n];
        let mut upper = vec![0u32; n];
        for &x in slice {
            let bin = |t: f64| if w == 0.0 { n / 2 } else { (((t - lo) / w).floor().max(0.0) as usize).min(n - 1) };
            let x = f64::from(x);
            let near = 4.0 * f64::from(f32::EPSILON) * (hi.abs().max(lo.abs()));
            let (a, b) = (bin(x - near), bin(x + near));
            if a == b {
                lower[a] += 1;
            }
            for count in &mut upper[a..=b] {
                *count += 1;
            }
        }
        assert_eq!(counts.iter().sum::<u32>() as usize, per_slice, "{label}: slice {s} counts every cell once");
        for k in 0..n {
            assert!(
                (lower[k]..=upper[k]).contains(&counts[k]),
                "{label}: slice {s} bin {k} holds {} values, the definition gives {}..={}",
                counts[k],
                lower[k],
                upper[k]
            );
        }
    }

    if spec.factor() > 1 {
        let k = spec.factor();
        let coarse = spec.coarse_shape(grid);
        let got = f32s(get(Reduction::Downsampled));
        let shape3 = |s: &[usize]| {
            let mut v = vec![1; 3 - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (c, f) = (shape3(&coarse), shape3(grid.shape()));
        let kz = if grid.rank() == 3 { k } else { 1 };
        let ky = if grid.rank() >= 2 { k } else { 1 };
        assert_eq!(got.len(), c.iter().product::<usize>(), "{label}: downsampled shape");
        for cz in 0..c[0] {
            for cy in 0..c[1] {
                for cx in 0..c[2] {
                    let (mut s, mut m) = (0.0f64, 0);
                    for z in cz * kz..((cz + 1) * kz).min(f[0]) {
                        for y in cy * ky..((cy + 1) * ky).min(f[1]) {
                            for x in cx * k..((cx + 1) * k).min(f[2]) {
                                s += f64::from(values[(z * f[1] + y) * f[2] + x]);
                                m += 1;
                            }
                        }
                    }
                    let want = s / f64::from(m);
                    let at = (cz * c[1] + cy) * c[2] + cx;
                    assert!(
                        (f64::from(got[at]) - want).abs() <= 1e-5 * want.abs().max(1e-6),
                        "{label}: coarse cell {cz},{cy},{cx}: {} against {want}",
                        got[at]
                    );
                }
            }
        }
    }
}

/// Splits a frame of `fields` f32 fields on `grid` followed by `spec`'s results.
fn check_frame(label: &str, grid: &Grid, frame: &[u8], read: &[usize], spec: &AnalysisSpec) {
    let field_bytes = grid.cells() * 4;
    let mut at = read.len() * field_bytes;
    let outputs = spec.outputs(grid);
    assert_eq!(frame.len(), at + spec.frame_bytes(grid), "{label}: frame size");
    for &f in &spec.fields {
        let k = read.iter().position(|r| *r == f).unwrap();
        let values = f32s(&frame[k * field_bytes..(k + 1) * field_bytes]);
        let mut results = Vec::new();
        for o in outputs.iter().filter(|o| o.field == f) {
            results.push((o.reduction, &frame[at..at + o.bytes()]));
            at += o.bytes();
        }
        check_field(&format!("{label}, field {f}"), grid, &values, spec, &results);
    }
}

#[test]
fn reductions_pdfs_and_downsampling_match_a_float64_recomputation_in_3d() {
    let gpu = common::gpu();
    // Axes that the factor 4 does not divide, so the last blocks are partial.
    let grid = Grid::new(&[6, 10, 13]).unwrap();
    let params = gray_scott_3d::GrayScott3dParams { noise: 0.01, ..Default::default() };
    let sim = FieldSim::new(&gpu, &params.kernel(3), &grid, &gray_scott_3d::initial_state(&grid)).unwrap();
    let spec = AnalysisSpec { fields: vec![1, 0], pdf_bins: 16, downsample: 4 };
    let frames = frames(FrameProducer::with_analysis(sim, config(vec![0, 1], 5), OutputDType::F32, &spec).unwrap());
    assert_eq!(frames.len(), 5);
    for (i, frame) in frames.iter().enumerate() {
        check_frame(&format!("3-D frame {i}"), &grid, frame, &[0, 1], &spec);
    }
}

#[test]
fn a_field_not_stored_is_analysed_and_a_2d_grid_downsamples_along_its_two_axes() {
    let gpu = common::gpu();
    let grid = Grid::new(&[33, 20]).unwrap();
    let sim = gray_scott_2d(&gpu, 33, 20);
    // v analysed, both read back for the check; 100 bins as the tutorial's PDF.
    let spec = AnalysisSpec { fields: vec![1], pdf_bins: 100, downsample: 3 };
    let frames = frames(FrameProducer::with_analysis(sim, config(vec![0, 1], 3), OutputDType::F32, &spec).unwrap());
    for (i, frame) in frames.iter().enumerate() {
        check_frame(&format!("2-D frame {i}"), &grid, frame, &[0, 1], &spec);
    }
}

/// The passes read the field four cells at a time (reduce.wgsl): a field of 195 cells in
/// slices of 13 ends the field and every slice with a partial quad, which must count each
/// cell once and no cell past it.
#[test]
fn fields_whose_cells_are_not_a_multiple_of_four_are_reduced_cell_by_cell() {
    let gpu = common::gpu();
    let grid = Grid::new(&[15, 13]).unwrap();
    let spec = AnalysisSpec { fields: vec![0, 1], pdf_bins: 7, downsample: 2 };
    let sim = gray_scott_2d(&gpu, 15, 13);
    let frames = frames(FrameProducer::with_analysis(sim, config(vec![0, 1], 3), OutputDType::F32, &spec).unwrap());
    for (i, frame) in frames.iter().enumerate() {
        check_frame(&format!("15x13 frame {i}"), &grid, frame, &[0, 1], &spec);
    }
}

#[test]
fn a_constant_field_has_every_value_in_the_middle_bin() {
    let gpu = common::gpu();
    let grid = Grid::new(&[4, 9]).unwrap();
    // u = 1, v = 0 everywhere is a fixed point of Gray-Scott: the fields stay constant.
    let mut init = vec![1.0f32; grid.cells()];
    init.extend(vec![0.0f32; grid.cells()]);
    let sim = FieldSim::new(&gpu, &gray_scott::GrayScottParams::default().kernel(), &grid, &init).unwrap();
    let spec = AnalysisSpec { fields: vec![0, 1], pdf_bins: 10, downsample: 0 };
    let frames = frames(FrameProducer::with_analysis(sim, config(vec![0], 2), OutputDType::F32, &spec).unwrap());
    let outputs = spec.outputs(&grid);
    for frame in &frames {
        let mut at = grid.cells() * 4;
        for o in &outputs {
            let bytes = &frame[at..at + o.bytes()];
            at += o.bytes();
            let value = if o.field == 0 { 1.0 } else { 0.0 };
            match o.reduction {
                Reduction::Min | Reduction::Max | Reduction::Mean => assert_eq!(f32s(bytes), vec![value]),
                Reduction::Sum => assert_eq!(f32s(bytes), vec![value * 36.0]),
                Reduction::Bins => assert_eq!(f32s(bytes), vec![value; 10]),
                Reduction::Pdf => {
                    let mut want = vec![0u32; 40];
                    for s in 0..4 {
                        want[s * 10 + 5] = 9;
                    }
                    assert_eq!(u32s(bytes), want, "field {}", o.field);
                }
                other => panic!("unexpected output {other:?}"),
            }
        }
    }
}

/// The results follow the packed f16 fields (padded on the device, unpadded on the host) and
/// are the same as with f32 fields: the analysis reads the f32 state.
#[test]
fn results_follow_f16_fields_unchanged() {
    let gpu = common::gpu();
    let grid = Grid::new(&[15, 13]).unwrap();
    let spec = AnalysisSpec { fields: vec![0, 1], pdf_bins: 7, downsample: 2 };
    let run = |dtype| {
        frames(FrameProducer::with_analysis(gray_scott_2d(&gpu, 15, 13), config(vec![1, 0], 3), dtype, &spec).unwrap())
    };
    let (full, half) = (run(OutputDType::F32), run(OutputDType::F16));
    let tail = spec.frame_bytes(&grid);
    for (a, b) in full.iter().zip(&half) {
        assert_eq!(b.len(), 2 * grid.cells() * 2 + tail);
        assert_eq!(a[a.len() - tail..], b[b.len() - tail..]);
    }
}

#[test]
fn bad_analyses_are_refused_with_what_to_change() {
    let gpu = common::gpu();
    for (spec, says) in [
        (AnalysisSpec { fields: vec![2], pdf_bins: 10, downsample: 0 }, "out of range"),
        (AnalysisSpec { fields: vec![0, 0], pdf_bins: 10, downsample: 0 }, "listed twice"),
        (AnalysisSpec { fields: vec![0], pdf_bins: 100_000, downsample: 0 }, "pdf_bins"),
    ] {
        let err = FrameProducer::with_analysis(gray_scott_2d(&gpu, 8, 8), config(vec![0], 1), OutputDType::F32, &spec)
            .unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
}

/// The results `analysis` records behind no fields, read back.
fn results_of(gpu: &GpuDevice, analysis: &BlockAnalysis, counts: &[Vec<u32>]) -> Vec<u8> {
    common::read_back(gpu, analysis.frame_bytes(), |encoder, staging| {
        analysis.encode_results(encoder, counts, staging, 0).unwrap();
    })
}

/// A grid split into blocks (as over MPI ranks), each analysing its own cells: with the
/// blocks' statistics combined (min of the mins, max of the maxes, sum of the sums) and their
/// counts summed, every block holds the whole grid's reductions: min, max, bin edges and PDF
/// bit for bit the whole grid's analysis, sum and mean to rounding, all of it right against
/// the float64 recomputation. Uneven blocks, two of them side by side on every slice (their
/// counts add up), slices of 130 cells (not whole quads).
#[test]
fn a_split_grids_blocks_combine_into_the_whole_grids_reductions() {
    let gpu = common::gpu();
    let grid = Grid::new(&[12, 10, 13]).unwrap();
    let kernel = gray_scott_3d::GrayScott3dParams { noise: 0.01, ..Default::default() }.kernel(3);
    let init = gray_scott_3d::initial_state(&grid);
    let spec = AnalysisSpec { fields: vec![1, 0], pdf_bins: 16, downsample: 0 };
    let whole = FieldSim::new(&gpu, &kernel, &grid, &init).unwrap();
    let frame =
        frames(FrameProducer::with_analysis(whole, config(vec![0, 1], 1), OutputDType::F32, &spec).unwrap()).remove(0);
    let field_bytes = 2 * grid.cells() * 4;
    let whole_results = &frame[field_bytes..];

    let mut blocks = Vec::new();
    for (oz, nz) in [(0, 5), (5, 7)] {
        for (oy, ny) in [(0, 4), (4, 6)] {
            blocks.push(Block::new(&grid, &[oz, oy, 0], &[nz, ny, 13]).unwrap());
        }
    }
    let mut sims: Vec<BlockSim> =
        blocks.iter().map(|b| BlockSim::new(&gpu, &kernel, b, &b.extract(&init, 2).unwrap()).unwrap()).collect();
    for _ in 0..7 {
        exchange_in_process(&mut sims).unwrap();
        for sim in &mut sims {
            sim.run_step().unwrap();
        }
    }
    let analyses: Vec<BlockAnalysis> = sims.iter().map(|s| BlockAnalysis::new(s, &spec).unwrap()).collect();
    let mut combined = vec![BlockStatistics::NONE; 2];
    for (a, sim) in analyses.iter().zip(&sims) {
        let mine = a.statistics(sim).unwrap();
        for (c, m) in combined.iter_mut().zip(mine) {
            *c = BlockStatistics { min: c.min.min(m.min), max: c.max.max(m.max), sum: c.sum + m.sum };
        }
    }
    let mut counts = vec![vec![0u32; analyses[0].pdf_len()]; 2];
    for a in &analyses {
        a.set_whole(&combined, grid.cells() as u64).unwrap();
        for (total, mine) in counts.iter_mut().zip(a.counts().unwrap()) {
            assert!(mine.iter().any(|&c| c > 0), "a block counted nothing");
            for (t, m) in total.iter_mut().zip(mine) {
                *t += m;
            }
        }
    }
    assert_eq!(counts[0].iter().sum::<u32>() as usize, grid.cells(), "every cell counted once");
    let outputs = spec.outputs(&grid);
    for (b, a) in analyses.iter().enumerate() {
        let got = results_of(&gpu, a, &counts);
        assert_eq!(got.len(), whole_results.len(), "block {b}: results' size");
        let mut at = 0;
        let mut split_frame = frame[..field_bytes].to_vec();
        split_frame.extend_from_slice(&got);
        for o in &outputs {
            let (mine, want) = (&got[at..at + o.bytes()], &whole_results[at..at + o.bytes()]);
            at += o.bytes();
            match o.reduction {
                Reduction::Sum | Reduction::Mean => {}
                r => assert_eq!(mine, want, "block {b}, field {}: {r:?} differs from the whole grid's", o.field),
            }
        }
        check_frame(&format!("block {b}'s results"), &grid, &split_frame, &[0, 1], &spec);
    }
}
