//! The Python interpreter for the tests that check wgpipe's output from outside Rust.
//!
//! One rule for every such test: `WGPIPE_PYTHON` if set (and then it must have the modules),
//! else `python3` on `PATH` if it imports them, else Debian's `/usr/bin/python3`. A `python3`
//! first on `PATH` (pyenv, conda, a venv) often lacks h5py while the system one has it, so
//! the first interpreter found is not enough. When none has the modules the test fails with
//! the command that installs them: a missing prerequisite never passes as a skip.

use std::ffi::OsString;
use std::process::Command;

/// The Debian package of each module the Python checks import.
const DEBIAN_PACKAGES: &[(&str, &str)] = &[
    ("h5py", "python3-h5py"),
    ("numpy", "python3-numpy"),
    ("xarray", "python3-xarray"),
    ("h5netcdf", "python3-h5netcdf"),
];

/// Why `python` cannot run the check: `None` if it imports every module.
fn lacks(python: &OsString, modules: &[&str]) -> Option<String> {
    let import = format!("import {}", modules.join(", "));
    match Command::new(python).args(["-c", &import]).output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            Some(err.lines().last().unwrap_or("import failed").trim().to_owned())
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
    if let Some(chosen) = std::env::var_os("WGPIPE_PYTHON") {
        if let Some(why) = lacks(&chosen, modules) {
            panic!(
                "WGPIPE_PYTHON={} cannot import {}: {why}. Install them into that interpreter, or unset \
                 WGPIPE_PYTHON to use python3 on PATH or /usr/bin/python3 ({})",
                chosen.to_string_lossy(),
                modules.join(", "),
                apt_line(modules)
            );
        }
        return chosen;
    }
    let mut tried = Vec::new();
    for candidate in ["python3", "/usr/bin/python3"] {
        let candidate = OsString::from(candidate);
        match lacks(&candidate, modules) {
            None => return candidate,
            Some(why) => tried.push(format!("{}: {why}", candidate.to_string_lossy())),
        }
    }
    panic!(
        "this test checks wgpipe's output with Python ({}), and no interpreter has them ({}). \
         Install them with: {}, or point WGPIPE_PYTHON at a python3 that has them",
        modules.join(", "),
        tried.join("; "),
        apt_line(modules)
    );
}
