//! The report's compute time from GPU timestamp queries, and the host-measured fallback.
//! lavapipe (Vulkan) and llvmpipe (GL) both offer `TIMESTAMP_QUERY`; the fallback is forced
//! with `.gpu_timestamps(false)`, the path of a device without the feature.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::process::Command;

use common::lavapipe;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::NullSink;
use wgpipe::{ComputeSource, IoMode, Pipeline, RunReport};

fn run(timestamps: bool, mode: IoMode, devices: usize) -> RunReport {
    Pipeline::builder()
        .gpus(lavapipe(devices))
        .grid(64, 48)
        .frames(6)
        .steps_per_frame(20)
        .mode(mode)
        .gpu_timestamps(timestamps)
        .gray_scott(GrayScottParams::default(), 3, 0.02)
        .sink(NullSink::default())
        .run()
        .unwrap()
}

#[test]
fn compute_time_comes_from_gpu_timestamps_where_the_device_has_them() {
    let gpu = &lavapipe(1)[0];
    assert!(
        gpu.device().features().contains(wgpipe::compute::wgpu::Features::TIMESTAMP_QUERY),
        "{} offers no TIMESTAMP_QUERY: this test needs Mesa's lavapipe, which does (apt-get install \
         mesa-vulkan-drivers)",
        gpu.label()
    );
    for (mode, devices) in [(IoMode::Async, 2), (IoMode::Sync, 1)] {
        let r = run(true, mode, devices);
        assert_eq!(r.compute_source(), ComputeSource::GpuTimestamps, "{mode:?}");
        for d in &r.devices {
            let gpu = d.gpu_seconds.unwrap();
            assert!(gpu > 0.0 && gpu <= r.wall_seconds, "{mode:?}: GPU {gpu} s in a run of {} s", r.wall_seconds);
            // Without work-ahead (sync) the GPU works only while the host waits inside the
            // frame's production, so the host's time spans the GPU's. (In async mode the GPU
            // also works while the host hands frames off: the time host-measuring misses.)
            if mode == IoMode::Sync {
                assert!(gpu <= d.compute_seconds, "GPU {gpu} s, host {} s", d.compute_seconds);
            }
        }
        let slowest = r.devices.iter().filter_map(|d| d.gpu_seconds).fold(0.0, f64::max);
        assert_eq!(r.compute_seconds(), slowest);
        assert!(r.to_string().contains(&format!("compute {slowest:.2} s (GPU timestamps)")), "{r}");
    }
    let host = run(false, IoMode::Async, 1);
    assert_eq!(host.compute_source(), ComputeSource::HostMeasured);
    assert!(host.devices.iter().all(|d| d.gpu_seconds.is_none()));
    assert_eq!(host.compute_seconds(), host.devices[0].compute_seconds);
    assert!(host.to_string().contains("(host-measured)"), "{host}");
}

#[test]
fn the_run_summary_says_where_compute_time_comes_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_wgpipe"))
        .args(["run", "--progress", "none", "--set", "output.sink=\"null\"", "--set", "run.frames=3"])
        .args(["--set", "grid.rows=32", "--set", "grid.cols=32", "--set", "devices.select=\"vulkan\""])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find(|l| l.starts_with("compute ")).unwrap_or_default();
    assert!(line.ends_with(" s (GPU timestamps)"), "summary:\n{stdout}");
}
