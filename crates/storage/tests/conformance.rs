//! One suite every sink runs (null, raw, HDF5 with several option sets): round trip, checksum,
//! validation, and what `finish` leaves after a rejected or failed write.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{Case, assert_holds, cases, frame, interleaved, layout, tempdir};
use wgpipe_storage::{Error, Frame, NullSink, Sink, frame_checksum};

/// Runs `property` once per sink, each in a fresh directory.
fn for_each_sink(property: impl Fn(&Case)) {
    let dir = tempdir();
    for case in cases(dir.path()) {
        property(&case);
    }
}

/// Checksum of `frames` as the null sink reports it: the reference for every sink.
fn null_checksum(frames: &[Frame]) -> u64 {
    let mut sink = NullSink::new();
    sink.begin(&layout(Some(5))).unwrap();
    for f in frames {
        sink.write(f).unwrap();
    }
    sink.finish().unwrap().checksum
}

#[test]
fn interleaved_frames_read_back_bit_for_bit() {
    for_each_sink(|case| {
        let layout = layout(Some(5));
        let frames = interleaved(&layout, 5);
        let mut sink = case.sink();
        sink.begin(&layout).unwrap();
        for f in &frames {
            sink.write(f).unwrap_or_else(|e| panic!("{}: {e}", case.label));
        }
        let summary = sink.finish().unwrap();
        assert_eq!(summary.frames, 10, "{}", case.label);
        assert_eq!(summary.bytes, 10 * layout.frame_bytes() as u64, "{}", case.label);
        if case.readable() {
            let out = case.output();
            assert_holds(&out, &layout, &[5, 5], case.label);
            assert_eq!(out.attributes(), &layout.attributes, "{}", case.label);
            assert!(out.complete(), "{}", case.label);
            assert!(out.streams().iter().all(|s| s.complete), "{}", case.label);
        }
    });
}

#[test]
fn checksum_equals_the_null_sinks_whatever_the_interleaving() {
    let layout = layout(Some(5));
    let frames = interleaved(&layout, 5);
    let reference = null_checksum(&frames);
    // Same frames, streams one after the other instead of interleaved.
    let mut sequential = frames.clone();
    sequential.sort_by_key(|f| (f.stream, f.index));
    assert_eq!(null_checksum(&sequential), reference);
    for_each_sink(|case| {
        let mut sink = case.sink();
        sink.begin(&layout).unwrap();
        for f in &sequential {
            sink.write(f).unwrap();
        }
        assert_eq!(sink.finish().unwrap().checksum, reference, "{}", case.label);
    });
}

#[test]
fn checksum_depends_on_data_stream_and_index() {
    let layout = layout(None);
    let f = frame(&layout, 0, 0);
    let base = frame_checksum(&f);
    let mut g = f.clone();
    g.data[5] ^= 1;
    assert_ne!(frame_checksum(&g), base, "data");
    let mut g = f.clone();
    g.stream = 1;
    assert_ne!(frame_checksum(&g), base, "stream");
    let mut g = f.clone();
    g.index = 1;
    assert_ne!(frame_checksum(&g), base, "index");
    let mut g = f.clone();
    let (a, b) = g.data.split_at_mut(24);
    a[20..24].swap_with_slice(&mut b[..4]);
    assert_ne!(g.data, f.data, "the swapped values differ");
    assert_ne!(frame_checksum(&g), base, "order of values");
}

/// Frames that do not fit the layout, each with what is wrong.
fn mismatching(layout: &wgpipe_storage::StreamLayout) -> Vec<(&'static str, Frame)> {
    let good = || frame(layout, 0, 0);
    let mut v = Vec::new();
    let mut f = good();
    f.stream = 2;
    v.push(("stream out of range", f));
    let mut f = good();
    f.shape = [common::COLS, common::ROWS];
    v.push(("transposed shape", f));
    let mut f = good();
    f.field_count = 1;
    v.push(("field count", f));
    let mut f = good();
    f.data.pop();
    v.push(("byte length", f));
    let mut f = good();
    f.data.extend_from_slice(&[0; 4]);
    v.push(("byte length", f));
    v
}

#[test]
fn mismatching_frames_are_rejected_and_nothing_is_written() {
    for_each_sink(|case| {
        let layout = layout(None);
        let mut sink = case.sink();
        sink.begin(&layout).unwrap();
        for (what, f) in mismatching(&layout) {
            let err = sink.write(&f).expect_err(what);
            assert!(matches!(err, Error::FrameMismatch { .. }), "{}: {what}: {err}", case.label);
        }
        // The sink still takes good frames, starting at index 0.
        sink.write(&frame(&layout, 0, 0)).unwrap();
        let summary = sink.finish().unwrap();
        assert_eq!(summary.frames, 1, "{}", case.label);
        if case.readable() {
            assert_holds(&case.output(), &layout, &[1, 0], case.label);
        }
    });
}

#[test]
fn out_of_order_indices_are_rejected() {
    for_each_sink(|case| {
        let layout = layout(None);
        let mut sink = case.sink();
        sink.begin(&layout).unwrap();
        let skip = sink.write(&frame(&layout, 0, 1)).unwrap_err();
        assert!(matches!(skip, Error::FrameMismatch { .. }), "{}: {skip}", case.label);
        assert!(skip.to_string().contains("expected 0"), "{}: {skip}", case.label);
        sink.write(&frame(&layout, 0, 0)).unwrap();
        let repeat = sink.write(&frame(&layout, 0, 0)).unwrap_err();
        assert!(matches!(repeat, Error::FrameMismatch { .. }), "{}: {repeat}", case.label);
        // Each stream counts on its own.
        sink.write(&frame(&layout, 1, 0)).unwrap();
        sink.write(&frame(&layout, 0, 1)).unwrap();
        sink.finish().unwrap();
        if case.readable() {
            assert_holds(&case.output(), &layout, &[2, 1], case.label);
        }
    });
}

#[test]
fn finish_after_a_failed_write_keeps_earlier_frames_and_marks_incomplete() {
    for_each_sink(|case| {
        let layout = layout(Some(4));
        let mut sink = case.sink();
        sink.begin(&layout).unwrap();
        for f in interleaved(&layout, 2) {
            sink.write(&f).unwrap();
        }
        assert!(sink.write(&frame(&layout, 1, 7)).is_err());
        let summary = sink.finish().unwrap();
        assert_eq!(summary.frames, 4, "{}", case.label);
        if case.readable() {
            let out = case.output();
            assert_holds(&out, &layout, &[2, 2], case.label);
            // Fewer frames than expected: not complete, so --resume knows to continue.
            assert!(out.streams().iter().all(|s| !s.complete), "{}", case.label);
        }
    });
}

#[test]
fn calls_out_of_order_are_usage_errors() {
    for_each_sink(|case| {
        let layout = layout(None);
        let mut sink = case.sink();
        let early = sink.write(&frame(&layout, 0, 0)).unwrap_err();
        assert!(matches!(early, Error::Usage(_)), "{}: {early}", case.label);
        assert!(matches!(sink.finish(), Err(Error::Usage(_))), "{}", case.label);
        sink.begin(&layout).unwrap();
        assert!(matches!(sink.begin(&layout), Err(Error::Usage(_))), "{}", case.label);
        sink.finish().unwrap();
    });
}

#[test]
fn unusable_layouts_are_refused_before_anything_is_created() {
    for_each_sink(|case| {
        let mut bad = Vec::new();
        let mut l = layout(None);
        l.rows = 0;
        bad.push(l);
        let mut l = layout(None);
        l.fields.push("u".into());
        bad.push(l);
        let mut l = layout(None);
        l.fields.push("steps".into());
        bad.push(l);
        let mut l = layout(None);
        l.streams[0].name = "../escape".into();
        bad.push(l);
        bad.push(layout(None).with_attribute("created", "yesterday"));
        for l in bad {
            let err = case.sink().begin(&l).unwrap_err();
            assert!(matches!(err, Error::InvalidLayout(_) | Error::InvalidName { .. }), "{}: {err}", case.label);
            assert!(!case.options.path.exists() || !case.readable(), "{}", case.label);
        }
    });
}
