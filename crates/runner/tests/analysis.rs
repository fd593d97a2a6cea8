//! `[analysis]` as a user runs it: reductions, PDFs and downsampled fields computed on the
//! device, stored beside the fields, checked from outside Rust against a numpy recomputation
//! written from the tutorial's definition (crates/runner/tests/python/analysis_check.py);
//! every sink that reads back stores the same bytes; wrong settings are refused at their key.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use wgpipe::storage::{DType, open_output};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// A small 3-D Gray-Scott run with noise, u and v stored and analysed.
const CONFIG: &str = r#"
[kernel]
name = "gray-scott-3d"
params = { noise = 0.02 }
[grid]
shape = [8, 12, 10]
[run]
frames = 4
steps_per_frame = 30
[devices]
select = [0]
[output]
fields = ["u", "v"]
[analysis]
fields = ["u", "v"]
pdf_bins = 100
downsample = 3
"#;

fn run(dir: &Path, config: &str, sets: &[&str]) -> std::process::Output {
    run_with(dir, config, sets, &[])
}

/// `wgpipe run` of `config` in `dir` with `--set` `sets` and other `flags`.
fn run_with(dir: &Path, config: &str, sets: &[&str], flags: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("run.toml"), config).unwrap();
    let mut args = vec!["run", "run.toml", "--progress", "none"];
    args.extend_from_slice(flags);
    for s in sets {
        args.extend(["--set", s]);
    }
    common::cli::wgpipe(dir, &args)
}

#[test]
fn pdfs_and_reductions_equal_a_numpy_recomputation_from_the_stored_fields() {
    let python = common::python::python_with(&["h5py", "numpy", "xarray", "h5netcdf"]);
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), CONFIG, &["output.path=\"a.h5\""]);
    assert!(out.status.success(), "{}", common::cli::text(&out));
    let script = repo("crates/runner/tests/python/analysis_check.py");
    let check =
        Command::new(python).arg(script).arg(dir.path().join("a.h5")).args(["u,v", "100", "3"]).output().unwrap();
    let text = common::cli::text(&check);
    assert!(check.status.success(), "the analysis differs from numpy's:\n{text}");
    assert!(text.contains("4 frames of 2 fields checked") && text.trim_end().ends_with("ok"), "{text}");
    assert!(text.contains("u_pdf dims ('time', 'z', 'bin')"), "xarray names the PDF's axes:\n{text}");
}

#[test]
fn every_sink_stores_the_same_reductions_with_their_types_and_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for (sink, path) in [("hdf5", "a.h5"), ("raw", "a.raw"), ("zarr", "a.zarr")] {
        // v alone stored, u analysed too: a field need not be stored to be analysed.
        let sets =
            [&format!("output.sink=\"{sink}\"") as &str, &format!("output.path=\"{path}\""), "output.fields=[\"v\"]"];
        let out = run(dir.path(), CONFIG, &sets);
        assert!(out.status.success(), "{sink}: {}", common::cli::text(&out));
        outputs.push((sink, open_output(dir.path().join(path)).unwrap()));
    }
    let names: Vec<(String, DType, Vec<usize>)> =
        outputs[0].1.fields().iter().map(|f| (f.name.clone(), f.dtype, f.shape.clone())).collect();
    let want = |n: &str, d, s: &[usize]| (n.to_owned(), d, s.to_vec());
    for (i, f) in ["u", "v"].iter().enumerate() {
        let at = 1 + i * 7;
        assert_eq!(names[at], want(&format!("{f}_min"), DType::F32, &[]));
        assert_eq!(names[at + 3], want(&format!("{f}_sum"), DType::F32, &[]));
        assert_eq!(names[at + 4], want(&format!("{f}_bins"), DType::F32, &[100]));
        assert_eq!(names[at + 5], want(&format!("{f}_pdf"), DType::U32, &[8, 100]));
        assert_eq!(names[at + 6], want(&format!("{f}_ds"), DType::F32, &[3, 4, 4]));
    }
    assert_eq!(names.len(), 15, "{names:?}");
    let (_, first) = &outputs[0];
    for (sink, output) in &outputs[1..] {
        assert_eq!(output.fields(), first.fields(), "{sink}: fields, types, shapes and axes");
        for field in 0..first.fields().len() {
            for frame in 0..4 {
                assert_eq!(
                    output.read_field(0, field, frame).unwrap(),
                    first.read_field(0, field, frame).unwrap(),
                    "{sink}: field {} frame {frame}",
                    first.fields()[field].name
                );
            }
        }
    }
    // The stored v's frame agrees with its own reductions in every sink.
    let v = first.read_f32(0, 0, 3).unwrap();
    let min = first.read_f32(0, first.field_index("v_min").unwrap(), 3).unwrap();
    assert_eq!(min, vec![v.iter().copied().fold(f32::INFINITY, f32::min)]);
    let pdf = first.read_field(0, first.field_index("v_pdf").unwrap(), 3).unwrap();
    let counts: u64 = pdf.bytes.chunks_exact(4).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))).sum();
    assert_eq!(counts, 8 * 12 * 10, "every cell counted once");
}

#[test]
fn wrong_analysis_settings_are_refused_at_their_key() {
    let dir = tempfile::tempdir().unwrap();
    for (sets, says) in [
        (&["analysis.fields=[\"w\"]"][..], "analysis.fields"),
        (&["analysis.fields=[\"u\",\"u\"]"][..], "listed twice"),
        (&["analysis.pdf_bins=5000"][..], "analysis.pdf_bins"),
        (&["analysis.fields=[]"][..], "applies to analysis.fields"),
        (&["analysis.downsample=13"][..], "analysis.downsample"),
        (
            &["analysis.fields=[]", "analysis.pdf_bins=0", "analysis.downsample=0", "output.fields=[]"][..],
            "output.fields",
        ),
    ] {
        let out = run(dir.path(), CONFIG, sets);
        let text = common::cli::text(&out);
        assert!(!out.status.success(), "{sets:?} ran");
        assert!(text.contains(says), "{sets:?}: {text}");
    }
    // Where the key was set: the line of the file.
    let bad = CONFIG.replace("fields = [\"u\", \"v\"]\npdf_bins", "fields = [\"w\"]\npdf_bins");
    let out = run(dir.path(), &bad, &[]);
    let text = common::cli::text(&out);
    assert!(text.contains("line 15") && text.contains("no field \"w\""), "{text}");
    assert!(!dir.path().join("output.h5").exists(), "nothing written");
}

#[test]
fn the_reductions_can_be_stored_alone_and_resume_checks_them_as_fields() {
    let dir = tempfile::tempdir().unwrap();
    let sets = ["output.path=\"a.h5\"", "output.fields=[]"];
    let out = run(dir.path(), CONFIG, &sets);
    assert!(out.status.success(), "{}", common::cli::text(&out));
    let output = open_output(dir.path().join("a.h5")).unwrap();
    let names: Vec<&str> = output.fields().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names.len(), 14, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("u_") || n.starts_with("v_")), "{names:?}");
    // --resume expects what the config stores, reductions included: the complete output is
    // recognised, not refused as holding other fields.
    let again = run_with(dir.path(), CONFIG, &sets, &["--resume"]);
    let text = common::cli::text(&again);
    assert!(again.status.success() && text.contains("every run is already complete"), "{text}");
    // Another analysis is another output.
    let other = run_with(dir.path(), CONFIG, &[sets[0], sets[1], "analysis.pdf_bins=10"], &["--resume"]);
    let text = common::cli::text(&other);
    assert!(!other.status.success() && text.contains("cannot resume"), "{text}");
}
