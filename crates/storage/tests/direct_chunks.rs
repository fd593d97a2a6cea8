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
use wgpipe_storage::{Compression, DType, FieldSpec, Frame, SinkOptions, StreamInfo, StreamLayout, open_sink};

/// Frames per stream: with 3 frames per chunk (compressed by HDF5 itself, which the thread
/// count must not change), one full chunk and one partial one.
const FRAMES: u64 = 5;

/// Element sizes 1, 2, 4 and 8 (the shuffle differs for each), and a field over the 4 MiB
/// chunk target whose frame is cut into two parts, the second one padded.
fn layout() -> StreamLayout {
    StreamLayout::new(vec![
        FieldSpec::new("img", DType::U8, [6, 10]),
        FieldSpec::new("h", DType::F16, [3, 5]),
        FieldSpec::new("u", DType::F32, [40, 24]),
        FieldSpec::new("pos", DType::F64, [7, 3]),
        FieldSpec::new("big", DType::F32, [3, 625, 600]),
    ])
    .with_stream(StreamInfo::new("s0"))
    .with_stream(StreamInfo::new("s1"))
}

/// Writes `FRAMES` frames per stream with deflate:6 and returns h5py's report.
fn write_and_read(dir: &Path, threads: usize, chunk_frames: usize) -> Value {
    let layout = layout();
    let (h5, expected) = (dir.join(format!("t{threads}-c{chunk_frames}.h5")), dir.join("expected"));
    std::fs::create_dir_all(&expected).unwrap();
    let options = SinkOptions::new(&h5)
        .with_compression(Compression::Deflate(6))
        .with_chunk_frames(chunk_frames)
        .with_compression_threads(threads);
    let mut sink = open_sink("hdf5", &options).unwrap();
    sink.begin(&layout).unwrap();
    for i in 0..FRAMES {
        for (s, info) in layout.streams.iter().enumerate() {
            let mut data = Vec::new();
            for (f, spec) in layout.fields.iter().enumerate() {
                let bytes = field_data(&layout, s, f, i);
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

#[test]
fn h5py_reads_deflate_chunks_from_one_and_several_threads_bit_identical() {
    let dir = tempdir();
    let layout = layout();
    for chunk_frames in [1usize, 3] {
        let one = write_and_read(dir.path(), 1, chunk_frames);
        let three = write_and_read(dir.path(), 3, chunk_frames);
        for s in ["s0", "s1"] {
            for f in &layout.fields {
                let key = format!("{s}/{}", f.name);
                let what = format!("{key}, {chunk_frames} frames per chunk");
                for report in [&one, &three] {
                    let ds = &report[&key];
                    assert_eq!(ds["compression"], "gzip", "{what}");
                    assert_eq!(ds["compression_opts"], 6, "{what}");
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

/// Blosc compresses a chunk's blocks on c-blosc's own pool, sized by `compression_threads`:
/// the data reads back bit-identical (through wgpipe's reader, which has the blosc filter;
/// h5py would need the hdf5plugin package) with 1 and with 3 threads, and the pool has the
/// size the sink was given.
#[cfg(feature = "blosc")]
#[test]
fn blosc_compresses_on_as_many_threads_as_asked_and_reads_back() {
    let dir = tempdir();
    let layout = layout();
    for threads in [3usize, 1] {
        let h5 = dir.path().join(format!("blosc-t{threads}.h5"));
        let options =
            SinkOptions::new(&h5).with_compression(Compression::BloscZstd(5)).with_compression_threads(threads);
        let mut sink = open_sink("hdf5", &options).unwrap();
        sink.begin(&layout).unwrap();
        assert_eq!(hdf5::filters::blosc_get_nthreads() as usize, threads, "c-blosc's pool after begin");
        for i in 0..FRAMES {
            for s in 0..layout.streams.len() {
                let data = (0..layout.fields.len()).flat_map(|f| field_data(&layout, s, f, i)).collect();
                sink.write(&Frame::new(s, i, 10 * (i + 1) + s as u64, data)).unwrap();
            }
        }
        sink.finish().unwrap();
        let out = wgpipe_storage::open_output(&h5).unwrap();
        common::assert_holds(&out, &layout, &[FRAMES, FRAMES], &format!("blosc-zstd:5, {threads} threads"));
    }
}
