//! A run killed without `finish` leaves an output holding every frame written before the kill.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::process::Command;

use common::{assert_holds, frame, layout, tempdir, test_exe};
use wgpipe_storage::{Compression, SinkOptions, open_output, open_sink};

/// Frames each stream holds when the child aborts.
const K: [u64; 2] = [5, 3];

/// `open` (an HDF5 open of a file this test wrote), retried for up to 5 s while the file is
/// locked: the other tests here start children, and a child between its fork and its exec
/// holds HDF5's lock on a file this process has just closed (the crate's `hdf5::cloexec`
/// explains; its own opens retry the same way).
fn when_unlocked<T>(mut open: impl FnMut() -> hdf5::Result<T>) -> T {
    let start = std::time::Instant::now();
    loop {
        match open() {
            Ok(file) => return file,
            Err(e) if e.to_string().contains("unable to lock file") && start.elapsed().as_secs() < 5 => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Child side: writes `K` frames then aborts the process, as a SIGKILL or a crash would
/// (no destructors, no `finish`). Does nothing unless started by the parent.
#[test]
#[ignore = "child process of killed_runs_leave_every_complete_frame_readable"]
fn crash_child() {
    let (Ok(kind), Ok(path)) = (std::env::var("WGPIPE_TEST_KIND"), std::env::var("WGPIPE_TEST_OUT")) else {
        return;
    };
    let l = layout(if std::env::var("WGPIPE_TEST_UNKNOWN").is_ok() { None } else { Some(10) });
    let swmr = std::env::var("WGPIPE_TEST_SWMR").is_ok();
    let compression = std::env::var("WGPIPE_TEST_COMPRESSION").map_or(Compression::None, |c| c.parse().unwrap());
    let chunk_frames = std::env::var("WGPIPE_TEST_CHUNK_FRAMES").map_or(1, |c| c.parse().unwrap());
    let options = SinkOptions::new(&path).with_swmr(swmr).with_compression(compression).with_chunk_frames(chunk_frames);
    let mut sink = open_sink(&kind, &options).unwrap();
    sink.begin(&l).unwrap();
    for i in 0..K[0] {
        sink.write(&frame(&l, 0, i)).unwrap();
        if i < K[1] {
            sink.write(&frame(&l, 1, i)).unwrap();
        }
    }
    std::process::abort();
}

/// Runs [`crash_child`] writing a `kind` output (SWMR with `swmr`) at `path`, and checks it
/// aborted.
fn killed_writer(kind: &str, path: &std::path::Path, swmr: bool) {
    let mut child = Command::new(test_exe());
    child
        .args(["--exact", "crash_child", "--ignored", "--nocapture"])
        .env("WGPIPE_TEST_KIND", kind)
        .env("WGPIPE_TEST_OUT", path);
    if swmr {
        child.env("WGPIPE_TEST_SWMR", "1");
    }
    let out = child.output().unwrap();
    assert!(!out.status.success(), "{kind}: the child should have aborted");
}

#[test]
fn killed_runs_leave_every_complete_frame_readable() {
    let dir = tempdir();
    // An SWMR file killed while written keeps its "open for writing" flags: wgpipe's reader
    // opens it as an SWMR reader (plain HDF5 readers need `h5clear -s` first).
    let cases = [("raw", false), ("hdf5", false), ("hdf5", true)];
    for (kind, swmr) in cases.into_iter().filter(|(k, _)| *k == "raw" || cfg!(feature = "hdf5")) {
        let path = dir.path().join(format!("killed-{kind}-{swmr}"));
        killed_writer(kind, &path, swmr);
        let output = open_output(&path).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_holds(&output, &layout(Some(10)), &K, kind);
        assert!(!output.complete(), "{kind}");
        assert!(output.streams().iter().all(|s| !s.complete && s.expected_frames == Some(10)));
    }
}

/// A block of metadata a killed SWMR writer left unfinished fails its checksum, and an SWMR
/// reader reads it again and again with sleeps that double: with HDF5's default of 100
/// attempts, `open_output` would not return for hours (CI's `kill_stress ... swmr` hung so).
/// Here the root group's object header of a killed SWMR file is damaged: opening must fail,
/// naming the file, within seconds.
#[cfg(feature = "hdf5")]
#[test]
fn a_killed_swmr_file_with_a_damaged_metadata_block_fails_to_open_at_once() {
    let dir = tempdir();
    let path = dir.path().join("killed-swmr.h5");
    killed_writer("hdf5", &path, true);
    assert!(open_output(&path).is_ok(), "the killed SWMR file opens before it is damaged");
    // Superblock version 3: the root group's object header address is at bytes 36..44; its
    // byte 12 lies past the header's signature, version, flags and times, under its checksum.
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes[8], 3, "an SWMR file has a version 3 superblock");
    let root = usize::try_from(u64::from_le_bytes(bytes[36..44].try_into().unwrap())).unwrap();
    assert_eq!(&bytes[root..root + 4], b"OHDR", "the root group's object header");
    bytes[root + 12] ^= 0xFF;
    std::fs::write(&path, bytes).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let opened = path.clone();
    std::thread::spawn(move || tx.send(open_output(&opened).map(|_| ()).map_err(|e| e.to_string())));
    let result = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("open_output still waits after 20 s");
    let err = result.expect_err("a damaged root object header cannot open");
    assert!(err.contains(&path.display().to_string()), "the error names the file: {err}");
}

/// A killed run's raw and Zarr metadata claim no frame count (the files' lengths and the
/// arrays' shapes give it): raw's `frames` is null, a Zarr stream group has no `frames`; numpy
/// reads raw's data files as the frames written. (xarray reads the killed Zarr store in the
/// zarr-python group: `zarr_python.rs`.)
#[test]
fn a_killed_runs_raw_and_zarr_metadata_claim_no_frame_count() {
    let dir = tempdir();
    for kind in ["raw", "zarr"].into_iter().filter(|k| *k == "raw" || cfg!(feature = "zarr")) {
        let path = dir.path().join(format!("killed-{kind}"));
        let out = Command::new(test_exe())
            .args(["--exact", "crash_child", "--ignored", "--nocapture"])
            .env("WGPIPE_TEST_KIND", kind)
            .env("WGPIPE_TEST_OUT", &path)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{kind}: the child should have aborted");
        let json = |file: std::path::PathBuf| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
        };
        for s in &layout(Some(10)).streams {
            if kind == "raw" {
                let run = json(path.join("run.json"));
                let stream = run["streams"].as_array().unwrap().iter().find(|x| x["name"] == s.name.as_str()).unwrap();
                assert!(stream["frames"].is_null(), "{kind} {}: run.json says {}", s.name, stream["frames"]);
                let field = json(path.join(format!("{}.u.json", s.name)));
                assert!(field["frames"].is_null(), "{kind} {}: the field's JSON says {}", s.name, field["frames"]);
            } else {
                let group = json(path.join(&s.name).join("zarr.json"));
                assert!(group["attributes"].get("frames").is_none(), "{kind} {}: {}", s.name, group["attributes"]);
            }
        }
        // wgpipe's reader still finds every frame written, and so does numpy in raw's files.
        assert_holds(&open_output(&path).unwrap(), &layout(Some(10)), &K, kind);
        if kind == "raw" {
            let script = "import sys, numpy\nfor name, k in zip(('dev0', 'dev-1.b'), map(int, sys.argv[2:])):\n    \
                          n = numpy.fromfile(f'{sys.argv[1]}/{name}.u.bin', '<f4').reshape(-1, 8, 16).shape[0]\n    \
                          assert n == k, (name, n, k)\nprint('ok')";
            let counts = K.map(|k| k.to_string());
            let read = Command::new(common::python()).args(["-c", script]).arg(&path).args(counts).output().unwrap();
            let stdout = String::from_utf8_lossy(&read.stdout);
            assert!(stdout.trim_end() == "ok", "numpy: {stdout}{}", String::from_utf8_lossy(&read.stderr));
        }
    }
}

/// A killed run's HDF5 file, read by h5py and xarray without wgpipe: the frames never
/// written read as NaN and xarray masks them and their steps (`_FillValue`), the `frames`
/// attribute counts the frames written, for the outputs whose chunks are made at `begin`
/// (uncompressed or compressed, one frame a chunk) and those that grow with every frame
/// (unknown length; several compressed frames a chunk). (Uncompressed outputs of several
/// frames a chunk are laid out as holes of the file, which read as zeros: the guide says so.)
#[cfg(feature = "hdf5")]
#[test]
fn a_killed_hdf5_file_shows_the_frames_never_written_as_missing_in_h5py_and_xarray() {
    let python = common::python_choice::python_with(&["h5py", "numpy", "xarray", "h5netcdf"]);
    let dir = tempdir();
    let cases: [(&str, &[(&str, &str)]); 5] = [
        ("uncompressed", &[]),
        ("deflate", &[("WGPIPE_TEST_COMPRESSION", "deflate:4")]),
        ("unknown-length", &[("WGPIPE_TEST_UNKNOWN", "1")]),
        ("deflate-unknown-length", &[("WGPIPE_TEST_UNKNOWN", "1"), ("WGPIPE_TEST_COMPRESSION", "deflate:4")]),
        (
            "deflate-several-frames-a-chunk",
            &[("WGPIPE_TEST_COMPRESSION", "deflate:4"), ("WGPIPE_TEST_CHUNK_FRAMES", "4")],
        ),
    ];
    for (label, env) in cases {
        let path = dir.path().join(format!("{label}.h5"));
        let out = Command::new(test_exe())
            .args(["--exact", "crash_child", "--ignored", "--nocapture"])
            .env("WGPIPE_TEST_KIND", "hdf5")
            .env("WGPIPE_TEST_OUT", &path)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{label}: the child should have aborted");
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_killed.py");
        let read = Command::new(&python)
            .arg(script)
            .arg(&path)
            .args(layout(None).streams.iter().zip(K).map(|(s, k)| format!("{}:{k}", s.name)))
            .output()
            .unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&read.stdout), String::from_utf8_lossy(&read.stderr));
        assert!(read.status.success() && said.trim_end().ends_with("ok"), "{label}:\n{said}");
    }
}

/// Runs [`crash_child`] for an HDF5 file at `path`: 5 and 3 frames of 10 stored, then abort.
#[cfg(feature = "hdf5")]
fn killed_hdf5(path: &std::path::Path) {
    let out = Command::new(test_exe())
        .args(["--exact", "crash_child", "--ignored", "--nocapture"])
        .env("WGPIPE_TEST_KIND", "hdf5")
        .env("WGPIPE_TEST_OUT", path)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the child should have aborted");
}

/// `--resume` of a killed uncompressed HDF5 file (laid out whole): streams that continue
/// from their kept frames, with their attributes unchanged, are continued in place (the
/// same file, no copy); a stream restarted with other attributes changes the structure,
/// which is done on a copy renamed over the file, and the stream takes the new attributes.
/// Either way the file ends holding exactly the frames of a run never killed.
#[cfg(feature = "hdf5")]
#[test]
fn a_killed_file_laid_out_whole_is_resumed_in_place_or_on_a_copy() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempdir();
    // (restart a stream with other attributes, the file of an older version whose stream
    // groups got `frames` only at finish): both change the structure, so both go on a copy.
    for (restart_with_other_attributes, older) in [(false, false), (true, false), (false, true)] {
        let path = dir.path().join(format!("resumed-{restart_with_other_attributes}-{older}.h5"));
        killed_hdf5(&path);
        if older {
            let f = when_unlocked(|| hdf5::File::open_rw(&path));
            for stream in &layout(Some(10)).streams {
                f.group(&stream.name).unwrap().delete_attr("frames").unwrap();
            }
        }
        let frames = |ds: &str| when_unlocked(|| hdf5::File::open(&path)).dataset(ds).unwrap().shape()[0];
        assert_eq!(frames("dev0/u"), 10, "a killed file keeps its datasets laid out whole");
        let inode = std::fs::metadata(&path).unwrap().ino();
        let mut l = layout(Some(10));
        l.streams[1].kept_frames = K[1];
        if restart_with_other_attributes {
            l.streams[0].attributes.insert("du".into(), 0.5.into());
        } else {
            l.streams[0].kept_frames = K[0];
        }
        let mut sink = open_sink("hdf5", &SinkOptions::new(&path).with_append(true)).unwrap();
        sink.begin(&l).unwrap();
        let copied = std::fs::metadata(&path).unwrap().ino() != inode;
        assert_eq!(copied, restart_with_other_attributes || older, "in place unless the structure changes");
        let first = if restart_with_other_attributes { 0 } else { K[0] };
        for i in first..10 {
            sink.write(&frame(&l, 0, i)).unwrap();
        }
        for i in K[1]..10 {
            sink.write(&frame(&l, 1, i)).unwrap();
        }
        sink.finish().unwrap();
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("wgpipe-creating"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let out = open_output(&path).unwrap();
        assert_holds(&out, &l, &[10, 10], "resumed");
        assert!(out.complete());
        let f = when_unlocked(|| hdf5::File::open(&path));
        let counts: Vec<i64> = l
            .streams
            .iter()
            .map(|s| f.group(&s.name).unwrap().attr("frames").unwrap().read_scalar().unwrap())
            .collect();
        assert_eq!(counts, [10, 10], "frames written by finish");
    }
}

/// An HDF5 sink with `options`, begun on `l`, holding `frames` frames of both streams, not
/// finished.
#[cfg(feature = "hdf5")]
fn begun_with_frames(
    options: &SinkOptions,
    l: &wgpipe_storage::StreamLayout,
    frames: u64,
) -> Box<dyn wgpipe_storage::Sink> {
    let mut sink = open_sink("hdf5", options).unwrap();
    sink.begin(l).unwrap();
    for i in 0..frames {
        sink.write(&frame(l, 0, i)).unwrap();
        sink.write(&frame(l, 1, i)).unwrap();
    }
    sink
}

/// Offsets of the chunk index nodes in the HDF5 file `bytes` (v1 B-tree nodes of raw data
/// chunks: the signature `TREE`, then node type 1).
#[cfg(feature = "hdf5")]
fn chunk_index_nodes(bytes: &[u8]) -> Vec<usize> {
    bytes.windows(5).enumerate().filter(|(_, w)| w[..4] == *b"TREE" && w[4] == 1).map(|(at, _)| at).collect()
}

/// A chunk of several compressed frames is rewritten as new space while its index entry
/// changes in place, and a growing stream adds entries to nodes that describe frames already
/// stored; Linux cuts a killed `pwrite` at a page boundary: every chunk index node of such an
/// output must start a page and fit in it, so that a kill leaves a node all old or all new,
/// never an entry with the new chunk's size and the old chunk's address. Fields of three axes
/// (the most a field has: datasets of four) have the largest nodes, 3656 bytes.
#[cfg(feature = "hdf5")]
#[test]
fn rewritten_hdf5_index_nodes_each_lie_in_one_page() {
    use wgpipe_storage::{Compression, DType, FieldSpec};
    let dir = tempdir();
    let deflate = Compression::Deflate(4);
    let three_axes = |expected| {
        let mut l = layout(expected);
        l.fields = ["u", "v"].map(|name| FieldSpec::new(name, DType::F32, [3, 4, 5])).into();
        l
    };
    // Several frames per chunk, of known and unknown length; one frame per chunk growing,
    // compressed and not; fields of three axes, several frames per chunk.
    let cases = [
        ("several", deflate, 4, layout(Some(40))),
        ("several-growing", deflate, 4, layout(None)),
        ("one-growing", deflate, 1, layout(None)),
        ("uncompressed-growing", Compression::None, 1, layout(None)),
        ("three-axes-several", deflate, 4, three_axes(Some(40))),
        ("three-axes-several-growing", deflate, 4, three_axes(None)),
    ];
    for (label, compression, chunk_frames, l) in cases {
        let path = dir.path().join(format!("{label}.h5"));
        let options = SinkOptions::new(&path).with_compression(compression).with_chunk_frames(chunk_frames);
        let mut sink = begun_with_frames(&options, &l, 24);
        // Flushed after every frame: what a kill now would leave.
        let nodes = chunk_index_nodes(&std::fs::read(&path).unwrap());
        assert!(nodes.len() >= 6, "{label}: {} chunk index nodes: one per dataset expected", nodes.len());
        let off_page: Vec<_> = nodes.iter().filter(|&&at| at % 4096 != 0).collect();
        assert!(off_page.is_empty(), "{label}: index nodes not at a page: {off_page:?} of {nodes:?}");
        sink.finish().unwrap();
        // Each node fits in its page: 24 bytes of header, 2k + 1 keys (chunk size, filter
        // mask, an offset per dataset axis and one more, 8 bytes each), 2k child addresses.
        let k = u64::from(when_unlocked(|| hdf5::File::open(&path)).create_plist().unwrap().istore_k());
        let rank = l.fields.iter().map(|f| f.shape.len() + 1).max().unwrap() as u64;
        let node = 24 + (2 * k + 1) * (8 + (rank + 1) * 8) + 2 * k * 8;
        assert!(node <= 4096, "{label}: a chunk index node of {node} bytes spans two pages");
    }
}

/// Offsets of the checksummed metadata blocks HDF5 writes in an SWMR file `bytes`: object
/// headers and their continuations, and the extensible arrays indexing the chunks (header,
/// index block, super blocks, data blocks).
#[cfg(feature = "hdf5")]
fn checksummed_blocks(bytes: &[u8]) -> Vec<(usize, String)> {
    const SIGNATURES: [&[u8; 4]; 6] = [b"OHDR", b"OCHK", b"EAHD", b"EAIB", b"EASB", b"EADB"];
    let at =
        |(at, w): (usize, &[u8])| SIGNATURES.iter().any(|s| w == *s).then(|| (at, String::from_utf8_lossy(w).into()));
    bytes.windows(4).enumerate().filter_map(at).collect()
}

/// An SWMR file is in HDF5 1.10's format, where every block of metadata is checksummed, and
/// a dataset's object header and chunk index blocks are rewritten in place at every frame:
/// a kill that cut such a write at a page boundary would fail the block's checksum and lose
/// every chunk it names, reported frames' too (`kill_stress ... deflate,chunk_frames=4,swmr`
/// did, through an index block across a page boundary). Every block must start a page.
#[cfg(feature = "hdf5")]
#[test]
fn an_swmr_files_metadata_blocks_each_start_a_page() {
    let dir = tempdir();
    for (label, compression, chunk_frames) in
        [("deflate-several", Compression::Deflate(4), 4), ("uncompressed", Compression::None, 1)]
    {
        let path = dir.path().join(format!("{label}.h5"));
        let options =
            SinkOptions::new(&path).with_swmr(true).with_compression(compression).with_chunk_frames(chunk_frames);
        let l = layout(Some(40));
        // Past the index block's 4 entries into the first data blocks.
        let mut sink = begun_with_frames(&options, &l, 24);
        let blocks = checksummed_blocks(&std::fs::read(&path).unwrap());
        let kinds = |k: &str| blocks.iter().filter(|(_, s)| s == k).count();
        assert!(kinds("OHDR") >= 4 && kinds("EAHD") >= 4 && kinds("EADB") >= 1, "{label}: blocks found: {blocks:?}");
        let off_page: Vec<_> = blocks.iter().filter(|(at, _)| at % 4096 != 0).collect();
        assert!(off_page.is_empty(), "{label}: blocks not at a page: {off_page:?} of {blocks:?}");
        sink.finish().unwrap();
    }
}
