//! Fields encoded before the sink (`Encoding::Zfp`) and `zfp:rate=R`: a stream's size is
//! zfp's (blocks at the rate, axes of 1 left out, padded as zfp_compress and H5Z-ZFP pad), the
//! compression parses and prints as configs write it, and sinks that store values refuse
//! encoded fields, naming what to do; the reader's decoder gives what `zfp_decompress` gives,
//! bit for bit, and the raw sink stores encoded fields that `open_output` reads as values.
//! (The HDF5 sink storing them: the runner's tests/zfp_device.rs, against H5Z-ZFP's own
//! chunks.)
#![cfg(feature = "hdf5")]
#![expect(unsafe_code, reason = "the reference is the zfp C library, called through zfp-sys")]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use wgpipe_storage::{
    Compression, DType, Encoding, FieldSpec, SinkOptions, StreamInfo, StreamLayout, ZfpRate, open_sink,
};

fn rate(bits: u32) -> ZfpRate {
    ZfpRate::new(bits).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_streams_size_is_its_blocks_at_the_rate_with_axes_of_1_left_out() {
    // 3-D: 64 bits a block per bit of rate; 5 × 6 × 7 is 2 × 2 × 2 blocks.
    assert_eq!(rate(8).stream_bits(&[5, 6, 7]), Some(8 * 512));
    // A 1 × 64 × 64 frame is coded as 64 × 64 (2-D blocks of 16 values).
    assert_eq!(rate(3).stream_bits(&[1, 64, 64]), Some(16 * 16 * 48));
    // zfp_compress pads to 64-bit words, H5Z-ZFP's chunks to bytes.
    assert_eq!(rate(3).stream_bytes(&[1, 5]), Some(8));
    assert_eq!(rate(3).chunk_bytes(&[1, 5]), Some(3));
    // At least the 9 bits of a block's exponent.
    assert_eq!(rate(1).stream_bits(&[4]), Some(9));
    assert!(ZfpRate::new(0).is_err() && ZfpRate::new(33).is_err());
}

#[test]
fn zfp_rate_parses_and_prints_as_configs_write_it() {
    assert_eq!("zfp:rate=8".parse::<Compression>().ok(), Some(Compression::ZfpRate(rate(8))));
    assert_eq!(Compression::ZfpRate(rate(12)).to_string(), "zfp:rate=12");
    for bad in ["zfp:rate=0", "zfp:rate=33", "zfp:rate=x", "zfp:rate=2.5"] {
        let message = bad.parse::<Compression>().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("1 to 32"), "{bad}: {message}");
    }
}

#[test]
fn an_encoded_field_has_its_streams_bytes_and_sinks_of_values_refuse_it() {
    let field = FieldSpec::new("v", DType::F32, [5, 6, 7]).with_encoding(Encoding::Zfp(rate(8)));
    assert_eq!(field.bytes(), Some(512));
    let layout = StreamLayout::new(vec![field]).with_stream(StreamInfo::new("s"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // (The HDF5 2.x group builds neither the ADIOS2 sink nor Zarr's ZFP codec.)
    if cfg!(feature = "adios2") {
        let options = SinkOptions::new(dir.path().join("out.bp"));
        let mut adios2 = open_sink("adios2", &options).unwrap_or_else(|e| panic!("{e}"));
        let message = adios2.begin(&layout).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("adios2 sink cannot store") && message.contains("\"host\""), "{message}");
    }
    // The zarr sink stores a frame's stream as its chunk, never inside a shard; a build
    // without its ZFP codec refuses them, naming the feature.
    let sharded = SinkOptions::new(dir.path().join("out.zarr")).with_shard_frames(2);
    let mut zarr = open_sink("zarr", &sharded).unwrap_or_else(|e| panic!("{e}"));
    let message = zarr.begin(&layout).err().map(|e| e.to_string()).unwrap_or_default();
    let why = if cfg!(feature = "zarr-zfp") { "in shards (shard_frames = 2)" } else { "`zarr-zfp` cargo feature" };
    assert!(message.contains(why) && message.contains("\"host\""), "{message}");
    let ints = FieldSpec::new("n", DType::U32, [8]).with_encoding(Encoding::Zfp(rate(8)));
    let layout = StreamLayout::new(vec![ints]).with_stream(StreamInfo::new("s"));
    let mut null = open_sink("null", &SinkOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let message = null.begin(&layout).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("f32 values only"), "{message}");
}

/// zfp's fixed-rate stream of `values` (`shape` C order) and zfp's decoding of it.
fn zfp_round_trip(values: &[f32], shape: &[usize], bits: u32) -> (Vec<u8>, Vec<f32>) {
    zfp_stream_and_decoding(values, shape, bits, false)
}

/// [`zfp_round_trip`], the stream after zfp's full header (`zfp_write_header`) when `header`:
/// what numcodecs' zfpy codec stores.
fn zfp_stream_and_decoding(values: &[f32], shape: &[usize], bits: u32, header: bool) -> (Vec<u8>, Vec<f32>) {
    use zfp_sys::*;
    let mut data = values.to_vec();
    let float = zfp_type_zfp_type_float;
    let coded = ZfpRate::coded_shape(shape);
    // SAFETY: `data` and `buffer` outlive the field and the stream and hold what zfp reads and
    // writes (zfp_stream_maximum_size bytes); the field's shape is `data`'s.
    unsafe {
        let field = |ptr: *mut std::ffi::c_void| match coded[..] {
            [nx] => zfp_field_1d(ptr, float, nx),
            [ny, nx] => zfp_field_2d(ptr, float, nx, ny),
            [nz, ny, nx] => zfp_field_3d(ptr, float, nx, ny, nz),
            _ => panic!("shape {shape:?}"),
        };
        let f = field(data.as_mut_ptr().cast());
        let zfp = zfp_stream_open(std::ptr::null_mut());
        zfp_stream_set_rate(zfp, f64::from(bits), float, coded.len() as u32, 0);
        let size = zfp_stream_maximum_size(zfp, f);
        let mut buffer = vec![0u8; size];
        let stream = stream_open(buffer.as_mut_ptr().cast(), size);
        zfp_stream_set_bit_stream(zfp, stream);
        zfp_stream_rewind(zfp);
        if header {
            assert!(zfp_write_header(zfp, f, ZFP_HEADER_FULL) > 0);
        }
        let written = zfp_compress(zfp, f);
        assert!(written > 0);
        buffer.truncate(written);
        let mut decoded = vec![0f32; data.len()];
        let g = field(decoded.as_mut_ptr().cast());
        zfp_stream_rewind(zfp);
        if header {
            assert!(zfp_read_header(zfp, g, ZFP_HEADER_FULL) > 0);
        }
        assert!(zfp_decompress(zfp, g) > 0);
        zfp_field_free(f);
        zfp_field_free(g);
        zfp_stream_close(zfp);
        stream_close(stream);
        (buffer, decoded)
    }
}

/// Values over many binades, with zeros, negative zeros and subnormals (deterministic).
fn values(cells: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..cells)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 13 {
                0 => 0.0,
                1 => -0.0,
                2 => f32::from_bits((x >> 20) as u32 & 0x007f_ffff),
                3 if i % 64 < 32 => 0.0,
                _ => ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 2f32.powi((x % 40) as i32 - 20),
            }
        })
        .collect()
}

#[test]
fn the_readers_decoder_gives_zfp_decompress_bit_for_bit() {
    let shapes: [&[usize]; 8] = [&[5], &[16], &[7, 9], &[8, 8], &[1, 13, 6], &[5, 6, 7], &[4, 4, 4], &[9, 1, 10]];
    for (k, shape) in shapes.iter().enumerate() {
        let v = values(shape.iter().product(), k as u64 + 1);
        for bits in [1, 3, 8, 13, 32] {
            let (stream, want) = zfp_round_trip(&v, shape, bits);
            let got = rate(bits).decode(&stream, shape).unwrap();
            let bitwise = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bitwise(&got), bitwise(&want), "{shape:?} at rate {bits}");
            // A 3-D array's planes, each from its own blocks only.
            if let [nz, ny, nx] = ZfpRate::coded_shape(shape)[..] {
                for z in 0..nz {
                    let plane = rate(bits).decode_plane(&stream, shape, z).unwrap();
                    assert_eq!(bitwise(&plane), bitwise(&want[z * ny * nx..(z + 1) * ny * nx]), "{shape:?} plane {z}");
                }
                assert!(rate(bits).decode_plane(&stream, shape, nz).is_none());
            }
        }
    }
}

/// A `kind` sink writing `out`, begun on one stream of 2 frames of the encoded `field` and a
/// field `n` of three counts (frames: [`with_counts`]).
fn begun_beside_counts(kind: &str, out: &std::path::Path, field: FieldSpec) -> Box<dyn wgpipe_storage::Sink> {
    let n = FieldSpec::new("n", DType::U32, [3]);
    let layout = StreamLayout::new(vec![field, n]).with_stream(StreamInfo::new("s").with_expected_frames(2));
    let mut sink = open_sink(kind, &SinkOptions::new(out)).unwrap();
    sink.begin(&layout).unwrap();
    sink
}

/// Frame `i` of [`begun_beside_counts`]'s stream: `stream`, then the counts 1, 2, 3.
fn with_counts(i: u64, mut stream: Vec<u8>) -> wgpipe_storage::Frame {
    stream.extend([1u32, 2, 3].iter().flat_map(|x| x.to_le_bytes()));
    wgpipe_storage::Frame::new(0, i, 10 * i, stream)
}

#[test]
fn the_raw_sink_stores_encoded_fields_and_the_reader_decodes_them() {
    let shape = [6, 10, 9];
    let field = FieldSpec::new("v", DType::F32, shape).with_encoding(Encoding::Zfp(rate(8)));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut sink = begun_beside_counts("raw", &out, field);
    let mut want = Vec::new();
    for i in 0..2u64 {
        let (stream, decoded) = zfp_round_trip(&values(540, 40 + i), &shape, 8);
        // zfp_compress's stream is the field's bytes: whole 64-bit words.
        assert_eq!(stream.len() as u64, rate(8).stream_bytes(&shape).unwrap());
        sink.write(&with_counts(i, stream)).unwrap();
        want.push(decoded);
    }
    sink.finish().unwrap();
    let output = wgpipe_storage::open_output(&out).unwrap();
    assert_eq!(output.fields()[0].encoding, Encoding::Values, "the reader gives values");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&output.read_f32(0, 0, i as u64).unwrap(), w);
    }
    assert_eq!(output.read_field(0, 1, 1).unwrap().to_f64(), [1.0, 2.0, 3.0]);
}

#[test]
#[cfg(feature = "zarr-zfp")]
fn the_zarr_sink_stores_encoded_fields_as_the_zfpy_chunks_zfp_writes() {
    let shapes: [&[usize]; 5] = [&[5, 6, 7], &[4, 8, 12], &[1, 13, 6], &[9, 10], &[21]];
    for (k, shape) in shapes.iter().enumerate() {
        for bits in [1, 8, 13, 32] {
            let field = FieldSpec::new("v", DType::F32, shape.to_vec()).with_encoding(Encoding::Zfp(rate(bits)));
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out.zarr");
            let mut sink = begun_beside_counts("zarr", &out, field);
            let mut want = Vec::new();
            for i in 0..2u64 {
                let v = values(shape.iter().product(), 100 * k as u64 + i);
                let (stream, decoded) = zfp_round_trip(&v, shape, bits);
                let (chunk, _) = zfp_stream_and_decoding(&v, shape, bits, true);
                // The chunk zfpy would write: zfp's header, then the same blocks.
                assert_eq!(rate(bits).zfpy_chunk(&stream, shape).as_ref(), Some(&chunk), "{shape:?} at rate {bits}");
                sink.write(&with_counts(i, stream)).unwrap();
                want.push((chunk, decoded));
            }
            sink.finish().unwrap();
            let output = wgpipe_storage::open_output(&out).unwrap();
            assert_eq!(output.fields()[0].encoding, Encoding::Values, "the reader gives values");
            assert_eq!(output.stored_encoding(0), Encoding::Zfp(rate(bits)));
            assert_eq!(output.stored_encoding(1), Encoding::Values);
            for (i, (chunk, decoded)) in want.iter().enumerate() {
                // zarrs decodes it through the array's `numcodecs.zfpy` codec, as zfp does.
                let bitwise = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bitwise(&output.read_f32(0, 0, i as u64).unwrap()), bitwise(decoded), "{shape:?}");
                let key =
                    std::iter::once(i.to_string()).chain(shape.iter().map(|_| "0".to_owned())).collect::<Vec<_>>();
                let file = out.join("s/v/c").join(key.join("/"));
                assert_eq!(&std::fs::read(&file).unwrap(), chunk, "{}", file.display());
            }
            assert_eq!(output.read_field(0, 1, 1).unwrap().to_f64(), [1.0, 2.0, 3.0]);
        }
    }
}

#[test]
fn an_output_continues_only_with_the_encoding_it_was_written_with() {
    // One frame of three stored as values; a continuation that brings ZFP streams (or the
    // reverse) would leave frames no reader decodes: refused, naming what to change.
    let shape = [8, 8];
    let values = FieldSpec::new("v", DType::F32, shape);
    let encoded = values.clone().with_encoding(Encoding::Zfp(rate(8)));
    let stream = |kept| StreamInfo::new("s").with_expected_frames(3).with_kept_frames(kept);
    for kind in ["hdf5", "raw", "zarr"] {
        for (first, then) in [(&values, &encoded), (&encoded, &values)] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out");
            let mut sink = open_sink(kind, &SinkOptions::new(&out)).unwrap();
            sink.begin(&StreamLayout::new(vec![first.clone()]).with_stream(stream(0))).unwrap();
            let bytes = first.bytes().unwrap();
            sink.write(&wgpipe_storage::Frame::new(0, 0, 1, vec![0u8; bytes])).unwrap();
            drop(sink);
            let mut again = open_sink(kind, &SinkOptions::new(&out).with_append(true)).unwrap();
            let message = again
                .begin(&StreamLayout::new(vec![then.clone()]).with_stream(stream(1)))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.contains("continue it with the compression it was written with"), "{kind}: {message}");
        }
    }
}
