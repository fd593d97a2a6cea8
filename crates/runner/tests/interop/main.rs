//! The interop group: outputs read by programs beyond the README's prerequisites.
//! - `ncdump -h` (netCDF-C; Debian: `apt-get install netcdf-bin`) reads HDF5 outputs as
//!   netCDF-4 files (`ncdump.rs`);
//! - ParaView's XDMF reader, run headless by `pvbatch` (Debian: `apt-get install paraview
//!   python3-paraview`, or set `WGPIPE_PVBATCH`), loads the XDMF sidecar (`paraview.rs`).
//!
//! Run it with `cargo test -p wgpipe --features interop --test interop` (`.ci/run` does).
//! A missing program fails its test with the line that installs it: nothing passes by skipping.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

#[path = "../common/mod.rs"]
mod common;
mod ncdump;
mod paraview;
