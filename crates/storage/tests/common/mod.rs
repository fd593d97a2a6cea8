//! Shared test helpers: a small two-stream layout of mixed element types and ranks,
//! deterministic frame data, and the list of sinks and option sets every suite runs against.

#![allow(dead_code, reason = "each test binary uses a different part of the helpers")]

/// Which Python checks outputs from outside Rust: one rule for every crate's tests.
#[path = "../../../runner/tests/common/python.rs"]
pub mod python_choice;

use std::path::{Path, PathBuf};

use wgpipe_storage::{
    Compression, DType, FieldSpec, Frame, Output, Sink, SinkOptions, SinkSummary, StreamInfo, StreamLayout,
    open_output, open_sink,
};

/// Rows and columns of the 2-D test field (not square, to catch transposed shapes).
pub const ROWS: usize = 8;
pub const COLS: usize = 16;

/// The fields of the test layout: a 2-D `f32`, a 1-D `u8` and a 3-D `f16`.
pub fn fields() -> Vec<FieldSpec> {
    vec![
        FieldSpec::new("u", DType::F32, [ROWS, COLS]),
        FieldSpec::new("mask", DType::U8, [COLS]),
        FieldSpec::new("v", DType::F16, [2, ROWS / 2, COLS / 2]),
    ]
}

/// The test fields, two streams with attributes, run attributes of every kind.
pub fn layout(expected: Option<u64>) -> StreamLayout {
    let mut a = StreamInfo::new("dev0").with_attribute("du", 0.16).with_attribute("seed", 7_i64);
    let mut b = StreamInfo::new("dev-1.b").with_attribute("kernel", "gray-scott");
    if let Some(n) = expected {
        a = a.with_expected_frames(n);
        b = b.with_expected_frames(n);
    }
    StreamLayout::new(fields())
        .with_stream(a)
        .with_stream(b)
        .with_attribute("config", "[run]\nsteps = 10\n")
        .with_attribute("adapters", "llvmpipe")
        .with_attribute("dt", 1.0)
        .with_attribute("devices", 2_i64)
}

/// Byte `i` of field `field` of frame `index` of `stream`: every byte value occurs, and
/// fields, frames and streams all differ.
pub fn byte(stream: usize, field: usize, index: u64, i: usize) -> u8 {
    let x = (stream as u64 * 0x9E37_79B9 + field as u64 * 0x85EB_CA6B + index * 0xC2B2_AE35 + i as u64)
        .wrapping_mul(0x2545_F491_4F6C_DD1D);
    (x >> 56) as u8
}

/// The bytes of field `field` of one frame.
pub fn field_data(layout: &StreamLayout, stream: usize, field: usize, index: u64) -> Vec<u8> {
    let n = layout.fields[field].bytes().expect("field size");
    (0..n).map(|i| byte(stream, field, index, i)).collect()
}

/// The bytes of every field of one frame.
pub fn frame_data(layout: &StreamLayout, stream: usize, index: u64) -> Vec<u8> {
    (0..layout.fields.len()).flat_map(|f| field_data(layout, stream, f, index)).collect()
}

/// Frame `index` of `stream`, taken after step `10 * (index + 1) + stream`.
pub fn frame(layout: &StreamLayout, stream: usize, index: u64) -> Frame {
    let step = 10 * (index + 1) + stream as u64;
    Frame::new(stream, index, step, frame_data(layout, stream, index))
}

/// `n` frames of each stream, interleaved unevenly (stream 1 runs ahead, then stream 0).
pub fn interleaved(layout: &StreamLayout, n: u64) -> Vec<Frame> {
    let mut out = Vec::new();
    let (mut a, mut b) = (0, 0);
    while a < n || b < n {
        for _ in 0..2 {
            if b < n {
                out.push(frame(layout, 1, b));
                b += 1;
            }
        }
        if a < n {
            out.push(frame(layout, 0, a));
            a += 1;
        }
    }
    out
}

/// One sink the suite runs: a name for messages, a kind for `open_sink`, options, and the
/// output path (none for `null`).
pub struct Case {
    pub label: &'static str,
    pub kind: &'static str,
    pub options: SinkOptions,
}

impl Case {
    pub fn sink(&self) -> Box<dyn Sink> {
        open_sink(self.kind, &self.options).expect("open_sink")
    }

    pub fn readable(&self) -> bool {
        self.kind != "null"
    }

    pub fn output(&self) -> Output {
        open_output(&self.options.path).unwrap_or_else(|e| panic!("{}: open_output: {e}", self.label))
    }
}

/// Every sink and interesting option set, writing under `dir`.
pub fn cases(dir: &Path) -> Vec<Case> {
    let mut v = vec![
        Case { label: "null", kind: "null", options: SinkOptions::default() },
        Case { label: "raw", kind: "raw", options: SinkOptions::new(dir.join("out-raw")) },
    ];
    if cfg!(feature = "hdf5") {
        v.push(Case { label: "hdf5", kind: "hdf5", options: SinkOptions::new(dir.join("out.h5")) });
        v.push(Case {
            label: "hdf5 deflate, 3 frames per chunk",
            kind: "hdf5",
            options: SinkOptions::new(dir.join("out-deflate.h5"))
                .with_compression(Compression::Deflate(4))
                .with_chunk_frames(3),
        });
        v.push(Case {
            label: "hdf5 deflate, 1 frame per chunk, 3 compression threads",
            kind: "hdf5",
            options: SinkOptions::new(dir.join("out-deflate-threads.h5"))
                .with_compression(Compression::Deflate(6))
                .with_compression_threads(3),
        });
        v.push(Case {
            label: "hdf5 fsync, 4 frames per chunk",
            kind: "hdf5",
            options: SinkOptions::new(dir.join("out-chunk4.h5")).with_chunk_frames(4).with_fsync(true),
        });
    }
    if cfg!(feature = "zarr") {
        v.push(Case { label: "zarr", kind: "zarr", options: SinkOptions::new(dir.join("out.zarr")) });
        v.push(Case {
            label: "zarr zstd, 3 frames per shard",
            kind: "zarr",
            options: SinkOptions::new(dir.join("out-zstd.zarr"))
                .with_compression(Compression::Zstd(3))
                .with_shard_frames(3),
        });
        v.push(Case {
            label: "zarr gzip fsync",
            kind: "zarr",
            options: SinkOptions::new(dir.join("out-gzip.zarr"))
                .with_compression(Compression::Deflate(4))
                .with_fsync(true),
        });
        v.push(Case {
            label: "zarr blosc-lz4, 4 frames per shard",
            kind: "zarr",
            options: SinkOptions::new(dir.join("out-blosc.zarr"))
                .with_compression(Compression::BloscLz4(5))
                .with_shard_frames(4),
        });
    }
    #[cfg(feature = "blosc")]
    {
        v.push(Case {
            label: "hdf5 blosc-lz4, 1 frame per chunk",
            kind: "hdf5",
            options: SinkOptions::new(dir.join("out-blosc-lz4.h5")).with_compression(Compression::BloscLz4(5)),
        });
        v.push(Case {
            label: "hdf5 blosc-zstd, 3 frames per chunk",
            kind: "hdf5",
            options: SinkOptions::new(dir.join("out-blosc-zstd.h5"))
                .with_compression(Compression::BloscZstd(3))
                .with_chunk_frames(3),
        });
    }
    v
}

/// Writes `frames` frames of each stream into `sink` (begun and finished here), streams in
/// `order` at each frame index, frame `i` of stream `s` taken at `step(s, i)`, and each field's
/// bytes into `expected/<stream>.<field>.<frame>.bin` for a reader in another language to
/// compare with. Returns what `finish` said.
pub fn write_recorded(
    mut sink: Box<dyn Sink>,
    layout: &StreamLayout,
    frames: u64,
    order: &[usize],
    step: impl Fn(usize, u64) -> u64,
    expected: &Path,
) -> SinkSummary {
    sink.begin(layout).expect("begin");
    for i in 0..frames {
        for &s in order {
            let mut data = Vec::new();
            for (f, spec) in layout.fields.iter().enumerate() {
                let bytes = field_data(layout, s, f, i);
                let name = format!("{}.{}.{i}.bin", layout.streams[s].name, spec.name);
                std::fs::write(expected.join(name), &bytes).expect("write the expected bytes");
                data.extend(bytes);
            }
            sink.write(&Frame::new(s, i, step(s, i), data)).expect("write");
        }
    }
    sink.finish().expect("finish")
}

/// Asserts `out` holds exactly frames `0..n` of every stream, byte for byte, with their steps.
pub fn assert_holds(out: &Output, layout: &StreamLayout, n: &[u64], label: &str) {
    assert_eq!(out.fields(), &layout.fields[..], "{label}: fields");
    assert_eq!(out.streams().len(), layout.streams.len(), "{label}: streams");
    for (s, info) in out.streams().iter().zip(&layout.streams) {
        assert_eq!(s.name, info.name, "{label}: stream name");
        assert_eq!(s.attributes, info.attributes, "{label}: attributes of {}", s.name);
        assert_eq!(s.expected_frames, info.expected_frames, "{label}: expected of {}", s.name);
    }
    for (si, &frames) in n.iter().enumerate() {
        assert_eq!(out.streams()[si].frames, frames, "{label}: frames of stream {si}");
        let steps: Vec<u64> = (0..frames).map(|i| 10 * (i + 1) + si as u64).collect();
        assert_eq!(out.steps(si).expect("steps"), steps, "{label}: steps of stream {si}");
        for i in 0..frames {
            for f in 0..layout.fields.len() {
                let got = out.read_field(si, f, i).expect("read_field");
                assert!(got.bytes == field_data(layout, si, f, i), "{label}: stream {si} field {f} frame {i} differs");
            }
        }
    }
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Path of the running test binary, for tests that re-run one test in a child process.
pub fn test_exe() -> PathBuf {
    std::env::current_exe().expect("current_exe")
}

/// A python3 that imports h5py and numpy (`python_choice`), or a failure saying how to get one.
pub fn python() -> std::ffi::OsString {
    python_choice::python_with(&["h5py", "numpy"])
}
