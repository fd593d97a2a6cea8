//! Kills a process that writes frames through a sink, many times, and counts what the
//! outputs look like afterwards: the measurement behind the README's "Reliability" table.
//!
//! ```text
//! cargo run --release -p wgpipe-storage --example kill_stress -- DIR [KILLS] [SINK] [OPTIONS]
//! ```
//! SINK is `hdf5` (default) or `raw`; OPTIONS, comma-separated: `append` (each child resumes
//! a copy of a file holding 40 frames of two incomplete streams, as `wgpipe run --resume`
//! does after a kill: the file is what a writer killed after 40 frames left),
//! `append-stopped` (the same from a file whose writer stopped after 40 frames and finished
//! it: `--resume` after Ctrl-C), `deflate`, `swmr`, `chunk_frames=N`, `axes=3` (fields of
//! 4×16×16 instead of 32×32), `compression=SPEC` (as
//! `output.compression`: `compression=blosc-lz4:5` needs `--features blosc`; the frames are
//! compared bit for bit, so not ZFP). Defaults: 300 kills, no options.
//!
//! Each child opens the sink, prints `begun`, then writes frames of two streams, two fields
//! of 1024 values each (32×32, or 4×16×16 with `axes=3`), as fast as the sink takes them, printing the count of frames per stream
//! after each pair. The parent kills it with SIGKILL at a moment drawn from a fixed-seed
//! sequence: every other kill while the sink begins (uniformly over twice the average time
//! to `begun`), the others within 60 ms after `begun`, while frames are written. It then
//! opens the output with `open_output`, reads every frame and sorts the kill into: no output
//! yet, fine, the in-flight frame (never reported) unreadable or wrong, reported frames lost
//! or wrong, or the output does not open. A child that is not killed is an error, and so is
//! any kill that lost a reported frame or left an output that does not open: the command
//! exits non-zero after printing the counts, so a script or CI fails on it.
//! `KILL_STRESS_KEEP=1` keeps the outputs that lost a reported frame or do not open.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use wgpipe_storage::{
    Compression, DType, FieldSpec, Frame, SinkOptions, StreamInfo, StreamLayout, open_output, open_sink,
};

/// Frames per stream expected: more than a child writes before its kill (the parent says
/// how many the busiest child reported).
const EXPECTED_FRAMES: u64 = 4096;

/// Values of each field in every layout: 32×32, or 4×16×16 (`axes=3`).
const FIELD_VALUES: usize = 1024;

/// Frames per stream the `append` base file holds.
const BASE_FRAMES: u64 = 40;

/// Two streams of two 32×32 fields (4×16×16 with the option `axes=3`: the most axes a field
/// has, whose datasets have the largest chunk index nodes), more frames expected than a child
/// writes before its kill (known frame counts: an uncompressed HDF5 output is laid out whole
/// at `begin`).
fn layout(opts: &str) -> StreamLayout {
    let three_axes = opts.split(',').any(|o| o == "axes=3");
    let fields = ["u", "v"].map(|name| {
        let shape = if three_axes { vec![4, 16, 16] } else { vec![32, 32] };
        debug_assert_eq!(shape.iter().product::<usize>(), FIELD_VALUES);
        FieldSpec::new(name, DType::F32, shape)
    });
    StreamLayout::new(fields.into())
        .with_stream(StreamInfo::new("a").with_expected_frames(EXPECTED_FRAMES))
        .with_stream(StreamInfo::new("b").with_expected_frames(EXPECTED_FRAMES))
}

/// Element `i` of field `f` of frame `index` of `stream`: distinct for every frame.
fn value(stream: usize, f: usize, index: u64, i: usize) -> f32 {
    (stream * 1_000_000 + f * 100_000) as f32 + index as f32 + i as f32 * 1e-3
}

fn frame(stream: usize, index: u64) -> Frame {
    let data = (0..2).flat_map(|f| (0..FIELD_VALUES).map(move |i| value(stream, f, index, i)));
    Frame::new(stream, index, index + 1, data.flat_map(f32::to_le_bytes).collect())
}

/// Sink options from the OPTIONS argument.
fn options(path: &Path, opts: &str) -> Result<SinkOptions> {
    let mut o = SinkOptions::new(path);
    for opt in opts.split(',').filter(|s| !s.is_empty()) {
        o = match opt.split_once('=') {
            None if opt == "append" || opt == "append-stopped" => o.with_append(true),
            None if opt == "deflate" => o.with_compression(Compression::Deflate(4)),
            None if opt == "swmr" => o.with_swmr(true),
            Some(("axes", "3")) => o,
            Some(("chunk_frames", n)) => o.with_chunk_frames(n.parse().context("chunk_frames=N")?),
            Some(("compression", spec)) => {
                let c: Compression = spec.parse().map_err(|e| anyhow::anyhow!("compression={spec}: {e}"))?;
                c.check_available().map_err(|e| anyhow::anyhow!("compression={spec}: {e}"))?;
                o.with_compression(c)
            }
            _ => bail!(
                "unknown option {opt:?}: use append, append-stopped, deflate, swmr, chunk_frames=N, compression=SPEC, axes=3"
            ),
        };
    }
    Ok(o)
}

/// The child: writes frames until it is killed (or, making a base file, `frames` frames,
/// then waits for its kill).
fn child(sink_kind: &str, path: &Path, opts: &str, frames: Option<u64>) -> Result<()> {
    let l = layout(opts);
    let mut sink = open_sink(sink_kind, &options(path, opts)?)?;
    sink.begin(&l)?;
    let mut out = std::io::stdout();
    writeln!(out, "begun")?;
    out.flush()?;
    for i in 0..frames.unwrap_or(u64::MAX) {
        for s in 0..2 {
            sink.write(&frame(s, i))?;
        }
        writeln!(out, "{}", i + 1)?;
        out.flush()?;
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Makes the `append` base: a file a writer killed after [`BASE_FRAMES`] frames left.
fn killed_base(exe: &Path, kind: &str, base: &Path, opts: &str) -> Result<()> {
    let mut child = Command::new(exe)
        .args(["--base", kind])
        .arg(base)
        .arg(opts)
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the base writer")?;
    let stdout = child.stdout.take().context("the base writer's stdout")?;
    let done = BufReader::new(stdout).lines().map_while(|l| l.ok()).any(|l| l == BASE_FRAMES.to_string());
    child.kill()?;
    child.wait()?;
    if !done {
        bail!("the base writer ended before {BASE_FRAMES} frames");
    }
    Ok(())
}

/// The largest difference a value may read back with: ZFP's accuracy (`compression=zfp:...`
/// in `opts`), else none: the frames must read back bit for bit.
fn tolerance(opts: &str) -> Result<Option<f64>> {
    Ok(match options(Path::new("."), opts)?.compression {
        Compression::Zfp(t) => Some(t.get()),
        _ => None,
    })
}

/// Whether `got` reads back as `want`: bit for bit, or within `tolerance` (ZFP).
fn same(got: f32, want: f32, tolerance: Option<f64>) -> bool {
    match tolerance {
        None => got.to_bits() == want.to_bits(),
        Some(t) => (f64::from(got) - f64::from(want)).abs() <= t,
    }
}

/// What one kill left.
fn classify(path: &Path, reported: u64, tolerance: Option<f64>) -> &'static str {
    if std::fs::symlink_metadata(path).is_err() {
        return "no output yet";
    }
    let out = match open_output(path) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return "output does not open";
        }
    };
    let mut verdict = "fine";
    for (s, summary) in out.streams().iter().enumerate() {
        if summary.frames < reported {
            eprintln!("{}: stream {s} holds {} frames, {reported} were reported", path.display(), summary.frames);
            return "reported frames lost";
        }
        for i in 0..summary.frames {
            for f in 0..2 {
                let good = out
                    .read_f32(s, f, i)
                    .is_ok_and(|v| v.iter().enumerate().all(|(k, x)| same(*x, value(s, f, i, k), tolerance)));
                if !good && i < reported {
                    eprintln!("{}: frame {i} of stream {s}, field {f}, reads wrong or fails", path.display());
                    return "reported frames lost";
                }
                if !good {
                    verdict = "in-flight frame broken";
                }
            }
        }
    }
    verdict
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, kind, path, opts] = args.as_slice()
        && (flag == "--child" || flag == "--base")
    {
        return child(kind, Path::new(path), opts, (flag == "--base").then_some(BASE_FRAMES));
    }
    let dir = PathBuf::from(args.first().context("usage: kill_stress DIR [KILLS] [SINK] [OPTIONS]")?);
    let kills: usize = args.get(1).map_or(Ok(300), |k| k.parse()).context("KILLS must be a whole number")?;
    let kind = args.get(2).map_or("hdf5", String::as_str);
    let opts = args.get(3).map_or("", String::as_str);
    let tolerance = tolerance(opts)?;
    let base = dir.join(format!("kill-stress-base-{}", std::process::id()));
    let exe = std::env::current_exe().context("finding this executable")?;
    make_base(&exe, kind, &base, opts)?;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rng = 0x5EED_u64;
    let mut next = move || {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut begin_times = Vec::new();
    let mut most = 0;
    for k in 0..kills {
        let path = dir.join(format!("kill-stress-{}-{k}", std::process::id()));
        if base.exists() {
            copy_output(&base, &path)?;
        }
        let started = Instant::now();
        let mut child = Command::new(&exe)
            .args(["--child", kind])
            .arg(&path)
            .arg(opts)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the writing child")?;
        let stdout = child.stdout.take().context("the child's stdout")?;
        let (tx, begun) = channel();
        let lines = std::thread::spawn(move || {
            let mut reported = 0u64;
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                match line.parse() {
                    Ok(n) => reported = n,
                    Err(_) => {
                        let _ = tx.send(started.elapsed());
                    }
                }
            }
            reported
        });
        let average = begin_times.iter().sum::<Duration>() / begin_times.len().max(1) as u32;
        let (phase, u) = (next(), next());
        if k % 2 == 0 && !begin_times.is_empty() {
            std::thread::sleep(average.mul_f64(2.0 * phase));
        } else if let Ok(at) = begun.recv_timeout(Duration::from_secs(30)) {
            begin_times.push(at);
            std::thread::sleep(Duration::from_millis(60).mul_f64(u));
        }
        let _ = child.kill();
        let status = child.wait()?;
        let reported = lines.join().map_err(|_| anyhow::anyhow!("the reading thread panicked"))?;
        if status.signal() != Some(9) {
            bail!("the child ended before its kill: {status}");
        }
        most = most.max(reported);
        let verdict = classify(&path, reported, tolerance);
        *counts.entry(verdict).or_default() += 1;
        // KILL_STRESS_KEEP=1 keeps the outputs that lost a reported frame or do not open, to
        // look into.
        let damaged = DAMAGED.contains(&verdict);
        if !(damaged && std::env::var_os("KILL_STRESS_KEEP").is_some()) {
            remove_output(&path)?;
        }
    }
    remove_output(&base)?;
    println!("{kind} {opts:?}: {kills} kills (at most {most} of {EXPECTED_FRAMES} frames per stream reported)");
    report(&counts, kills)
}

/// Prints the count of each verdict; errors when any kill broke the sink's promise.
fn report(counts: &BTreeMap<&str, usize>, kills: usize) -> Result<()> {
    for (what, n) in counts {
        println!("  {what:<24} {n}");
    }
    let damaged: usize = DAMAGED.iter().filter_map(|d| counts.get(d)).sum();
    if damaged > 0 {
        bail!("{damaged} of {kills} kills lost reported frames or left an output that does not open");
    }
    Ok(())
}

/// The verdicts that break the sink's promise (a frame reported written is stored, and the
/// output opens).
const DAMAGED: [&str; 2] = ["reported frames lost", "output does not open"];

/// With option `append` or `append-stopped`, the output every child resumes a copy of, at
/// `base`: left by a writer killed after 40 frames, or by one stopped after them.
fn make_base(exe: &Path, kind: &str, base: &Path, opts: &str) -> Result<()> {
    let without_append = opts.split(',').filter(|o| !o.starts_with("append")).collect::<Vec<_>>().join(",");
    if opts.split(',').any(|o| o == "append") {
        killed_base(exe, kind, base, &without_append)?;
    }
    if opts.split(',').any(|o| o == "append-stopped") {
        let l = layout(opts);
        let mut sink = open_sink(kind, &options(base, &without_append)?)?;
        sink.begin(&l)?;
        for i in 0..BASE_FRAMES {
            for s in 0..2 {
                sink.write(&frame(s, i))?;
            }
        }
        sink.finish()?;
    }
    Ok(())
}

/// Copies a file or a raw directory.
fn copy_output(from: &Path, to: &Path) -> Result<()> {
    if from.is_dir() {
        std::fs::create_dir(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    } else {
        std::fs::copy(from, to)?;
    }
    Ok(())
}

/// Removes an output and what a kill during its creation left (the sink's staging name).
fn remove_output(path: &Path) -> Result<()> {
    if let Some(name) = path.file_name() {
        let staging = path.with_file_name(format!(".{}.wgpipe-creating", name.to_string_lossy()));
        let _ = std::fs::remove_file(&staging).or_else(|_| std::fs::remove_dir_all(&staging));
    }
    let removed = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match removed {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}
