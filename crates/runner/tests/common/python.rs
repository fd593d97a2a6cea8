//! The Python interpreter for the tests that check wgpipe's output from outside Rust.
//!
//! One rule for every such test: `WGPIPE_PYTHON` if set (and then it must have the modules),
//! else `python3` on `PATH` if it imports them, else Debian's `/usr/bin/python3`. A `python3`
//! first on `PATH` (pyenv, conda, a venv) often lacks h5py while the system one has it, so
//! the first interpreter found is not enough. When none has the modules the test fails with
//! the command that installs them: a missing prerequisite never passes as a skip.
//!
//! Checks of ZFP-compressed HDF5 need more than h5py: h5py from PyPI carries its own HDF5,
//! which cannot load the system's filter plugin (built for the system's HDF5), so they take
//! the first interpreter whose h5py decodes ZFP, through `hdf5plugin` or the system plugin
//! ([`python_reading_zfp`]). The storage crate's tests include this file too.

use std::ffi::OsString;
use std::process::Command;

/// The Debian package of each module the Python checks import.
const DEBIAN_PACKAGES: &[(&str, &str)] = &[
    ("h5py", "python3-h5py"),
    ("numpy", "python3-numpy"),
    ("xarray", "python3-xarray"),
    ("h5netcdf", "python3-h5netcdf"),
];

/// Why `python` cannot run `check` (a script that exits non-zero, its last line saying why):
/// `None` if it runs.
fn fails(python: &OsString, check: &str) -> Option<String> {
    match Command::new(python).args(["-c", check]).output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            Some(err.lines().last().unwrap_or("the check failed").trim().to_owned())
        }
        Err(e) => Some(format!("cannot run it: {e}")),
    }
}

/// The install line for `modules` on Debian/Ubuntu.
fn apt_line(modules: &[&str]) -> String {
    let packages: Vec<String> = modules
        .iter()
        .map(|m| {
            DEBIAN_PACKAGES
                .iter()
                .find(|(module, _)| module == m)
                .map_or_else(|| format!("python3-{m}"), |p| p.1.into())
        })
        .collect();
    format!("sudo apt-get install {}", packages.join(" "))
}

/// A Python interpreter that imports every one of `modules`; fails the calling test, saying
/// what to install, when there is none.
pub fn python_with(modules: &[&str]) -> OsString {
    let what = format!("this test checks wgpipe's output with Python ({})", modules.join(", "));
    choose(&format!("import {}", modules.join(", ")), &what, &apt_line(modules))
}

/// What a Python check of ZFP-compressed HDF5 runs first: the `hdf5plugin` package registers
/// its filters where it is installed (h5py from PyPI carries its own HDF5, which finds no
/// system plugin); elsewhere the system's plugin directory serves (Debian's
/// hdf5-filter-plugin-zfp-serial).
pub const ZFP_PREAMBLE: &str = "
try:
    import hdf5plugin  # noqa: F401  (registers H5Z-ZFP for h5py from PyPI)
except ImportError:
    pass
";

/// A Python interpreter whose h5py decodes ZFP (the H5Z-ZFP filter, id 32013) once it ran
/// [`ZFP_PREAMBLE`]: h5py from PyPI with `hdf5plugin`, or a system h5py whose HDF5 finds the
/// system's plugin. Fails the calling test, saying what to install, when there is none.
pub fn python_reading_zfp() -> OsString {
    let check = format!(
        "import h5py, numpy\n{ZFP_PREAMBLE}\nif not h5py.h5z.filter_avail(32013):\n    \
         raise SystemExit('h5py (HDF5 ' + h5py.version.hdf5_version + ') finds no ZFP filter (32013)')"
    );
    let what = "this test reads ZFP-compressed HDF5 with h5py";
    choose(
        &check,
        what,
        "sudo apt-get install python3-h5py hdf5-filter-plugin-zfp-serial (or python3 -m pip install hdf5plugin)",
    )
}

/// `WGPIPE_PYTHON` if set (it must pass `check`), else the first of `python3` on `PATH` and
/// `/usr/bin/python3` that passes it; otherwise fails the calling test: `what` needs it,
/// `install` gets it.
fn choose(check: &str, what: &str, install: &str) -> OsString {
    if let Some(chosen) = std::env::var_os("WGPIPE_PYTHON") {
        if let Some(why) = fails(&chosen, check) {
            panic!(
                "{what}, and WGPIPE_PYTHON={} cannot: {why}. Install what it lacks into that interpreter, \
                 or unset WGPIPE_PYTHON to use python3 on PATH or /usr/bin/python3 ({install})",
                chosen.to_string_lossy(),
            );
        }
        return chosen;
    }
    let mut tried = Vec::new();
    for candidate in ["python3", "/usr/bin/python3"] {
        let candidate = OsString::from(candidate);
        match fails(&candidate, check) {
            None => return candidate,
            Some(why) => tried.push(format!("{}: {why}", candidate.to_string_lossy())),
        }
    }
    panic!(
        "{what}, and no interpreter can ({}). Install what it needs with: {install}, or point \
         WGPIPE_PYTHON at a python3 that has it",
        tried.join("; "),
    );
}
