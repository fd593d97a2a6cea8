//! Deflate output written with direct chunk writes and several compression threads reads
//! back, through h5py and HDF5's own filters, bit-identical to what was written, and the
//! stored chunks do not depend on the number of threads.
//!
//! Needs a python3 with h5py and numpy (see `common::python`); without one the test fails
//! saying what to install.

#![cfg(feature = "hdf5")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::process::Command;

use common::{field_data, python, tempdir};
use serde_json::Value;
use wgpipe_storage::{Compression, DType, FieldSpec, Frame, Sink, SinkOptions, StreamInfo, StreamLayout, open_sink};

/// Frames per stream: with 3 frames per chunk (compressed by HDF5 itself, which the thread
/// count must not change), one full chunk and one partial one.
const FRAMES: u64 = 5;

/// Element sizes 1, 2, 4 and 8 (the shuffle differs for each), a field over the 4 MiB
/// chunk target whose frame is cut into two parts, the second one padded, and a field of
/// zeros but for a small square ([`flat`], like a simulation's early frames: long runs).
fn layout() -> StreamLayout {
    StreamLayout::new(vec![
        FieldSpec::new("img", DType::U8, [6, 10]),
        FieldSpec::new("h", DType::F16, [3, 5]),
        FieldSpec::new("u", DType::F32, [40, 24]),
        FieldSpec::new("pos", DType::F64, [7, 3]),
        FieldSpec::new("big", DType::F32, [3, 625, 600]),
        FieldSpec::new("flat", DType::F32, [256, 256]),
    ])
    .with_stream(StreamInfo::new("s0"))
    .with_stream(StreamInfo::new("s1"))
}

/// Frame `index` of the field `flat`, smooth like the default Gray-Scott run's `v`: about
/// 4.7e-4 varying slowly, a square of about 0.3, a little noise. Its shuffled exponent bytes
/// compress well, and zlib-rs's level 1 ("quick") turned such pieces, primed with the bytes
/// before them, into streams that zlib (HDF5's) refused ("invalid distance code").
fn flat(index: u64) -> Vec<u8> {
    (0..256 * 256usize)
        .flat_map(|k| {
            let (i, j) = ((k / 256) as f32, (k % 256) as f32);
            let h = (k as u64 ^ index.wrapping_mul(0x9E37_79B9)).wrapping_mul(0x2545_F491_4F6C_DD1D);
            let noise = (h >> 40) as f32 / (1u64 << 24) as f32 * 1e-5;
            let v = if (i - 128.0).abs() < 20.0 && (j - 128.0).abs() < 20.0 {
                0.3 + 0.003 * (i / 3.0).sin()
            } else {
                4.7e-4 * (1.0 + 0.4 * (i / 7.0).sin() * (j / 5.0).cos()) + noise
            };
            (v + index as f32 * 1e-6).to_le_bytes()
        })
        .collect()
}

/// Writes `FRAMES` frames per stream with deflate at `level` and returns h5py's report.
fn write_and_read(dir: &Path, threads: usize, chunk_frames: usize, level: u8) -> Value {
    let layout = layout();
    let (h5, expected) = (dir.join(format!("t{threads}-c{chunk_frames}-l{level}.h5")), dir.join("expected"));
    std::fs::create_dir_all(&expected).unwrap();
    let options = SinkOptions::new(&h5)
        .with_compression(Compression::Deflate(level))
        .with_chunk_frames(chunk_frames)
        .with_compression_threads(threads);
    let mut sink = open_sink("hdf5", &options).unwrap();
    sink.begin(&layout).unwrap();
    for i in 0..FRAMES {
        for (s, info) in layout.streams.iter().enumerate() {
            let mut data = Vec::new();
            for (f, spec) in layout.fields.iter().enumerate() {
                let bytes = if spec.name == "flat" { flat(i) } else { field_data(&layout, s, f, i) };
                std::fs::write(expected.join(format!("{}.{}.{i}.bin", info.name, spec.name)), &bytes).unwrap();
                data.extend(bytes);
            }
            sink.write(&Frame::new(s, i, i, data)).unwrap();
        }
    }
    sink.finish().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_compressed.py");
    let out = Command::new(python()).arg(script).arg(&h5).arg(&expected).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Levels 1 (zlib-rs compresses it with another algorithm, "quick", whose pieced streams
/// the system zlib that HDF5 uses refused) and 6 (the default).
#[test]
fn h5py_reads_deflate_chunks_from_one_and_several_threads_bit_identical() {
    let dir = tempdir();
    let layout = layout();
    for (chunk_frames, level) in [(1usize, 1u8), (1, 6), (3, 1), (3, 6)] {
        let one = write_and_read(dir.path(), 1, chunk_frames, level);
        let three = write_and_read(dir.path(), 3, chunk_frames, level);
        for s in ["s0", "s1"] {
            for f in &layout.fields {
                let key = format!("{s}/{}", f.name);
                let what = format!("{key}, {chunk_frames} frames per chunk, deflate:{level}");
                for report in [&one, &three] {
                    let ds = &report[&key];
                    assert_eq!(ds["compression"], "gzip", "{what}");
                    assert_eq!(ds["compression_opts"], level, "{what}");
                    assert_eq!(ds["shuffle"], true, "{what}");
                    let equal = ds["frames_equal"].as_array().unwrap();
                    assert_eq!(equal.len(), FRAMES as usize, "{what}");
                    assert!(equal.iter().all(|e| e == true), "{what}: frames differ: {equal:?}");
                    // Every chunk went through the whole pipeline (filter mask 0).
                    let parts = if f.name == "big" { 2 } else { 1 };
                    let masks: Vec<u64> =
                        ds["filter_masks"].as_array().unwrap().iter().map(|m| m.as_u64().unwrap()).collect();
                    let chunks = FRAMES.div_ceil(chunk_frames as u64) as usize * parts;
                    assert_eq!(masks, vec![0; chunks], "{what}");
                }
                assert_eq!(one[&key]["chunk_sha256"], three[&key]["chunk_sha256"], "{what}: 1 vs 3 threads");
            }
        }
    }
}

/// Writes frames 0 to `FRAMES` - 1 of every stream of `layout` (`field_data`, step
/// 10 (i + 1) + stream), then finishes.
#[cfg(feature = "blosc")]
fn write_frames(sink: &mut dyn Sink, layout: &StreamLayout) {
    for i in 0..FRAMES {
        for s in 0..layout.streams.len() {
            let data = (0..layout.fields.len()).flat_map(|f| field_data(layout, s, f, i)).collect();
            sink.write(&Frame::new(s, i, 10 * (i + 1) + s as u64, data)).unwrap();
        }
    }
    sink.finish().unwrap();
}

/// c-blosc's thread pool is one per process: the blosc tests take turns.
#[cfg(feature = "blosc")]
static BLOSC_POOL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Blosc compresses a chunk's blocks on c-blosc's own pool, sized by `compression_threads`:
/// the data reads back bit-identical (through wgpipe's reader, which has the blosc filter;
/// h5py would need the hdf5plugin package) with 1 and with 3 threads, and the pool has the
/// size the sink was given.
#[cfg(feature = "blosc")]
#[test]
fn blosc_compresses_on_as_many_threads_as_asked_and_reads_back() {
    let _pool = BLOSC_POOL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempdir();
    let layout = layout();
    for threads in [3usize, 1] {
        let h5 = dir.path().join(format!("blosc-t{threads}.h5"));
        let options =
            SinkOptions::new(&h5).with_compression(Compression::BloscZstd(5)).with_compression_threads(threads);
        let mut sink = open_sink("hdf5", &options).unwrap();
        sink.begin(&layout).unwrap();
        assert_eq!(hdf5::filters::blosc_get_nthreads() as usize, threads, "c-blosc's pool after begin");
        write_frames(sink.as_mut(), &layout);
        let out = wgpipe_storage::open_output(&h5).unwrap();
        common::assert_holds(&out, &layout, &[FRAMES, FRAMES], &format!("blosc-zstd:5, {threads} threads"));
    }
}

/// Blosc at one frame per chunk, streams of known lengths: every chunk is made at `begin`
/// (the datasets have their full extents before the first frame: a frame then changes one
/// index entry in place, see `preallocate`), and a run that stops early is cut to its frames,
/// which read back bit-identical.
#[cfg(feature = "blosc")]
#[test]
fn blosc_of_known_lengths_is_laid_out_at_begin_and_cut_to_its_frames() {
    let _pool = BLOSC_POOL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempdir();
    let mut layout = layout();
    for s in &mut layout.streams {
        s.expected_frames = Some(2 * FRAMES);
    }
    let h5 = dir.path().join("blosc-known.h5");
    let mut sink = open_sink("hdf5", &SinkOptions::new(&h5).with_compression(Compression::BloscLz4(5))).unwrap();
    sink.begin(&layout).unwrap();
    // The same process opening the file sees the sink's open file, flushed at `begin`.
    let extents: Vec<usize> = {
        let f = hdf5::File::open(&h5).unwrap();
        ["s0/u", "s1/flat", "s0/steps"].iter().map(|d| f.dataset(d).unwrap().shape()[0]).collect()
    };
    assert_eq!(extents, [2 * FRAMES as usize; 3], "datasets at begin");
    write_frames(sink.as_mut(), &layout);
    let out = wgpipe_storage::open_output(&h5).unwrap();
    common::assert_holds(&out, &layout, &[FRAMES, FRAMES], "blosc-lz4:5 of known lengths");
    let f = hdf5::File::open(&h5).unwrap();
    assert_eq!(f.dataset("s0/u").unwrap().shape()[0], FRAMES as usize, "cut to the frames written");
}
