//! The renderers of what features cost a run (the HDF5 sink's reservation and layout,
//! checkpoints, analysis, ZFP on the device) and of the comparison with gs-mpiio.

use anyhow::{Context, Result};
use serde_json::Value;

use super::super::json::BenchJson;
use super::{Headline, Rendered, megabytes, region, rows_of, seconds, table};

/// The output's filesystem as the machine record names it.
fn filesystem(f: &BenchJson) -> &str {
    f.find("machine.target_filesystem").and_then(Value::as_str).unwrap_or("?")
}

/// `zfp-device`: `bench zfp-device`, ZFP fixed rate on the device, on the host and not at all.
pub fn zfp_device(f: &BenchJson) -> Result<Rendered> {
    let z = "zfp_device";
    let zarr = f.find(&format!("{z}.sink")).and_then(Value::as_str) == Some("zarr");
    let (host, sink) =
        if zarr { ("on the host (zfpy, zarrs)", "a Zarr store") } else { ("on the host (H5Z-ZFP)", "HDF5") };
    let mut rows = Vec::new();
    for (key, what) in [("none", "uncompressed"), ("host", host), ("device", "on the device")] {
        rows.push(vec![
            what.to_owned(),
            f.summary(&format!("{z}.wall_ms_per_frame.{key}"))?.text(2),
            format!("{} B", f.num(&format!("{z}.bytes_read_back_per_frame.{key}"))?),
            megabytes(f.num(&format!("{z}.bytes_on_disk.{key}"))?),
        ]);
    }
    let errors = f.get(&format!("{z}.largest_error_by_rate"))?.as_array().context("no largest_error_by_rate list")?;
    let rates: Vec<String> = errors.iter().map(|e| e.get("rate").map_or("?".into(), Value::to_string)).collect();
    let values: Vec<String> = errors
        .iter()
        .map(|e| e.get("error").and_then(Value::as_f64).map_or("?".into(), |v| format!("{v:.1e}")))
        .collect();
    let mut error_header = vec!["rate (bits per value)"];
    error_header.extend(rates.iter().map(String::as_str));
    let device_over_host = f.summary(&format!("{z}.time_ratio_device_over_host"))?.text(3);
    let body = format!(
        "{}\nDevice / host: **{device_over_host}**; host / none {}; device / none {}. The 3-D model at {}³, {} frames \
         of {} steps, {sink} with fsync, async, rate {}, {} rotations.\n\nLargest absolute error of a value read back \
         (values in [0, 1]):\n\n{}",
        table(&["stored", "wall per frame (ms)", "read back per frame", "on disk"], rows),
        f.summary(&format!("{z}.time_ratio_host_over_none"))?.text(3),
        f.summary(&format!("{z}.time_ratio_device_over_none"))?.text(3),
        f.num(&format!("{z}.edge"))?,
        f.num(&format!("{z}.frames"))?,
        f.num(&format!("{z}.steps_per_frame"))?,
        f.num(&format!("{z}.rate"))?,
        f.num(&format!("{z}.reps"))?,
        table(&error_header, vec![std::iter::once("largest error".to_owned()).chain(values).collect()])
    );
    let what = format!(
        "ZFP rate {} encoded on the device / on the host, wall per frame{}",
        f.num(&format!("{z}.rate"))?,
        if zarr { " (Zarr)" } else { "" }
    );
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, device_over_host)?]))
}

/// `gs-mpiio`: `bench peers gs-mpiio`, the 3-D run against the ADIOS2 tutorial's simulation.
pub fn gs_mpiio(f: &BenchJson) -> Result<Rendered> {
    let g = "against_gs_mpiio";
    let s = |key: &str| f.summary(&format!("{g}.{key}"));
    let ranks = f.num(&format!("{g}.ranks"))?;
    let run = |what: String, seconds: &str, ratio: Option<&str>| -> Result<Vec<String>> {
        let ratio = ratio.map(|r| s(r).map(|x| x.text(3))).transpose()?.unwrap_or_default();
        Ok(vec![what, s(seconds)?.text(2), ratio])
    };
    let rows = vec![
        run(format!("gs-mpiio on {ranks} ranks (float64 U, MPI-IO)"), "gs_mpiio_seconds", None)?,
        run(
            "wgpipe in the bench's process (f32 u and v, HDF5)".to_owned(),
            "wgpipe_seconds",
            Some("gs_mpiio_over_wgpipe"),
        )?,
        run(
            "the same, the 3-D kernel's row of 8 (before the brick)".to_owned(),
            "wgpipe_row_of_8_seconds",
            Some("gs_mpiio_over_wgpipe_row_of_8"),
        )?,
        run(
            "the same, the scalar brick (before its vec4 rows)".to_owned(),
            "wgpipe_scalar_brick_seconds",
            Some("gs_mpiio_over_wgpipe_scalar_brick"),
        )?,
        run(
            "the `wgpipe` binary, a process of its own".to_owned(),
            "wgpipe_binary_seconds",
            Some("gs_mpiio_over_wgpipe_binary"),
        )?,
        run(format!("`mpirun` starting `true` on {ranks} ranks"), "mpirun_start_seconds", None)?,
    ];
    let body = format!(
        "{}\n{}³, {} steps, {} output steps; gs-mpiio wrote {}, wgpipe {}; {} rotations.\n{}",
        table(&["run", "wall (s)", "gs-mpiio / it"], rows),
        f.num(&format!("{g}.edge"))?,
        f.num(&format!("{g}.steps"))?,
        f.num(&format!("{g}.frames"))?,
        megabytes(f.num(&format!("{g}.gs_mpiio_bytes"))?),
        megabytes(f.num(&format!("{g}.wgpipe_bytes"))?),
        f.num(&format!("{g}.reps"))?,
        gs_mpiio_parts(f)?
    );
    let what = format!(
        "gs-mpiio's time on {ranks} ranks / the 3-D run's ({}³, {} steps), whole runs; the `wgpipe` binary",
        f.num(&format!("{g}.edge"))?,
        f.num(&format!("{g}.steps"))?
    );
    let figure = format!("{}; {}", s("gs_mpiio_over_wgpipe")?.text(3), s("gs_mpiio_over_wgpipe_binary")?.text(3));
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, figure)?]))
}

/// Where gs-mpiio and wgpipe spent their time (compute, readback, write), where the report
/// records it (reports before the bench timed the parts have none: nothing).
fn gs_mpiio_parts(f: &BenchJson) -> Result<String> {
    let g = "against_gs_mpiio";
    if f.get(&format!("{g}.gs_mpiio_parts_seconds")).is_err() {
        return Ok(String::new());
    }
    let mut rows = Vec::new();
    for (who, key) in [("gs-mpiio (the slowest rank's)", "gs_mpiio_parts_seconds"), ("wgpipe", "wgpipe_parts_seconds")]
    {
        let part = |p: &str| f.summary(&format!("{g}.{key}.{p}")).map(|s| s.text(2));
        rows.push(vec![who.to_owned(), part("compute")?, part("readback")?, part("write")?]);
    }
    Ok(format!("\n{}", table(&["where the time went (s)", "compute", "readback", "write"], rows)))
}

/// `reserve-cost`: `bench reserve-cost` runs, a row each.
pub fn reserve_cost(files: &[BenchJson]) -> Result<Rendered> {
    let header = ["output on", "frames", "time on / off", "MB/s on", "MB/s off", "per frame (µs)", "rotations"];
    hdf5_cost(
        files,
        &header,
        "reserve_cost",
        ("reserve_on", "reserve_off"),
        "HDF5 disk-space reservation, time on / off",
    )
}

/// `layout-cost`: `bench layout-cost` runs, a row each.
pub fn layout_cost(files: &[BenchJson]) -> Result<Rendered> {
    let header =
        ["output on", "frames", "laid out / growing", "MB/s laid out", "MB/s growing", "per frame (µs)", "rotations"];
    hdf5_cost(files, &header, "layout_cost", ("laid_out", "growing"), "HDF5 output laid out whole / growing, time")
}

/// The rows of one of the GPU-free HDF5 comparisons: `key`'s figures of the `ways` (a, b).
fn hdf5_cost(files: &[BenchJson], header: &[&str], key: &str, ways: (&str, &str), what: &str) -> Result<Rendered> {
    let (a, b) = ways;
    rows_of(files, header, |f| {
        let n = |k: &str| f.num(&format!("{key}.{k}"));
        let frame_bytes = n("rows")? * n("cols")? * 4.0;
        let bytes = frame_bytes * n("frames")?;
        let rate = |way: &str| -> Result<String> {
            Ok(format!("{:.0}", bytes / f.summary(&format!("{key}.seconds_{way}"))?.median / 1e6))
        };
        let ratio = f.summary(&format!("{key}.time_ratio_{a}_over_{b}"))?.text(3);
        let frames = format!("{} frames of {}", n("frames")?, megabytes(frame_bytes));
        let row = vec![
            filesystem(f).to_owned(),
            frames.clone(),
            ratio.clone(),
            rate(a)?,
            rate(b)?,
            f.summary(&format!("{key}.cost_per_frame_us"))?.text(0),
            n("reps")?.to_string(),
        ];
        let headline = Headline::of(f, format!("{what}, {frames}, {}", filesystem(f)), ratio)?;
        Ok((row, vec![headline]))
    })
}

/// `checkpoint-cost`: `bench checkpoint-cost`, the 3-D model with and without checkpoints.
pub fn checkpoint_cost(f: &BenchJson) -> Result<Rendered> {
    let c = "checkpoint_cost";
    let s = |key: &str, decimals: usize| f.summary(&format!("{c}.{key}")).map(|x| x.text(decimals));
    let auto = s("time_ratio_auto", 3)?;
    let every = s("time_ratio_every_frame", 3)?;
    let rows = vec![
        vec!["state per checkpoint (u and v, f32)".to_owned(), format!("{:.2} MB", f.num(&format!("{c}.state_mb"))?)],
        vec![
            "writer time per checkpoint (file written, renamed)".to_owned(),
            format!("{} ms", s("writer_ms_per_checkpoint", 2)?),
        ],
        vec!["wall without checkpoints".to_owned(), seconds(f.summary(&format!("{c}.wall_seconds_without"))?)],
        vec!["wall with a checkpoint every frame / without".to_owned(), every.clone()],
        vec![
            format!("wall at Young's interval (MTBF {} s) / without", f.num(&format!("{c}.mtbf_seconds"))?),
            format!("**{auto}**"),
        ],
        vec!["interval the automatic choice took (frames)".to_owned(), s("auto_interval_frames", 0)?],
        vec!["checkpoints written at that interval".to_owned(), s("auto_checkpoints_written", 0)?],
    ];
    let body = format!(
        "{}\nThe 3-D model at {}³, {} frames of {} steps, HDF5 with fsync, async, {} rotations.\n",
        table(&["figure", "median [min–max]"], rows),
        f.num(&format!("{c}.edge"))?,
        f.num(&format!("{c}.frames"))?,
        f.num(&format!("{c}.steps_per_frame"))?,
        f.num(&format!("{c}.reps"))?
    );
    let what = format!(
        "checkpoints of the 3-D model ({}³), at Young's interval / none; every frame / none",
        f.num(&format!("{c}.edge"))?
    );
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, format!("{auto}; {every}"))?]))
}

/// `analysis-cost`: `bench analysis-cost`, the 3-D model with and without analysis.
pub fn analysis_cost(f: &BenchJson) -> Result<Rendered> {
    let a = "analysis_cost";
    let s = |key: &str, decimals: usize| f.summary(&format!("{a}.{key}")).map(|x| x.text(decimals));
    let ratio = s("compute_ratio", 3)?;
    let (fields, reductions) =
        (f.num(&format!("{a}.field_bytes_per_frame"))?, f.num(&format!("{a}.analysis_bytes_per_frame"))?);
    let rows = vec![
        vec!["GPU time without analysis".to_owned(), seconds(f.summary(&format!("{a}.compute_seconds_without"))?)],
        vec!["**GPU time with / without**".to_owned(), format!("**{ratio}**")],
        vec!["wall with / without".to_owned(), s("wall_ratio", 3)?],
        vec!["added per step".to_owned(), format!("{} µs", s("added_microseconds_per_step", 1)?)],
        vec![
            "bytes per frame: the fields / their reductions".to_owned(),
            format!("{fields} / {reductions} ({:.0}× fewer)", fields / reductions),
        ],
    ];
    let body = format!(
        "{}\nThe 3-D model at {}³, {} frames of {} steps into the null sink, {} and their {}-bin PDFs, {} pairs; \
         compute time from {}.\n",
        table(&["figure", "median [min–max]"], rows),
        f.num(&format!("{a}.edge"))?,
        f.num(&format!("{a}.frames"))?,
        f.num(&format!("{a}.steps_per_frame"))?,
        f.get(&format!("{a}.fields"))?.as_array().map_or(String::new(), |v| v
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" and ")),
        f.num(&format!("{a}.pdf_bins"))?,
        f.num(&format!("{a}.reps"))?,
        match f.text(&format!("{a}.compute_source"))? {
            "GpuTimestamps" => "GPU timestamps",
            "HostMeasured" => "host-measured times",
            other => other,
        }
    );
    let what = format!(
        "analysis on the device (u, v, 100-bin PDFs), {}³, GPU time with / without",
        f.num(&format!("{a}.edge"))?
    );
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, ratio)?]))
}
