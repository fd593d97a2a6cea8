//! The machine under the measurement: lavapipe's thread count (which must be set before the
//! Vulkan driver loads, hence the re-exec), the page cache, and what the JSON records about
//! the host and the output's filesystem.

use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::compute::GpuDevice;

/// Set in the child after the re-exec, so it can say what happened.
const REEXEC_MARK: &str = "WGPIPE_BENCH_REEXEC";

/// lavapipe computes on the CPU with one thread per core by default, which leaves the writer
/// thread no core on a small machine and measures CPU contention instead of overlap. The
/// variable is read when the driver loads, so it cannot be set from inside this process:
/// when it is missing, run this same binary again, with the same arguments and it set, and
/// pass the exit code on.
pub fn reexec_with_one_lavapipe_thread() -> Result<Option<ExitCode>> {
    if std::env::var_os("LP_NUM_THREADS").is_some() {
        return Ok(None);
    }
    let exe = std::env::current_exe().context("cannot find this executable to re-run it with LP_NUM_THREADS=1")?;
    eprintln!("note: LP_NUM_THREADS is unset; re-running with LP_NUM_THREADS=1 (lavapipe on one core)");
    let status = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env("LP_NUM_THREADS", "1")
        .env(REEXEC_MARK, "1")
        .status()
        .with_context(|| format!("cannot re-run {}", exe.display()))?;
    let code = status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1);
    Ok(Some(ExitCode::from(code)))
}

/// The command line that started this bench, as a user types it (`cargo xtask bench ...`),
/// for the JSON report: an `LP_NUM_THREADS` the user set comes first, one the re-execution
/// set does not (the machine record has it).
pub fn command_line() -> String {
    let words = std::env::args().skip(1).map(|a| shell_word(&a)).collect::<Vec<_>>().join(" ");
    match std::env::var("LP_NUM_THREADS") {
        Ok(threads) if std::env::var_os(REEXEC_MARK).is_none() => {
            format!("LP_NUM_THREADS={} cargo xtask {words}", shell_word(&threads))
        }
        _ => format!("cargo xtask {words}"),
    }
}

/// `word` as a shell reads it back: as it is when it holds nothing the shell treats specially,
/// else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./,:=+@%^".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// What the report says about LP_NUM_THREADS.
pub fn lp_threads_note() -> String {
    let value = std::env::var("LP_NUM_THREADS").unwrap_or_else(|_| "unset".to_owned());
    if std::env::var_os(REEXEC_MARK).is_some() {
        format!("LP_NUM_THREADS={value} (set by re-executing the bench)")
    } else {
        format!("LP_NUM_THREADS={value} (from the environment)")
    }
}

/// Brings the page cache to the same state before a timed run: dirty pages written out
/// (`sync`) and clean ones dropped when allowed (root only). Returns how it went, for the
/// report; failing to drop is not an error, the run is only less controlled.
pub fn settle_page_cache() -> String {
    let synced = Command::new("sync").status().map(|s| s.success()).unwrap_or(false);
    let dropped = std::fs::write("/proc/sys/vm/drop_caches", "3");
    match (synced, dropped) {
        (true, Ok(())) => "sync + drop_caches before each timed run".to_owned(),
        (true, Err(e)) => format!("sync only before each timed run (drop_caches unavailable: {e})"),
        (false, Ok(())) => "drop_caches only before each timed run (sync failed)".to_owned(),
        (false, Err(e)) => format!("page cache not controlled (sync failed, drop_caches: {e})"),
    }
}

/// Filesystem type of `path` (`tmpfs`, `ext2/ext3`, ...), from `stat -f`.
pub fn filesystem_type(path: &Path) -> String {
    Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(path)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The 1-minute load average, to say how busy the shared machine was.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The host CPU as `/proc/cpuinfo` names it (model name, family, model, stepping) and whether
/// it has AVX2 and AVX-512: VMs of one kind run on hosts of different generations, and
/// lavapipe's JIT-compiled shaders (wide vectors) gain from a newer one far more than scalar
/// C++ does, so a figure is comparable only with the CPU it ran on (`cargo xtask bench peers
/// gs-mpiio` moves with the host: docs, "Benchmarks", "Against its peer").
fn cpu_identity() -> Value {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == name).map(|(_, v)| v.trim().to_owned()))
    };
    let flags = field("flags").unwrap_or_default();
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    json!({
        "model_name": field("model name"),
        "family": field("cpu family"),
        "model": field("model"),
        "stepping": field("stepping"),
        "avx2": has("avx2"),
        "avx512f": has("avx512f"),
    })
}

/// The host and the adapters, for the JSON report.
pub fn describe(gpus: &[GpuDevice], out: Option<&Path>) -> Value {
    let adapters: Vec<Value> = gpus
        .iter()
        .map(|g| {
            let a = g.adapter();
            json!({ "name": a.name, "backend": format!("{:?}", a.backend),
                    "device_type": format!("{:?}", a.device_type), "driver": a.driver })
        })
        .collect();
    json!({
        "adapters": adapters,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "cpu": cpu_identity(),
        "lp_num_threads": std::env::var("LP_NUM_THREADS").ok(),
        "lp_num_threads_note": lp_threads_note(),
        "load_average_1min": load_average(),
        "target_path": out.map(|p| p.display().to_string()),
        "target_filesystem": out.map(filesystem_type),
        "os": std::env::consts::OS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_only_what_needs_it() {
        assert_eq!(shell_word("--compression"), "--compression");
        assert_eq!(shell_word("zfp:accuracy=1e-4"), "zfp:accuracy=1e-4");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
