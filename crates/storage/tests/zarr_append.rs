//! Continuing a Zarr store (`--resume`): frames are continued chunk by chunk, so a store
//! whose arrays are chunked or encoded otherwise than the run writes them is refused before
//! anything is written, and a store written with the same settings continues.
#![cfg(feature = "zarr")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{frame, layout, tempdir};
use wgpipe_storage::{Compression, Error, SinkOptions, StreamLayout, open_output, open_sink};

/// The common layout with each stream continuing after `kept` frames of `expected`.
fn continuing(kept: u64) -> StreamLayout {
    let mut l = layout(Some(10));
    for s in &mut l.streams {
        *s = s.clone().with_kept_frames(kept);
    }
    l
}

/// A store of 5 frames of each stream of 10, written with `options` and left incomplete.
fn incomplete(options: &SinkOptions) {
    let l = layout(Some(10));
    let mut sink = open_sink("zarr", options).unwrap();
    sink.begin(&l).unwrap();
    for i in 0..5 {
        for s in 0..2 {
            sink.write(&frame(&l, s, i)).unwrap();
        }
    }
    sink.finish().unwrap();
}

#[test]
fn a_store_chunked_or_encoded_otherwise_is_refused_and_left_as_it_was() {
    let dir = tempdir();
    let path = dir.path().join("s.zarr");
    let written = SinkOptions::new(&path).with_shard_frames(4).with_compression(Compression::Zstd(3));
    incomplete(&written);
    let cases = [
        ("chunk_grid", written.clone().with_shard_frames(1)),
        ("codecs", written.clone().with_compression(Compression::None)),
    ];
    for (key, options) in cases {
        let err = open_sink("zarr", &options.with_append(true)).unwrap().begin(&continuing(3)).unwrap_err();
        assert!(matches!(err, Error::AppendMismatch { .. }), "{key}: {err}");
        let text = err.to_string();
        assert!(text.contains(key) && text.contains("dev0/"), "{key}: {text}");
        let out = open_output(&path).unwrap();
        assert!(out.streams().iter().all(|s| s.frames == 5), "{key}: the refused resume changed the store");
    }
    // The settings that wrote it continue it.
    let l = continuing(3);
    let mut sink = open_sink("zarr", &written.with_append(true)).unwrap();
    sink.begin(&l).unwrap();
    for i in 3..10 {
        for s in 0..2 {
            sink.write(&frame(&l, s, i)).unwrap();
        }
    }
    sink.finish().unwrap();
    let out = open_output(&path).unwrap();
    assert!(out.complete());
    for s in 0..2 {
        assert_eq!(out.streams()[s].frames, 10);
        for i in 0..10 {
            let want = frame(&l, s, i);
            let got: Vec<u8> = (0..out.fields().len()).flat_map(|f| out.read_field(s, f, i).unwrap().bytes).collect();
            assert!(got == want.data, "stream {s} frame {i}");
        }
    }
}
