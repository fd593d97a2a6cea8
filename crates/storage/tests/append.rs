//! Appending to an existing output (`SinkOptions::append`, what `wgpipe run --resume` uses):
//! incomplete streams are rewritten, complete ones left untouched, new ones added.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly; the shared helpers use expect")]

mod common;

use common::{COLS, ROWS, assert_holds, cases, field_data, fields, frame, frame_data, layout};
use wgpipe_storage::{DType, Error, FieldSpec, Output, Sink, StreamInfo, StreamLayout, open_output, open_sink};

/// The bytes of every field of every frame of stream `s` of `out`.
fn stream_bytes(out: &Output, s: usize) -> Vec<Vec<u8>> {
    (0..out.streams()[s].frames)
        .flat_map(|i| (0..out.fields().len()).map(move |f| (i, f)))
        .map(|(i, f)| out.read_field(s, f, i).unwrap().bytes)
        .collect()
}

/// The run a resume adds: the incomplete stream again and a new one.
fn resume_layout() -> StreamLayout {
    StreamLayout::new(fields())
        .with_stream(StreamInfo::new("dev-1.b").with_attribute("kernel", "gray-scott").with_expected_frames(3))
        .with_stream(StreamInfo::new("extra").with_expected_frames(3))
}

#[test]
fn append_rewrites_incomplete_streams_and_keeps_complete_ones() {
    let dir = tempfile::tempdir().unwrap();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let label = case.label;
        // First run: stream 0 complete (3 of 3 frames), stream 1 stopped after 1 frame.
        let first = layout(Some(3));
        let mut sink = case.sink();
        sink.begin(&first).unwrap();
        for i in 0..3 {
            sink.write(&frame(&first, 0, i)).unwrap();
        }
        sink.write(&frame(&first, 1, 0)).unwrap();
        sink.finish().unwrap();
        let before = case.output();
        assert!(before.streams()[0].complete && !before.streams()[1].complete, "{label}");
        let kept = stream_bytes(&before, 0);
        drop(before);

        // Resume: the incomplete stream and a new one.
        let second = resume_layout();
        let options = case.options.clone().with_append(true);
        let mut sink = open_sink(case.kind, &options).unwrap();
        sink.begin(&second).unwrap();
        for i in 0..3 {
            sink.write(&frame(&second, 0, i)).unwrap();
            sink.write(&frame(&second, 1, i)).unwrap();
        }
        assert_eq!(sink.finish().unwrap().frames, 6, "{label}");

        let out = open_output(&case.options.path).unwrap();
        let names: Vec<&str> = out.streams().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["dev0", "dev-1.b", "extra"], "{label}");
        assert!(out.complete(), "{label}: every stream is complete now");
        assert!(out.streams().iter().all(|s| s.complete && s.frames == 3), "{label}: {:?}", out.streams());
        assert_eq!(stream_bytes(&out, 0), kept, "{label}: the complete stream is untouched");
        assert_eq!(out.streams()[0].attributes, first.streams[0].attributes, "{label}");
        for (s, si) in [(1, 0), (2, 1)] {
            for i in 0..3 {
                for field in 0..second.fields.len() {
                    let got = out.read_field(s, field, i).unwrap().bytes;
                    assert_eq!(got, field_data(&second, si, field, i), "{label}: stream {s} frame {i} field {field}");
                }
            }
            assert_eq!(out.steps(s).unwrap(), (0..3).map(|i| 10 * (i + 1) + si as u64).collect::<Vec<_>>());
        }
    }
}

#[test]
fn append_refuses_complete_streams_and_other_layouts_and_leaves_the_output_alone() {
    let dir = tempfile::tempdir().unwrap();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let label = case.label;
        let first = layout(Some(2));
        let mut sink = case.sink();
        sink.begin(&first).unwrap();
        for f in common::interleaved(&first, 2) {
            sink.write(&f).unwrap();
        }
        sink.finish().unwrap();
        let before = stream_bytes(&case.output(), 1);
        let options = case.options.clone().with_append(true);

        let again = StreamLayout::new(fields()).with_stream(StreamInfo::new("dev0").with_expected_frames(2));
        let err = open_sink(case.kind, &options).unwrap().begin(&again).unwrap_err();
        assert!(matches!(err, Error::StreamComplete { ref stream, .. } if stream == "dev0"), "{label}: {err}");

        let other_fields = StreamLayout::new(fields()[1..].to_vec()).with_stream(StreamInfo::new("x"));
        let err = open_sink(case.kind, &options).unwrap().begin(&other_fields).unwrap_err();
        assert!(matches!(err, Error::AppendMismatch { .. }), "{label}: {err}");
        assert!(err.to_string().contains("fields"), "{label}: {err}");

        for (what, changed, says) in [
            ("grid", FieldSpec::new("u", DType::F32, [ROWS + 1, COLS]), "float32 [9, 16]"),
            ("dtype", FieldSpec::new("u", DType::F64, [ROWS, COLS]), "float64 [8, 16]"),
            (
                "axis names",
                FieldSpec::new("u", DType::F32, [ROWS, COLS]).with_dims(["row", "col"]),
                "[\"row\", \"col\"]",
            ),
        ] {
            let mut f = fields();
            f[0] = changed;
            let other = StreamLayout::new(f).with_stream(StreamInfo::new("x"));
            let err = open_sink(case.kind, &options).unwrap().begin(&other).unwrap_err();
            assert!(matches!(err, Error::AppendMismatch { .. }), "{label}: other {what}: {err}");
            assert!(err.to_string().contains(says), "{label}: other {what}: {err}");
        }

        let out = case.output();
        assert_eq!(out.streams().len(), 2, "{label}");
        assert!(out.complete(), "{label}");
        assert_eq!(stream_bytes(&out, 1), before, "{label}");
    }
}

#[test]
fn append_without_an_output_creates_one() {
    let dir = tempfile::tempdir().unwrap();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let l = layout(Some(1));
        let mut sink = open_sink(case.kind, &case.options.clone().with_append(true)).unwrap();
        sink.begin(&l).unwrap();
        sink.write(&frame(&l, 0, 0)).unwrap();
        sink.write(&frame(&l, 1, 0)).unwrap();
        sink.finish().unwrap();
        common::assert_holds(&case.output(), &l, &[1, 1], case.label);
    }
}

#[cfg(feature = "hdf5")]
#[test]
fn append_to_an_output_of_the_other_sink_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let all = cases(dir.path());
    let raw = all.iter().find(|c| c.kind == "raw").expect("a raw case");
    let h5 = all.iter().find(|c| c.kind == "hdf5").expect("an hdf5 case");
    for (writer, appender, says) in [(raw, "hdf5", "not a Hdf5 output"), (h5, "raw", "not a Raw output")] {
        let l = layout(Some(1));
        let mut sink = writer.sink();
        sink.begin(&l).unwrap();
        sink.finish().unwrap();
        let options = writer.options.clone().with_append(true);
        let err = open_sink(appender, &options).unwrap().begin(&l).unwrap_err();
        assert!(matches!(err, Error::AppendMismatch { .. }), "{appender} onto {}: {err}", writer.label);
        assert!(err.to_string().contains(says), "{appender} onto {}: {err}", writer.label);
    }
}

/// The first run left stream 0 with 7 frames and stream 1 with 5, of which those after the
/// kept ones (4 and 2: inside a chunk of 3 or 4 frames, a shard, a steps chunk) are wrong;
/// the continuing run cuts them and writes the rest: the output is then exactly the
/// uninterrupted run's.
#[test]
fn append_continues_streams_after_their_kept_frames() {
    let dir = tempfile::tempdir().unwrap();
    const TOTAL: u64 = 9;
    const WRITTEN: [u64; 2] = [7, 5];
    const KEPT: [u64; 2] = [4, 2];
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let label = case.label;
        let whole = layout(Some(TOTAL));
        let mut sink = case.sink();
        sink.begin(&whole).unwrap();
        for s in 0..2 {
            for i in 0..WRITTEN[s] {
                let mut f = frame(&whole, s, i);
                if i >= KEPT[s] {
                    // What a killed run wrote after its checkpoint: to be cut, never kept.
                    f = wgpipe_storage::Frame::new(s, i, 999, frame_data(&whole, 1 - s, i + 100));
                }
                sink.write(&f).unwrap();
            }
        }
        sink.finish().unwrap();

        let mut continued = whole.clone();
        for (s, kept) in continued.streams.iter_mut().zip(KEPT) {
            s.kept_frames = kept;
        }
        let options = case.options.clone().with_append(true);
        let mut sink = open_sink(case.kind, &options).unwrap();
        sink.begin(&continued).unwrap();
        // Cut before any new frame: a kill now leaves exactly the kept frames.
        assert_holds(&case.output(), &whole, &KEPT, &format!("{label}, cut"));
        for i in 0..TOTAL {
            for (s, kept) in KEPT.into_iter().enumerate() {
                if i >= kept {
                    sink.write(&frame(&whole, s, i)).unwrap();
                }
            }
        }
        let summary = sink.finish().unwrap();
        assert_eq!(summary.frames, 2 * TOTAL - KEPT[0] - KEPT[1], "{label}: frames written by the continuing run");
        let out = case.output();
        assert_holds(&out, &whole, &[TOTAL, TOTAL], label);
        assert!(out.complete() && out.streams().iter().all(|s| s.complete), "{label}");
    }
}

#[test]
fn kept_frames_need_an_appending_sink_and_frames_to_keep() {
    let dir = tempfile::tempdir().unwrap();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let label = case.label;
        let mut keeps = layout(Some(5));
        keeps.streams[1].kept_frames = 3;
        // Not appending: refused before anything is created.
        let e = case.sink().begin(&keeps).unwrap_err();
        assert!(matches!(e, Error::InvalidLayout(_)) && e.to_string().contains("dev-1.b"), "{label}: {e}");
        assert!(!case.options.path.exists(), "{label}");
        let appending = case.options.clone().with_append(true);
        // Appending to nothing: there is nothing to keep.
        let e = open_sink(case.kind, &appending).unwrap().begin(&keeps).unwrap_err();
        assert!(e.to_string().contains("continues after 3 frames"), "{label}: {e}");
        // Appending to a stream holding fewer frames than kept.
        let mut sink = case.sink();
        sink.begin(&layout(Some(5))).unwrap();
        sink.write(&frame(&keeps, 1, 0)).unwrap();
        sink.finish().unwrap();
        let e = open_sink(case.kind, &appending).unwrap().begin(&keeps).unwrap_err();
        assert!(e.to_string().contains("holds 1 frames, fewer than the 3"), "{label}: {e}");
        assert_holds(&case.output(), &layout(Some(5)), &[0, 1], label);
        // More kept than expected.
        keeps.streams[1].kept_frames = 6;
        let e = open_sink(case.kind, &appending).unwrap().begin(&keeps).unwrap_err();
        assert!(e.to_string().contains("keeps 6 frames but expects 5"), "{label}: {e}");
    }
}

/// Streams an append creates again in an HDF5 file get version 1 object headers, as in a new
/// file: HDF5 opening a file with a version 2 superblock (the sink's files have one) would
/// give them version 2 headers, checksummed whole, and a kill that cuts the in-place rewrite
/// of a growing dataset's header at a page boundary then leaves a dataset that does not open.
#[cfg(feature = "hdf5")]
#[test]
fn streams_an_hdf5_append_creates_have_the_headers_of_a_new_file() {
    use wgpipe_storage::{Compression, SinkOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.h5");
    // Several frames per chunk: the datasets grow, their headers rewritten at every frame.
    let options = SinkOptions::new(&path).with_compression(Compression::Deflate(4)).with_chunk_frames(4);
    let first = layout(Some(10));
    let mut sink = open_sink("hdf5", &options).unwrap();
    sink.begin(&first).unwrap();
    for i in 0..3 {
        sink.write(&frame(&first, 0, i)).unwrap();
        sink.write(&frame(&first, 1, i)).unwrap();
    }
    sink.finish().unwrap();
    let version_2_headers = |path: &std::path::Path| {
        let bytes = std::fs::read(path).unwrap();
        bytes.windows(4).filter(|w| *w == b"OHDR" || *w == b"OCHK").count()
    };
    assert_eq!(version_2_headers(&path), 0, "a new file");
    let mut sink = open_sink("hdf5", &options.clone().with_append(true)).unwrap();
    sink.begin(&first).unwrap();
    for i in 0..5 {
        sink.write(&frame(&first, 0, i)).unwrap();
    }
    assert_eq!(version_2_headers(&path), 0, "while appending");
    sink.finish().unwrap();
    assert_eq!(version_2_headers(&path), 0, "appended");
    let out = open_output(&path).unwrap();
    assert_eq!(out.streams().iter().map(|s| s.frames).collect::<Vec<_>>(), [5, 0], "stream 1 begins again");
}
