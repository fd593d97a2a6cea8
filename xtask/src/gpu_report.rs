//! `cargo xtask gpu-report`: what a session lent a GPU machine measures, in one command of
//! under 8 minutes, into one JSON: the adapter (name, driver, limits, features), the
//! GPU-relevant tests (each test binary given, whose results must be bit-identical to the
//! CPU reference: the compute crate's kernels against their plain-Rust twins, ZFP against the
//! zfp C library, the halo exchange against the whole grid), and the benchmarks whose goals
//! are judged on a GPU: the kernels against the shader copy's bandwidth (`bench kernel
//! --roofline --large`), the analysis's cost at 64³ and 128³ (`bench analysis-cost`), ZFP
//! encoded on the device at 256³ (`bench zfp-device`) and its encoder alone against the zfp C
//! library and the memory's bandwidth (`bench zfp-encoder`), the raw sink against a plain
//! write loop (`bench peers posix`), and the tutorial's run against gs-mpiio on every core
//! (`bench peers gs-mpiio`, where MPI is installed).
//!
//! Each benchmark runs as `cargo xtask bench ...` does, in a process of its own (this same
//! executable), and writes its JSON (`gpu-*.json`) beside the report; copied into
//! `docs/src/bench/` under the adapter's name (`h200-*.json`), they feed the benchmark page's
//! GPU section (`cargo xtask bench-report`). `.ci/gpu-report` builds what
//! travels to such a machine and runs this there. `--quick` runs every step at the smallest
//! sizes, to rehearse the command on lavapipe.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::compute::{DeviceSelector, open_devices};

/// `cargo xtask gpu-report`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Where the report (gpu-report.json) and each benchmark's JSON go
    #[arg(long, value_name = "DIR", default_value = "gpu-report")]
    pub out: PathBuf,
    /// Where the benchmarks that write files write them (tmpfs keeps the disk out of the
    /// GPU's figures)
    #[arg(long, value_name = "DIR", default_value = "/dev/shm")]
    pub scratch: PathBuf,
    /// A directory of test executables to run first (`.ci/gpu-report prepare` puts the
    /// compute crate's there)
    #[arg(long, value_name = "DIR")]
    pub tests: Option<PathBuf>,
    /// The wgpipe binary `bench peers gs-mpiio` runs [default: target/release/wgpipe]
    #[arg(long, value_name = "WGPIPE")]
    pub bin: Option<PathBuf>,
    /// Every step at the smallest sizes and one repetition: a rehearsal, not a measurement
    #[arg(long)]
    pub quick: bool,
}

/// One step of the report: what it ran, how it ended, how long it took, what it measured.
struct Step {
    name: String,
    command: String,
    passed: bool,
    seconds: f64,
    report: Value,
}

/// Entry point of `cargo xtask gpu-report`.
pub fn main(args: &Args) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let started = Instant::now();
    let adapter = adapter_record();
    println!("adapter: {}", adapter["name"].as_str().unwrap_or("none"));
    let mut steps = Vec::new();
    if let Some(dir) = &args.tests {
        for exe in test_executables(dir)? {
            steps.push(run_test(&exe));
        }
    }
    let me = std::env::current_exe().context("cannot find this executable to run the benchmarks")?;
    for bench in benchmarks(args) {
        steps.push(run_bench(&me, &bench, &args.out));
    }
    let failed: Vec<&str> = steps.iter().filter(|s| !s.passed).map(|s| s.name.as_str()).collect();
    let report = json!({
        "adapter": adapter,
        "quick": args.quick,
        "seconds": started.elapsed().as_secs_f64(),
        "steps": steps.iter().map(|s| json!({
            "name": s.name, "command": s.command, "passed": s.passed, "seconds": s.seconds, "report": s.report,
        })).collect::<Vec<_>>(),
        "failed": failed,
    });
    let path = args.out.join("gpu-report.json");
    crate::bench::output::write_json(&path, &report)?;
    for s in &steps {
        println!("{:>7.1} s  {}  {}", s.seconds, if s.passed { "ok    " } else { "FAILED" }, s.name);
    }
    println!("{:.0} s in all; report: {}", started.elapsed().as_secs_f64(), path.display());
    if failed.is_empty() { Ok(ExitCode::SUCCESS) } else { Ok(ExitCode::FAILURE) }
}

/// The adapter the benchmarks run on (theirs: `--devices 0`, the first adapter listed): its
/// name, backend, type and driver, the limits a kernel's layout depends on, and its features.
fn adapter_record() -> Value {
    let selector = match DeviceSelector::parse("0") {
        Ok(selector) => selector,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let gpus = match open_devices(&selector, 1) {
        Ok(gpus) => gpus,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let Some(gpu) = gpus.first() else { return json!({ "error": "no adapter" }) };
    let (a, limits) = (gpu.adapter(), gpu.device().limits());
    json!({
        "name": a.name,
        "backend": format!("{:?}", a.backend),
        "device_type": format!("{:?}", a.device_type),
        "driver": a.driver,
        "vendor": a.vendor,
        "device": a.device,
        "limits": {
            "max_buffer_size": limits.max_buffer_size,
            "max_storage_buffer_binding_size": limits.max_storage_buffer_binding_size,
            "max_storage_buffers_per_shader_stage": limits.max_storage_buffers_per_shader_stage,
            "max_compute_workgroup_storage_size": limits.max_compute_workgroup_storage_size,
            "max_compute_invocations_per_workgroup": limits.max_compute_invocations_per_workgroup,
            "max_compute_workgroup_size_x": limits.max_compute_workgroup_size_x,
            "max_compute_workgroups_per_dimension": limits.max_compute_workgroups_per_dimension,
        },
        "features": format!("{:?}", gpu.device().features()),
    })
}

/// One benchmark of the report: the name of its JSON file (without `.json`), what it
/// measures, and its `cargo xtask` arguments (its `--json` added by [`run_bench`]).
struct Bench {
    file: String,
    name: &'static str,
    args: Vec<String>,
}

/// The benchmarks of the report, at their sizes (`--quick`: the smallest).
fn benchmarks(args: &Args) -> Vec<Bench> {
    let q = args.quick;
    let scratch = args.scratch.display().to_string();
    // gs-mpiio's default binary is the release build in this workspace's target directory.
    let bin = args.bin.as_ref().map_or_else(String::new, |b| format!(" --bin {}", b.display()));
    let reps = if q { 1 } else { 5 };
    let bench = |file: String, name: &'static str, args: String| Bench {
        file,
        name,
        args: args.split_whitespace().map(str::to_owned).collect(),
    };
    let large = if q { "" } else { " --large" };
    let mut all = vec![bench(
        "gpu-kernel-roofline".to_owned(),
        "kernels against the copy bandwidth",
        format!("bench kernel --roofline{large} --reps {reps}"),
    )];
    for edge in if q { [16, 32] } else { [64, 128] } {
        let frames = if q { 4 } else { 40 };
        all.push(bench(
            format!("gpu-analysis-cost-{edge}"),
            "the analysis's GPU time",
            format!("bench analysis-cost --edge {edge} --frames {frames} --reps {reps}"),
        ));
    }
    let (edge, frames, zfp_reps) = if q { (32, 4, 1) } else { (256, 20, 3) };
    all.push(bench(
        "gpu-zfp-device".to_owned(),
        "ZFP rate 8 on the device",
        format!("bench zfp-device --rate 8 --edge {edge} --frames {frames} --reps {zfp_reps} --out {scratch}"),
    ));
    all.push(bench(
        "gpu-zfp-encoder".to_owned(),
        "the ZFP encoder against zfp_compress and the copy bandwidth",
        format!("bench zfp-encoder --rate 8 --edge {edge} --reps {reps}"),
    ));
    let frames = if q { 8 } else { 128 };
    all.push(bench(
        "gpu-peers-posix".to_owned(),
        "the raw sink against a plain write loop",
        format!("bench peers posix --frames {frames} --reps {reps} --out {scratch}"),
    ));
    let (edge, frames) = if q { (16, 2) } else { (256, 100) };
    all.push(bench(
        "gpu-peers-gs-mpiio".to_owned(),
        "the tutorial's run against gs-mpiio on every core",
        format!("bench peers gs-mpiio --edge {edge} --frames {frames} --reps 1 --out {scratch}{bin}"),
    ));
    all
}

/// Runs `bench` as `cargo xtask` does (this executable, a process of its own), its JSON
/// written into `out`.
fn run_bench(me: &Path, bench: &Bench, out: &Path) -> Step {
    let file = out.join(format!("{}.json", bench.file));
    let command = format!("cargo xtask {} --json {}", bench.args.join(" "), file.display());
    println!("\n== {}: {command}", bench.name);
    // A report left by an earlier run must not stand in for this one's.
    let _ = std::fs::remove_file(&file);
    let start = Instant::now();
    let status = Command::new(me).args(&bench.args).arg("--json").arg(&file).status();
    let seconds = start.elapsed().as_secs_f64();
    let report =
        std::fs::read_to_string(&file).ok().and_then(|text| serde_json::from_str(&text).ok()).unwrap_or(Value::Null);
    let passed = status.is_ok_and(|s| s.success());
    Step { name: format!("{} ({})", bench.name, bench.file), command, passed, seconds, report }
}

/// The executable files in `dir`, in name order.
fn test_executables(dir: &Path) -> Result<Vec<PathBuf>> {
    use std::os::unix::fs::PermissionsExt;
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .collect();
    found.sort();
    Ok(found)
}

/// Runs one test executable; its summary line (`test result: ...`) is its report.
fn run_test(exe: &Path) -> Step {
    let name = exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    println!("\n== test {name}");
    let start = Instant::now();
    let output = Command::new(exe).output();
    let seconds = start.elapsed().as_secs_f64();
    let (passed, text) = match output {
        Ok(o) => (
            o.status.success(),
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
        ),
        Err(e) => (false, format!("cannot run {}: {e}", exe.display())),
    };
    let summary: Vec<&str> = text.lines().filter(|l| l.starts_with("test result") || l.contains("FAILED")).collect();
    print!("{}", summary.iter().map(|l| format!("{l}\n")).collect::<String>());
    let report = json!({ "summary": summary, "tail": tail(&text, 40) });
    Step { name: format!("test {name}"), command: exe.display().to_string(), passed, seconds, report }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
