//! Impossible sizes through the library API: `build` refuses them within a second, naming the
//! grid, the bytes and the limit, with nothing allocated and no output created.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::lavapipe;
use wgpipe::compute::{DeviceSelector, gray_scott::GrayScottParams};
use wgpipe::storage::{Hdf5Sink, SinkOptions};
use wgpipe::{Error, Job, Pipeline, PipelineBuilder};

/// Builds `builder`, expecting an error within a second that leaves `path` absent; returns it.
fn refused(builder: PipelineBuilder, path: &Path) -> Error {
    let start = Instant::now();
    let result = builder.build();
    let took = start.elapsed();
    let Err(e) = result else { panic!("the pipeline was built") };
    assert!(took < Duration::from_secs(1), "refused after {took:?}: {e}");
    assert!(!path.exists(), "{} was created: {e}", path.display());
    e
}

fn hdf5_run(path: &Path, rows: usize, cols: usize) -> PipelineBuilder {
    Pipeline::builder()
        .devices(DeviceSelector::Indices(vec![0]), 1)
        .grid(rows, cols)
        .frames(2)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(Hdf5Sink::new(SinkOptions::new(path)))
}

#[test]
fn a_grid_no_device_can_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.h5");
    let e = refused(hdf5_run(&path, 100_000, 100_000), &path);
    let m = e.to_string();
    assert!(matches!(e, Error::Compute(wgpipe::compute::Error::InvalidGrid { .. })), "{m}");
    assert!(m.starts_with("invalid grid [100000, 100000]: 10000000000 cells exceed the 4294967295"), "{m}");
    assert!(m.contains("use a grid of at most 4294967295 cells"), "{m}");
    let e = refused(hdf5_run(&path, 1 << 40, 1 << 40), &path).to_string();
    assert!(e.contains(": 1208925819614629174706176 cells exceed"), "{e}");
}

#[test]
fn a_state_above_the_devices_buffer_limit_is_refused_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.h5");
    let gpus = lavapipe(1);
    let limits = gpus[0].device().limits();
    let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    // Each field of 4-byte cells has its own buffer: one cell more than the limit allows.
    let side = (limit / 4 + 1).isqrt() as usize + 1;
    let builder = hdf5_run(&path, side, side).gpus(gpus);
    let e = refused(builder, &path).to_string();
    let field = (side * side * 4) as u64;
    assert!(e.starts_with(&format!("a {side}×{side} grid with 2 fields does not fit device 0 ")), "{e}");
    assert!(e.contains(&format!("needs {field} bytes")) && e.contains(&format!("of {limit} bytes")), "{e}");
    assert!(e.contains("use a grid of at most"), "{e}");
}

#[test]
fn a_frame_above_hdf5s_chunk_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.h5");
    let sink = Hdf5Sink::new(SinkOptions::new(&path).with_chunk_frames(1 << 30));
    let e = refused(hdf5_run(&path, 64, 64).sink(sink), &path);
    let m = e.to_string();
    assert!(matches!(e, Error::Storage(wgpipe::storage::Error::ChunkTooLarge { .. })), "{m}");
    assert!(m.starts_with("field v (float32 [64, 64]): chunk_frames 1073741824 makes chunks"), "{m}");
    assert!(m.contains("use chunk_frames 262143 or less"), "{m}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_run_above_the_hosts_memory_is_refused_naming_what_costs_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.h5");
    // 2^40 queued frames of 16 KiB: 16 PiB, more than any machine has.
    let e = refused(hdf5_run(&path, 64, 64).io_buffer(1 << 40), &path);
    let m = e.to_string();
    assert!(matches!(e, Error::TooLarge { key: "io.io_buffer", .. }), "{m}");
    assert!(m.starts_with("grid 64×64: the run needs") && m.contains("of host memory, more than the"), "{m}");
    assert!(m.contains("(MemAvailable)") && m.contains("lower io_buffer"), "{m}");
    let e = refused(hdf5_run(&path, 64, 64).staging_buffers(1 << 40), &path);
    assert!(matches!(e, Error::TooLarge { key: "io.staging_buffers", .. }), "{e}");
}

#[test]
fn bad_names_and_counts_are_refused_before_any_device_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.h5");
    let job = |name: &str| {
        Job::new(name, GrayScottParams::default().kernel(), |g| {
            wgpipe::compute::gray_scott::initial_state(g.ny(), g.nx(), 0, 0.0)
        })
    };
    // No adapter matches this selection, so an error about the jobs proves that they were
    // checked before the devices were looked for.
    let nowhere = || Pipeline::builder().devices(DeviceSelector::Name("no such adapter anywhere".into()), 1);
    let sink = || Hdf5Sink::new(SinkOptions::new(&path));
    let e = refused(nowhere().jobs(vec![job("..")]).sink(sink()), &path).to_string();
    assert_eq!(
        e,
        "stream name \"..\" is not allowed: use letters, digits, '-', '_' and '.' (not \".\" or \"..\" alone)"
    );
    let e = refused(nowhere().jobs(vec![job("a"), job("a")]).sink(sink()), &path).to_string();
    assert!(e.contains("two jobs are named \"a\""), "{e}");
    let many =
        Pipeline::builder().devices(DeviceSelector::All, 1_000_000).gray_scott(GrayScottParams::default(), 0, 0.0);
    let e = refused(many.sink(sink()), &path).to_string();
    assert!(e.contains("open each adapter 1 to 1024 times"), "{e}");
    let e = refused(hdf5_run(&path, 8, 8).frames(u64::MAX).jobs(vec![job("a"), job("b")]), &path);
    assert!(matches!(e, Error::TooLarge { key: "run.frames", .. }), "{e}");
}
