//! `cargo xtask bench mpi`: weak and strong scaling of the 3-D Gray-Scott model split over
//! MPI ranks (`mpirun -n R wgpipe run configs/gray-scott-3d.toml` with `grid.decomposition`),
//! with the halo-exchange and write time the runs report.
//!
//! The MPI build of `wgpipe` (`cargo build-mpi --release`) is launched as a child; this task
//! itself links neither MPI nor parallel HDF5. Each rank count runs through the split-domain
//! code (one rank too: `grid.decomposition = [1, 1, 1]`), the repetitions alternate over the
//! rank counts, and every figure is the median [min–max] of the repetitions. lavapipe runs
//! with `LP_NUM_THREADS=1`, so R ranks use about R cores.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use super::args::at_least_one;
use super::machine::load_average;
use super::output::ScratchDir;
use super::stats::Summary;

/// `bench mpi`: what to measure.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct Args {
    /// Rank counts, comma-separated; 1 is the baseline of the efficiencies
    #[arg(long, value_name = "LIST", default_value = "1,2,4")]
    ranks: RankCounts,
    /// Weak scaling: an N³ block per rank
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = at_least_one::<usize>)]
    block: usize,
    /// Strong scaling: an N³ grid
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = at_least_one::<usize>)]
    grid: usize,
    /// Frames per run
    #[arg(long, value_name = "F", default_value_t = 10, value_parser = at_least_one::<u64>)]
    frames: u64,
    /// Kernel steps per frame
    #[arg(long, value_name = "S", default_value_t = 10, value_parser = at_least_one::<u32>)]
    steps_per_frame: u32,
    /// Alternating repetitions over the rank counts; figures are their median [min–max]
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = at_least_one::<usize>)]
    reps: usize,
    /// The MPI build of wgpipe
    #[arg(long, value_name = "PATH", default_value_os_t = default_bin())]
    bin: PathBuf,
    /// The MPI launcher [default: $WGPIPE_MPIRUN, else mpirun.mpich]
    #[arg(long, value_name = "CMD", default_value_t = default_launcher())]
    launcher: String,
    /// Where the HDF5 files go [default: the current directory]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write every figure and this command line as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `target-mpi/release/wgpipe` in the workspace: where `cargo build-mpi --release` puts it.
fn default_bin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target-mpi/release/wgpipe")
}

/// `$WGPIPE_MPIRUN`, else MPICH's `mpirun.mpich`.
fn default_launcher() -> String {
    std::env::var("WGPIPE_MPIRUN").unwrap_or_else(|_| "mpirun.mpich".to_owned())
}

/// Rank counts with the one-rank baseline among them, none 0.
#[derive(Debug, Clone, PartialEq)]
struct RankCounts(Vec<usize>);

impl FromStr for RankCounts {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let counts = text.split(',').map(|r| at_least_one::<usize>(r.trim())).collect::<Result<Vec<_>, _>>()?;
        if !counts.contains(&1) {
            return Err("needs 1 (the baseline of the efficiencies), e.g. 1,2,4".to_owned());
        }
        Ok(RankCounts(counts))
    }
}

/// `ranks` as three factors, largest first, as balanced as can be (what `MPI_Dims_create`
/// chooses): each prime factor, largest first, multiplies the smallest factor so far.
fn dims(ranks: usize) -> [usize; 3] {
    let mut primes = Vec::new();
    let (mut n, mut p) = (ranks, 2);
    while n > 1 {
        while n % p == 0 {
            primes.push(p);
            n /= p;
        }
        p += 1;
    }
    let mut d = [1usize; 3];
    for p in primes.into_iter().rev() {
        if let Some(smallest) = d.iter_mut().min() {
            *smallest *= p;
        }
    }
    d.sort_unstable_by(|a, b| b.cmp(a));
    d
}

/// What one run reports (rank 0's closing lines), per frame of the slowest rank.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figures {
    wall_s: f64,
    compute_ms: f64,
    halo_ms: f64,
    mpi_ms: f64,
    write_ms: f64,
}

/// The number after `key` in `text` (up to the next space, `,` or `;`).
fn after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    rest.split([' ', ',', ';']).next()?.parse().ok()
}

/// Reads [`Figures`] from the `frames ..., wall ... s` and `per frame, slowest rank: ...`
/// lines `wgpipe run` prints on rank 0 after a split run.
fn figures(stdout: &str) -> Option<Figures> {
    let wall = stdout.lines().find(|l| l.starts_with("frames "))?;
    let per = stdout.lines().find(|l| l.starts_with("per frame, slowest rank:"))?;
    Some(Figures {
        wall_s: after(wall, "wall ")?,
        compute_ms: after(per, "compute ")?,
        halo_ms: after(per, "halo ")?,
        mpi_ms: after(per, "MPI exchange ")?,
        write_ms: after(per, "write ")?,
    })
}

/// One configuration: `ranks` ranks on a grid of `shape`.
struct Case {
    ranks: usize,
    shape: [usize; 3],
    dims: [usize; 3],
}

impl Case {
    fn text(v: &[usize; 3]) -> String {
        v.map(|n| n.to_string()).join("x")
    }

    /// Runs it once under the launcher.
    fn run(&self, a: &Args, out: &Path) -> Result<Figures> {
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gray-scott-3d.toml");
        let list = |v: &[usize; 3]| format!("[{}, {}, {}]", v[0], v[1], v[2]);
        let sets = [
            format!("grid.shape={}", list(&self.shape)),
            format!("grid.decomposition={}", list(&self.dims)),
            format!("run.frames={}", a.frames),
            format!("run.steps_per_frame={}", a.steps_per_frame),
            format!("output.path={}", out.join("bench-mpi.h5").display()),
            "output.overwrite=true".to_owned(),
        ];
        let mut cmd = Command::new("timeout");
        cmd.args(["600", &a.launcher, "-n", &self.ranks.to_string()]).arg(&a.bin).arg("run").arg(&config);
        for s in &sets {
            cmd.args(["--set", s]);
        }
        cmd.args(["--progress", "none"]).env("LP_NUM_THREADS", "1");
        let o = cmd.output().with_context(|| format!("cannot start `timeout {}`", a.launcher))?;
        let stdout = String::from_utf8_lossy(&o.stdout);
        if !o.status.success() {
            bail!(
                "{} ranks on {} failed ({}):\n{stdout}\n{}",
                self.ranks,
                Case::text(&self.shape),
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        figures(&stdout).with_context(|| format!("no figures in the output of {} ranks:\n{stdout}", self.ranks))
    }
}

/// Repetitions of one case.
#[derive(Default)]
struct Samples {
    rate: Vec<f64>,
    halo_step_ms: Vec<f64>,
    mpi_step_ms: Vec<f64>,
    write_ms: Vec<f64>,
}

/// The table of one scaling series and its JSON.
fn table(title: &str, a: &Args, cases: &[Case], samples: &[Samples]) -> (String, Value) {
    let base = samples.first().map_or(0.0, |s| Summary::of(&s.rate).median);
    let mut text = format!(
        "{title}\n{:>5} {:>10} {:>6} {:>32} {:>10} {:>26} {:>26} {:>24}\n",
        "ranks",
        "grid",
        "split",
        "cell-steps/s",
        "efficiency",
        "halo ms/step",
        "(of which MPI) ms/step",
        "write ms/frame"
    );
    let mut rows = Vec::new();
    for (c, s) in cases.iter().zip(samples) {
        let rate = Summary::of(&s.rate);
        let efficiency = if base > 0.0 { rate.median / (base * c.ranks as f64) } else { 0.0 };
        text += &format!(
            "{:>5} {:>10} {:>6} {:>32} {:>10.2} {:>26} {:>26} {:>24}\n",
            c.ranks,
            Case::text(&c.shape),
            Case::text(&c.dims),
            format!("{:.3e} [{:.3e}–{:.3e}]", rate.median, rate.min, rate.max),
            efficiency,
            Summary::of(&s.halo_step_ms).text(2),
            Summary::of(&s.mpi_step_ms).text(2),
            Summary::of(&s.write_ms).text(2),
        );
        rows.push(json!({
            "ranks": c.ranks, "shape": c.shape, "decomposition": c.dims, "efficiency": efficiency,
            "cell_steps_per_s": Summary::json(&s.rate), "halo_ms_per_step": Summary::json(&s.halo_step_ms),
            "mpi_ms_per_step": Summary::json(&s.mpi_step_ms), "write_ms_per_frame": Summary::json(&s.write_ms),
        }));
    }
    text += &format!(
        "({} frames x {} steps per run, {} alternating reps, median [min–max]; efficiency = rate / (ranks x rate of 1 rank))",
        a.frames, a.steps_per_frame, a.reps
    );
    (text, Value::Array(rows))
}

/// `bench mpi`: the weak and the strong series, measured and printed, as the JSON report.
pub fn run(a: &Args) -> Result<Map<String, Value>> {
    if !a.bin.is_file() {
        bail!(
            "{} does not exist: build the MPI variant first with `cargo build-mpi --release` (or give --bin)",
            a.bin.display()
        );
    }
    let scratch = ScratchDir::under(a.out.as_deref(), "bench-mpi")?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "machine: {cpus} CPUs, load average {}; lavapipe with LP_NUM_THREADS=1 per rank; writing to {}",
        load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}")),
        scratch.path().display()
    );
    let (weak, strong) = series(a);
    let (weak_s, strong_s) = measure(a, &weak, &strong, scratch.path())?;
    let (weak_table, weak_json) =
        table(&format!("weak scaling: a {0}x{0}x{0} block per rank", a.block), a, &weak, &weak_s);
    let (strong_table, strong_json) =
        table(&format!("strong scaling: a {0}x{0}x{0} grid", a.grid), a, &strong, &strong_s);
    println!("{weak_table}\n\n{strong_table}");
    let mut m = Map::new();
    m.insert("weak".to_owned(), weak_json);
    m.insert("strong".to_owned(), strong_json);
    m.insert("cpus".to_owned(), json!(cpus));
    m.insert("load_average_1min".to_owned(), json!(load_average()));
    Ok(m)
}

/// The weak series (a `--block`³ block per rank) and the strong one (a `--grid`³ grid), one
/// case per rank count.
fn series(a: &Args) -> (Vec<Case>, Vec<Case>) {
    let weak = a
        .ranks
        .0
        .iter()
        .map(|&r| {
            let d = dims(r);
            Case { ranks: r, shape: d.map(|p| p * a.block), dims: d }
        })
        .collect();
    let strong = a.ranks.0.iter().map(|&r| Case { ranks: r, shape: [a.grid; 3], dims: dims(r) }).collect();
    (weak, strong)
}

/// `--reps` repetitions, each running every case of both series once, in `out`.
fn measure(a: &Args, weak: &[Case], strong: &[Case], out: &Path) -> Result<(Vec<Samples>, Vec<Samples>)> {
    let mut weak_s: Vec<Samples> = weak.iter().map(|_| Samples::default()).collect();
    let mut strong_s: Vec<Samples> = strong.iter().map(|_| Samples::default()).collect();
    for rep in 0..a.reps {
        for (cases, samples) in [(weak, &mut weak_s), (strong, &mut strong_s)] {
            for (c, s) in cases.iter().zip(samples.iter_mut()) {
                let f = c.run(a, out)?;
                let cells: f64 = c.shape.iter().map(|&n| n as f64).product();
                let steps = a.frames as f64 * f64::from(a.steps_per_frame);
                s.rate.push(cells * steps / f.wall_s);
                s.halo_step_ms.push(f.halo_ms / f64::from(a.steps_per_frame));
                s.mpi_step_ms.push(f.mpi_ms / f64::from(a.steps_per_frame));
                s.write_ms.push(f.write_ms);
            }
        }
        eprintln!("rep {}/{} done", rep + 1, a.reps);
    }
    Ok((weak_s, strong_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_balanced_largest_first_like_mpi_dims_create() {
        assert_eq!(dims(1), [1, 1, 1]);
        assert_eq!(dims(2), [2, 1, 1]);
        assert_eq!(dims(4), [2, 2, 1]);
        assert_eq!(dims(8), [2, 2, 2]);
        assert_eq!(dims(12), [3, 2, 2]);
        assert_eq!(dims(7), [7, 1, 1]);
    }

    #[test]
    fn figures_are_read_from_the_lines_wgpipe_prints() {
        let out = "domain 64x64x64 split 2x1x1 over 2 ranks, blocks 32x64x64\n\
                   frames 3, steps 15, wall 0.063 s, 1.750e6 cell-steps/s over 2 ranks\n\
                   per frame, slowest rank: compute 5.92 ms, halo 13.12 ms (MPI exchange 7.99 ms), write 1.93 ms; \
                   closing the file 0.001 s\noutput: x.h5\n";
        let f = figures(out);
        assert_eq!(f, Some(Figures { wall_s: 0.063, compute_ms: 5.92, halo_ms: 13.12, mpi_ms: 7.99, write_ms: 1.93 }));
        assert_eq!(figures("frames 3, steps 15, wall 0.063 s\n"), None, "the per-frame line is missing");
    }

    #[derive(Debug, clap::Parser)]
    struct Mpi {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn arguments_need_the_one_rank_baseline() {
        use clap::Parser as _;
        let p = |s: &str| Mpi::try_parse_from(std::iter::once("mpi").chain(s.split_whitespace())).map(|m| m.args);
        assert!(p("--ranks 1,2,4 --block 16 --reps 1").is_ok_and(|a| a.ranks.0 == [1, 2, 4] && a.block == 16));
        assert!(p("").is_ok_and(|a| a.ranks.0 == [1, 2, 4] && a.reps == 3));
        assert!(p("--ranks 2,4").is_err());
        assert!(p("--ranks 1,0").is_err());
        assert!(p("--block 0").is_err());
        assert!(p("--sink null").is_err());
    }
}
