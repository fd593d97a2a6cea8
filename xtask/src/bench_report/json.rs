//! Reading a benchmark's JSON report: its figures by dotted path, each `median [min–max]`
//! summary as text, and the machine record in words.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

/// One JSON file of `docs/src/bench/`, named as the page links it (`bench/NAME.json`).
#[derive(Debug, Clone)]
pub struct BenchJson {
    /// Its path from `docs/src/`.
    pub name: String,
    /// Its content.
    pub json: Value,
}

impl BenchJson {
    /// Reads `name` (from `docs/src/`) under `src`.
    pub fn read(src: &Path, name: &str) -> Result<Self> {
        let path = src.join(name);
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let json = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
        Ok(BenchJson { name: name.to_owned(), json })
    }

    /// The value at `path`, keys separated by dots.
    pub fn get(&self, path: &str) -> Result<&Value> {
        at(&self.json, path).with_context(|| format!("{}: no {path:?}", self.name))
    }

    /// The value at `path`, if there is one (and it is not null).
    pub fn find(&self, path: &str) -> Option<&Value> {
        at(&self.json, path).filter(|v| !v.is_null())
    }

    /// The number at `path`.
    pub fn num(&self, path: &str) -> Result<f64> {
        self.get(path)?.as_f64().with_context(|| format!("{}: {path:?} is not a number", self.name))
    }

    /// The text at `path`.
    pub fn text(&self, path: &str) -> Result<&str> {
        self.get(path)?.as_str().with_context(|| format!("{}: {path:?} is not text", self.name))
    }

    /// The summary (`median`, `min`, `max`) at `path`.
    pub fn summary(&self, path: &str) -> Result<Summary> {
        Summary::of(self.get(path)?).with_context(|| format!("{}: {path:?} is no median [min–max]", self.name))
    }

    /// The command line that produced it.
    pub fn command(&self) -> Result<&str> {
        self.text("command")
    }

    /// The machine it was measured on, in words.
    pub fn machine(&self) -> Machine<'_> {
        Machine(self.find("machine").unwrap_or(&Value::Null))
    }
}

/// The value under `path` in `v`: object keys, separated by dots.
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}

/// A figure's median over the repetitions, and its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median.
    pub median: f64,
    /// The smallest repetition.
    pub min: f64,
    /// The largest repetition.
    pub max: f64,
}

impl Summary {
    /// `v`'s `median`, `min` and `max`, if it has them.
    pub fn of(v: &Value) -> Option<Summary> {
        Some(Summary { median: v.get("median")?.as_f64()?, min: v.get("min")?.as_f64()?, max: v.get("max")?.as_f64()? })
    }

    /// `median [min–max]` with `decimals` decimals.
    pub fn text(&self, decimals: usize) -> String {
        format!("{:.p$} [{:.p$}–{:.p$}]", self.median, self.min, self.max, p = decimals)
    }

    /// Every figure multiplied by `factor` (seconds to milliseconds, ...).
    pub fn scaled(&self, factor: f64) -> Summary {
        Summary { median: self.median * factor, min: self.min * factor, max: self.max * factor }
    }
}

/// A report's machine record.
#[derive(Debug, Clone, Copy)]
pub struct Machine<'a>(&'a Value);

impl Machine<'_> {
    /// The first adapter's name, if the bench used one.
    pub fn adapter(&self) -> Option<&str> {
        self.0.get("adapters")?.get(0)?.get("name")?.as_str()
    }

    /// The host's cores.
    fn cpus(&self) -> Option<u64> {
        self.0.get("cpus")?.as_u64()
    }

    /// The machine for the at-a-glance table: the adapter (lavapipe with the cores it shares,
    /// and its threads where they are not the benches' one) or, for a bench without one, the
    /// cores.
    pub fn short(&self) -> String {
        let cpus = self.cpus().map_or("?".to_owned(), |c| c.to_string());
        match self.adapter() {
            Some(a) if a.starts_with("llvmpipe") => match self.0.get("lp_num_threads").and_then(Value::as_str) {
                Some(n) if n != "1" => format!("lavapipe on {n} threads, {cpus} cores"),
                _ => format!("lavapipe, {cpus} cores"),
            },
            Some(a) => a.to_owned(),
            None if self.0.is_string() => {
                let text = self.0.as_str().unwrap_or_default();
                text.split(" (").next().unwrap_or(text).to_owned()
            }
            None => format!("{cpus} cores, no GPU"),
        }
    }

    /// The whole record in one sentence (empty when the report has none).
    pub fn sentence(&self) -> String {
        if let Some(text) = self.0.as_str() {
            return format!("Measured on: {text}.");
        }
        let mut parts = Vec::new();
        if let Some(cpus) = self.cpus() {
            parts.push(format!("{cpus} CPU cores{}", self.cpu_model()));
        }
        if let Some(a) = self.0.get("adapters").and_then(Value::as_array).and_then(|a| a.first()) {
            let field = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("?");
            parts.push(format!("{} on {}, driver {}", field("name"), field("backend"), field("driver")));
        }
        match self.0.get("lp_num_threads").and_then(Value::as_str) {
            Some(n) if self.adapter().is_some_and(|a| a.starts_with("llvmpipe")) => {
                parts.push(format!("LP_NUM_THREADS={n}"));
            }
            None if self.adapter().is_some_and(|a| a.starts_with("llvmpipe")) => {
                parts.push("LP_NUM_THREADS unset (lavapipe on every core)".to_owned());
            }
            _ => {}
        }
        if let Some(fs) = self.0.get("target_filesystem").and_then(Value::as_str) {
            parts.push(format!("output on {fs}"));
        }
        if let Some(load) = self.0.get("load_average_1min").and_then(Value::as_f64) {
            parts.push(format!("load average {load:.2} at the start"));
        }
        if parts.is_empty() {
            return String::new();
        }
        format!("Measured on: {}.", parts.join(", "))
    }

    /// ` (MODEL, AVX2)`, or nothing when the record has no CPU (reports before it did).
    fn cpu_model(&self) -> String {
        let Some(cpu) = self.0.get("cpu") else { return String::new() };
        let Some(model) = cpu.get("model_name").and_then(Value::as_str) else { return String::new() };
        let flag = |k: &str| cpu.get(k).and_then(Value::as_bool).unwrap_or(false);
        let vector = if flag("avx512f") {
            ", AVX-512"
        } else if flag("avx2") {
            ", AVX2"
        } else {
            ""
        };
        let family = cpu.get("family").and_then(Value::as_str).map_or(String::new(), |f| format!(" family {f}"));
        let number = cpu.get("model").and_then(Value::as_str).map_or(String::new(), |m| format!(" model {m}"));
        format!(" ({model}{family}{number}{vector})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_and_machines_read_as_text() {
        let b = BenchJson {
            name: "bench/x.json".to_owned(),
            json: json!({
                "a": { "b": { "median": 1.23456, "min": 1.0, "max": 2.0 } },
                "machine": { "cpus": 2, "adapters": [{ "name": "llvmpipe (LLVM 15.0.6, 256 bits)",
                    "backend": "Vulkan", "driver": "llvmpipe" }], "lp_num_threads": "1",
                    "target_filesystem": "tmpfs", "load_average_1min": 0.5 },
            }),
        };
        assert_eq!(b.summary("a.b").map(|s| s.text(2)).ok().as_deref(), Some("1.23 [1.00–2.00]"));
        assert!(b.summary("a").is_err() && b.num("a.c").is_err());
        assert_eq!(b.machine().short(), "lavapipe, 2 cores");
        assert_eq!(
            b.machine().sentence(),
            "Measured on: 2 CPU cores, llvmpipe (LLVM 15.0.6, 256 bits) on Vulkan, driver llvmpipe, LP_NUM_THREADS=1, \
             output on tmpfs, load average 0.50 at the start."
        );
    }
}
