//! A full disk and a file size limit, for real: every sink (raw, Zarr, HDF5, HDF5 with deflate)
//! writes onto small tmpfs filesystems until ENOSPC, and under `RLIMIT_FSIZE` in a child
//! process, and what it leaves must hold every frame it reported written, bit for bit, say
//! `complete = false`, and open in h5py and `h5dump`.
//!
//! The sizes are not guessed: a first run on a large tmpfs, with the HDF5 sink's space
//! reservation off, records the space the output takes after every frame and after `finish`.
//! From that record each sink gets sizes at which a plain HDF5 library meets ENOSPC in the
//! middle of a frame's data and while its chunk index grows (without the reservation, these
//! sizes leave HDF5 files that h5py cannot read), and, for the other sinks, while `finish`
//! writes the final metadata. HDF5's `finish` takes no new space (checked on the record).
//!
//! Needs root (to mount tmpfs; CI runs as root), `h5dump` (Debian: hdf5-tools) and a python3
//! with h5py and numpy (Debian: python3-h5py python3-numpy). Without them the tests fail and
//! say what to install.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{assert_holds, frame, frame_data, layout, tempdir, test_exe};
use wgpipe_storage::{Compression, DType, FieldSpec, Frame, SinkOptions, StreamLayout, open_output, open_sink};

/// tmpfs page size: the unit tmpfs allocates and limits in.
const PAGE: u64 = 4096;
/// HDF5's default half-rank of chunk index nodes (`H5Pset_istore_k`): a v1 B-tree node holds
/// up to 2 × 32 chunks, so a dataset's chunk index splits when its 65th chunk is added.
const CHUNKS_PER_INDEX_NODE: u64 = 64;

/// The test layout: the common two-stream, two-field layout at 61 × 67, so that a frame's
/// data (16,348 bytes per field) spans several pages, and, not being a multiple of the page,
/// moves the end of the file to a different place in its last page with every frame.
fn big_layout() -> StreamLayout {
    let mut l = layout(None);
    l.fields = ["u", "v"].map(|name| FieldSpec::new(name, DType::F32, [61, 67])).into();
    l
}

/// One sink configuration the tests run.
struct Sinks {
    label: &'static str,
    kind: &'static str,
    compression: Compression,
    chunk_frames: usize,
    /// Single-writer/multiple-reader mode (the HDF5 1.10 format and its chunk index).
    swmr: bool,
}

impl Sinks {
    fn options(&self, path: &Path, reserve: bool) -> SinkOptions {
        SinkOptions::new(path)
            .with_compression(self.compression)
            .with_chunk_frames(self.chunk_frames)
            .with_reserve_space(reserve)
            .with_swmr(self.swmr)
    }

    fn is_hdf5(&self) -> bool {
        self.kind == "hdf5"
    }

    /// Index (in write order) of the frame that adds the 65th chunk of stream 0, and so
    /// splits its chunk indexes.
    fn index_split_write(&self) -> u64 {
        2 * CHUNKS_PER_INDEX_NODE * self.chunk_frames as u64
    }

    /// Frames written in each run: past the index split.
    fn frames(&self) -> u64 {
        self.index_split_write() + 4
    }
}

const SINKS: [Sinks; 5] = [
    Sinks { label: "raw", kind: "raw", compression: Compression::None, chunk_frames: 1, swmr: false },
    // Every chunk and zarr.json replaced through a temporary file: a full disk fails one of
    // them and leaves the previous value.
    Sinks { label: "zarr", kind: "zarr", compression: Compression::None, chunk_frames: 1, swmr: false },
    Sinks { label: "hdf5", kind: "hdf5", compression: Compression::None, chunk_frames: 1, swmr: false },
    Sinks {
        label: "hdf5 deflate:4, 3 frames per chunk",
        kind: "hdf5",
        compression: Compression::Deflate(4),
        chunk_frames: 3,
        swmr: false,
    },
    // One frame per chunk: compressed by the sink, written with direct chunk writes.
    Sinks {
        label: "hdf5 deflate:4, direct chunk writes",
        kind: "hdf5",
        compression: Compression::Deflate(4),
        chunk_frames: 1,
        swmr: false,
    },
];

/// The `k`-th frame written: the streams alternate, 0 first.
fn nth(layout: &StreamLayout, k: u64) -> Frame {
    frame(layout, (k % 2) as usize, k / 2)
}

/// A tmpfs mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(bytes: u64) -> Tmpfs {
        let dir = tempdir();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "wgpipe-test"])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Tmpfs { dir },
            Ok(o) => panic!(
                "cannot mount a {bytes}-byte tmpfs on {}: {}; this test needs root (CI runs as root): \
                 run it as root, e.g. `sudo -E cargo test -p wgpipe-storage --test disk_full`",
                dir.path().display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => panic!("cannot run mount ({e}): install util-linux and run this test as root"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if !Command::new("umount").arg(self.dir.path()).status().is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
        }
    }
}

/// Bytes of storage `path` (a file, or a directory of files) occupies.
fn used(path: &Path) -> u64 {
    let m = std::fs::symlink_metadata(path).unwrap();
    if m.is_dir() { std::fs::read_dir(path).unwrap().map(|e| used(&e.unwrap().path())).sum() } else { m.blocks() * 512 }
}

/// Length of a file, or of the largest file in a directory.
fn length(path: &Path) -> u64 {
    let m = std::fs::symlink_metadata(path).unwrap();
    if m.is_dir() {
        std::fs::read_dir(path).unwrap().map(|e| length(&e.unwrap().path())).max().unwrap_or(0)
    } else {
        m.len()
    }
}

/// Storage and file length of an output written without the space reservation, after
/// `begin` (index 0) and after each frame (index k + 1 after the k-th frame).
struct Growth {
    used: Vec<u64>,
    length: Vec<u64>,
    /// Storage after `finish`.
    finished: u64,
}

impl Growth {
    /// Storage the `k`-th frame added.
    fn added(&self, k: u64) -> u64 {
        self.used[k as usize + 1] - self.used[k as usize]
    }
}

/// [`measure`] of every sink in [`SINKS`] at [`big_layout`], with its [`full_disk_sizes`],
/// computed once per test process.
fn growth_of(which: usize) -> &'static (Growth, Vec<FullDisk>) {
    static GROWTH: [OnceLock<(Growth, Vec<FullDisk>)>; SINKS.len()] = [const { OnceLock::new() }; SINKS.len()];
    GROWTH[which].get_or_init(|| {
        let (sinks, layout) = (&SINKS[which], big_layout());
        let growth = measure(sinks, &layout, sinks.frames());
        let sizes = full_disk_sizes(sinks, &growth);
        (growth, sizes)
    })
}

fn measure(sinks: &Sinks, layout: &StreamLayout, frames: u64) -> Growth {
    let fs = Tmpfs::mount(256 << 20);
    let path = fs.path().join("out");
    let mut sink = open_sink(sinks.kind, &sinks.options(&path, false)).unwrap();
    sink.begin(layout).unwrap();
    let (mut used_, mut length_) = (vec![used(&path)], vec![length(&path)]);
    for k in 0..frames {
        sink.write(&nth(layout, k)).unwrap();
        used_.push(used(&path));
        length_.push(length(&path));
    }
    sink.finish().unwrap();
    Growth { used: used_, length: length_, finished: used(&path) }
}

/// A tmpfs size at which a plain HDF5 library (no reservation) meets ENOSPC in one phase.
#[derive(Debug, Clone, Copy)]
struct FullDisk {
    /// The phase, for messages.
    phase: &'static str,
    /// tmpfs size.
    bytes: u64,
    /// Frames to write.
    frames: u64,
}

/// The tmpfs sizes for `sinks`, computed from `g`.
fn full_disk_sizes(sinks: &Sinks, g: &Growth) -> Vec<FullDisk> {
    // A frame's data goes to disk before the metadata of its flush: one page into the data
    // of a frame whose data spans two pages or more. (Halfway through the run: room for the
    // reservation the protected sink keeps ahead, about ten frames here.)
    let data =
        (sinks.frames() / 2..sinks.frames()).find(|&k| g.added(k) >= 2 * PAGE).expect("no frame takes two pages");
    // The frame that splits the chunk indexes adds index nodes after its data: one page short
    // of what it takes, the last pages of its flush (index nodes) cannot be written.
    let split = sinks.index_split_write();
    if sinks.is_hdf5() {
        let typical = g.added(split - 2);
        assert!(
            g.added(split) >= typical + 2 * PAGE,
            "{}: frame {split} added {} bytes, frame {} {typical}: the chunk index did not split where HDF5's \
             default istore_k says it does, so the sizes below would not test index growth",
            sinks.label,
            g.added(split),
            split - 2,
        );
    }
    let frames = sinks.frames();
    let mut sizes = vec![
        FullDisk { phase: "a frame's data", bytes: g.used[data as usize] + PAGE, frames },
        FullDisk { phase: "chunk index growth", bytes: g.used[split as usize + 1] - PAGE, frames },
    ];
    if sinks.is_hdf5() {
        // `finish` overwrites attributes made at `begin` in place (`hdf5/format.rs`,
        // `set_attr`): it takes no new space, so a full disk cannot stop it.
        let n = frames as usize;
        assert!(
            g.finished <= g.used[n],
            "{}: finish took {} bytes past the last frame's {}: its attributes are not overwritten in place",
            sinks.label,
            g.finished,
            g.used[n]
        );
    } else {
        // The raw sink writes its metadata to a new file in `finish`, Zarr its final
        // `zarr.json`s: a disk holding exactly half the frames fails there.
        let last = frames / 2;
        sizes.push(FullDisk { phase: "the final metadata", bytes: g.used[last as usize + 1], frames: last + 1 });
    }
    sizes
}

/// What one write-until-failure run reported.
#[derive(Debug)]
struct Outcome {
    /// Frames per stream the sink accepted.
    stored: [u64; 2],
    /// The first error, from `write` or `finish`.
    error: Option<String>,
}

/// Writes up to `frames` frames into `path`, stops at the first error, then finishes.
fn write_until_failure(sinks: &Sinks, layout: &StreamLayout, path: &Path, frames: u64, reserve: bool) -> Outcome {
    let mut sink = open_sink(sinks.kind, &sinks.options(path, reserve)).unwrap();
    sink.begin(layout).unwrap_or_else(|e| panic!("{}: begin: {e}", sinks.label));
    let mut stored = [0u64; 2];
    let mut error = None;
    for k in 0..frames {
        match sink.write(&nth(layout, k)) {
            Ok(()) => stored[(k % 2) as usize] += 1,
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    if let Err(e) = sink.finish() {
        error.get_or_insert(e.to_string());
    }
    Outcome { stored, error }
}

/// A python3 that imports h5py and numpy: Debian's own first (the pyenv one early on PATH
/// may lack them), then whichever `python3` is on PATH.
fn python_with_h5py() -> &'static str {
    ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| Command::new(p).args(["-c", "import h5py, numpy"]).output().is_ok_and(|o| o.status.success()))
        .expect(
            "no python3 with h5py and numpy: install them (Debian: apt-get install python3-h5py python3-numpy; \
             elsewhere: python3 -m pip install h5py numpy)",
        )
}

/// Checks the HDF5 file at `path` with h5py and h5dump: both open it, every stream says
/// incomplete and holds exactly `stored` frames, bit for bit, with their steps.
fn check_with_standard_tools(path: &Path, layout: &StreamLayout, stored: &[u64; 2], label: &str) {
    let dump = Command::new("h5dump")
        .arg("-H")
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run h5dump ({e}): install it (Debian: apt-get install hdf5-tools)"));
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.status.success(), "{label}: h5dump -H fails:\n{text}\n{}", String::from_utf8_lossy(&dump.stderr));
    for s in &layout.streams {
        assert!(text.contains(&format!("GROUP \"{}\"", s.name)), "{label}: h5dump shows no group {}:\n{text}", s.name);
    }

    let dump_dir = tempdir();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_hdf5.py");
    let out = Command::new(python_with_h5py()).arg(script).arg(path).arg(dump_dir.path()).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{label}: h5py cannot read {}:\n{said}", path.display());
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["complete"], false, "{label}: root complete, h5py says {said}");
    let fields = layout.fields.len();
    for (si, (info, &n)) in layout.streams.iter().zip(stored).enumerate() {
        let s = &summary["streams"][&info.name];
        assert_eq!(s["complete"], false, "{label}: {} complete, h5py says {said}", info.name);
        let read = |name: String| std::fs::read(dump_dir.path().join(name)).unwrap();
        for (f, field) in layout.fields.iter().enumerate() {
            let want: Vec<u8> = (0..n)
                .flat_map(|i| {
                    let data = frame_data(layout, si, i);
                    let per = data.len() / fields;
                    data[f * per..(f + 1) * per].to_vec()
                })
                .collect();
            let field = &field.name;
            let got = read(format!("{si}.{field}.bin"));
            assert_eq!(got.len(), want.len(), "{label}: h5py reads {} bytes of {}/{field}", got.len(), info.name);
            assert!(got == want, "{label}: h5py reads other bytes in {}/{field}", info.name);
        }
        let steps: Vec<u8> = (0..n).flat_map(|i| (10 * (i + 1) + si as u64).to_le_bytes()).collect();
        assert_eq!(read(format!("{si}.steps.bin")), steps, "{label}: steps of {} through h5py", info.name);
    }
}

/// Checks what a failed run left: an error naming `path` and one of `reasons`, every
/// reported frame readable bit for bit (through wgpipe's reader and, for HDF5, h5py and
/// h5dump), and nothing claiming to be complete.
fn check_failed_output(
    sinks: &Sinks,
    layout: &StreamLayout,
    path: &Path,
    outcome: &Outcome,
    reasons: &[&str],
    label: &str,
) {
    let error = outcome.error.as_deref().unwrap_or_else(|| panic!("{label}: no error, stored {:?}", outcome.stored));
    assert!(
        error.contains(&path.display().to_string()),
        "{label}: the error does not name {}: {error}",
        path.display()
    );
    let lower = error.to_lowercase();
    assert!(reasons.iter().any(|r| lower.contains(r)), "{label}: the error says none of {reasons:?}: {error}");
    assert!(outcome.stored[0] > 0, "{label}: not even one frame fit, the size tests nothing: {error}");
    let output = open_output(path).unwrap_or_else(|e| panic!("{label}: {e}\nafter: {error}"));
    assert_holds(&output, layout, &outcome.stored, label);
    assert!(!output.complete(), "{label}: output says complete");
    assert!(output.streams().iter().all(|s| !s.complete), "{label}: a stream says complete");
    drop(output);
    if sinks.is_hdf5() {
        check_with_standard_tools(path, layout, &outcome.stored, label);
    }
}

#[test]
fn a_full_disk_at_any_point_keeps_every_reported_frame_readable() {
    let layout = big_layout();
    for (which, sinks) in SINKS.iter().enumerate() {
        for &FullDisk { phase, bytes, frames } in &growth_of(which).1 {
            let label = format!("{} on a {bytes}-byte tmpfs (plain HDF5 would fail during {phase})", sinks.label);
            let fs = Tmpfs::mount(bytes);
            let path = fs.path().join("out");
            let outcome = write_until_failure(sinks, &layout, &path, frames, true);
            check_failed_output(sinks, &layout, &path, &outcome, &["no space", "disk full"], &label);
            if sinks.is_hdf5() {
                assert!(outcome.error.as_deref().is_some_and(|e| e.starts_with("disk full")), "{label}: {outcome:?}");
            }
            eprintln!("{label}: stored {:?} of {frames} frames", outcome.stored);
        }
    }
}

/// SWMR files use the HDF5 1.10 format (other object headers, an extensible-array chunk
/// index, paged): a full disk at sizes spread over many frames still stops the sink between
/// frames, with every reported frame readable by h5py and h5dump.
#[test]
fn a_full_disk_stops_a_swmr_file_between_frames() {
    let sinks = Sinks { label: "hdf5 swmr", kind: "hdf5", compression: Compression::None, chunk_frames: 1, swmr: true };
    let mut layout = big_layout();
    for s in &mut layout.streams {
        s.expected_frames = Some(200);
    }
    for bytes in (0..6).map(|i| (1 << 20) + i * (300 << 10) + 3 * PAGE) {
        let label = format!("{} on a {bytes}-byte tmpfs", sinks.label);
        let fs = Tmpfs::mount(bytes);
        let path = fs.path().join("out");
        let outcome = write_until_failure(&sinks, &layout, &path, 400, true);
        check_failed_output(&sinks, &layout, &path, &outcome, &["disk full"], &label);
        eprintln!("{label}: stored {:?} frames", outcome.stored);
    }
}

/// The control: the same sizes, with the HDF5 sink's reservation off, leave files h5py
/// cannot read. So the sizes do strike where HDF5 is fragile, and the test above can fail.
///
/// Some HDF5 sink must be damaged at one size at least, not every sink at every size any
/// more: since the sink writes the superblock's end of allocation ahead of each flush
/// (`hdf5/eoa.rs`) and `finish` overwrites its attributes in place, a flush that cannot write
/// its new index nodes may leave a file h5py reads, and `finish` takes no new space (the
/// uncompressed sink survives both sizes). The test above runs every size with the
/// reservation.
#[test]
fn without_the_reservation_the_same_sizes_damage_hdf5_files() {
    let layout = big_layout();
    let mut damaged = Vec::new();
    for (which, sinks) in SINKS.iter().enumerate().filter(|(_, s)| s.is_hdf5()) {
        for &FullDisk { phase, bytes, frames } in &growth_of(which).1 {
            let label = format!("{} without reservation on a {bytes}-byte tmpfs (ENOSPC during {phase})", sinks.label);
            let fs = Tmpfs::mount(bytes);
            let path = fs.path().join("out");
            let outcome = write_until_failure(sinks, &layout, &path, frames, false);
            assert!(outcome.error.is_some(), "{label}: no error: the size is not small enough");
            let dump_dir = tempdir();
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_hdf5.py");
            let out = Command::new(python_with_h5py()).arg(script).arg(&path).arg(dump_dir.path()).output().unwrap();
            eprintln!(
                "{label}: stored {:?}, h5py {}",
                outcome.stored,
                if out.status.success() { "reads it" } else { "fails" }
            );
            if !out.status.success() {
                damaged.push((sinks.label, phase));
            }
        }
    }
    assert!(
        !damaged.is_empty(),
        "h5py reads every HDF5 sink's file at every size: plain HDF5 survived ENOSPC everywhere, so these sizes \
         no longer test what the reservation protects against"
    );
    eprintln!("damaged without the reservation: {damaged:?}");
}

/// Child side of `a_file_size_limit_...`: writes until failure under the limit its parent
/// set, and prints what happened. Does nothing unless started by the parent.
#[test]
#[ignore = "child process of a_file_size_limit_keeps_every_reported_frame_readable"]
fn file_size_limit_child() {
    let (Ok(which), Ok(path)) = (std::env::var("WGPIPE_TEST_SINKS"), std::env::var("WGPIPE_TEST_OUT")) else {
        return;
    };
    let sinks = &SINKS[which.parse::<usize>().unwrap()];
    let outcome = write_until_failure(sinks, &big_layout(), Path::new(&path), sinks.frames(), true);
    println!("STORED {} {}", outcome.stored[0], outcome.stored[1]);
    println!("ERROR {}", outcome.error.unwrap_or_default().replace('\n', " "));
}

/// Child side of `an_output_laid_out_whole_past_the_file_size_limit_...`: begins an HDF5
/// output of 200 frames per stream, two frames a chunk (laid out whole as holes of the
/// file) under the limit its parent set, with the space reservation on or off
/// (`WGPIPE_TEST_RESERVE`), and prints `begin`'s error.
#[test]
#[ignore = "child process of an_output_laid_out_whole_past_the_file_size_limit_is_refused_before_it_is_written"]
fn laid_out_limit_child() {
    let (Ok(reserve), Ok(path)) = (std::env::var("WGPIPE_TEST_RESERVE"), std::env::var("WGPIPE_TEST_OUT")) else {
        return;
    };
    let mut layout = big_layout();
    layout.streams.iter_mut().for_each(|s| s.expected_frames = Some(200));
    let options = SinkOptions::new(Path::new(&path)).with_reserve_space(reserve == "on").with_chunk_frames(2);
    let mut sink = open_sink("hdf5", &options).unwrap();
    let error = sink.begin(&layout).err().map(|e| e.to_string()).unwrap_or_default();
    println!("BEGIN {}", error.replace('\n', " "));
}

/// An uncompressed output of known length with several frames a chunk is laid out whole as
/// holes when it begins, which sets the file's length to the whole output's: past `ulimit -f`, `begin` refuses it before HDF5
/// writes anything (with SIGXFSZ at its default action, which would kill the process), with
/// the reservation on and off, and no file is left.
#[test]
fn an_output_laid_out_whole_past_the_file_size_limit_is_refused_before_it_is_written() {
    let dir = tempdir();
    for reserve in ["on", "off"] {
        let path = dir.path().join(format!("laid-out-{reserve}.h5"));
        // 1 MiB: two streams of 200 frames of 2 x 16 KB need 13 MB.
        let out = Command::new("sh")
            .arg("-c")
            .arg("ulimit -f 2048; exec \"$0\" --exact laid_out_limit_child --ignored --nocapture --test-threads 1")
            .arg(test_exe())
            .env("WGPIPE_TEST_RESERVE", reserve)
            .env("WGPIPE_TEST_OUT", &path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "reserve {reserve}: child failed ({}):\n{stdout}", out.status);
        let error = stdout.lines().find_map(|l| l.split_once("BEGIN ").map(|(_, e)| e.to_owned())).unwrap_or_default();
        assert!(
            error.starts_with("file size limit reached")
                && error.contains("every frame of the run")
                && error.contains("limit is 1048576 bytes"),
            "reserve {reserve}: begin said {error:?}"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "reserve {reserve}: the refused output left {left:?}");
    }
}

#[test]
fn a_file_size_limit_keeps_every_reported_frame_readable() {
    let layout = big_layout();
    let dir = tempdir();
    // Not the Zarr sink: its files are one chunk or one zarr.json each, so `ulimit -f` stops
    // it only below the size of one chunk, before the first frame; a full disk tests it above.
    for (which, sinks) in SINKS.iter().enumerate().filter(|(_, s)| s.kind != "zarr") {
        let growth = &growth_of(which).0;
        // Limits (in the 512-byte blocks of `ulimit -f`, rounded down) in the middle of a frame's data, at
        // the index split and within the last frame (HDF5's `finish` takes no new space).
        let n = sinks.frames() as usize;
        // (Compressed frames are a few KiB, against the 200 KiB or so of index metadata the
        // sink reserves per frame: the first limit is at least 256 KiB past the half-way
        // length, so that frames fit before it.)
        let limits = [
            growth.length[n / 2] + (layout.fields[0].bytes().unwrap_or_default() as u64 / 2).max(256 << 10),
            growth.length[sinks.index_split_write() as usize] + 512,
            growth.length[n] - 100,
        ];
        let limits: Vec<u64> = limits.iter().map(|l| l / 512).collect();
        // SIGXFSZ ignored: a write past the limit fails with EFBIG. The HDF5 sink must also
        // survive the default action (the process killed), as it never writes past the limit.
        let xfsz = if sinks.is_hdf5() { &["trap '' XFSZ; ", ""][..] } else { &["trap '' XFSZ; "][..] };
        for (run, (blocks, trap)) in limits.iter().flat_map(|b| xfsz.iter().map(move |t| (b, t))).enumerate() {
            let label = format!(
                "{} under ulimit -f {blocks} ({})",
                sinks.label,
                if trap.is_empty() { "SIGXFSZ kills" } else { "SIGXFSZ ignored" }
            );
            let path = dir.path().join(format!("limit-{which}-{run}"));
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("{trap}ulimit -f {blocks}; exec \"$0\" --exact file_size_limit_child --ignored --nocapture --test-threads 1"))
                .arg(test_exe())
                .env("WGPIPE_TEST_SINKS", which.to_string())
                .env("WGPIPE_TEST_OUT", &path)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{label}: child failed ({}):\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let line = |tag: &str| {
                stdout
                    .lines()
                    .find_map(|l| l.find(tag).map(|at| &l[at + tag.len()..]))
                    .unwrap_or_else(|| panic!("{label}: no {tag} in\n{stdout}"))
                    .to_owned()
            };
            let stored: Vec<u64> = line("STORED ").split(' ').map(|n| n.parse().unwrap()).collect();
            let error = line("ERROR ");
            let outcome = Outcome { stored: [stored[0], stored[1]], error: (!error.is_empty()).then_some(error) };
            check_failed_output(sinks, &layout, &path, &outcome, &["file size limit", "file too large"], &label);
        }
    }
}

/// An HDF5 output on a filesystem without fallocate (ramfs) still works: the sink falls back
/// to checking the free space.
#[test]
fn a_filesystem_without_fallocate_still_gets_every_frame() {
    let dir = tempdir();
    let mounted = Command::new("mount").args(["-t", "ramfs", "wgpipe-test"]).arg(dir.path()).output().unwrap();
    assert!(mounted.status.success(), "cannot mount ramfs (needs root): {}", String::from_utf8_lossy(&mounted.stderr));
    let unmount = || Command::new("umount").arg(dir.path()).status();
    let result = std::panic::catch_unwind(|| {
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"x").unwrap();
        let refused = Command::new("fallocate").args(["-n", "-l", "4096"]).arg(&probe).output().unwrap();
        assert!(!refused.status.success(), "ramfs supports fallocate here: this test no longer tests the fallback");
        let layout = big_layout();
        let path = dir.path().join("out.h5");
        let mut sink = open_sink("hdf5", &SinkOptions::new(&path)).unwrap();
        sink.begin(&layout).unwrap();
        for k in 0..20 {
            sink.write(&nth(&layout, k)).unwrap();
        }
        sink.finish().unwrap();
        let output = open_output(&path).unwrap();
        assert_holds(&output, &layout, &[10, 10], "hdf5 on ramfs");
    });
    let _ = unmount();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// The reservation is given back when the file is closed: nothing stays allocated beyond
/// the end of the file.
#[test]
fn finish_gives_the_reserved_space_back() {
    let fs = Tmpfs::mount(64 << 20);
    let layout = big_layout();
    let path: PathBuf = fs.path().join("out.h5");
    let mut sink = open_sink("hdf5", &SinkOptions::new(&path)).unwrap();
    sink.begin(&layout).unwrap();
    for k in 0..4 {
        sink.write(&nth(&layout, k)).unwrap();
    }
    let during = used(&path);
    assert!(
        during > length(&path) + (1 << 20),
        "{during} bytes used by a {}-byte file: nothing reserved",
        length(&path)
    );
    sink.finish().unwrap();
    assert!(
        used(&path) <= length(&path).next_multiple_of(PAGE),
        "{} bytes used by a {}-byte file after finish",
        used(&path),
        length(&path)
    );
}

/// Adding streams to an output on a full disk (what `wgpipe run --resume` does) fails before
/// it changes anything: the streams already there stay complete and readable.
#[test]
fn appending_on_a_full_disk_keeps_the_streams_already_there() {
    let fs = Tmpfs::mount(8 << 20);
    let first = {
        let mut l = big_layout();
        l.streams.iter_mut().for_each(|s| s.expected_frames = Some(4));
        l
    };
    let path = fs.path().join("out.h5");
    let mut sink = open_sink("hdf5", &SinkOptions::new(&path)).unwrap();
    sink.begin(&first).unwrap();
    for k in 0..8 {
        sink.write(&nth(&first, k)).unwrap();
    }
    sink.finish().unwrap();

    // Fill the disk.
    let mut filler = std::fs::File::create(fs.path().join("filler")).unwrap();
    while std::io::Write::write_all(&mut filler, &[7u8; 4096]).is_ok() {}
    drop(filler);

    let mut more = first.clone();
    more.streams.iter_mut().for_each(|s| s.name.push_str("-more"));
    let mut sink = open_sink("hdf5", &SinkOptions::new(&path).with_append(true)).unwrap();
    let err = match sink.begin(&more) {
        Err(e) => e.to_string(),
        Ok(()) => {
            let err = sink.write(&nth(&more, 0)).unwrap_err().to_string();
            sink.finish().unwrap();
            err
        }
    };
    assert!(err.starts_with("disk full") && err.contains(&path.display().to_string()), "{err}");
    let output = open_output(&path).unwrap();
    let kept: Vec<&str> = output.streams().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(kept, ["dev0", "dev-1.b"], "after: {err}");
    assert_holds(&output, &first, &[4, 4], "the streams already there");
    assert!(output.streams().iter().all(|s| s.complete), "after: {err}");
}
