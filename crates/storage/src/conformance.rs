//! The conformance suite every sink runs: the built-in ones in this crate's tests, yours in
//! your own (as `object_store` exports its integration tests to third-party stores).
//!
//! Each check drives a fresh sink through [`Sink::begin`], [`Sink::write`] and
//! [`Sink::finish`] and then, for a sink whose output [`crate::open_output`] reads, reads the
//! stored output back and compares it with the frames given, byte for byte: every element
//! type and rank, frames larger than one HDF5 chunk, streams interleaved, steps, attributes,
//! completeness. A sink that stores nothing `open_output` reads (the null sink, or yours in a
//! format of its own) is held only to what it reports: the frame and byte counts and the
//! checksum in its [`SinkSummary`], and the checks on what it must refuse.
//!
//! The rules of the protocol (call order, frames checked against the layout, `complete`) are
//! enforced by [`crate::Checked`], so a sink of yours that implements [`crate::Backend`] and
//! is wrapped in it passes those checks without code of its own; a sink that implements
//! [`Sink`] directly must keep them itself, and the suite tells whether it does.
//!
//! ```
//! use wgpipe_storage::{NullSink, Sink, conformance};
//!
//! let make = |_: &std::path::Path| -> wgpipe_storage::Result<Box<dyn Sink>> { Ok(Box::new(NullSink::new())) };
//! let dir = std::env::temp_dir().join(format!("wgpipe-conformance-doc-{}", std::process::id()));
//! let failures = conformance::run_all(&conformance::Subject { label: "null", make: &make, reads_back: false }, &dir);
//! assert!(failures.is_empty(), "{failures:?}");
//! # let _ = std::fs::remove_dir_all(&dir);
//! ```

use std::fmt;
use std::path::Path;

use crate::checksum::frame_checksum;
use crate::error::{Error, Result};
use crate::frame::{DType, Frame};
use crate::open::open_output;
use crate::read::Output;
use crate::schema::{FieldSpec, MAX_RANK, StreamInfo, StreamLayout};
use crate::sink::{Sink, SinkSummary};

/// A sink under test.
pub struct Subject<'a> {
    /// Names the sink in failure messages.
    pub label: &'a str,
    /// Makes a fresh sink that stores at the given path, which does not exist yet (its
    /// parent directory does).
    pub make: &'a dyn Fn(&Path) -> Result<Box<dyn Sink>>,
    /// Whether [`crate::open_output`] reads back what the sink stores at that path. When
    /// `false`, the suite checks only what the sink reports and refuses.
    pub reads_back: bool,
}

/// One check a sink did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The sink ([`Subject::label`]).
    pub sink: String,
    /// The check (one of [`CHECKS`]).
    pub check: &'static str,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.sink, self.check, self.message)
    }
}

impl std::error::Error for Failure {}

/// A check: drives sinks made by the subject at paths under the directory it is given.
type Check = fn(&Subject<'_>, &Path) -> Result<(), String>;

/// Every check, by name, in the order [`run_all`] runs them.
pub const CHECKS: &[(&str, Check)] = &[
    ("every dtype and rank round-trips byte for byte", every_dtype_and_rank_round_trips),
    ("frames larger than one chunk round-trip", large_frames_round_trip),
    ("mismatching frames are refused and nothing is written", mismatching_frames_are_refused),
    ("out-of-order indices are refused", out_of_order_indices_are_refused),
    ("finish after a refused write keeps earlier frames, incomplete", finish_after_refused_write),
    ("frames past a stream's expected count are refused", frames_past_the_expected_count_are_refused),
    ("calls out of order are usage errors", calls_out_of_order_are_usage_errors),
    ("every call after finish is a usage error", calls_after_finish_are_usage_errors),
    ("a run stopped early marks its short streams and the output incomplete", stopped_run_is_incomplete),
    ("unusable layouts are refused before anything is created", unusable_layouts_are_refused),
];

/// Runs every check of [`CHECKS`], each in its own new directory under `dir` (created if
/// needed), and returns the failures: none means the sink conforms.
pub fn run_all(subject: &Subject<'_>, dir: &Path) -> Vec<Failure> {
    CHECKS
        .iter()
        .enumerate()
        .filter_map(|(i, (name, check))| {
            let fail = |message: String| Failure { sink: subject.label.to_owned(), check: name, message };
            let sub = dir.join(format!("check-{i}"));
            if let Err(e) = std::fs::create_dir_all(&sub) {
                return Some(fail(format!("cannot create {}: {e}", sub.display())));
            }
            check(subject, &sub).err().map(fail)
        })
        .collect()
}

/// `Err(message)` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Adds what was being done to an error of the sink.
fn ctx<T>(what: &str, r: Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// Field `f`'s bytes of frame `index` of `stream`: pseudo-random, so every bit pattern occurs
/// (NaNs with payloads, signalling NaNs, subnormals, negative zero, integer extremes) and a
/// sink that converts, reorders or mixes up fields, frames or streams cannot match.
fn push_field_bytes(out: &mut Vec<u8>, stream: usize, f: usize, index: u64, len: usize) {
    let mut x = (stream as u64) << 48 ^ (f as u64) << 32 ^ index;
    let end = out.len() + len;
    while out.len() < end {
        // splitmix64
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let word = (z ^ (z >> 31)).to_le_bytes();
        out.extend_from_slice(&word[..(end - out.len()).min(8)]);
    }
}

/// Frame `index` of `stream` of `layout`, taken after step `10 * (index + 1) + stream`.
/// Odd frames come with their hash computed by the "producer" ([`Frame::hash_data`]), even
/// ones without, so both of a sink's paths are checked.
fn frame(layout: &StreamLayout, stream: usize, index: u64) -> Frame {
    let mut data = Vec::with_capacity(layout.frame_bytes().unwrap_or_default());
    for (f, spec) in layout.fields.iter().enumerate() {
        push_field_bytes(&mut data, stream, f, index, spec.bytes().unwrap_or_default());
    }
    let frame = Frame::new(stream, index, 10 * (index + 1) + stream as u64, data);
    if index % 2 == 1 { frame.hash_data() } else { frame }
}

/// `n` frames of each of two streams, stream 1 running ahead of stream 0.
fn interleaved(layout: &StreamLayout, n: u64) -> Vec<Frame> {
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

/// Two streams (names with `-` and `.`), attributes of every kind.
fn with_streams(layout: StreamLayout, expected: Option<u64>) -> StreamLayout {
    let mut a = StreamInfo::new("s0").with_attribute("du", 0.16).with_attribute("seed", 7_i64);
    let mut b = StreamInfo::new("s-1.b").with_attribute("kernel", "gray-scott");
    if let Some(n) = expected {
        a = a.with_expected_frames(n);
        b = b.with_expected_frames(n);
    }
    layout
        .with_stream(a)
        .with_stream(b)
        .with_attribute("config", "[run]\nsteps = 10\n")
        .with_attribute("dt", 0.5)
        .with_attribute("devices", 2_i64)
}

/// A field of every element type in every rank (rank 0: one value per frame, as a reduction),
/// shapes small and not square (so transposed
/// or reordered axes show), custom axis names on one.
fn every_dtype_and_rank(expected: Option<u64>) -> StreamLayout {
    let shapes: [&[usize]; MAX_RANK + 1] = [&[], &[5], &[3, 4], &[2, 3, 5]];
    let mut fields = Vec::new();
    for d in DType::ALL {
        for shape in shapes {
            fields.push(FieldSpec::new(format!("{}_{}d", d.short_name(), shape.len()), d, shape));
        }
    }
    fields.push(FieldSpec::new("positions", DType::F32, [7, 3]).with_dims(["particle", "xyz"]));
    with_streams(StreamLayout::new(fields), expected)
}

/// Writes `frames` through a fresh sink at `path` and returns its summary, checking that it
/// counts every frame and byte and checksums what it was given.
fn store(subject: &Subject<'_>, path: &Path, layout: &StreamLayout, frames: &[Frame]) -> Result<SinkSummary, String> {
    let mut sink = ctx("making the sink", (subject.make)(path))?;
    ctx("begin", sink.begin(layout))?;
    for f in frames {
        ctx(&format!("write of frame {} of stream {}", f.index, f.stream), sink.write(f))?;
    }
    let summary = ctx("finish", sink.finish())?;
    let bytes: u64 = frames.iter().map(|f| f.data.len() as u64).sum();
    let checksum = frames.iter().fold(0u64, |s, f| s.wrapping_add(frame_checksum(f)));
    ensure!(
        summary.frames == frames.len() as u64,
        "finish reports {} frames, {} were written",
        summary.frames,
        frames.len()
    );
    ensure!(summary.bytes == bytes, "finish reports {} bytes, {bytes} were written", summary.bytes);
    ensure!(
        summary.checksum == checksum,
        "finish reports checksum {:#x}, the frames written sum to {checksum:#x}",
        summary.checksum
    );
    Ok(summary)
}

/// Opens what the sink stored, or `None` for a subject that does not read back.
fn read_back(subject: &Subject<'_>, path: &Path) -> Result<Option<Output>, String> {
    if !subject.reads_back {
        return Ok(None);
    }
    open_output(path).map(Some).map_err(|e| format!("open_output({}): {e}", path.display()))
}

/// Errors unless `out` describes `layout` and holds exactly frames `0..n[s]` of every stream
/// `s`, byte for byte as `given`, with their steps.
fn holds(out: &Output, layout: &StreamLayout, given: &[Frame], n: &[u64]) -> Result<(), String> {
    ensure!(
        out.fields() == layout.fields.as_slice(),
        "fields read back {:?}, written {:?}",
        out.fields(),
        layout.fields
    );
    ensure!(
        out.streams().len() == layout.streams.len(),
        "{} streams read back, {} written",
        out.streams().len(),
        layout.streams.len()
    );
    ensure!(
        out.attributes() == &layout.attributes,
        "run attributes read back {:?}, written {:?}",
        out.attributes(),
        layout.attributes
    );
    for (si, (s, info)) in out.streams().iter().zip(&layout.streams).enumerate() {
        ensure!(s.name == info.name, "stream {si} is named {:?}, written as {:?}", s.name, info.name);
        ensure!(
            s.attributes == info.attributes,
            "attributes of {} read back {:?}, written {:?}",
            s.name,
            s.attributes,
            info.attributes
        );
        ensure!(
            s.expected_frames == info.expected_frames,
            "expected frames of {}: {:?}, written {:?}",
            s.name,
            s.expected_frames,
            info.expected_frames
        );
        ensure!(s.frames == n[si], "stream {} holds {} frames, {} were written", s.name, s.frames, n[si]);
        let steps: Vec<u64> = (0..n[si]).map(|i| 10 * (i + 1) + si as u64).collect();
        let got = out.steps(si).map_err(|e| format!("steps of {}: {e}", s.name))?;
        ensure!(got == steps, "steps of {} read back {got:?}, written {steps:?}", s.name);
        for i in 0..n[si] {
            let given = given
                .iter()
                .find(|f| f.stream == si && f.index == i)
                .ok_or_else(|| format!("the suite gave no frame {i} of stream {si}"))?;
            for (f, spec) in layout.fields.iter().enumerate() {
                let got =
                    out.read_field(si, f, i).map_err(|e| format!("reading {}/{} frame {i}: {e}", s.name, spec.name))?;
                let want = layout.field_range(f).and_then(|r| given.data.get(r)).unwrap_or_default();
                ensure!(
                    got.dtype == spec.dtype && got.shape == spec.shape,
                    "{}/{} frame {i} reads back as {} {:?}",
                    s.name,
                    spec.name,
                    got.dtype,
                    got.shape
                );
                if got.bytes != want {
                    let at =
                        got.bytes.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.bytes.len().min(want.len()));
                    return Err(format!(
                        "{}/{} ({}) frame {i} differs from the frame written: {} bytes read, {} written, first difference at byte {at}",
                        s.name,
                        spec.name,
                        spec.describe(),
                        got.bytes.len(),
                        want.len()
                    ));
                }
            }
        }
    }
    Ok(())
}

fn every_dtype_and_rank_round_trips(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(Some(3));
    let frames = interleaved(&layout, 3);
    store(subject, &path, &layout, &frames)?;
    if let Some(out) = read_back(subject, &path)? {
        holds(&out, &layout, &frames, &[3, 3])?;
        ensure!(out.complete(), "the output is not marked complete");
        ensure!(out.streams().iter().all(|s| s.complete), "a stream is not marked complete: {:?}", out.streams());
    }
    Ok(())
}

fn large_frames_round_trip(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    // 4.5 MB frames, over HDF5's 4 MiB chunk target: each frame is cut into two chunks of
    // two planes, the second half empty (an edge chunk).
    let layout = with_streams(StreamLayout::new(vec![FieldSpec::new("big", DType::F32, [3, 625, 600])]), Some(1));
    let frames = interleaved(&layout, 1);
    store(subject, &path, &layout, &frames)?;
    if let Some(out) = read_back(subject, &path)? {
        holds(&out, &layout, &frames, &[1, 1])?;
    }
    Ok(())
}

fn mismatching_frames_are_refused(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(None);
    let mut sink = ctx("making the sink", (subject.make)(&path))?;
    ctx("begin", sink.begin(&layout))?;
    let good = || frame(&layout, 0, 0);
    let mut bad = Vec::new();
    let mut f = good();
    f.stream = 2;
    bad.push(("a stream id out of range", f));
    let mut f = good();
    f.data.pop();
    bad.push(("one byte too few", f));
    let mut f = good();
    f.data.push(0);
    bad.push(("one byte too many", f));
    let mut f = good();
    f.data.truncate(layout.fields[0].bytes().unwrap_or_default());
    bad.push(("only the first field", f));
    for (what, f) in bad {
        match sink.write(&f) {
            Err(Error::FrameMismatch { .. }) => {}
            other => return Err(format!("a frame with {what} gave {other:?}, not Error::FrameMismatch")),
        }
    }
    // The sink still takes good frames, starting at index 0.
    ctx("write of a good frame after refused ones", sink.write(&good()))?;
    let summary = ctx("finish", sink.finish())?;
    ensure!(summary.frames == 1, "finish reports {} frames, 1 was accepted", summary.frames);
    if let Some(out) = read_back(subject, &path)? {
        holds(&out, &layout, &[good()], &[1, 0])?;
    }
    Ok(())
}

fn out_of_order_indices_are_refused(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(None);
    let mut sink = ctx("making the sink", (subject.make)(&path))?;
    ctx("begin", sink.begin(&layout))?;
    match sink.write(&frame(&layout, 0, 1)) {
        Err(e @ Error::FrameMismatch { .. }) => {
            ensure!(e.to_string().contains("expected 0"), "the error does not say which index was expected: {e}");
        }
        other => return Err(format!("frame 1 before frame 0 gave {other:?}, not Error::FrameMismatch")),
    }
    ctx("write of frame 0", sink.write(&frame(&layout, 0, 0)))?;
    ensure!(
        matches!(sink.write(&frame(&layout, 0, 0)), Err(Error::FrameMismatch { .. })),
        "frame 0 written twice was accepted"
    );
    // Each stream counts on its own.
    ctx("write of frame 0 of stream 1", sink.write(&frame(&layout, 1, 0)))?;
    ctx("write of frame 1 of stream 0", sink.write(&frame(&layout, 0, 1)))?;
    ctx("finish", sink.finish())?;
    if let Some(out) = read_back(subject, &path)? {
        let given = [frame(&layout, 0, 0), frame(&layout, 0, 1), frame(&layout, 1, 0)];
        holds(&out, &layout, &given, &[2, 1])?;
    }
    Ok(())
}

fn finish_after_refused_write(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(Some(4));
    let mut sink = ctx("making the sink", (subject.make)(&path))?;
    ctx("begin", sink.begin(&layout))?;
    let frames = interleaved(&layout, 2);
    for f in &frames {
        ctx("write", sink.write(f))?;
    }
    ensure!(sink.write(&frame(&layout, 1, 7)).is_err(), "frame 7 after frame 1 was accepted");
    let summary = ctx("finish", sink.finish())?;
    ensure!(summary.frames == 4, "finish reports {} frames, 4 were accepted", summary.frames);
    if let Some(out) = read_back(subject, &path)? {
        holds(&out, &layout, &frames, &[2, 2])?;
        // Fewer frames than expected: not complete, so --resume knows to continue.
        ensure!(out.streams().iter().all(|s| !s.complete), "a stream short of its expected frames is marked complete");
        ensure!(!out.complete(), "the output is marked complete while its streams are short of their expected frames");
    }
    Ok(())
}

fn frames_past_the_expected_count_are_refused(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(Some(2));
    let mut sink = ctx("making the sink", (subject.make)(&path))?;
    ctx("begin", sink.begin(&layout))?;
    let frames = interleaved(&layout, 2);
    for f in &frames {
        ctx("write", sink.write(f))?;
    }
    match sink.write(&frame(&layout, 0, 2)) {
        Err(e @ Error::FrameMismatch { .. }) => {
            ensure!(e.to_string().contains("at most 2 frames"), "the error does not say how many frames fit: {e}");
        }
        other => return Err(format!("frame 2 of a stream expecting 2 gave {other:?}, not Error::FrameMismatch")),
    }
    let summary = ctx("finish", sink.finish())?;
    ensure!(summary.frames == 4, "finish reports {} frames, 4 were accepted", summary.frames);
    if let Some(out) = read_back(subject, &path)? {
        holds(&out, &layout, &frames, &[2, 2])?;
        ensure!(out.complete(), "every stream holds its expected frames, but the output is not marked complete");
    }
    Ok(())
}

fn calls_out_of_order_are_usage_errors(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(None);
    let mut sink = ctx("making the sink", (subject.make)(&path))?;
    let early = sink.write(&frame(&layout, 0, 0));
    ensure!(matches!(early, Err(Error::Usage(_))), "write before begin gave {early:?}, not Error::Usage");
    let early = sink.finish();
    ensure!(matches!(early, Err(Error::Usage(_))), "finish before begin gave {early:?}, not Error::Usage");
    ctx("begin", sink.begin(&layout))?;
    let again = sink.begin(&layout);
    ensure!(matches!(again, Err(Error::Usage(_))), "begin twice gave {again:?}, not Error::Usage");
    ctx("finish", sink.finish())?;
    Ok(())
}

fn calls_after_finish_are_usage_errors(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(None);
    let mut sink = ctx("making the sink", (subject.make)(&path))?;
    ctx("begin", sink.begin(&layout))?;
    ctx("write", sink.write(&frame(&layout, 0, 0)))?;
    ctx("finish", sink.finish())?;
    let late = sink.write(&frame(&layout, 0, 1));
    ensure!(matches!(late, Err(Error::Usage(_))), "write after finish gave {late:?}, not Error::Usage");
    let late = sink.finish();
    ensure!(matches!(late, Err(Error::Usage(_))), "finish twice gave {late:?}, not Error::Usage");
    let late = sink.begin(&layout);
    ensure!(matches!(late, Err(Error::Usage(_))), "begin after finish gave {late:?}, not Error::Usage");
    if let Some(out) = read_back(subject, &path)? {
        holds(&out, &layout, &[frame(&layout, 0, 0)], &[1, 0])?;
    }
    Ok(())
}

/// What a user's stop leaves: one stream with all its expected frames, the other short.
fn stopped_run_is_incomplete(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let path = dir.join("out");
    let layout = every_dtype_and_rank(Some(3));
    let given: Vec<Frame> = (0..3).map(|i| frame(&layout, 0, i)).chain([frame(&layout, 1, 0)]).collect();
    store(subject, &path, &layout, &given)?;
    if let Some(out) = read_back(subject, &path)? {
        holds(&out, &layout, &given, &[3, 1])?;
        let complete: Vec<bool> = out.streams().iter().map(|s| s.complete).collect();
        ensure!(
            complete == [true, false],
            "streams with 3 and 1 of 3 expected frames are marked complete {complete:?}, not [true, false]"
        );
        ensure!(!out.complete(), "the output is marked complete while a stream is short of its expected frames");
    }
    Ok(())
}

fn unusable_layouts_are_refused(subject: &Subject<'_>, dir: &Path) -> Result<(), String> {
    let one = |spec: FieldSpec| with_streams(StreamLayout::new(vec![spec]), None);
    let mut bad: Vec<(&str, StreamLayout)> = vec![
        ("no fields", with_streams(StreamLayout::new(Vec::new()), None)),
        ("no streams", StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [2])])),
        ("a rank-4 field", one(FieldSpec::new("u", DType::F32, [2, 2, 2, 2]))),
        ("an empty axis", one(FieldSpec::new("u", DType::U8, [4, 0]))),
        ("one axis name for two axes", one(FieldSpec::new("u", DType::U8, [4, 4]).with_dims(["x"]))),
        ("a bad axis name", one(FieldSpec::new("u", DType::U8, [4, 4]).with_dims(["y", "x/"]))),
        ("more bytes than memory", one(FieldSpec::new("u", DType::F64, [usize::MAX / 2, 3]))),
        ("a field called steps", one(FieldSpec::new("steps", DType::U32, [3]))),
        ("a field name with a slash", one(FieldSpec::new("a/b", DType::U32, [3]))),
        ("a reserved run attribute", one(FieldSpec::new("u", DType::U8, [3])).with_attribute("created", "yesterday")),
    ];
    let mut dup = every_dtype_and_rank(None);
    dup.fields.push(dup.fields[0].clone());
    bad.push(("a field twice", dup));
    let mut escape = every_dtype_and_rank(None);
    escape.streams[0].name = "../escape".into();
    bad.push(("a stream named ../escape", escape));
    for (i, (what, layout)) in bad.into_iter().enumerate() {
        let path = dir.join(format!("out-{i}"));
        let mut sink = ctx("making the sink", (subject.make)(&path))?;
        match sink.begin(&layout) {
            Err(Error::InvalidLayout(_) | Error::InvalidName { .. }) => {}
            other => {
                return Err(format!(
                    "a layout with {what} gave {other:?}, not Error::InvalidLayout or Error::InvalidName"
                ));
            }
        }
        ensure!(!path.exists(), "a layout with {what} was refused but {} was created", path.display());
    }
    Ok(())
}
