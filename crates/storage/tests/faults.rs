//! Bad input: existing outputs, missing directories, unknown sinks and options. (A full disk
//! and a file size limit: tests/disk_full.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{assert_holds, cases, frame, layout, tempdir};
use wgpipe_storage::{Error, SinkOptions, open_sink};

#[test]
fn an_existing_output_is_refused_and_left_alone() {
    let dir = tempdir();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let path = &case.options.path;
        if case.kind == "raw" {
            std::fs::create_dir(path).unwrap();
            std::fs::write(path.join("keep.bin"), b"old").unwrap();
        } else {
            std::fs::write(path, b"old").unwrap();
        }
        let err = case.sink().begin(&layout(None)).unwrap_err();
        assert!(matches!(err, Error::OutputExists(_)), "{}: {err}", case.label);
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        let old = if case.kind == "raw" { path.join("keep.bin") } else { path.clone() };
        assert_eq!(std::fs::read(old).unwrap(), b"old", "{}", case.label);
    }
}

#[test]
fn overwrite_replaces_an_old_output() {
    let dir = tempdir();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let l = layout(None);
        for n in [3, 1] {
            let mut sink = open_sink(case.kind, &case.options.clone().with_overwrite(true)).unwrap();
            sink.begin(&l).unwrap();
            for i in 0..n {
                sink.write(&frame(&l, 0, i)).unwrap();
            }
            sink.finish().unwrap();
        }
        assert_holds(&case.output(), &l, &[1, 0], case.label);
    }
}

#[test]
fn overwrite_never_replaces_something_that_is_not_an_output() {
    let dir = tempdir();
    let foreign = dir.path().join("home");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"precious").unwrap();
    for kind in ["raw", "hdf5"].into_iter().filter(|k| *k == "raw" || cfg!(feature = "hdf5")) {
        let options = SinkOptions::new(&foreign).with_overwrite(true);
        let err = open_sink(kind, &options).unwrap().begin(&layout(None)).unwrap_err();
        assert!(matches!(err, Error::CannotReplace { .. }), "{kind}: {err}");
        assert_eq!(std::fs::read(foreign.join("notes.txt")).unwrap(), b"precious");
    }
}

#[test]
fn a_missing_parent_directory_is_named_and_nothing_is_created() {
    let dir = tempdir();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let missing = dir.path().join("no-such-dir");
        let mut options = case.options.clone();
        options.path = missing.join("out");
        let err = open_sink(case.kind, &options).unwrap().begin(&layout(None)).unwrap_err();
        assert!(matches!(err, Error::MissingParent(ref p) if *p == missing), "{}: {err}", case.label);
        assert!(err.to_string().contains("no-such-dir"), "{err}");
        assert!(!missing.exists());
    }
}

#[test]
fn sink_names_and_options_are_checked_up_front() {
    let err = open_sink("tape", &SinkOptions::default()).err().unwrap();
    assert!(matches!(err, Error::UnknownSink(..)), "{err}");
    assert!(err.to_string().contains("null, raw, hdf5, zarr, adios2"), "{err}");
    assert_eq!(wgpipe_storage::SINK_NAMES, ["null", "raw", "hdf5", "zarr", "adios2"]);
    let zero = SinkOptions::new("x").with_chunk_frames(0);
    assert!(matches!(open_sink("raw", &zero).err().unwrap(), Error::InvalidOptions(_)));
    // zstd is a Zarr codec: the HDF5 sink names the values it takes instead.
    let zstd = SinkOptions::new("x.h5").with_compression("zstd".parse().unwrap());
    if cfg!(feature = "hdf5") {
        let err = open_sink("hdf5", &zstd).err().unwrap();
        assert!(err.to_string().contains("blosc-zstd"), "{err}");
    }
    let zero = SinkOptions::new("x").with_shard_frames(0);
    assert!(matches!(open_sink("zarr", &zero).err().unwrap(), Error::InvalidOptions(_)));
    // A shard too large to hold in memory is refused at begin, nothing created.
    if cfg!(feature = "zarr") {
        let dir = tempdir();
        let huge = SinkOptions::new(dir.path().join("s.zarr")).with_shard_frames(usize::MAX / 2);
        let err = open_sink("zarr", &huge).unwrap().begin(&layout(None)).unwrap_err();
        assert!(matches!(err, Error::InvalidOptions(_)) && err.to_string().contains("shard_frames"), "{err}");
        assert!(!dir.path().join("s.zarr").exists());
    }
    let hdf5 = open_sink("hdf5", &SinkOptions::new("x.h5"));
    if cfg!(feature = "hdf5") {
        assert!(hdf5.is_ok());
    } else {
        let err = hdf5.err().unwrap();
        assert!(matches!(err, Error::FeatureDisabled { .. }), "{err}");
        assert!(err.to_string().contains("feature `hdf5`"), "{err}");
    }
    for (text, ok) in [
        ("none", true),
        ("deflate", true),
        ("deflate:9", true),
        ("deflate:0", false),
        ("lz4", false),
        ("blosc-lz4", true),
        ("blosc-lz4:1", true),
        ("blosc-zstd:9", true),
        ("blosc-zstd:10", false),
        ("zstd", true),
        ("zstd:7", true),
        ("zstd:0", false),
        ("gzip", true),
        ("gzip:2", true),
        ("blosc", false),
        ("none:3", false),
    ] {
        let parsed = text.parse::<wgpipe_storage::Compression>();
        assert_eq!(parsed.is_ok(), ok, "{text}");
        if let Ok(c) = parsed {
            assert_eq!(c.to_string().parse::<wgpipe_storage::Compression>().unwrap(), c, "{text} round trip");
        }
    }
    let err = "zip".parse::<wgpipe_storage::Compression>().unwrap_err().to_string();
    assert!(err.contains("blosc-lz4") && err.contains("blosc-zstd"), "{err}");
    assert_eq!("blosc-lz4".parse::<wgpipe_storage::Compression>().unwrap().to_string(), "blosc-lz4:5");
}

/// Without cargo feature `blosc`, a blosc compression is refused by `open_sink` and by the
/// HDF5 sink's `begin`, with a message saying how to rebuild, and no file is created.
#[cfg(all(feature = "hdf5", not(feature = "blosc")))]
#[test]
fn blosc_without_the_feature_is_refused_and_creates_nothing() {
    use wgpipe_storage::{Compression, Hdf5Sink, Sink};
    let dir = tempdir();
    for c in [Compression::BloscLz4(5), Compression::BloscZstd(3)] {
        let path = dir.path().join("out.h5");
        let options = SinkOptions::new(&path).with_compression(c);
        let err = open_sink("hdf5", &options).err().unwrap();
        assert!(matches!(err, Error::InvalidOptions(_)), "{err}");
        let text = err.to_string();
        assert!(text.contains("built without the `blosc` feature: rebuild with `--features blosc`"), "{text}");
        let mut sink = Hdf5Sink::new(options);
        let err = sink.begin(&layout(None)).unwrap_err();
        assert!(err.to_string().contains("--features blosc"), "{err}");
        assert!(!path.exists(), "{c}: {} was created", path.display());
    }
    // The raw sink ignores compression, so it does not care.
    let raw = SinkOptions::new(dir.path().join("raw")).with_compression(Compression::BloscLz4(5));
    assert!(open_sink("raw", &raw).is_ok());
}
