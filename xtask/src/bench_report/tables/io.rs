//! The renderers of the I/O benchmarks: overlap and its sweep, the pipeline's overhead and
//! machinery, compression, the peers of the sinks, the Python package, live readers and the
//! copy out of staging.

use anyhow::{Context, Result};
use serde_json::Value;

use super::super::json::{BenchJson, Summary};
use super::{Headline, Rendered, megabytes, region, rows_of, table};

/// The summary under `key` of `v`, a value inside a file's JSON.
fn sum(v: &Value, key: &str) -> Result<Summary> {
    v.get(key).and_then(Summary::of).with_context(|| format!("no median [min–max] {key:?} in {v}"))
}

/// A row of a two-column table.
fn row(what: &str, figure: String) -> Vec<String> {
    vec![what.to_owned(), figure]
}

/// The sink and compression of a pipeline bench's parameters, in words.
fn sink_words(f: &BenchJson) -> Result<String> {
    let sink = f.text("parameters.sink")?;
    Ok(match f.text("parameters.compression")? {
        "none" => format!("the {sink} sink"),
        c => format!("the {sink} sink, {c} on {} threads", f.num("parameters.compression_threads").unwrap_or(1.0)),
    })
}

/// The workload of a pipeline bench's parameters, in words.
fn workload_words(f: &BenchJson) -> Result<String> {
    Ok(format!(
        "{}×{}, {} frames, {}, steps per frame: {}, io_buffer {}, {} alternating repetitions",
        f.num("parameters.rows")?,
        f.num("parameters.cols")?,
        f.num("parameters.frames")?,
        sink_words(f)?,
        f.num("parameters.steps_per_frame")?,
        f.num("parameters.io_buffer")?,
        f.num("parameters.reps")?
    ))
}

/// `overlap`: the efficiency ratio at the balance point of one `bench overlap` run.
pub fn overlap(f: &BenchJson) -> Result<Rendered> {
    let kind = f.text("parameters.sink")?;
    let e = |key: &str| f.summary(&format!("{kind}.{key}"));
    let ratio = e("efficiency_ratio")?.text(3);
    let mut rows = vec![
        row("compute alone, t_comp (s)", e("t_comp_seconds")?.text(3)),
        row("writing alone, t_io (s, fsync included)", e("t_io_seconds")?.text(3)),
        row("compute / I-O", format!("{:.2}", f.num(&format!("{kind}.compute_to_io_ratio"))?)),
        row("blocking run, sync (s)", e("sync_seconds")?.text(3)),
        row("non-blocking run, async (s)", e("async_seconds")?.text(3)),
        row("**efficiency ratio, async / sync**", format!("**{ratio}**")),
        row(
            "Ravi et al.: max(t_comp, t_io) / (t_comp + t_io)",
            format!("{:.3}", f.num(&format!("{kind}.ravi_predicted_ratio"))?),
        ),
    ];
    if let (Ok(c), Ok(w)) = (e("t_comp_cpu_seconds"), e("t_io_cpu_seconds")) {
        rows.push(row("CPU time of compute alone; of writing alone (s)", format!("{}; {}", c.text(3), w.text(3))));
    }
    if let Some(floor) = f.find(&format!("{kind}.cores_floor_async_seconds")).and_then(Value::as_f64) {
        let over_sync = f.num(&format!("{kind}.cores_floor_ratio"))?;
        rows.push(row("the cores' floor on async (s); over the median sync", format!("{floor:.3}; {over_sync:.3}")));
    }
    let body = format!("{}\n{}.\n", table(&["figure", "median [min–max]"], rows), workload_words(f)?);
    let what = format!("overlap at balance, async / blocking wall ({})", sink_words(f)?);
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, ratio)?]))
}

/// `sinks`: the efficiency ratio of each sink at its defaults, one `bench overlap` run each.
pub fn sinks(files: &[BenchJson]) -> Result<Rendered> {
    let header = ["sink", "compression", "steps per frame", "compute / I-O", "t_io alone (s)", "async / sync"];
    rows_of(files, &header, |f| {
        let kind = f.text("parameters.sink")?;
        let row = vec![
            kind.to_owned(),
            f.text("parameters.compression")?.to_owned(),
            f.num("parameters.steps_per_frame")?.to_string(),
            format!("{:.2}", f.num(&format!("{kind}.compute_to_io_ratio"))?),
            f.summary(&format!("{kind}.t_io_seconds"))?.text(4),
            f.summary(&format!("{kind}.efficiency_ratio"))?.text(3),
        ];
        Ok((row, Vec::new()))
    })
}

/// What auto chose over the rotations of a sweep row: each choice with its count.
fn choices(row: &Value) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for choice in row.get("auto_chose").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        match counted.iter_mut().find(|(c, _)| *c == choice) {
            Some((_, n)) => *n += 1,
            None => counted.push((choice, 1)),
        }
    }
    counted.iter().map(|(c, n)| format!("{c} ×{n}")).collect::<Vec<_>>().join(", ")
}

/// One measured row of a sweep: its cells, and auto's ratio to the better of sync and async.
fn sweep_row(r: &Value) -> Result<(Vec<String>, Summary)> {
    let num = |key: &str| r.get(key).and_then(Value::as_f64).with_context(|| format!("no {key:?} in {r}"));
    let mut cells = vec![format!("{:.2}", num("measured_compute_to_io")?), num("steps_per_frame")?.to_string()];
    cells.push(sum(r, "theory")?.text(2));
    for cell in r.get("efficiency_ratio").and_then(Value::as_array).context("no efficiency_ratio cells")? {
        cells.push(sum(cell, "ratio")?.text(2));
    }
    cells.push(sum(r, "auto_efficiency_ratio")?.text(2));
    cells.push(choices(r));
    cells.push(format!("{:.3}", num("auto_over_best_fixed_median")?));
    let better = sum(r, "auto_over_better_of_sync_and_async")?;
    cells.push(better.text(3));
    Ok((cells, better))
}

/// `sweep`: `bench overlap --sweep`'s table of efficiency ratios by io_buffer and compute/I-O.
pub fn sweep(f: &BenchJson) -> Result<Rendered> {
    let buffers: Vec<String> = f
        .get("sweep.io_buffers")?
        .as_array()
        .context("sweep.io_buffers is no list")?
        .iter()
        .map(|b| format!("io_buffer {b}"))
        .collect();
    let mut header = vec!["c/w".to_owned(), "steps/frame".to_owned(), "theory".to_owned()];
    header.extend(buffers);
    header.extend(["auto".into(), "auto chose".into(), "auto / best fixed".into(), "auto / (sync or async)".into()]);
    let (mut rows, mut skipped, mut better) = (Vec::new(), Vec::new(), Vec::new());
    for r in f.get("sweep.rows")?.as_array().context("sweep.rows is no list")? {
        if let Some(why) = r.get("skipped").and_then(Value::as_str) {
            let target = r.get("target_compute_to_io").and_then(Value::as_f64).unwrap_or(f64::NAN);
            skipped.push(format!("target c/w {target}: {why}"));
            continue;
        }
        let (cells, b) = sweep_row(r)?;
        rows.push(cells);
        better.push(format!("{:.3}", b.median));
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut body = table(&header, rows);
    if !skipped.is_empty() {
        body += &format!("\nNot measured: {}.\n", skipped.join("; "));
    }
    body += &format!("\n{}.\n", workload_words(f)?);
    let what = "`io.mode = \"auto\"` wall / the better of sync and async (io_buffer 2), per row of the sweep";
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, better.join(", "))?]))
}

/// `overhead`: `bench overhead`'s pipeline against the compute-only loop.
pub fn overhead(f: &BenchJson) -> Result<Rendered> {
    let run = |which: &str, what: &str| -> Result<Vec<String>> {
        Ok(vec![
            what.to_owned(),
            f.summary(&format!("null.{which}_seconds"))?.text(4),
            f.summary(&format!("null.{which}_frames_per_second"))?.text(0),
            format!("{:.3e}", f.summary(&format!("null.{which}_cell_steps_per_second"))?.median),
        ])
    };
    let ratio = f.summary("null.overhead_ratio")?.text(3);
    let rows = vec![run("compute_only", "compute-only loop")?, run("pipeline", "pipeline, null sink")?];
    let body = format!(
        "{}\n**Overhead ratio, pipeline / compute-only: {ratio}** (goal ≤ {}). {}×{}, {} frames of {} steps, \
         io_buffer {}, {} alternating pairs.\n",
        table(&["run", "wall (s)", "frames/s", "cell-steps/s (median)"], rows),
        f.num("null.goal")?,
        f.num("parameters.rows")?,
        f.num("parameters.cols")?,
        f.num("parameters.frames")?,
        f.num("parameters.steps_per_frame")?,
        f.num("parameters.io_buffer")?,
        f.num("parameters.reps")?
    );
    let what = "pipeline overhead, pipeline / compute-only wall (null sink)";
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, ratio)?]))
}

/// `micro`: the machinery microbenchmarks a `bench overhead` (or `bench micro`) run made.
pub fn micro(f: &BenchJson) -> Result<Rendered> {
    let two = f.summary("micro.machinery_ns_per_frame_two_threads")?.text(0);
    let one = f.summary("micro.machinery_ns_per_frame_one_thread")?.text(0);
    let mut rows = Vec::new();
    for c in f.get("micro.counters")?.as_array().context("micro.counters is no list")? {
        rows.push(vec![
            c.get("threads").map_or("?".to_owned(), Value::to_string),
            sum(c, "sharded_ns_per_increment")?.text(2),
            sum(c, "shared_fetch_add_ns_per_increment")?.text(2),
        ]);
    }
    let body = format!(
        "The per-frame machinery (pool take, progress count, channel send, receive, pool give, progress count, \
         {} frames of {} bytes): **{two} ns** across two threads, as in a run (goal ≤ {} ns); {one} ns on one \
         thread.\n\n{}",
        f.num("micro.frames")?,
        f.num("micro.frame_bytes")?,
        f.num("micro.machinery_goal_ns")?,
        table(&["threads", "sharded `Progress`, ns per increment", "one shared `AtomicU64::fetch_add`"], rows)
    );
    let what = "the per-frame machinery (pool, progress, channel) across two threads, ns";
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, two)?]))
}

/// `compression-threads`: `bench compression-threads` runs, one row each.
pub fn compression_threads(files: &[BenchJson]) -> Result<Rendered> {
    let header = [
        "compression",
        "steps/frame",
        "threads A, B",
        "writer MB/s, A",
        "writer MB/s, B",
        "writer B / A",
        "async wall, A (s)",
        "async wall, B (s)",
        "wall A / B",
    ];
    rows_of(files, &header, |f| {
        let t = f.get("compression_threads.threads")?;
        let (a, b) = (t.get(0).map_or("?".into(), Value::to_string), t.get(1).map_or("?".into(), Value::to_string));
        let c = f.text("compression_threads.compression")?;
        let spf = f.num("compression_threads.steps_per_frame")?;
        let speedup = f.summary("compression_threads.writer_speedup")?.text(2);
        let wall = f.summary("compression_threads.async_wall_ratio")?.text(2);
        let row = vec![
            c.to_owned(),
            spf.to_string(),
            format!("{a}, {b}"),
            f.summary(&format!("compression_threads.writer_mb_per_s.{a}"))?.text(1),
            f.summary(&format!("compression_threads.writer_mb_per_s.{b}"))?.text(1),
            speedup.clone(),
            f.summary(&format!("compression_threads.async_wall_seconds.{a}"))?.text(3),
            f.summary(&format!("compression_threads.async_wall_seconds.{b}"))?.text(3),
            wall.clone(),
        ];
        let what = format!(
            "HDF5 {c}, {b} compression threads / {a}: writer throughput; async wall at {spf} steps per frame, {a} / {b}"
        );
        Ok((row, vec![Headline::of(f, what, format!("{speedup}; {wall}"))?]))
    })
}

/// `compression`: `bench compression` runs, a row per compression.
pub fn compression(files: &[BenchJson]) -> Result<Rendered> {
    let header = ["sink", "compression", "writer MB/s (of f32 frames)", "on disk", "smaller than raw", "largest error"];
    let (mut rows, mut headlines) = (Vec::new(), Vec::new());
    for f in files {
        let c = f.get("compression")?;
        let sink = f.text("compression.sink")?;
        let raw = f.num("compression.uncompressed_bytes")?;
        let names: Vec<&str> =
            c.get("compressions").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut smaller = Vec::new();
        for name in &names {
            let figures = c.get(*name).with_context(|| format!("{}: no figures of {name}", f.name))?;
            let disk = sum(figures, "bytes_on_disk")?.median;
            let error = figures.get("largest_abs_error").and_then(Value::as_f64).unwrap_or(f64::NAN);
            smaller.push(raw / disk);
            rows.push(vec![
                sink.to_owned(),
                (*name).to_owned(),
                sum(figures, "writer_mb_per_s")?.text(1),
                megabytes(disk),
                format!("{:.2}×", raw / disk),
                if error == 0.0 { "0".to_owned() } else { format!("{error:.2e}") },
            ]);
        }
        if let ([a, b], [sa, sb]) = (names.as_slice(), smaller.as_slice()) {
            let speedup = f.summary("compression.writer_speedup")?.text(2);
            let what = format!("{sink} sink, {b} / {a}: writer throughput; bytes on disk smaller than raw");
            headlines.push(Headline::of(f, what, format!("{speedup}; {sb:.1}× ({a}: {sa:.1}×)"))?);
        }
    }
    Ok(region(files, table(&header, rows), headlines))
}

/// `posix`: `bench peers posix`, the raw sink against a plain write loop.
pub fn posix(f: &BenchJson) -> Result<Rendered> {
    let p = "raw_against_posix";
    let bytes = f.num(&format!("{p}.rows"))? * f.num(&format!("{p}.cols"))? * 4.0 * f.num(&format!("{p}.frames"))?;
    let run = |what: &str, key: &str, ratio: Option<&str>| -> Result<Vec<String>> {
        let s = f.summary(&format!("{p}.{key}"))?;
        let ratio = match ratio {
            Some(r) => f.summary(&format!("{p}.{r}"))?.text(3),
            None => "1".to_owned(),
        };
        Ok(vec![what.to_owned(), s.text(4), format!("{:.0}", bytes / s.median / 1e6), ratio])
    };
    let rows = vec![
        run(
            "raw sink, frames hashed by the producer (as the runner hands them over)",
            "seconds_raw",
            Some("throughput_ratio_raw_over_plain"),
        )?,
        run(
            "raw sink hashing while it writes (a frame of 1 MiB or more on a thread of its own)",
            "seconds_raw_hashing_in_sink",
            Some("throughput_ratio_raw_hashing_in_sink_over_plain"),
        )?,
        run("plain `write` loop", "seconds_plain", None)?,
    ];
    let body = format!(
        "{}\n{} frames of {}×{} f32 ({}), fdatasync at the end of each, {} rotations.\n",
        table(&["writer", "seconds", "MB/s (median)", "throughput / the plain loop's"], rows),
        f.num(&format!("{p}.frames"))?,
        f.num(&format!("{p}.rows"))?,
        f.num(&format!("{p}.cols"))?,
        megabytes(bytes),
        f.num(&format!("{p}.reps"))?
    );
    let fs = f.find("machine.target_filesystem").and_then(Value::as_str).unwrap_or("?");
    let what = format!("raw sink / a plain `write` loop of the same frames, throughput, {fs}");
    let figure = f.summary(&format!("{p}.throughput_ratio_raw_over_plain"))?.text(3);
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, figure)?]))
}

/// `h5py`: `bench peers h5py` runs, a row each.
pub fn h5py(files: &[BenchJson]) -> Result<Rendered> {
    let header = [
        "output on",
        "rotations",
        "sink MB/s",
        "h5py MB/s",
        "plain loop MB/s",
        "sink / h5py",
        "sink / plain",
        "h5py / plain",
    ];
    rows_of(files, &header, |f| {
        let p = "hdf5_against_h5py";
        let bytes =
            f.num(&format!("{p}.rows"))? * f.num(&format!("{p}.cols"))? * 4.0 * f.num(&format!("{p}.frames"))?;
        let rate = |key: &str| -> Result<String> {
            Ok(format!("{:.0}", bytes / f.summary(&format!("{p}.{key}"))?.median / 1e6))
        };
        let ratio = |key: &str| -> Result<String> { Ok(f.summary(&format!("{p}.throughput_ratio_{key}"))?.text(3)) };
        let fs = f.find("machine.target_filesystem").and_then(Value::as_str).unwrap_or("?").to_owned();
        let headline = ratio("sink_over_h5py")?;
        let row = vec![
            fs.clone(),
            f.num(&format!("{p}.reps"))?.to_string(),
            rate("seconds_sink")?,
            rate("seconds_h5py")?,
            rate("seconds_plain")?,
            headline.clone(),
            ratio("sink_over_plain")?,
            ratio("h5py_over_plain")?,
        ];
        let what = format!("HDF5 sink / h5py writing the same frames, throughput, {fs}");
        Ok((row, vec![Headline::of(f, what, headline)?]))
    })
}

/// `python`: `bench python`, the package against the Rust paths.
pub fn python(f: &BenchJson) -> Result<Rendered> {
    let r = |key: &str| f.summary(&format!("python.{key}")).map(|s| s.text(3));
    let copies = f.num("python.copies_staging_to_numpy")?;
    let distinct = f.num("python.copy_evidence.distinct_buffers_over_32_frames")?;
    let rows = vec![
        vec![
            "`Pipeline.frames()` / the binary, frames/s".to_owned(),
            r("throughput_ratio_frames_over_binary")?,
            "≥ 0.95".into(),
        ],
        vec![
            "the same, whole processes".to_owned(),
            r("throughput_ratio_frames_over_binary_processes")?,
            String::new(),
        ],
        vec![
            "numpy sink / raw sink, throughput".to_owned(),
            r("throughput_ratio_numpy_sink_over_raw_sink")?,
            "≥ 0.9".into(),
        ],
        vec![
            "copies, staging buffer → numpy array".to_owned(),
            format!("{copies} ({distinct} distinct buffers over 32 frames)"),
            "1".into(),
        ],
    ];
    let body = format!(
        "{}\n{}×{} f32, {} frames of {} step, {} rotations; Python {}, numpy {}.\n",
        table(&["figure", "median [min–max]", "goal"], rows),
        f.num("python.rows")?,
        f.num("python.cols")?,
        f.num("python.frames")?,
        f.num("python.steps_per_frame")?,
        f.num("python.reps")?,
        f.text("python.python")?,
        f.text("python.numpy")?
    );
    let adapter = f.find("python.adapters").and_then(|a| a.get(0)).and_then(Value::as_str).unwrap_or("?");
    let mut headline = Headline::of(
        f,
        "Python `Pipeline.frames()` / the binary, frames/s; a numpy sink / the raw sink; copies staging → numpy",
        format!(
            "{}; {}; {copies}",
            r("throughput_ratio_frames_over_binary")?,
            r("throughput_ratio_numpy_sink_over_raw_sink")?
        ),
    )?;
    if adapter.starts_with("llvmpipe") {
        headline.machine = format!("lavapipe, {} cores", f.num("machine.cpus")?);
    }
    Ok(region(std::slice::from_ref(f), body, vec![headline]))
}

/// `live-readers`: the live-reader harness's latencies (a list, one entry per backend).
pub fn live_readers(f: &BenchJson) -> Result<Rendered> {
    let mut rows = Vec::new();
    for b in f.json.as_array().context("live readers: a list of backends")? {
        let field = |k: &str| b.get(k).map_or("?".to_owned(), |v| v.as_str().map_or(v.to_string(), str::to_owned));
        let partial = b.get("partial_frames").and_then(Value::as_array).map_or(0, Vec::len);
        let ms = |k: &str| b.get(k).and_then(Value::as_f64).map_or("?".to_owned(), |v| format!("{v:.2}"));
        rows.push(vec![
            field("backend"),
            format!("{} / {}", field("frames_seen"), field("frames_written")),
            partial.to_string(),
            field("frames_timed"),
            ms("latency_ms_p50"),
            ms("latency_ms_p99"),
        ]);
    }
    let header = ["backend", "frames seen / written", "partial frames", "frames timed", "p50 (ms)", "p99 (ms)"];
    Ok(Rendered { body: table(&header, rows), headlines: Vec::new() })
}

/// What the runs of `copy-threads` are, by their key.
const COPY_RUNS: [(&str, &str); 3] = [
    ("3d_null", "3-D 256³ (u and v: 134 MB a frame), null sink"),
    ("2d_null", "2-D 4096² (u and v: 134 MB a frame), null sink"),
    ("3d_raw_tmpfs", "3-D 256³, raw sink on tmpfs"),
];

/// `copy-threads`: `wgpipe run` with `io.copy_threads = 1` against the default, whole
/// processes alternating (a record of its own, not a bench's report).
pub fn copy_threads(f: &BenchJson) -> Result<Rendered> {
    let range = |v: &Value| -> String {
        let xs: Vec<f64> = v.as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
        let (lo, hi) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(*x), h.max(*x)));
        format!("{lo:.2}–{hi:.2}")
    };
    let (mut rows, mut ratios) = (Vec::new(), Vec::new());
    for (key, what) in COPY_RUNS {
        let run = f.get(&format!("runs.{key}"))?;
        let ratio = sum(run, "ratio_default_over_one")?.text(2);
        rows.push(vec![
            what.to_owned(),
            range(run.get("one_thread").unwrap_or(&Value::Null)),
            range(run.get("default").unwrap_or(&Value::Null)),
            ratio.clone(),
        ]);
        ratios.push(ratio);
    }
    let body = format!(
        "{}\n{}.\n",
        table(&["run (30 frames)", "1 thread, s", "the default (8 threads), s", "default / 1"], rows),
        f.text("what")?
    );
    let headline = Headline {
        what: "copying each frame out of staging on 8 threads / 1 (`io.copy_threads`), wall, 3-D 256³ and 2-D 4096² null runs".to_owned(),
        figure: ratios[..2].join("; "),
        command: f.text("commands.3d")?.to_owned(),
        machine: f.machine().short(),
    };
    Ok(region(std::slice::from_ref(f), body, vec![headline]))
}
