//! `mpirun -n 2 wgpipe run` (cargo feature `mpi`; run with `cargo test-mpi --test mpi`): the
//! runs of a batch shared over two ranks land in one HDF5 file, bit-identical to the same
//! batch run by one process, readable by h5py; a rank that fails or disagrees ends the job
//! with an error naming it, without hanging. Every `mpirun` runs under `timeout`.
#![cfg(feature = "mpi")]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use wgpipe::storage::open_output;

/// Seconds an MPI job may take before `timeout` kills it (a hang is a failure, not a wait).
const LIMIT_S: &str = "120";

/// Five runs (an odd count: the ranks get unequal shares), two devices per rank.
const CONFIG: &str = r#"
[kernel]
name = "gray-scott"

[grid]
rows = 32
cols = 24

[run]
frames = 4
steps_per_frame = 8
noise = 0.02

[devices]
select = "vulkan"
count = 2

[output]
sink = "hdf5"
path = "out.h5"
fields = ["u", "v"]

[sweep]
feed = [0.03, 0.037, 0.04, 0.045, 0.05]
"#;

/// The launcher of the MPI the binary links (MPICH): `WGPIPE_MPIRUN` if set, else
/// `mpirun.mpich` when installed (Debian's `mpirun` may be Open MPI's, which cannot start
/// MPICH programs), else `mpirun`.
fn launcher() -> String {
    if let Ok(chosen) = std::env::var("WGPIPE_MPIRUN") {
        return chosen;
    }
    let mpich = Command::new("mpirun.mpich").arg("--version").output().is_ok_and(|o| o.status.success());
    if mpich { "mpirun.mpich".to_owned() } else { "mpirun".to_owned() }
}

/// `timeout LIMIT_S mpirun <mpi_args>`, where `mpi_args` hold the `wgpipe` commands.
fn mpirun(dir: &Path, mpi_args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .arg(LIMIT_S)
        .arg(launcher())
        .args(mpi_args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `timeout mpirun`: {e}; install MPICH: sudo apt-get install mpich"));
    assert_ne!(out.status.code(), Some(124), "mpirun {mpi_args:?} hung: killed after {LIMIT_S} s\n{}", text(&out));
    assert_ne!(
        out.status.code(),
        Some(127),
        "mpirun not found: install MPICH (sudo apt-get install mpich libmpich-dev libhdf5-mpich-dev)"
    );
    out
}

fn text(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sweep.toml"), CONFIG).unwrap();
    dir
}

const WGPIPE: &str = env!("CARGO_BIN_EXE_wgpipe");

#[test]
fn two_ranks_write_one_file_identical_to_a_serial_run() {
    let dir = setup();
    let shared = mpirun(
        dir.path(),
        &["-n", "2", WGPIPE, "run", "sweep.toml", "--set", "output.path=shared.h5", "--progress", "plain"],
    );
    assert!(shared.status.success(), "{}", text(&shared));
    let stdout = String::from_utf8_lossy(&shared.stdout);
    // Rank 0 prints every rank's figures: rank 0 ran streams 0, 2, 4 (12 frames), rank 1
    // streams 1, 3 (8 frames).
    let row = |rank: &str| stdout.lines().find(|l| l.split_whitespace().next() == Some(rank)).unwrap_or("");
    assert_eq!(row("0").split_whitespace().nth(1), Some("12"), "{}", text(&shared));
    assert_eq!(row("1").split_whitespace().nth(1), Some("8"), "{}", text(&shared));
    assert_eq!(row("all").split_whitespace().nth(1), Some("20"), "{}", text(&shared));

    // The same batch in one process (MPI initialised as a single rank: the serial path).
    let serial = Command::new(WGPIPE)
        .args(["run", "sweep.toml", "--set", "output.path=serial.h5", "--progress", "none"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(serial.status.success(), "{}", text(&serial));

    let a = open_output(dir.path().join("shared.h5")).unwrap();
    let b = open_output(dir.path().join("serial.h5")).unwrap();
    assert!(a.complete(), "the shared file is not marked complete");
    let names = |o: &wgpipe::storage::Output| o.streams().iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b));
    assert_eq!(a.streams().len(), 5);
    assert_eq!(a.fields(), b.fields());
    for (s, (sa, sb)) in a.streams().iter().zip(b.streams()).enumerate() {
        assert!(sa.complete && sa.frames == 4, "stream {} in the shared file: {sa:?}", sa.name);
        assert_eq!(sa.frames, sb.frames);
        assert_eq!(sa.attributes, sb.attributes, "attributes of stream {}", sa.name);
        for field in 0..a.fields().len() {
            for i in 0..sa.frames {
                let (fa, fb) = (a.read_field(s, field, i).unwrap(), b.read_field(s, field, i).unwrap());
                assert!(fa == fb, "stream {} field {field} frame {i} differs from the serial run's", sa.name);
            }
        }
        assert_eq!(a.steps(s).unwrap(), b.steps(s).unwrap(), "steps of stream {}", sa.name);
    }

    // h5py reads the shared file, and finds it equal to the serial one, frame for frame.
    let python = common::python::python_with(&["h5py", "numpy"]);
    let script = r#"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
assert a.attrs["complete"], "not complete"
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
for g in a:
    for f in ("u", "v", "steps"):
        assert a[g][f].shape == b[g][f].shape, (g, f, a[g][f].shape)
        assert np.array_equal(a[g][f][...], b[g][f][...]), (g, f)
    assert a[g]["v"].shape == (4, 32, 24), a[g]["v"].shape
print(len(a), "streams")
"#;
    let out =
        Command::new(python).args(["-c", script, "shared.h5", "serial.h5"]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5 streams");
}

#[test]
fn a_rank_that_cannot_open_its_devices_ends_the_job_naming_it() {
    let dir = setup();
    // MPMD: rank 1 alone selects an adapter index that does not exist.
    let out = mpirun(
        dir.path(),
        &[
            "-n",
            "1",
            WGPIPE,
            "run",
            "sweep.toml",
            ":",
            "-n",
            "1",
            WGPIPE,
            "run",
            "sweep.toml",
            "--set",
            "devices.select=99",
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MPI rank 1 of 2, checking the config"), "{}", text(&out));
    assert!(stderr.contains("devices.select"), "{}", text(&out));
    assert!(stderr.contains("MPI rank(s) [1] of 2 failed"), "rank 0 names the rank: {}", text(&out));
    assert!(!dir.path().join("out.h5").exists(), "no file is created when a rank fails before the start");
}

#[test]
fn ranks_started_with_different_configs_are_refused_before_the_file_exists() {
    let dir = setup();
    // Another frame count (another layout), then another output path (another file).
    for set in ["run.frames=5", "output.path=other.h5"] {
        let out = mpirun(
            dir.path(),
            &["-n", "1", WGPIPE, "run", "sweep.toml", ":", "-n", "1", WGPIPE, "run", "sweep.toml", "--set", set],
        );
        assert!(!out.status.success(), "{set}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("MPI rank 1 of 2, comparing the ranks' outputs"), "{set}: {}", text(&out));
        assert!(stderr.contains("different output than rank 0's"), "{set}: {}", text(&out));
        assert!(stderr.contains("MPI rank(s) [1] of 2 failed"), "{set}: {}", text(&out));
        assert!(!dir.path().join("out.h5").exists() && !dir.path().join("other.h5").exists(), "{set}");
    }
}

#[test]
fn resume_under_mpirun_adds_the_missing_runs_to_the_shared_file() {
    let dir = setup();
    // A serial run of the first two runs of the sweep, then two ranks add the other three.
    let first = Command::new(WGPIPE)
        .args(["run", "sweep.toml", "--set", "sweep.feed=[0.03, 0.037]", "--progress", "none"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", text(&first));
    let rest = mpirun(dir.path(), &["-n", "2", WGPIPE, "run", "sweep.toml", "--resume", "--progress", "none"]);
    assert!(rest.status.success(), "{}", text(&rest));
    assert!(String::from_utf8_lossy(&rest.stderr).contains("2 runs complete, 3 to run"), "{}", text(&rest));
    let whole = Command::new(WGPIPE)
        .args(["run", "sweep.toml", "--set", "output.path=whole.h5", "--progress", "none"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(whole.status.success(), "{}", text(&whole));
    let got = common::read_all(&dir.path().join("out.h5"));
    let want = common::read_all(&dir.path().join("whole.h5"));
    assert_eq!(got.len(), 5);
    assert!(got == want, "the resumed shared file differs from one serial run of the whole sweep");
    assert!(open_output(dir.path().join("out.h5")).unwrap().complete());
}
