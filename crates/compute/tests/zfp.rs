//! The device's ZFP fixed-rate streams against the zfp C library's, byte for byte: random and
//! Gray-Scott arrays of 1, 2 and 3 dimensions, shapes that are and are not multiples of 4, at
//! rates from 1 to 32 bits per value.
#![expect(unsafe_code, reason = "the reference is the zfp C library, called through zfp-sys")]
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::gpu;
use wgpipe_compute::zfp::{ZfpEncoder, ZfpField, ZfpRate};
use wgpipe_compute::{
    AnalysisSpec, DeviceSelector, FieldEncoding, FieldSim, FrameProducer, GpuDevice, Grid, KernelSpec, OutputDType,
    ReadbackConfig, gray_scott, gray_scott_3d, open_devices,
};

/// zfp's description of the f32 array of `shape` (C order) at `ptr`.
///
/// # Safety
/// `ptr` must hold every cell of `shape` for as long as the field is used.
unsafe fn zfp_field(ptr: *mut std::ffi::c_void, shape: &[usize]) -> *mut zfp_sys::zfp_field {
    use zfp_sys::*;
    let float = zfp_type_zfp_type_float;
    // SAFETY: zfp only records `ptr` and the shape here.
    unsafe {
        match *shape {
            [nx] => zfp_field_1d(ptr, float, nx),
            [ny, nx] => zfp_field_2d(ptr, float, nx, ny),
            [nz, ny, nx] => zfp_field_3d(ptr, float, nx, ny, nz),
            _ => panic!("shape {shape:?}"),
        }
    }
}

/// zfp's own fixed-rate stream of `values` (C order, `shape` slowest axis first), as
/// `zfp_compress` writes it with `zfp_stream_set_rate(rate, float, dims, align = 0)`.
fn zfp_reference(values: &[f32], shape: &[usize], rate: u32) -> Vec<u8> {
    use zfp_sys::*;
    let mut data = values.to_vec();
    let float = zfp_sys::zfp_type_zfp_type_float;
    let ptr = data.as_mut_ptr().cast::<std::ffi::c_void>();
    // SAFETY: `data` outlives the field and the stream, and holds every cell of `shape`;
    // `buffer` holds zfp_stream_maximum_size bytes, all that zfp_compress may write.
    unsafe {
        let field = zfp_field(ptr, shape);
        let zfp = zfp_stream_open(std::ptr::null_mut());
        zfp_stream_set_rate(zfp, f64::from(rate), float, shape.len() as u32, 0);
        let size = zfp_stream_maximum_size(zfp, field);
        let mut buffer = vec![0u8; size];
        let stream = stream_open(buffer.as_mut_ptr().cast(), size);
        zfp_stream_set_bit_stream(zfp, stream);
        zfp_stream_rewind(zfp);
        let written = zfp_compress(zfp, field);
        zfp_field_free(field);
        zfp_stream_close(zfp);
        stream_close(stream);
        assert!(written > 0, "zfp_compress failed for {shape:?} at rate {rate}");
        buffer.truncate(written);
        buffer
    }
}

/// zfp's decoding of a fixed-rate stream of `shape`.
fn zfp_decode(stream: &[u8], shape: &[usize], rate: u32) -> Vec<f32> {
    use zfp_sys::*;
    let mut data = vec![0f32; shape.iter().product()];
    let mut bytes = stream.to_vec();
    let float = zfp_type_zfp_type_float;
    let ptr = data.as_mut_ptr().cast::<std::ffi::c_void>();
    // SAFETY: as in zfp_reference; zfp_decompress writes every cell of `data` and reads at most
    // the stream's bytes.
    unsafe {
        let field = zfp_field(ptr, shape);
        let zfp = zfp_stream_open(std::ptr::null_mut());
        zfp_stream_set_rate(zfp, f64::from(rate), float, shape.len() as u32, 0);
        let stream = stream_open(bytes.as_mut_ptr().cast(), bytes.len());
        zfp_stream_set_bit_stream(zfp, stream);
        zfp_stream_rewind(zfp);
        let read = zfp_decompress(zfp, field);
        zfp_field_free(field);
        zfp_stream_close(zfp);
        stream_close(stream);
        assert!(read > 0, "zfp_decompress failed for {shape:?} at rate {rate}");
    }
    data
}

/// A deterministic generator (xorshift64*), so that every run tests the same arrays.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// In [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Values whose magnitudes span many exponents, from block to block and within blocks, with
/// zeros, negative zeros, subnormals and runs of all-zero cells among them.
fn random_values(cells: usize, seed: u64) -> Vec<f32> {
    let mut random = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    (0..cells)
        .map(|i| {
            let scale = 2f32.powi((random.next() % 60) as i32 - 30);
            match random.next() % 16 {
                0 => 0.0,
                1 => -0.0,
                2 => f32::from_bits((random.next() as u32) & 0x007f_ffff),
                3 if i % 64 < 40 => 0.0,
                _ => random.unit() * scale,
            }
        })
        .collect()
}

fn device_stream(gpu: &GpuDevice, values: &[f32], shape: &[usize], rate: u32) -> Vec<u8> {
    let field = ZfpField::contiguous(Grid::new(shape).unwrap());
    let encoder = ZfpEncoder::new(gpu, shape.len()).unwrap();
    encoder.encode_slice(gpu, field, ZfpRate::new(rate).unwrap(), values).unwrap()
}

/// Asserts the stream `encoder` writes on `gpu` equals zfp's, naming the first differing byte
/// and its block.
fn assert_same_stream(gpu: &GpuDevice, encoder: &ZfpEncoder, values: &[f32], shape: &[usize], rate: u32, what: &str) {
    let field = ZfpField::contiguous(Grid::new(shape).unwrap());
    let device = encoder.encode_slice(gpu, field, ZfpRate::new(rate).unwrap(), values).unwrap();
    let reference = zfp_reference(values, shape, rate);
    assert_eq!(device.len(), reference.len(), "{what} {shape:?} at rate {rate}: stream lengths differ");
    if let Some(at) = device.iter().zip(&reference).position(|(a, b)| a != b) {
        let block_bits = ZfpRate::new(rate).unwrap().block_bits(shape.len()) as usize;
        panic!(
            "{what} {shape:?} at rate {rate}: byte {at} (block {}) is {:#04x}, zfp wrote {:#04x}",
            at * 8 / block_bits,
            device[at],
            reference[at]
        );
    }
}

const SHAPES: [&[usize]; 11] =
    [&[4], &[17], &[1], &[8, 12], &[5, 7], &[1, 3], &[8, 8, 8], &[5, 6, 7], &[9, 4, 3], &[1, 1, 1], &[4, 13, 2]];

#[test]
fn random_arrays_match_zfp_byte_for_byte_at_every_kind_of_rate_on_every_adapter() {
    // In CI: lavapipe through Vulkan and llvmpipe through GL.
    for gpu in open_devices(&DeviceSelector::AllBackends, 1).unwrap() {
        let encoders = [1, 2, 3].map(|rank| ZfpEncoder::new(&gpu, rank).unwrap());
        for (k, shape) in SHAPES.iter().enumerate() {
            let encoder = &encoders[shape.len() - 1];
            let values = random_values(shape.iter().product(), k as u64);
            // Rates whose blocks are and are not whole 32-bit words, and the extremes.
            for rate in [1, 3, 8, 13, 32] {
                let what = format!("random on {}", gpu.label());
                assert_same_stream(&gpu, encoder, &values, shape, rate, &what);
            }
        }
    }
}

#[test]
fn gray_scott_fields_match_zfp_byte_for_byte() {
    let gpu = gpu();
    let grid = Grid::new(&[10, 13, 11]).unwrap();
    let params = gray_scott_3d::GrayScott3dParams::default();
    let state = common::run_gpu(&gpu, &params.kernel(0), &grid, &gray_scott_3d::initial_state(&grid), 30);
    let v = &state[grid.cells()..];
    let encoder = ZfpEncoder::new(&gpu, 3).unwrap();
    for rate in [4, 8, 12, 16] {
        assert_same_stream(&gpu, &encoder, v, grid.shape(), rate, "3-D Gray-Scott v");
    }
    let grid = Grid::new(&[30, 26]).unwrap();
    let params = gray_scott::GrayScottParams::default();
    let state = common::run_gpu(&gpu, &params.kernel(), &grid, &gray_scott::initial_state(30, 26, 0, 0.0), 50);
    let encoder = ZfpEncoder::new(&gpu, 2).unwrap();
    for rate in [4, 8, 16] {
        assert_same_stream(&gpu, &encoder, &state[..grid.cells()], grid.shape(), rate, "2-D Gray-Scott u");
    }
}

#[test]
fn blocks_of_values_below_two_to_the_minus_97_are_written_as_zfp_writes_them() {
    // zfp's scale factor 2^(30 - emax) overflows f32 here; the device must still agree.
    let gpu = gpu();
    let values: Vec<f32> = (0..32).map(|i| if i % 3 == 0 { 0.0 } else { 1e-31 * (i as f32 - 10.0) }).collect();
    let encoder = ZfpEncoder::new(&gpu, 1).unwrap();
    for rate in [4, 16] {
        assert_same_stream(&gpu, &encoder, &values, &[32], rate, "tiny");
    }
}

#[test]
fn blocks_with_an_infinity_or_a_nan_are_written_as_zfp_writes_them_on_x86() {
    // zfp gives them no meaning (its exponent of infinity is frexp's 0, values of 2 and more
    // beside it overflow its integer cast); the bytes must still be its bytes.
    let gpu = gpu();
    let encoder = ZfpEncoder::new(&gpu, 1).unwrap();
    let values = [0.5, f32::INFINITY, 3.0, -1.25, 1.0, f32::NAN, 0.25, 0.0, -f32::INFINITY, 0.1, 7.0, 1.5];
    for rate in [8, 16] {
        assert_same_stream(&gpu, &encoder, &values, &[12], rate, "inf and NaN");
    }
}

#[test]
fn a_strided_field_encodes_as_its_cells_alone() {
    // A 5×6×7 field inside a buffer with one ghost cell on every side.
    let gpu = gpu();
    let (nz, ny, nx) = (5, 6, 7);
    let cells = random_values(nz * ny * nx, 7);
    let (pz, py, px) = (nz + 2, ny + 2, nx + 2);
    let mut padded = vec![f32::MAX; pz * py * px];
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                padded[((z + 1) * py + y + 1) * px + x + 1] = cells[(z * ny + y) * nx + x];
            }
        }
    }
    let grid = Grid::new(&[nz, ny, nx]).unwrap();
    let field = ZfpField::strided(grid, [py * px, px, 1], py * px + px + 1);
    let encoder = ZfpEncoder::new(&gpu, 3).unwrap();
    let stream = encoder.encode_slice(&gpu, field, ZfpRate::new(8).unwrap(), &padded).unwrap();
    assert_eq!(stream, zfp_reference(&cells, &[nz, ny, nx], 8));
}

#[test]
fn a_blocks_streams_are_zfps_of_its_own_cells_without_its_axes_of_1() {
    // A rank's block of a split 3-D grid, encoded among its ghost layers after a few steps:
    // each stored field's stream is zfp's of the block's cells (read back as values), coded
    // as the block's shape without axes of 1, as the Zarr chunk of the block holds it.
    let gpu = gpu();
    let grid = Grid::new(&[12, 10, 9]).unwrap();
    let init = gray_scott_3d::initial_state(&grid);
    let kernel = gray_scott_3d::GrayScott3dParams { noise: 0.0, ..Default::default() }.kernel(0);
    for (offset, shape, rate) in [([2, 3, 1], [5, 6, 7], 8), ([4, 0, 0], [1, 10, 9], 5), ([0, 2, 3], [12, 1, 1], 13)] {
        let block = wgpipe_compute::Block::new(&grid, &offset, &shape).unwrap();
        let sim = wgpipe_compute::BlockSim::new(&gpu, &kernel, &block, &block.extract(&init, 2).unwrap()).unwrap();
        let mut sim = sim.with_zfp(&[1, 0], ZfpRate::new(rate).unwrap()).unwrap();
        // Odd steps leave the state on the other side of the ping-pong pair.
        for _ in 0..3 {
            sim.run_step().unwrap();
        }
        let coded: Vec<usize> = shape.iter().copied().filter(|&n| n > 1).collect();
        let stream_bytes = sim.zfp_stream_bytes().unwrap();
        assert_eq!(stream_bytes, zfp_reference(&vec![0.0; shape.iter().product()], &coded, rate).len() as u64);
        let streams = common::read_back(&gpu, 2 * stream_bytes, |encoder, staging| {
            sim.encode_block_streams(encoder, staging).unwrap();
        });
        let (v, u) = (sim.read_block(&[1]).unwrap(), sim.read_block(&[0]).unwrap());
        let cells = shape.iter().product::<usize>();
        assert!(v.len() == cells && v.iter().any(|&x| x != v[0]), "block {shape:?} holds a field that varies");
        let at = stream_bytes as usize;
        assert_eq!(streams[..at], zfp_reference(&v, &coded, rate)[..], "v of block {shape:?}");
        assert_eq!(streams[at..], zfp_reference(&u, &coded, rate)[..], "u of block {shape:?}");
    }
    let block = wgpipe_compute::Block::new(&grid, &[0, 0, 0], &[6, 10, 9]).unwrap();
    let plain = wgpipe_compute::BlockSim::new(&gpu, &kernel, &block, &block.extract(&init, 2).unwrap()).unwrap();
    let mut message = None;
    common::read_back(&gpu, 8, |encoder, staging| {
        message = plain.encode_block_streams(encoder, staging).err().map(|e| e.to_string());
    });
    assert!(message.is_some_and(|m| m.contains("with_zfp")));
}

#[test]
fn the_stream_decodes_within_fixed_rates_error_and_its_size_is_the_rate() {
    let gpu = gpu();
    let shape = [16, 16, 16];
    let values: Vec<f32> = (0..4096).map(|i| ((i % 16) as f32 * 0.3).sin() + ((i / 256) as f32 * 0.2).cos()).collect();
    let mut errors = Vec::new();
    for rate in [4, 8, 16] {
        let stream = device_stream(&gpu, &values, &shape, rate);
        assert_eq!(stream.len(), 4096 * rate as usize / 8, "rate {rate}: R bits per value");
        let decoded = zfp_decode(&stream, &shape, rate);
        errors.push(common::max_abs_diff(&values, &decoded));
    }
    // More bits, less error; at 16 bits per value a smooth field is close.
    assert!(errors[0] > errors[1] && errors[1] > errors[2], "errors {errors:?}");
    assert!(errors[2] < 1e-3, "errors {errors:?}");
}

#[test]
fn a_field_of_another_rank_or_too_small_a_buffer_is_refused() {
    let gpu = gpu();
    let encoder = ZfpEncoder::new(&gpu, 2).unwrap();
    let rate = ZfpRate::new(8).unwrap();
    let cube = ZfpField::contiguous(Grid::new(&[4, 4, 4]).unwrap());
    let message = encoder.encode_slice(&gpu, cube, rate, &[0.0; 64]).unwrap_err().to_string();
    assert!(message.contains("4×4×4") && message.contains("2-dimensional"), "{message}");
    let square = ZfpField::contiguous(Grid::new(&[8, 8]).unwrap());
    let message = encoder.encode_slice(&gpu, square, rate, &[0.0; 60]).unwrap_err().to_string();
    assert!(message.contains("60 values given") && message.contains("needs 64"), "{message}");
    assert!(ZfpEncoder::new(&gpu, 4).unwrap_err().to_string().contains("1, 2 or 3"));
}

#[test]
fn rates_outside_1_to_32_are_refused_naming_the_range() {
    for bad in [0, 33, 64] {
        let message = ZfpRate::new(bad).unwrap_err().to_string();
        assert!(message.contains(&format!("ZFP rate {bad}")) && message.contains("1 to 32"), "{message}");
    }
}

/// Every frame of `spec` on `grid`, as f32 and as ZFP streams at `rate` from a second producer
/// started from the same state.
fn frames_both_ways(
    gpu: &GpuDevice,
    spec: &KernelSpec,
    grid: &Grid,
    init: &[f32],
    rate: u32,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let config =
        ReadbackConfig { steps_per_frame: 5, frames: 3, staging_buffers: 2, fields: vec![0, 1], work_ahead: true };
    let producer = |encoding: FieldEncoding| {
        let sim = FieldSim::new(gpu, spec, grid, init).unwrap();
        FrameProducer::with_analysis(sim, config.clone(), encoding, &AnalysisSpec::default()).unwrap()
    };
    let mut plain = producer(FieldEncoding::Values(OutputDType::F32));
    let mut zfp = producer(FieldEncoding::Zfp(ZfpRate::new(rate).unwrap()));
    let (mut a, mut b) = (vec![0u8; plain.frame_bytes()], vec![0u8; zfp.frame_bytes()]);
    let mut frames = Vec::new();
    while let Some(info) = plain.next_into(&mut a).unwrap() {
        assert_eq!(zfp.next_into(&mut b).unwrap().map(|i| i.step), Some(info.step));
        frames.push((a.clone(), b.clone()));
    }
    assert_eq!(frames.len(), 3);
    frames
}

#[test]
fn a_producer_reads_back_each_field_as_zfps_stream_of_its_values() {
    let gpu = gpu();
    // A 3-D grid with an axis of 1 is encoded as H5Z-ZFP encodes such a chunk: as 2-D.
    let cases = [(Grid::new(&[1, 22, 19]).unwrap(), vec![22, 19]), (Grid::new(&[9, 8, 7]).unwrap(), vec![9, 8, 7])];
    for (grid, squeezed) in cases {
        let params = gray_scott_3d::GrayScott3dParams::default();
        let init = gray_scott_3d::initial_state(&grid);
        for (plain, zfp) in frames_both_ways(&gpu, &params.kernel(0), &grid, &init, 6) {
            let values: &[f32] = bytemuck::cast_slice(&plain);
            let fields: Vec<u8> =
                values.chunks(grid.cells()).flat_map(|field| zfp_reference(field, &squeezed, 6)).collect();
            assert_eq!(zfp, fields, "{grid}");
        }
    }
}
