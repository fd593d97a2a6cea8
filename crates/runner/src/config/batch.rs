//! Batch runs: `[[runs]]` entries or a `[sweep]`, expanded into one [`RunSpec`] per stream.

use std::collections::BTreeMap;

use wgpipe_storage::check_stream_name;

use super::kernel::ResolvedKernel;
use super::model::ConfigFile;
use super::source::Source;
use crate::config_error::Result;

/// One run of a batch: one stream of the output.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// Stream name.
    pub name: String,
    /// Every parameter given for this run (`kernel.params` with the run's overrides).
    pub params: BTreeMap<String, f64>,
    /// Seed of the initial noise.
    pub seed: u64,
    /// Noise amplitude.
    pub noise: f32,
}

/// The most runs a batch may hold: each is a stream (an HDF5 group, raw files) and a job.
pub const MAX_RUNS: usize = 100_000;

/// `0.02` → `0.02`, `3.0` → `3`: short, stable value text for stream names.
fn value_text(v: f64) -> String {
    format!("{v}")
}

/// The runs of a batch config, or an empty list for a single run.
pub(crate) fn expand(file: &ConfigFile, kernel: &ResolvedKernel, src: &Source) -> Result<Vec<RunSpec>> {
    let base =
        RunSpec { name: String::new(), params: file.kernel.params.clone(), seed: file.run.seed, noise: file.run.noise };
    let runs = match &file.sweep {
        Some(_) if !file.runs.is_empty() => {
            return Err(src.invalid("sweep", "a config holds [[runs]] or a [sweep], not both: remove one"));
        }
        Some(sweep) => expand_sweep(sweep, &base, kernel, src)?,
        None => {
            let mut runs = Vec::new();
            for (i, entry) in file.runs.iter().enumerate() {
                let key = format!("runs[{i}]");
                kernel.check_params(&entry.kernel.params, &format!("{key}.kernel.params"), false, src)?;
                let mut run = base.clone();
                run.name = entry.name.clone();
                run.params.extend(entry.kernel.params.clone());
                run.seed = entry.run.seed.unwrap_or(run.seed);
                run.noise = entry.run.noise.unwrap_or(run.noise);
                if !(0.0..=1.0).contains(&run.noise) {
                    return Err(src.invalid(&format!("{key}.run.noise"), "out of range: use a value from 0 to 1"));
                }
                runs.push(run);
            }
            runs
        }
    };
    for (i, run) in runs.iter().enumerate() {
        let key = if file.sweep.is_some() { "sweep".to_owned() } else { format!("runs[{i}].name") };
        // The sinks' own naming rule, checked here so that a bad name fails before any device
        // opens.
        check_stream_name(&run.name).map_err(|e| src.invalid(&key, e.to_string()))?;
        if runs[..i].iter().any(|r| r.name == run.name) {
            return Err(src.invalid(&key, format!("two runs are named {:?}: give each run its own name", run.name)));
        }
    }
    Ok(runs)
}

/// The cartesian product of the `[sweep]` lists (keys in name order, the last varying fastest).
fn expand_sweep(
    sweep: &BTreeMap<String, Vec<f64>>,
    base: &RunSpec,
    kernel: &ResolvedKernel,
    src: &Source,
) -> Result<Vec<RunSpec>> {
    let params = kernel.param_names();
    if sweep.is_empty() {
        return Err(src.invalid("sweep", "the sweep is empty: give lists of values, e.g. feed = [0.02, 0.03]"));
    }
    for (k, values) in sweep {
        let key = format!("sweep.{k}");
        if k != "seed" && !params.contains(k) {
            return Err(src.invalid(&key, format!("unknown sweep key; valid keys: seed, {}", params.join(", "))));
        }
        if values.is_empty() {
            return Err(src.invalid(&key, "the list is empty: give at least one value"));
        }
        if let Some(v) = values.iter().find(|v| !v.is_finite() || (k == "seed" && (v.fract() != 0.0 || **v < 0.0))) {
            let what = if k == "seed" { "a whole number 0 or larger" } else { "a finite number" };
            return Err(src.invalid(&key, format!("value {v} is not {what}")));
        }
    }
    let count = sweep.values().try_fold(1usize, |n, v| n.checked_mul(v.len())).filter(|n| *n <= MAX_RUNS);
    if count.is_none() {
        let lengths: Vec<String> = sweep.iter().map(|(k, v)| format!("{k}: {}", v.len())).collect();
        return Err(src.invalid(
            "sweep",
            format!("the sweep's lists ({}) make more than {MAX_RUNS} runs: give shorter lists", lengths.join(", ")),
        ));
    }
    let mut runs = vec![base.clone()];
    for (k, values) in sweep {
        runs = runs
            .into_iter()
            .flat_map(|run| {
                values.iter().map(move |v| {
                    let mut r = run.clone();
                    if k == "seed" {
                        r.seed = *v as u64;
                    } else {
                        r.params.insert(k.clone(), *v);
                    }
                    let part = format!("{k}{}", value_text(*v));
                    r.name = if r.name.is_empty() { part } else { format!("{}_{part}", r.name) };
                    r
                })
            })
            .collect();
    }
    Ok(runs)
}
