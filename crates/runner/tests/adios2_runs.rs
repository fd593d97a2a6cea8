//! The ADIOS2 group's runs (`cargo test -p wgpipe --features adios2-python --test
//! adios2_runs`): a run with `output.every` and `output.when` stored by the ADIOS2 sink (BP5),
//! read back by the adios2 Python API: the reductions' output holds every frame, the fields'
//! output exactly the frames promised, recomputed here from the stored reductions. Fails,
//! never skips, without the adios2 wheel (WGPIPE_ADIOS2_PYTHON, WGPIPE_ADIOS2_LIB).
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::PathBuf;
use std::process::Command;

/// The python with the adios2 module, or a failure saying how to get one.
fn adios2_python() -> PathBuf {
    let python = std::env::var_os("WGPIPE_ADIOS2_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let ok = Command::new(&python).args(["-c", "import adios2, numpy"]).output().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import adios2: make a virtual environment (python3 -m venv V && V/bin/pip install adios2 numpy) \
         and set WGPIPE_ADIOS2_PYTHON=V/bin/python and WGPIPE_ADIOS2_LIB=V/lib/python3.X/site-packages/adios2/libadios2_c.so",
        python.display()
    );
    assert!(
        std::env::var_os("WGPIPE_ADIOS2_LIB").is_some(),
        "WGPIPE_ADIOS2_LIB is not set: name the adios2 wheel's libadios2_c.so"
    );
    python
}

/// Reads both BP5 outputs and checks the promise; prints `ok KEPT/FRAMES`.
const CHECK: &str = r#"
import sys, adios2, numpy as np
every, threshold = int(sys.argv[1]), float(sys.argv[2])
def read(path, names):
    out = {}
    with adios2.FileReader(path) as f:
        variables = f.available_variables()
        for n in names:
            steps = int(variables["stream0/" + n]["AvailableStepsCount"])
            out[n] = [f.read("stream0/" + n, step_selection=[s, 1]) for s in range(steps)]
    return out
red = read("thin.analysis.bp", ["step", "v_max"])
fields = read("thin.bp", ["step", "v"])
frames = len(red["step"])
promised = [i for i in range(frames) if i % every == 0 or float(red["v_max"][i].item()) > threshold]
kept_steps = [int(s.item()) for s in fields["step"]]
assert kept_steps == [int(red["step"][i].item()) for i in promised], (kept_steps, promised)
assert 0 < len(promised) < frames, promised
for k, i in enumerate(promised):
    v = np.asarray(fields["v"][k])
    assert np.float32(v.max()) == np.float32(red["v_max"][i].item()), (i, v.max(), red["v_max"][i])
print(f"ok {len(promised)}/{frames}")
"#;

#[test]
fn a_thinned_run_stores_every_frames_reductions_and_the_promised_fields_in_bp5() {
    let python = adios2_python();
    let dir = tempfile::tempdir().unwrap();
    let config = "[grid]\nrows = 24\ncols = 20\n[run]\nframes = 12\nsteps_per_frame = 20\nseed = 5\nnoise = 0.05\n\
                  [devices]\nselect = [0]\n[output]\nsink = \"adios2\"\npath = \"thin.bp\"\nfields = [\"v\"]\n\
                  every = 5\nwhen = \"v_max > 0.3\"\n[analysis]\nfields = [\"v\"]\npdf_bins = 8\n";
    std::fs::write(dir.path().join("run.toml"), config).unwrap();
    let out = common::cli::wgpipe(dir.path(), &["run", "run.toml", "--progress", "none"]);
    assert!(out.status.success(), "{}", common::cli::text(&out));
    let check = Command::new(python).current_dir(dir.path()).args(["-c", CHECK, "5", "0.3"]).output().unwrap();
    let text = common::cli::text(&check);
    assert!(check.status.success() && text.starts_with("ok "), "{text}");
    assert!(text.trim_end().ends_with("/12"), "{text}");
}
