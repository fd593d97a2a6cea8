//! Every sink of this crate runs the exported conformance suite (`wgpipe_storage::conformance`):
//! null, raw, and HDF5 with every option set. The suite reads what raw and HDF5 stored back
//! through `open_output` and compares it with the frames given, byte for byte; the null sink
//! stores nothing, so for it the suite checks only counts, checksum and what it refuses.
//! The last tests feed the suite sinks that break their promises, to show it catches them.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::time::Instant;

use common::{Case, cases, tempdir};
use wgpipe_storage::conformance::{CHECKS, Failure, Subject, run_all};
use wgpipe_storage::{
    Backend, Checked, Fields, Frame, NullSink, Outcome, RawSink, Result, Sink, SinkOptions, SinkSummary, StreamLayout,
    open_sink,
};

/// Runs the suite on `case`'s sink, each check's outputs under `dir`.
fn run_case(case: &Case, dir: &Path) -> Vec<Failure> {
    let (kind, options) = (case.kind, case.options.clone());
    let make = move |path: &Path| open_sink(kind, &SinkOptions { path: path.to_path_buf(), ..options.clone() });
    run_all(&Subject { label: case.label, make: &make, reads_back: case.readable() }, dir)
}

fn assert_conforms(kinds: &[&str]) {
    let dir = tempdir();
    let cases: Vec<Case> = cases(dir.path()).into_iter().filter(|c| kinds.contains(&c.kind)).collect();
    assert!(!cases.is_empty(), "no sink of kinds {kinds:?} in this build");
    for case in &cases {
        let failures = run_case(case, &dir.path().join(case.label.replace(' ', "_")));
        let text: Vec<String> = failures.iter().map(ToString::to_string).collect();
        assert!(failures.is_empty(), "{}", text.join("\n"));
    }
}

#[test]
fn null_sink_conforms_counts_and_checksums_only() {
    assert_conforms(&["null"]);
}

#[test]
fn raw_sink_conforms() {
    assert_conforms(&["raw"]);
}

#[cfg(feature = "hdf5")]
#[test]
fn hdf5_sink_conforms_with_every_option_set() {
    assert_conforms(&["hdf5"]);
}

#[cfg(feature = "zarr")]
#[test]
fn zarr_sink_conforms_with_sharding_and_every_codec() {
    assert_conforms(&["zarr"]);
}

/// A raw sink that stores one byte of every frame flipped but reports the frames it was
/// given, so only reading the output back can tell.
struct FlipsAByte {
    inner: RawSink,
    summary: SinkSummary,
}

impl Sink for FlipsAByte {
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        let mut bad = frame.clone();
        if let Some(b) = bad.data.last_mut() {
            *b ^= 0x10;
        }
        self.inner.write(&bad)?;
        self.summary.record(frame, start);
        Ok(())
    }
    fn finish(&mut self) -> Result<SinkSummary> {
        self.inner.finish()?;
        Ok(std::mem::take(&mut self.summary))
    }
}

#[test]
fn the_suite_catches_a_sink_that_stores_other_bytes() {
    let dir = tempdir();
    let make = |path: &Path| -> Result<Box<dyn Sink>> {
        Ok(Box::new(FlipsAByte { inner: RawSink::new(SinkOptions::new(path)), summary: SinkSummary::default() }))
    };
    let failures = run_all(&Subject { label: "flips a byte", make: &make, reads_back: true }, dir.path());
    let round_trip = failures.iter().find(|f| f.check == CHECKS[0].0).expect("the round trip check fails");
    assert!(round_trip.message.contains("differs from the frame written"), "{round_trip}");
    assert!(round_trip.to_string().starts_with("flips a byte: every dtype and rank"), "{round_trip}");
}

/// A null sink that silently drops every third frame (and so reports fewer).
struct DropsFrames {
    inner: NullSink,
    seen: u64,
}

impl Sink for DropsFrames {
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> Result<()> {
        self.seen += 1;
        if self.seen.is_multiple_of(3) {
            return Ok(());
        }
        // The inner sink refuses the frames after a gap; this one swallows that too.
        let _ = self.inner.write(frame);
        Ok(())
    }
    fn finish(&mut self) -> Result<SinkSummary> {
        self.inner.finish()
    }
}

#[test]
fn the_suite_catches_a_sink_that_loses_frames_even_without_reading_back() {
    let dir = tempdir();
    let make = |_: &Path| -> Result<Box<dyn Sink>> { Ok(Box::new(DropsFrames { inner: NullSink::new(), seen: 0 })) };
    let failures = run_all(&Subject { label: "drops frames", make: &make, reads_back: false }, dir.path());
    let round_trip = failures.iter().find(|f| f.check == CHECKS[0].0).expect("the round trip check fails");
    assert!(round_trip.message.contains("frames, 6 were written"), "{round_trip}");
}

/// A user's backend that checks nothing itself: it keeps the steps it is given.
#[derive(Default)]
struct KeepsSteps {
    steps: Vec<u64>,
}

impl Backend for KeepsSteps {
    fn begin(&mut self, _layout: &StreamLayout) -> Result<()> {
        Ok(())
    }
    fn write(&mut self, frame: &Frame, _fields: Fields<'_>) -> Result<Option<u64>> {
        self.steps.push(frame.step);
        Ok(None)
    }
    fn finish(&mut self, _outcome: &Outcome<'_>) -> Result<()> {
        Ok(())
    }
}

#[test]
fn a_users_backend_wrapped_in_checked_gets_the_whole_protocol() {
    let dir = tempdir();
    let make = |_: &Path| -> Result<Box<dyn Sink>> { Ok(Box::new(Checked::from(KeepsSteps::default()))) };
    let failures = run_all(&Subject { label: "keeps steps", make: &make, reads_back: false }, dir.path());
    let text: Vec<String> = failures.iter().map(ToString::to_string).collect();
    assert!(failures.is_empty(), "{}", text.join("\n"));
}

/// The same backend as a `Sink` of its own, without `Checked`: nothing checks its calls.
struct Unchecked {
    inner: KeepsSteps,
    summary: SinkSummary,
}

impl Sink for Unchecked {
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.inner.begin(layout)
    }
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        self.inner.write(frame, Fields::default())?;
        self.summary.record(frame, start);
        Ok(())
    }
    fn finish(&mut self) -> Result<SinkSummary> {
        Ok(std::mem::take(&mut self.summary))
    }
}

#[test]
fn the_suite_catches_a_sink_that_skips_the_protocol() {
    let dir = tempdir();
    let make = |_: &Path| -> Result<Box<dyn Sink>> {
        Ok(Box::new(Unchecked { inner: KeepsSteps::default(), summary: SinkSummary::default() }))
    };
    let failures = run_all(&Subject { label: "unchecked", make: &make, reads_back: false }, dir.path());
    let failed: Vec<&str> = failures.iter().map(|f| f.check).collect();
    for check in [
        "mismatching frames are refused and nothing is written",
        "out-of-order indices are refused",
        "frames past a stream's expected count are refused",
        "calls out of order are usage errors",
        "every call after finish is a usage error",
        "unusable layouts are refused before anything is created",
    ] {
        assert!(failed.contains(&check), "the suite did not catch {check:?}: {failures:?}");
    }
}
