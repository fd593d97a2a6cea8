//! Shared test helpers: a small two-stream layout, deterministic frame data, and the list of
//! sinks the conformance suite runs against.

#![allow(dead_code, reason = "each test binary uses a different part of the helpers")]

use std::path::{Path, PathBuf};

use wgpipe_storage::{
    Compression, DType, Frame, Output, Sink, SinkOptions, StreamInfo, StreamLayout, open_output, open_sink,
};

/// Rows and columns of the test frames (not square, to catch transposed shapes).
pub const ROWS: usize = 8;
pub const COLS: usize = 16;

/// Two fields, two streams with attributes, run attributes of every kind.
pub fn layout(expected: Option<u64>) -> StreamLayout {
    let mut a = StreamInfo::new("dev0").with_attribute("du", 0.16).with_attribute("seed", 7_i64);
    let mut b = StreamInfo::new("dev-1.b").with_attribute("kernel", "gray-scott");
    if let Some(n) = expected {
        a = a.with_expected_frames(n);
        b = b.with_expected_frames(n);
    }
    StreamLayout::new(vec!["u".into(), "v".into()], ROWS, COLS, DType::F32)
        .with_stream(a)
        .with_stream(b)
        .with_attribute("config", "[run]\nsteps = 10\n")
        .with_attribute("adapters", "llvmpipe")
        .with_attribute("dt", 1.0)
        .with_attribute("devices", 2_i64)
}

/// The value at element `i` of field `field` of frame `index` of `stream`: varied bit patterns
/// (negative zero, infinities, subnormals, a NaN with payload) so round trips are bit-exact.
pub fn value(stream: usize, field: usize, index: u64, i: usize) -> f32 {
    match (i + index as usize) % 11 {
        0 => -0.0,
        1 => f32::INFINITY,
        2 => f32::from_bits(0x7fc0_1234),
        3 => f32::from_bits(1),
        _ => (stream * 1000 + field * 100) as f32 + index as f32 * 0.5 + i as f32 * 1e-3,
    }
}

/// The bytes of every field of one frame.
pub fn frame_data(layout: &StreamLayout, stream: usize, index: u64) -> Vec<u8> {
    (0..layout.fields.len())
        .flat_map(|f| (0..layout.rows * layout.cols).map(move |i| value(stream, f, index, i)))
        .flat_map(f32::to_le_bytes)
        .collect()
}

/// Frame `index` of `stream`, taken after step `10 * (index + 1) + stream`.
pub fn frame(layout: &StreamLayout, stream: usize, index: u64) -> Frame {
    let step = 10 * (index + 1) + stream as u64;
    Frame::new(layout, stream, index, step, frame_data(layout, stream, index))
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
            label: "hdf5 fsync, 4 frames per chunk",
            kind: "hdf5",
            options: SinkOptions::new(dir.join("out-chunk4.h5")).with_chunk_frames(4).with_fsync(true),
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

/// Asserts `out` holds exactly frames `0..n` of every stream, bit for bit, with their steps.
pub fn assert_holds(out: &Output, layout: &StreamLayout, n: &[u64], label: &str) {
    assert_eq!(out.fields(), &layout.fields[..], "{label}: fields");
    assert_eq!(out.shape(), [layout.rows, layout.cols], "{label}: shape");
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
                let got = out.read_frame(si, f, i).expect("read_frame");
                let want: Vec<u32> = (0..layout.rows * layout.cols).map(|k| value(si, f, i, k).to_bits()).collect();
                let got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
                assert!(got == want, "{label}: stream {si} field {f} frame {i} differs");
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
