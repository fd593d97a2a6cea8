//! Smoke tests of `cargo xtask bench` and `cargo xtask soak` at tiny sizes: the null and raw
//! benches run end to end and their JSON holds the top-level ratios as finite positive
//! numbers; the soak runs every sink and removes what it wrote. Not measurements.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Held by each test while it runs: the benches calibrate against lavapipe's speed, and two
/// of them at once on a 2-core machine made a sweep find no reachable row (a kernel bench
/// on both cores slowed its compute fivefold against its writes).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fresh directory for this test's files, under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-smoke-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The tiny run's settings of the benches that stream frames: a 32x32 grid, 4 frames, 1 rep.
const TINY: [&str; 8] = ["--rows", "32", "--cols", "32", "--frames", "4", "--reps", "1"];

/// Runs `cargo xtask bench ARGS --json JSON` and returns the report, which records the command.
fn bench(args: &[&str], json: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .expect("running the xtask binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "bench {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("LP_NUM_THREADS="), "the report says how lavapipe ran:\n{stdout}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).expect("valid JSON");
    let command = report["command"].as_str().unwrap_or_default();
    assert!(command.starts_with(&format!("cargo xtask bench {}", args[0])), "the report's command: {command:?}");
    report
}

fn positive(v: &serde_json::Value, key: &str) -> f64 {
    let x = v[key].as_f64().unwrap_or_else(|| panic!("{key} is missing or not a number in {v}"));
    assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    x
}

#[test]
fn null_and_raw_benches_write_their_ratios() {
    let _alone = one_at_a_time();
    let dir = scratch("bench");
    let null = bench(&[&["overhead"][..], &TINY].concat(), &dir.join("null.json"));
    positive(&null, "overhead_ratio");
    assert!(null["machine"]["adapters"][0]["name"].is_string());
    assert!(null["micro"]["machinery_ns_per_frame_two_threads"]["median"].as_f64().unwrap() > 0.0);

    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let raw =
        bench(&[&["overlap", "raw"][..], &TINY, &["--out", out.to_str().unwrap()]].concat(), &dir.join("raw.json"));
    positive(&raw, "efficiency_ratio");
    // The cores' floor (lavapipe in CI: a CPU adapter) from CPU times the runs used: some,
    // and no more than the machine's cores could give over their wall times.
    let eff = &raw["raw"];
    let cores = eff["cores"].as_f64().unwrap();
    for (cpu, wall) in [("t_comp_cpu_seconds", "t_comp_seconds"), ("t_io_cpu_seconds", "t_io_seconds")] {
        let (cpu, wall) = (positive(&eff[cpu], "median"), positive(&eff[wall], "median"));
        assert!(cpu <= cores * wall + 0.02, "{cpu} s of CPU in {wall} s on {cores} cores: {eff}");
    }
    positive(eff, "cores_floor_async_seconds");
    positive(eff, "cores_floor_ratio");
    assert!(raw["machine"]["target_filesystem"].is_string());
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "the bench removes what it wrote");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bench kernel` on one small 2-D grid: the shipped Gray-Scott, the `%` baseline, the shipped
/// kernel at the other width and a candidate (the kept shared-memory tile) run, report their
/// rates, and end in the same bits.
#[test]
fn kernel_bench_compares_and_checks_its_variants() {
    let _alone = one_at_a_time();
    let dir = scratch("kernel");
    let tile = concat!(env!("CARGO_MANIFEST_DIR"), "/src/bench/tile_gray_scott.wgsl");
    let args = ["kernel", "--rows", "32", "--cols", "32", "--reps", "1", "--candidate", tile];
    let report = bench(&args, &dir.join("kernel.json"));
    let case = &report["kernel"]["cases"][0];
    assert_eq!(case["grid"], serde_json::json!([32, 32]), "{case}");
    for variant in ["current", "baseline", "other-width", "candidate"] {
        positive(&case["variants"][variant]["cell_steps_per_s"], "median");
        positive(&case["variants"][variant]["effective_gb_per_s"], "median");
    }
    positive(&case["speedup_over_baseline"], "median");
    assert_eq!(case["check_baseline"], "bit-identical", "{case}");
    assert_eq!(case["check_candidate"], "bit-identical", "{case}");
    positive(&case["speedup_over_other_width"], "median");
    assert_eq!(case["check_other_width"], "bit-identical", "{case}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The sweep's theory column is computed from the row's own measured t_comp and t_io (not
/// from the calibration's prediction), and every cell reports its repetitions.
#[test]
fn sweep_rows_carry_their_measured_theory() {
    let _alone = one_at_a_time();
    let dir = scratch("sweep");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // Compressed frames, so that even one step per frame computes in less time than the
    // writer takes and every target ratio of the sweep is reachable (the raw sink writes a
    // small frame faster than lavapipe computes a step, which leaves no row to measure).
    let args = ["overlap", "hdf5", "--compression", "deflate:9", "--rows", "128", "--cols", "128", "--frames", "4"];
    let more = ["--reps", "1", "--sweep", "--out", out.to_str().unwrap()];
    let json = bench(&[&args[..], &more].concat(), &dir.join("sweep.json"));
    let sweep = &json["sweep"];
    assert_eq!(sweep["reps"], 1);
    let measured: Vec<&serde_json::Value> =
        sweep["rows"].as_array().unwrap().iter().filter(|r| r["skipped"].is_null()).collect();
    assert!(!measured.is_empty(), "no row was measured: {sweep}");
    for row in measured {
        let c = row["t_comp_seconds"]["median"].as_f64().unwrap();
        let w = row["t_io_seconds"]["median"].as_f64().unwrap();
        assert!(c > 0.0 && w > 0.0, "{row}");
        // JSON text round trips may move the last bit (serde_json parses floats fast, not
        // exactly), so compare to 1e-12 relative.
        let close = |got: f64, want: f64| (got - want).abs() <= 1e-12 * want.abs();
        assert!(close(row["measured_compute_to_io"].as_f64().unwrap(), c / w), "{row}");
        // One repetition: the theory of that repetition is the theory of the medians.
        assert!(close(row["theory"]["median"].as_f64().unwrap(), c.max(w) / (c + w)), "{row}");
        assert_eq!(row["efficiency_ratio"].as_array().unwrap().len(), 5, "{row}");
        // io.mode = "auto" ran beside them, and said what it chose.
        assert!(row["auto_over_best_fixed_median"].as_f64().is_some_and(|r| r > 0.0), "{row}");
        let chose = row["auto_chose"].as_array().unwrap();
        assert!(
            chose.len() == 1 && chose[0].as_str().is_some_and(|c| c.starts_with("async") || c == "inline"),
            "{row}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bench peers h5py`: both writers run (h5py in its own Python process), the ratio
/// is reported, and both files are gone afterwards.
#[test]
fn hdf5_against_h5py_reports_its_ratio_and_cleans_up() {
    let _alone = one_at_a_time();
    let dir = scratch("h5py");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let json = dir.join("h5py.json");
    let run = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bench", "peers", "h5py", "--rows", "32", "--cols", "32", "--frames", "4"])
        .args(["--reps", "2", "--out", out.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .output()
        .expect("running the xtask binary");
    assert!(run.status.success(), "{}\n{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let h = &v["hdf5_against_h5py"];
    positive(&h["throughput_ratio_sink_over_h5py"], "median");
    positive(&h["seconds_h5py"], "median");
    let leftovers: Vec<_> =
        std::fs::read_dir(&out).unwrap().flatten().flat_map(|e| std::fs::read_dir(e.path())).flatten().collect();
    assert!(leftovers.is_empty(), "the bench removes what it wrote: {leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn soak_runs_every_sink_and_cleans_up() {
    let _alone = one_at_a_time();
    let dir = scratch("soak");
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        // 400 frames check the machinery (every sink, descriptors, cleanup); memory growth
        // that short is the allocator's warm-up (measured from -2.4 to +4.1 MiB for
        // hdf5+deflate, whose compressor state is allocated per piece), so it gets 8 MiB of
        // slack here; the 10,000-frame soak keeps the strict rule.
        .args(["soak", "--frames", "400", "--rows", "16", "--cols", "16", "--rss-slack-kib", "8192", "--out"])
        .arg(&dir)
        .output()
        .expect("running the xtask binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "soak failed:\n{stdout}\n{stderr}");
    for sink in ["null ", "raw ", "hdf5 ", "hdf5+deflate "] {
        assert!(stdout.lines().any(|l| l.starts_with(sink) && l.ends_with("ok")), "no {sink:?} row:\n{stdout}");
    }
    assert!(stdout.contains("soak passed"), "{stdout}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the soak removes what it wrote");
    std::fs::remove_dir_all(&dir).unwrap();
}
